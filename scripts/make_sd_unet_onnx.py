#!/usr/bin/python3
"""Writes examples/sd_unet.onnx: Stable Diffusion 1.5's denoising UNet (diffusers'
UNet2DConditionModel at its SD 1.5 configuration) written out in torch, the model a
text-to-image pipeline runs at every sampling step: the timestep's sinusoidal embedding
(cos first) and its two-layer MLP; a 3x3 convolution from the latent's 4 channels to 320;
down stages at 320, 640, 1280 and 1280 channels of two ResNet blocks each (GroupNorm,
SiLU, 3x3 convolution; the time embedding projected and added per channel), the first
three with a spatial transformer after each block (GroupNorm, a 1x1 projection in,
self-attention, cross-attention to the text encoder's 77 states of 768, a GEGLU
feed-forward, each after a LayerNorm and added back, a 1x1 projection out) and a stride-2
3x3 convolution between stages; a middle of ResNet, transformer, ResNet; up stages of three
ResNet blocks each reading the matching down activation joined on the channels, the last
three with transformers, nearest x2 upsampling and a 3x3 convolution between stages; then
GroupNorm, SiLU and a 3x3 convolution back to 4 channels. Attention has 8 heads.
Inputs sample [batch, 4, 64, 64] (a 512x512 image's latent), timestep [batch] (int64) and
encoder_hidden_states [batch, 77, 768]; output noise [batch, 4, 64, 64]. Batch 2 by default:
classifier-free guidance runs the conditional and unconditional halves together.
The weights' data is dropped (scripts/onnx_weights.py). Run with Debian's python3-torch and
python3-onnx:
    /usr/bin/python3 scripts/make_sd_unet_onnx.py [--batch 2] [OUT]"""
import argparse
import math
import os
import tempfile

import onnx
import torch
import torch.nn.functional as F
from onnx_weights import save_without_weights

nn = torch.nn
TEMB, CONTEXT, HEADS = 1280, 768, 8


def norm(c):
    return nn.GroupNorm(32, c, eps=1e-5)


class ResnetBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.norm1, self.conv1 = norm(cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.time_emb_proj = nn.Linear(TEMB, cout)
        self.norm2, self.conv2 = norm(cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.shortcut = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time_emb_proj(F.silu(temb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return self.shortcut(x) + h


class Attention(nn.Module):
    def __init__(self, c, context=None):
        super().__init__()
        self.to_q = nn.Linear(c, c, bias=False)
        self.to_k = nn.Linear(context or c, c, bias=False)
        self.to_v = nn.Linear(context or c, c, bias=False)
        self.to_out = nn.Linear(c, c)

    def forward(self, x, context=None):
        context = x if context is None else context
        b, n, c = x.shape
        heads = lambda t: t.reshape(b, -1, HEADS, c // HEADS).transpose(1, 2)
        q, k, v = heads(self.to_q(x)), heads(self.to_k(context)), heads(self.to_v(context))
        scores = (q @ k.transpose(-1, -2)) * (c // HEADS) ** -0.5
        out = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, c)
        return self.to_out(out)


class GEGLU(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.proj = nn.Linear(c, 8 * c)
        self.out = nn.Linear(4 * c, c)

    def forward(self, x):
        h, gate = self.proj(x).chunk(2, dim=-1)
        return self.out(h * F.gelu(gate))


class Transformer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm, self.proj_in, self.proj_out = nn.GroupNorm(32, c, eps=1e-6), nn.Conv2d(c, c, 1), nn.Conv2d(c, c, 1)
        self.norm1, self.attn1 = nn.LayerNorm(c), Attention(c)
        self.norm2, self.attn2 = nn.LayerNorm(c), Attention(c, CONTEXT)
        self.norm3, self.ff = nn.LayerNorm(c), GEGLU(c)

    def forward(self, x, context):
        b, c, h, w = x.shape
        t = self.proj_in(self.norm(x)).reshape(b, c, h * w).transpose(1, 2)
        t = t + self.attn1(self.norm1(t))
        t = t + self.attn2(self.norm2(t), context)
        t = t + self.ff(self.norm3(t))
        return x + self.proj_out(t.transpose(1, 2).reshape(b, c, h, w))


class UNet(nn.Module):
    WIDTHS = (320, 640, 1280, 1280)

    def __init__(self):
        super().__init__()
        self.time_1, self.time_2 = nn.Linear(320, TEMB), nn.Linear(TEMB, TEMB)
        self.conv_in = nn.Conv2d(4, 320, 3, padding=1)
        self.down, self.down_attn, self.downsample, skips, cin = nn.ModuleList(), nn.ModuleList(), nn.ModuleList(), [320], 320
        for i, c in enumerate(self.WIDTHS):
            self.down.append(nn.ModuleList([ResnetBlock(cin, c), ResnetBlock(c, c)]))
            self.down_attn.append(nn.ModuleList([Transformer(c), Transformer(c)] if i < 3 else []))
            skips += [c, c]
            if i < 3:
                self.downsample.append(nn.Conv2d(c, c, 3, stride=2, padding=1))
                skips.append(c)
            cin = c
        self.mid = nn.ModuleList([ResnetBlock(cin, cin), Transformer(cin), ResnetBlock(cin, cin)])
        self.up, self.up_attn, self.upsample = nn.ModuleList(), nn.ModuleList(), nn.ModuleList()
        for i, c in enumerate(reversed(self.WIDTHS)):
            self.up.append(nn.ModuleList([ResnetBlock(cin + skips.pop(), c) for cin in (cin, c, c)]))
            self.up_attn.append(nn.ModuleList([Transformer(c) for _ in range(3)] if i > 0 else []))
            if i < 3:
                self.upsample.append(nn.Conv2d(c, c, 3, padding=1))
            cin = c
        self.norm_out, self.conv_out = norm(320), nn.Conv2d(320, 4, 3, padding=1)

    def forward(self, sample, timestep, encoder_hidden_states):
        half = 160
        freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
        angles = timestep[:, None].float() * freqs[None, :]
        temb = self.time_2(F.silu(self.time_1(torch.cat([torch.cos(angles), torch.sin(angles)], dim=-1))))
        x = self.conv_in(sample)
        skips = [x]
        for i, blocks in enumerate(self.down):
            for j, block in enumerate(blocks):
                x = block(x, temb)
                if len(self.down_attn[i]):
                    x = self.down_attn[i][j](x, encoder_hidden_states)
                skips.append(x)
            if i < 3:
                x = self.downsample[i](x)
                skips.append(x)
        x = self.mid[2](self.mid[1](self.mid[0](x, temb), encoder_hidden_states), temb)
        for i, blocks in enumerate(self.up):
            for j, block in enumerate(blocks):
                x = block(torch.cat([x, skips.pop()], dim=1), temb)
                if len(self.up_attn[i]):
                    x = self.up_attn[i][j](x, encoder_hidden_states)
            if i < 3:
                x = self.upsample[i](F.interpolate(x, scale_factor=2.0, mode="nearest"))
        return self.conv_out(F.silu(self.norm_out(x)))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("out", nargs="?", default="examples/sd_unet.onnx")
    args = ap.parse_args()
    # Its 3.4 GB of float32 weights exceed protobuf's 2 GB: exported to a scratch folder with
    # external data, loaded back without it, and saved as the other examples are.
    with torch.no_grad(), tempfile.TemporaryDirectory() as scratch:
        inputs = (torch.zeros(args.batch, 4, 64, 64), torch.full((args.batch,), 999, dtype=torch.int64),
                  torch.zeros(args.batch, 77, CONTEXT))
        path = os.path.join(scratch, "sd_unet.onnx")
        torch.onnx.export(UNet().eval(), inputs, path, opset_version=17,
                          input_names=["sample", "timestep", "encoder_hidden_states"], output_names=["noise"])
        model = onnx.load(path, load_external_data=False)
    save_without_weights(model, args.out, "sd_unet")
