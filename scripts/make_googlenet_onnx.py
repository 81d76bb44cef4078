"""Writes examples/googlenet.onnx: GoogLeNet (Inception v1, Szegedy et al. 2015;
torchvision's layout: each convolution without a bias, then BatchNorm and ReLU; nine
inception blocks of four branches -- a 1x1, a 1x1 then 3x3, a 1x1 then another 3x3 (where
the paper has a 5x5, as torchvision keeps it), and a 3x3 max pooling at stride 1 then a
1x1 -- joined by Concat; every max pooling with ceil_mode=True, so its output is rounded
up; no auxiliary classifiers, eval mode) as PyTorch's ONNX exporter writes it (opset 17,
float32, BatchNorms folded into the convolutions). torchvision's transform_input (a
per-channel rescale of the ImageNet-normalised input) is left out.
Input: x [batch, 3, 224, 224]; batch is fixed at export (--batch).
Run with Debian's python3-torch and python3-onnx:
    /usr/bin/python3 scripts/make_googlenet_onnx.py [--batch 32] [OUT]"""

import torch
from onnx_weights import export_image_classifier

nn = torch.nn

# in, 1x1, 3x3 reduce, 3x3, second 3x3 reduce, second 3x3, pool projection
INCEPTION = {
    "3a": (192, 64, 96, 128, 16, 32, 32), "3b": (256, 128, 128, 192, 32, 96, 64),
    "4a": (480, 192, 96, 208, 16, 48, 64), "4b": (512, 160, 112, 224, 24, 64, 64),
    "4c": (512, 128, 128, 256, 24, 64, 64), "4d": (512, 112, 144, 288, 32, 64, 64),
    "4e": (528, 256, 160, 320, 32, 128, 128), "5a": (832, 256, 160, 320, 32, 128, 128),
    "5b": (832, 384, 192, 384, 48, 128, 128),
}


def basic_conv(cin, cout, k, **kw):
    return nn.Sequential(nn.Conv2d(cin, cout, k, bias=False, **kw), nn.BatchNorm2d(cout, eps=0.001), nn.ReLU(True))


class Inception(nn.Module):
    def __init__(self, cin, c1, c3r, c3, c5r, c5, proj):
        super().__init__()
        self.branch1 = basic_conv(cin, c1, 1)
        self.branch2 = nn.Sequential(basic_conv(cin, c3r, 1), basic_conv(c3r, c3, 3, padding=1))
        self.branch3 = nn.Sequential(basic_conv(cin, c5r, 1), basic_conv(c5r, c5, 3, padding=1))
        self.branch4 = nn.Sequential(nn.MaxPool2d(3, stride=1, padding=1, ceil_mode=True), basic_conv(cin, proj, 1))

    def forward(self, x):
        return torch.cat([self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x)], 1)


class GoogLeNet(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        pool = lambda k=3: nn.MaxPool2d(k, stride=2, ceil_mode=True)  # noqa: E731
        layers = [basic_conv(3, 64, 7, stride=2, padding=3), pool(), basic_conv(64, 64, 1),
                  basic_conv(64, 192, 3, padding=1), pool()]
        for name in INCEPTION:
            layers.append(Inception(*INCEPTION[name]))
            if name in ("3b", "4e"):
                layers.append(pool(3 if name == "3b" else 2))
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(1024, classes)

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.fc(torch.flatten(x, 1))


if __name__ == "__main__":
    export_image_classifier(__doc__, GoogLeNet, "googlenet", "examples/googlenet.onnx")
