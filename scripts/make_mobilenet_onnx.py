"""Writes examples/mobilenet_v2.onnx, or with --v3 examples/mobilenet_v3_large.onnx.
MobileNetV2 (torchvision's layout: inverted residual
blocks of a 1x1 expansion, a depthwise 3x3 and a 1x1 linear projection, ReLU6 between)
as PyTorch's ONNX exporter writes it in eval mode (opset 17, float32): each BatchNorm is
folded into its convolution at export, each ReLU6 is a Clip, each depthwise 3x3 a Conv
with group equal to its channels, then the global average pooling and the classifier's Gemm.
MobileNetV3-Large (Howard et al. 2019, torchvision's layout): the same blocks with 3x3 or
5x5 depthwise convolutions, ReLU or Hardswish, and in eight of them a squeeze-and-excitation
(a spatial mean, two 1x1 convolutions, ReLU and a Hardsigmoid gate multiplied into x);
a 1x1 convolution to 960, the pooling, and a classifier of Linear, Hardswish, Linear.
Input: x [batch, 3, 224, 224]; batch is fixed at export (--batch).
The weights' data is dropped after the export (each initializer points at an external
file that is not shipped): tunefleet reads only their shapes, and the model stays small.
Run with Debian's python3-torch and python3-onnx:
    /usr/bin/python3 scripts/make_mobilenet_onnx.py [--v3] [--batch 32] [OUT]"""
import sys

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


def make_divisible(v, divisor=8):
    """torchvision's _make_divisible: v rounded to a multiple of divisor, at most 10% down."""
    rounded = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * v else rounded


def conv_bn_act(inp, out, kernel, stride=1, groups=1, act=None):
    layers = [nn.Conv2d(inp, out, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False), nn.BatchNorm2d(out)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class SqueezeExcitation(nn.Module):
    def __init__(self, c):
        super().__init__()
        squeeze = make_divisible(c // 4)
        self.fc1, self.fc2 = nn.Conv2d(c, squeeze, 1), nn.Conv2d(squeeze, c, 1)

    def forward(self, x):
        s = nn.functional.adaptive_avg_pool2d(x, 1)
        return x * nn.functional.hardsigmoid(self.fc2(nn.functional.relu(self.fc1(s))))


class InvertedResidualV3(nn.Module):
    def __init__(self, inp, kernel, hidden, out, se, act, stride):
        super().__init__()
        self.residual = stride == 1 and inp == out
        layers = [conv_bn_act(inp, hidden, 1, act=act)] if hidden != inp else []
        layers.append(conv_bn_act(hidden, hidden, kernel, stride, groups=hidden, act=act))
        if se:
            layers.append(SqueezeExcitation(hidden))
        layers.append(conv_bn_act(hidden, out, 1))
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.block(x) if self.residual else self.block(x)


class MobileNetV3Large(nn.Module):
    RE, HS = nn.ReLU, nn.Hardswish
    # input, kernel, expanded, output, squeeze-and-excitation, activation, stride (Howard et al. 2019, table 1)
    SETTINGS = [(16, 3, 16, 16, False, RE, 1), (16, 3, 64, 24, False, RE, 2), (24, 3, 72, 24, False, RE, 1),
                (24, 5, 72, 40, True, RE, 2), (40, 5, 120, 40, True, RE, 1), (40, 5, 120, 40, True, RE, 1),
                (40, 3, 240, 80, False, HS, 2), (80, 3, 200, 80, False, HS, 1), (80, 3, 184, 80, False, HS, 1),
                (80, 3, 184, 80, False, HS, 1), (80, 3, 480, 112, True, HS, 1), (112, 3, 672, 112, True, HS, 1),
                (112, 5, 672, 160, True, HS, 2), (160, 5, 960, 160, True, HS, 1), (160, 5, 960, 160, True, HS, 1)]

    def __init__(self, classes=1000):
        super().__init__()
        layers = [conv_bn_act(3, 16, 3, 2, act=nn.Hardswish)]
        layers += [InvertedResidualV3(*s) for s in self.SETTINGS]
        layers.append(conv_bn_act(160, 960, 1, act=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Linear(960, 1280), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(1280, classes))

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


if __name__ == "__main__":
    argv = sys.argv[1:]
    if "--v3" in argv:
        argv.remove("--v3")
        export_image_classifier(__doc__, MobileNetV3Large, "mobilenet_v3_large", "examples/mobilenet_v3_large.onnx",
                                args=argv)
    else:
        export_image_classifier(__doc__, MobileNetV2, "mobilenet_v2", "examples/mobilenet_v2.onnx", args=argv)
