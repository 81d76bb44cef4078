"""Writes examples/whisper_base_encoder.onnx: Whisper-base's audio encoder (Radford et al.
2022; 30 s of audio as 80 mel bins x 3,000 frames, width 512, 8 heads, 6 pre-LayerNorm
blocks, MLP 2,048) as PyTorch's ONNX exporter writes it (opset 17, float32), from modules
written the way openai/whisper's model.py writes them: two 1-D convolutions of kernel 3
(the second at stride 2, to 1,500 frames) each followed by GELU, the sinusoidal
positions added, blocks of self-attention (query, key and value Linear layers, the key
without a bias, q and k each scaled by head_dim ** -0.25) and a GELU MLP, then ln_post.
Input: mel [batch, 80, 3000]; batch is fixed at export (--batch).
The weights' data is dropped after the export (each initializer points at an external
file that is not shipped): tunefleet reads only their shapes, and the model stays small.
Run with Debian's python3-torch and python3-onnx:
    /usr/bin/python3 scripts/make_whisper_onnx.py [--batch 8] [OUT]"""
import argparse
import math

import torch
from onnx_weights import export_without_weights

nn = torch.nn
MELS, FRAMES, WIDTH, HEADS, LAYERS = 80, 3000, 512, 8, 6


def sinusoids(length, channels, max_timescale=10000):
    increment = math.log(max_timescale) / (channels // 2 - 1)
    inv_timescales = torch.exp(-increment * torch.arange(channels // 2))
    scaled = torch.arange(length)[:, None] * inv_timescales[None, :]
    return torch.cat([torch.sin(scaled), torch.cos(scaled)], dim=1)


class MultiHeadAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.query, self.key = nn.Linear(WIDTH, WIDTH), nn.Linear(WIDTH, WIDTH, bias=False)
        self.value, self.out = nn.Linear(WIDTH, WIDTH), nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        n_batch, n_ctx, n_state = x.shape
        scale = (n_state // HEADS) ** -0.25
        q = self.query(x).view(n_batch, n_ctx, HEADS, -1).permute(0, 2, 1, 3) * scale
        k = self.key(x).view(n_batch, n_ctx, HEADS, -1).permute(0, 2, 3, 1) * scale
        v = self.value(x).view(n_batch, n_ctx, HEADS, -1).permute(0, 2, 1, 3)
        w = torch.softmax(q @ k, dim=-1)
        return self.out((w @ v).permute(0, 2, 1, 3).flatten(start_dim=2))


class ResidualAttentionBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn, self.attn_ln = MultiHeadAttention(), nn.LayerNorm(WIDTH)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH))
        self.mlp_ln = nn.LayerNorm(WIDTH)

    def forward(self, x):
        x = x + self.attn(self.attn_ln(x))
        return x + self.mlp(self.mlp_ln(x))


class AudioEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(MELS, WIDTH, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(WIDTH, WIDTH, kernel_size=3, stride=2, padding=1)
        self.register_buffer("positional_embedding", sinusoids(FRAMES // 2, WIDTH))
        self.blocks = nn.Sequential(*[ResidualAttentionBlock() for _ in range(LAYERS)])
        self.ln_post = nn.LayerNorm(WIDTH)

    def forward(self, mel):
        x = nn.functional.gelu(self.conv1(mel))
        x = nn.functional.gelu(self.conv2(x)).permute(0, 2, 1)
        return self.ln_post(self.blocks(x + self.positional_embedding))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("out", nargs="?", default="examples/whisper_base_encoder.onnx")
    args = ap.parse_args()
    export_without_weights(AudioEncoder(), (torch.zeros(args.batch, MELS, FRAMES),), ["mel"], ["audio_features"], args.out,
                           "whisper_base_encoder", constants_too=True)


if __name__ == "__main__":
    main()
