"""Writes examples/densenet121.onnx: DenseNet-121 (Huang et al. 2017; torchvision's layout:
dense layers of BatchNorm, ReLU, a 1x1 and a 3x3 convolution whose outputs are
concatenated with every earlier one's, transitions of BatchNorm, ReLU, a 1x1 convolution
and a 2x2 average pooling) as PyTorch's ONNX exporter writes it in eval mode (opset 17,
float32): the stem's BatchNorm is folded into its convolution, the others come before
their convolutions and stay BatchNormalization nodes, the features are joined by Concat,
then the final BatchNorm, ReLU, global average pooling and the classifier's Gemm.
Input: x [batch, 3, 224, 224]; batch is fixed at export (--batch).
Run with Debian's python3-torch and python3-onnx:
    /usr/bin/python3 scripts/make_densenet_onnx.py [--batch 32] [OUT]"""

import torch
from onnx_weights import export_image_classifier

nn = torch.nn
GROWTH, BOTTLENECK, BLOCKS, STEM = 32, 4, (6, 12, 24, 16), 64


class DenseLayer(nn.Module):
    def __init__(self, cin):
        super().__init__()
        self.norm1, self.conv1 = nn.BatchNorm2d(cin), nn.Conv2d(cin, BOTTLENECK * GROWTH, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(BOTTLENECK * GROWTH)
        self.conv2 = nn.Conv2d(BOTTLENECK * GROWTH, GROWTH, 3, padding=1, bias=False)

    def forward(self, features):
        x = self.conv1(torch.relu(self.norm1(torch.cat(features, 1))))
        return self.conv2(torch.relu(self.norm2(x)))


class DenseBlock(nn.Module):
    def __init__(self, layers, cin):
        super().__init__()
        self.layers = nn.ModuleList([DenseLayer(cin + i * GROWTH) for i in range(layers)])

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(features))
        return torch.cat(features, 1)


class Transition(nn.Sequential):
    def __init__(self, cin, cout):
        super().__init__(nn.BatchNorm2d(cin), nn.ReLU(inplace=True), nn.Conv2d(cin, cout, 1, bias=False),
                         nn.AvgPool2d(2, stride=2))


class DenseNet121(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        layers = [nn.Conv2d(3, STEM, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(STEM), nn.ReLU(inplace=True),
                  nn.MaxPool2d(3, stride=2, padding=1)]
        channels = STEM
        for i, n in enumerate(BLOCKS):
            layers.append(DenseBlock(n, channels))
            channels += n * GROWTH
            if i != len(BLOCKS) - 1:
                layers.append(Transition(channels, channels // 2))
                channels //= 2
        layers += [nn.BatchNorm2d(channels), nn.ReLU(inplace=True)]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(channels, classes)

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


if __name__ == "__main__":
    export_image_classifier(__doc__, DenseNet121, "densenet121", "examples/densenet121.onnx")
