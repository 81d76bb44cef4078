#!/usr/bin/python3
"""Writes examples/unet.onnx: the U-Net of Ronneberger et al. as the widely used PyTorch
port (milesial/Pytorch-UNet) writes it with bilinear upsampling: four encoder stages of
(3x3 convolution, BatchNorm, ReLU) twice after a 2x2 max pooling, four decoder stages that
upsample by 2 (nn.Upsample, bilinear, align_corners=True: a Resize), join the encoder's
features of the same size (Concat) and convolve twice, and a 1x1 convolution to 2
classes; BatchNorm folded by the export in eval mode. At sizes divisible by 16 the port's
padding of the upsampled map is zero, so it is left out.
Input x [batch, 3, 224, 224], output logits [batch, 2, 224, 224]; the weights' data is
dropped (scripts/onnx_weights.py). Run with Debian's python3-torch and python3-onnx:
    /usr/bin/python3 scripts/make_unet_onnx.py [--batch 32] [OUT]"""
import torch
from onnx_weights import export_image_classifier


def double_conv(cin, cout, mid=None):
    mid = mid or cout
    return torch.nn.Sequential(
        torch.nn.Conv2d(cin, mid, 3, padding=1, bias=False), torch.nn.BatchNorm2d(mid), torch.nn.ReLU(inplace=True),
        torch.nn.Conv2d(mid, cout, 3, padding=1, bias=False), torch.nn.BatchNorm2d(cout), torch.nn.ReLU(inplace=True))


class Up(torch.nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.up = torch.nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.conv = double_conv(cin, cout, cin // 2)

    def forward(self, x, skip):
        return self.conv(torch.cat([skip, self.up(x)], dim=1))


class UNet(torch.nn.Module):
    def __init__(self, classes=2):
        super().__init__()
        self.inc = double_conv(3, 64)
        self.downs = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.MaxPool2d(2), double_conv(cin, cout))
            for cin, cout in ((64, 128), (128, 256), (256, 512), (512, 512)))
        self.ups = torch.nn.ModuleList(Up(cin, cout) for cin, cout in ((1024, 256), (512, 128), (256, 64), (128, 64)))
        self.outc = torch.nn.Conv2d(64, classes, 1)

    def forward(self, x):
        skips = [self.inc(x)]
        for down in self.downs:
            skips.append(down(skips[-1]))
        x = skips.pop()
        for up in self.ups:
            x = up(x, skips.pop())
        return self.outc(x)


if __name__ == "__main__":
    export_image_classifier(__doc__, UNet, "unet", "examples/unet.onnx")
