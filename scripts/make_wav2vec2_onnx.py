"""Writes examples/wav2vec2_base.onnx: wav2vec 2.0 base (Baevski et al. 2020) as Hugging
Face's Wav2Vec2Model writes it, exported by PyTorch's ONNX exporter (opset 17, float32):
the feature encoder's seven 1-D convolutions over raw 16 kHz audio (kernel 10 stride 5,
four of kernel 3 stride 2, two of kernel 2 stride 2; 512 channels; the first followed by
a GroupNorm of one channel a group, each by GELU), the feature projection (LayerNorm,
Linear to 768), the convolutional position embedding (a grouped 1-D convolution of
kernel 128 in 16 groups, its weight norm folded at export, its last frame cut, GELU),
and 12 post-LayerNorm transformer layers (12 heads, MLP 3,072).
Input: input_values [batch, samples]; batch and length are fixed at export (--batch,
--seconds).
The weights' data is dropped after the export (each initializer points at an external
file that is not shipped): tunefleet reads only their shapes, and the model stays small.
Run with Debian's python3-torch and python3-onnx:
    /usr/bin/python3 scripts/make_wav2vec2_onnx.py [--batch 4] [--seconds 10] [OUT]"""
import argparse

import torch
from onnx_weights import export_without_weights

nn = torch.nn
CONV = [(512, 10, 5)] + [(512, 3, 2)] * 4 + [(512, 2, 2)] * 2
HIDDEN, HEADS, FFN, LAYERS, EPS = 768, 12, 3072, 12, 1e-5


class FeatureEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        layers, inp = [], 1
        for i, (dim, kernel, stride) in enumerate(CONV):
            layers.append(nn.Conv1d(inp, dim, kernel, stride=stride, bias=False))
            if i == 0:
                layers.append(nn.GroupNorm(dim, dim, affine=True))
            layers.append(nn.GELU())
            inp = dim
        self.conv_layers = nn.Sequential(*layers)

    def forward(self, input_values):
        return self.conv_layers(input_values[:, None])


class PositionalConvEmbedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.utils.weight_norm(nn.Conv1d(HIDDEN, HIDDEN, 128, padding=64, groups=16), name="weight", dim=2)

    def forward(self, x):  # x [batch, frames, hidden]
        y = self.conv(x.transpose(1, 2))[:, :, :-1]  # SamePad: an even kernel gives one frame too many
        return nn.functional.gelu(y).transpose(1, 2)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.head_dim = HIDDEN // HEADS
        self.q_proj, self.k_proj = nn.Linear(HIDDEN, HIDDEN), nn.Linear(HIDDEN, HIDDEN)
        self.v_proj, self.out_proj = nn.Linear(HIDDEN, HIDDEN), nn.Linear(HIDDEN, HIDDEN)

    def split_heads(self, t):
        return t.view(t.size(0), t.size(1), HEADS, self.head_dim).transpose(1, 2)

    def forward(self, x):
        q = self.split_heads(self.q_proj(x) * self.head_dim ** -0.5)
        k, v = self.split_heads(self.k_proj(x)), self.split_heads(self.v_proj(x))
        w = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
        out = (w @ v).transpose(1, 2).reshape(x.size(0), x.size(1), HIDDEN)
        return self.out_proj(out)


class EncoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention, self.layer_norm = Attention(), nn.LayerNorm(HIDDEN, eps=EPS)
        self.intermediate_dense, self.output_dense = nn.Linear(HIDDEN, FFN), nn.Linear(FFN, HIDDEN)
        self.final_layer_norm = nn.LayerNorm(HIDDEN, eps=EPS)

    def forward(self, x):
        x = self.layer_norm(x + self.attention(x))
        return self.final_layer_norm(x + self.output_dense(nn.functional.gelu(self.intermediate_dense(x))))


class Wav2Vec2Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.feature_extractor = FeatureEncoder()
        self.feature_layer_norm = nn.LayerNorm(512, eps=EPS)
        self.feature_projection = nn.Linear(512, HIDDEN)
        self.pos_conv_embed = PositionalConvEmbedding()
        self.encoder_layer_norm = nn.LayerNorm(HIDDEN, eps=EPS)
        self.layers = nn.Sequential(*[EncoderLayer() for _ in range(LAYERS)])

    def forward(self, input_values):
        x = self.feature_extractor(input_values).transpose(1, 2)
        x = self.feature_projection(self.feature_layer_norm(x))
        x = self.encoder_layer_norm(x + self.pos_conv_embed(x))
        return self.layers(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("out", nargs="?", default="examples/wav2vec2_base.onnx")
    args = ap.parse_args()
    export_without_weights(Wav2Vec2Base(), (torch.zeros(args.batch, 16000 * args.seconds),), ["input_values"],
                           ["last_hidden_state"], args.out, "wav2vec2_base", constants_too=True)


if __name__ == "__main__":
    main()
