#!/usr/bin/python3
"""Writes examples/cyclegan_generator.onnx: CycleGAN's ResNet generator (Zhu et al. 2017,
junyanz/pytorch-CycleGAN-and-pix2pix `ResnetGenerator`, 9 blocks, instance norm) written
out in torch: ReflectionPad2d(3) and a 7x7 convolution to 64 channels, two 3x3
convolutions at stride 2 to 256, nine residual blocks (ReflectionPad2d(1), 3x3
convolution, InstanceNorm2d, ReLU, again without the ReLU, added to the block's input),
two 3x3 transposed convolutions at stride 2 (padding 1, output_padding 1) back to 64
channels, ReflectionPad2d(3), a 7x7 convolution to RGB and Tanh; every normalisation an
InstanceNorm2d without affine parameters, each followed by ReLU. What it exercises:
reflect padding (a Pad kernel), InstanceNorm, and the transposed convolutions whose
windows overlap (a Pad kernel dilating the input, then a convolution).
Input x [batch, 3, 256, 256], output image [batch, 3, 256, 256]; the weights' data is
dropped (scripts/onnx_weights.py). Run with Debian's python3-torch and python3-onnx:
    /usr/bin/python3 scripts/make_cyclegan_onnx.py [--batch 1] [OUT]"""
import torch
from onnx_weights import export_image_classifier

nn = torch.nn


def conv_norm_relu(conv):
    return [conv, nn.InstanceNorm2d(conv.out_channels), nn.ReLU(True)]


class ResnetBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(nn.ReflectionPad2d(1), *conv_norm_relu(nn.Conv2d(c, c, 3)),
                                  nn.ReflectionPad2d(1), nn.Conv2d(c, c, 3), nn.InstanceNorm2d(c))

    def forward(self, x):
        return x + self.body(x)


def generator(blocks=9, width=64):
    layers = [nn.ReflectionPad2d(3), *conv_norm_relu(nn.Conv2d(3, width, 7))]
    for m in (1, 2):
        layers += conv_norm_relu(nn.Conv2d(width * m, width * m * 2, 3, stride=2, padding=1))
    layers += [ResnetBlock(width * 4) for _ in range(blocks)]
    for m in (4, 2):
        layers += conv_norm_relu(nn.ConvTranspose2d(width * m, width * m // 2, 3, stride=2, padding=1,
                                                    output_padding=1))
    layers += [nn.ReflectionPad2d(3), nn.Conv2d(width, 3, 7), nn.Tanh()]
    return nn.Sequential(*layers)


if __name__ == "__main__":
    export_image_classifier(__doc__, generator, "cyclegan_generator", "examples/cyclegan_generator.onnx", batch=1,
                            image=(3, 256, 256), output="image")
