"""Writes examples/convnext_tiny.onnx: ConvNeXt-T (Liu et al. 2022, torchvision's layout:
a 4x4/4 stem and three 2x2/2 downsamplings each with a channels-first LayerNorm, written
as a permute to channels-last, LayerNorm over C and a permute back; four stages of 3, 3,
9 and 3 blocks of a depthwise 7x7, a channels-last LayerNorm, a 4x MLP with GELU and a
per-channel layer scale, added to the block's input) as PyTorch's ONNX exporter writes it
in eval mode (opset 17, float32): each LayerNorm a LayerNormalization, each GELU written
out with Erf, each depthwise convolution a Conv with group equal to its channels, the
classifier's pooling a GlobalAveragePool.
Input: x [batch, 3, 224, 224]; batch is fixed at export (--batch).
The weights' data is dropped after the export (each initializer points at an external
file that is not shipped): tunefleet reads only their shapes, and the model stays small.
Run with Debian's python3-torch and python3-onnx:
    /usr/bin/python3 scripts/make_convnext_onnx.py [--batch 32] [OUT]"""

import torch
from onnx_weights import export_image_classifier

nn = torch.nn


class LayerNorm2d(nn.LayerNorm):
    """torchvision's: a LayerNorm over the channels of [N, C, H, W], through channels-last."""

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = nn.functional.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class CNBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.layer_scale = nn.Parameter(torch.full((dim, 1, 1), 1e-6))

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.pwconv2(self.act(self.pwconv1(self.norm(y)))).permute(0, 3, 1, 2)
        return x + self.layer_scale * y  # stochastic depth: identity in eval


class ConvNeXtTiny(nn.Module):
    DEPTHS, DIMS = (3, 3, 9, 3), (96, 192, 384, 768)

    def __init__(self, classes=1000):
        super().__init__()
        layers = [nn.Sequential(nn.Conv2d(3, self.DIMS[0], 4, 4), LayerNorm2d(self.DIMS[0], eps=1e-6))]
        for i, (depth, dim) in enumerate(zip(self.DEPTHS, self.DIMS)):
            if i > 0:
                layers.append(nn.Sequential(LayerNorm2d(self.DIMS[i - 1], eps=1e-6),
                                            nn.Conv2d(self.DIMS[i - 1], dim, 2, 2)))
            layers.append(nn.Sequential(*[CNBlock(dim) for _ in range(depth)]))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(LayerNorm2d(self.DIMS[-1], eps=1e-6), nn.Flatten(1),
                                        nn.Linear(self.DIMS[-1], classes))

    def forward(self, x):
        return self.classifier(nn.functional.adaptive_avg_pool2d(self.features(x), 1))


if __name__ == "__main__":
    export_image_classifier(__doc__, ConvNeXtTiny, "convnext_tiny", "examples/convnext_tiny.onnx")
