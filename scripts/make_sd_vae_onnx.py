#!/usr/bin/python3
"""Writes examples/sd_vae_encoder.onnx or, with --decoder, examples/sd_vae_decoder.onnx:
Stable Diffusion 1.x's VAE (diffusers' AutoencoderKL) written out in torch.
The encoder (and quant_conv): a 3x3 convolution to 128 channels; four stages of two ResNet
blocks (GroupNorm of 32 groups, SiLU, 3x3 convolution, twice; a 1x1 shortcut where the
width changes) at 128, 256, 512 and 512 channels, the first three each ending in a
downsampling 3x3 convolution at stride 2 after F.pad(x, (0, 1, 0, 1)); a middle of a
ResNet block, single-head self-attention over the H*W positions (GroupNorm, q, k, v and
output projections, a residual) and another ResNet block; then GroupNorm, SiLU, a 3x3
convolution to the latent's mean and log-variance (8 channels) and the 1x1 quant_conv. What it exercises: GroupNorm (an InstanceNormalization of
x viewed [N, 32, -1]), the zero Pad the importer folds into the strided convolution, and
attention over 4,096 positions at 512x512. Input x [batch, 3, 512, 512], output moments
[batch, 8, 64, 64].
The decoder (after post_quant_conv), what text-to-image runs once per image: a 3x3
convolution from the latent's 4 channels to 512, the same middle, then four stages of
three ResNet blocks at 512, 512, 256 and 128 channels, the first three each ending in a
nearest x2 upsampling (F.interpolate: a Resize) and a 3x3 convolution; GroupNorm, SiLU
and a 3x3 convolution to RGB. Input x [batch, 4, 64, 64], output image [batch, 3, 512, 512].
The weights' data is dropped (scripts/onnx_weights.py). Run with Debian's python3-torch
and python3-onnx:
    /usr/bin/python3 scripts/make_sd_vae_onnx.py [--decoder] [--batch 1] [OUT]"""
import sys

import torch
import torch.nn.functional as F
from onnx_weights import export_image_classifier


def norm(c):
    return torch.nn.GroupNorm(32, c, eps=1e-6)


class ResnetBlock(torch.nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.norm1, self.conv1 = norm(cin), torch.nn.Conv2d(cin, cout, 3, padding=1)
        self.norm2, self.conv2 = norm(cout), torch.nn.Conv2d(cout, cout, 3, padding=1)
        self.shortcut = torch.nn.Conv2d(cin, cout, 1) if cin != cout else torch.nn.Identity()

    def forward(self, x):
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.conv2(F.silu(self.norm2(h)))
        return self.shortcut(x) + h


class Downsample(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = torch.nn.Conv2d(c, c, 3, stride=2)

    def forward(self, x):
        return self.conv(F.pad(x, (0, 1, 0, 1)))


class Attention(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm = norm(c)
        self.q, self.k, self.v, self.out = (torch.nn.Linear(c, c) for _ in range(4))

    def forward(self, x):
        n, c, h, w = x.shape
        t = self.norm(x).view(n, c, h * w).transpose(1, 2)
        scores = self.q(t) @ self.k(t).transpose(1, 2) * c ** -0.5
        a = self.out(scores.softmax(dim=-1) @ self.v(t))
        return x + a.transpose(1, 2).reshape(n, c, h, w)


class Upsample(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = torch.nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return self.conv(F.interpolate(x, scale_factor=2.0, mode="nearest"))


class Encoder(torch.nn.Module):
    def __init__(self, widths=(128, 256, 512, 512), latent=4):
        super().__init__()
        self.conv_in = torch.nn.Conv2d(3, widths[0], 3, padding=1)
        layers, cin = [], widths[0]
        for i, cout in enumerate(widths):
            layers += [ResnetBlock(cin, cout), ResnetBlock(cout, cout)]
            if i < len(widths) - 1:
                layers.append(Downsample(cout))
            cin = cout
        self.down = torch.nn.Sequential(*layers)
        self.mid = torch.nn.Sequential(ResnetBlock(cin, cin), Attention(cin), ResnetBlock(cin, cin))
        self.norm_out = norm(cin)
        self.conv_out = torch.nn.Conv2d(cin, 2 * latent, 3, padding=1)
        self.quant_conv = torch.nn.Conv2d(2 * latent, 2 * latent, 1)

    def forward(self, x):
        h = self.mid(self.down(self.conv_in(x)))
        return self.quant_conv(self.conv_out(F.silu(self.norm_out(h))))


class Decoder(torch.nn.Module):
    def __init__(self, widths=(512, 512, 256, 128), latent=4):
        super().__init__()
        self.post_quant_conv = torch.nn.Conv2d(latent, latent, 1)
        self.conv_in = torch.nn.Conv2d(latent, widths[0], 3, padding=1)
        cin = widths[0]
        self.mid = torch.nn.Sequential(ResnetBlock(cin, cin), Attention(cin), ResnetBlock(cin, cin))
        layers = []
        for i, cout in enumerate(widths):
            layers += [ResnetBlock(cin, cout), ResnetBlock(cout, cout), ResnetBlock(cout, cout)]
            if i < len(widths) - 1:
                layers.append(Upsample(cout))
            cin = cout
        self.up = torch.nn.Sequential(*layers)
        self.norm_out = norm(cin)
        self.conv_out = torch.nn.Conv2d(cin, 3, 3, padding=1)

    def forward(self, z):
        h = self.up(self.mid(self.conv_in(self.post_quant_conv(z))))
        return self.conv_out(F.silu(self.norm_out(h)))


if __name__ == "__main__":
    argv = sys.argv[1:]
    if "--decoder" in argv:
        argv.remove("--decoder")
        export_image_classifier(__doc__, Decoder, "sd_vae_decoder", "examples/sd_vae_decoder.onnx", batch=1,
                                image=(4, 64, 64), output="image", args=argv)
    else:
        export_image_classifier(__doc__, Encoder, "sd_vae_encoder", "examples/sd_vae_encoder.onnx", batch=1,
                                image=(3, 512, 512), output="moments", args=argv)
