#!/usr/bin/python3
"""Writes examples/patchgan_discriminator.onnx: the 70x70 PatchGAN discriminator of pix2pix
and CycleGAN (Isola et al. 2017, Zhu et al. 2017; junyanz/pytorch-CycleGAN-and-pix2pix
`NLayerDiscriminator`, 3 layers, 64 filters, instance norm as CycleGAN trains it) written
out in torch: a 4x4 convolution at stride 2 to 64 channels and LeakyReLU(0.2); two 4x4
convolutions at stride 2 to 128 and 256, each with InstanceNorm2d and LeakyReLU(0.2); one
at stride 1 to 512, InstanceNorm2d and LeakyReLU(0.2); and a 4x4 convolution at stride 1
to one channel, the patch scores. What it exercises: LeakyRelu kernels, and LeakyRelu as
the epilogue of a convolution and of an InstanceNorm for `fuse`.
Input x [batch, 3, 256, 256], output scores [batch, 1, 30, 30]; the weights' data is
dropped (scripts/onnx_weights.py). Run with Debian's python3-torch and python3-onnx:
    /usr/bin/python3 scripts/make_patchgan_onnx.py [--batch 1] [OUT]"""
import torch
from onnx_weights import export_image_classifier

nn = torch.nn


def discriminator(channels=3, width=64, layers=3):
    model = [nn.Conv2d(channels, width, 4, stride=2, padding=1), nn.LeakyReLU(0.2, True)]
    mult = 1
    for n in range(1, layers + 1):
        prev, mult = mult, min(2 ** n, 8)
        model += [nn.Conv2d(width * prev, width * mult, 4, stride=2 if n < layers else 1, padding=1),
                  nn.InstanceNorm2d(width * mult), nn.LeakyReLU(0.2, True)]
    model += [nn.Conv2d(width * mult, 1, 4, stride=1, padding=1)]
    return nn.Sequential(*model)


if __name__ == "__main__":
    export_image_classifier(__doc__, discriminator, "patchgan_discriminator", "examples/patchgan_discriminator.onnx",
                            batch=1, image=(3, 256, 256), output="scores")
