"""Writes examples/efficientnet_b0.onnx: EfficientNet-B0 (torchvision's layout: MBConv
blocks of a 1x1 expansion, a depthwise 3x3 or 5x5, squeeze-and-excitation and a 1x1
linear projection, SiLU between) as PyTorch's ONNX exporter writes it in eval mode (opset
17, float32): each BatchNorm is folded into its convolution at export, each SiLU is a
Sigmoid and a Mul, each depthwise convolution a Conv with group equal to its channels,
each squeeze a GlobalAveragePool and each excitation a Sigmoid broadcast by a Mul.
Input: x [batch, 3, 224, 224]; batch is fixed at export (--batch).
The weights' data is dropped after the export (each initializer points at an external
file that is not shipped): tunefleet reads only their shapes, and the model stays small.
Run with Debian's python3-torch and python3-onnx:
    /usr/bin/python3 scripts/make_efficientnet_onnx.py [--batch 32] [OUT]"""

import torch
from onnx_weights import export_image_classifier

nn = torch.nn


def conv_bn(inp, out, kernel, stride=1, groups=1, act=True):
    layers = [nn.Conv2d(inp, out, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
              nn.BatchNorm2d(out)]
    if act:
        layers.append(nn.SiLU(inplace=True))
    return nn.Sequential(*layers)


class SqueezeExcitation(nn.Module):
    def __init__(self, channels, squeezed):
        super().__init__()
        self.fc1 = nn.Conv2d(channels, squeezed, 1)
        self.fc2 = nn.Conv2d(squeezed, channels, 1)
        self.act = nn.SiLU(inplace=True)

    def forward(self, x):
        scale = nn.functional.adaptive_avg_pool2d(x, 1)
        return x * torch.sigmoid(self.fc2(self.act(self.fc1(scale))))


class MBConv(nn.Module):
    def __init__(self, inp, out, kernel, stride, expand):
        super().__init__()
        hidden = inp * expand
        self.residual = stride == 1 and inp == out
        layers = [conv_bn(inp, hidden, 1)] if expand != 1 else []
        layers += [conv_bn(hidden, hidden, kernel, stride, groups=hidden),
                   SqueezeExcitation(hidden, max(1, inp // 4)), conv_bn(hidden, out, 1, act=False)]
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.block(x) if self.residual else self.block(x)  # stochastic depth: identity in eval


class EfficientNetB0(nn.Module):
    # expansion, kernel, stride, channels, repeats (Tan and Le 2019, table 1)
    STAGES = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3),
              (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]

    def __init__(self, classes=1000):
        super().__init__()
        layers = [conv_bn(3, 32, 3, 2)]
        inp = 32
        for expand, kernel, stride, channels, repeats in self.STAGES:
            for i in range(repeats):
                layers.append(MBConv(inp, channels, kernel, stride if i == 0 else 1, expand))
                inp = channels
        layers.append(conv_bn(inp, 1280, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, classes))

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


if __name__ == "__main__":
    export_image_classifier(__doc__, EfficientNetB0, "efficientnet_b0", "examples/efficientnet_b0.onnx")
