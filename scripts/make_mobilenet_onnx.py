"""Writes examples/mobilenet_v2.onnx: MobileNetV2 (torchvision's layout: inverted residual
blocks of a 1x1 expansion, a depthwise 3x3 and a 1x1 linear projection, ReLU6 between)
as PyTorch's ONNX exporter writes it in eval mode (opset 17, float32): each BatchNorm is
folded into its convolution at export, each ReLU6 is a Clip, each depthwise 3x3 a Conv
with group equal to its channels, then the global average pooling and the classifier's Gemm.
Input: x [batch, 3, 224, 224]; batch is fixed at export (--batch).
The weights' data is dropped after the export (each initializer points at an external
file that is not shipped): tunefleet reads only their shapes, and the model stays small.
Run with Debian's python3-torch and python3-onnx:
    /usr/bin/python3 scripts/make_mobilenet_onnx.py [--batch 32] [OUT]"""

import torch
from onnx_weights import export_image_classifier

nn = torch.nn


def conv_bn(inp, out, kernel, stride=1, groups=1, relu6=True):
    layers = [nn.Conv2d(inp, out, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
              nn.BatchNorm2d(out)]
    if relu6:
        layers.append(nn.ReLU6(inplace=True))
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, inp, out, stride, expand):
        super().__init__()
        hidden = inp * expand
        self.residual = stride == 1 and inp == out
        layers = [conv_bn(inp, hidden, 1)] if expand != 1 else []
        layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden), conv_bn(hidden, out, 1, relu6=False)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.residual else self.conv(x)


class MobileNetV2(nn.Module):
    # expansion t, channels c, repeats n, first stride s (Sandler et al. 2018, table 2)
    SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1)]

    def __init__(self, classes=1000):
        super().__init__()
        layers = [conv_bn(3, 32, 3, 2)]
        inp = 32
        for t, c, n, s in self.SETTINGS:
            for i in range(n):
                layers.append(InvertedResidual(inp, c, s if i == 0 else 1, t))
                inp = c
        layers.append(conv_bn(inp, 1280, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, classes))

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


if __name__ == "__main__":
    export_image_classifier(__doc__, MobileNetV2, "mobilenet_v2", "examples/mobilenet_v2.onnx")
