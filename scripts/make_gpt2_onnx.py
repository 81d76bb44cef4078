#!/usr/bin/python3
"""Writes examples/gpt2_layer.onnx: one GPT-2 (small) transformer block (hidden 768, 12 heads
of 64, MLP of 3072, LayerNorm, gelu_new) as PyTorch's ONNX exporter writes it (opset 17,
float32), from a module written the way Hugging Face's GPT2Block is: Conv1D projections as
addmm over a view, one fused c_attn projection split into q, k and v (Split), heads split by
view + permute, the scores divided by a full([]) scale, the causal mask a slice of the
boolean `bias` buffer applied with torch.where and the dtype's minimum (Where), softmax,
gelu_new written out with tanh and pow(x, 3).
Input: x [batch, seq, 768]; batch and seq are fixed at export (--batch, --seq), so the
mask's slice bounds and the views' shapes are constants.
With --model it writes examples/gpt2.onnx instead: the whole GPT-2 small as Hugging Face's
GPT2LMHeadModel runs it, from input_ids [batch, seq] (int64) to the logits: the token
embedding (an nn.Embedding of 50257 x 768, a Gather by the ids), the position embedding of
positions 0..seq-1, 12 blocks, the final LayerNorm and the LM head tied to the token
embedding's weight.
The weights' data is dropped after the export (each initializer points at an external
file that is not shipped): tunefleet reads only their shapes, and the model stays small.
Run with Debian's python3-torch and python3-onnx:
    /usr/bin/python3 scripts/make_gpt2_onnx.py [--batch 8] [--seq 1024] [OUT]
    /usr/bin/python3 scripts/make_gpt2_onnx.py --model --batch 1 [--seq 1024] [OUT]"""
import argparse
import io
import math

import onnx
import torch
from onnx_weights import save_without_weights

HIDDEN, HEADS, FFN, MAX_POSITIONS, EPS = 768, 12, 3072, 1024, 1e-5
VOCAB, LAYERS = 50257, 12


class Conv1D(torch.nn.Module):
    """HF's Conv1D: a Linear with its weight transposed, written as addmm over a view."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = torch.nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = torch.nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones((MAX_POSITIONS, MAX_POSITIONS), dtype=torch.bool))
                             .view(1, 1, MAX_POSITIONS, MAX_POSITIONS), persistent=False)
        self.head_dim = HIDDEN // HEADS
        self.c_attn = Conv1D(3 * HIDDEN, HIDDEN)
        self.c_proj = Conv1D(HIDDEN, HIDDEN)

    def split_heads(self, t):
        t = t.view(t.size()[:-1] + (HEADS, self.head_dim))
        return t.permute(0, 2, 1, 3)

    def forward(self, x):
        query, key, value = self.c_attn(x).split(HIDDEN, dim=2)
        query, key, value = self.split_heads(query), self.split_heads(key), self.split_heads(value)
        w = torch.matmul(query, key.transpose(-1, -2))
        w = w / torch.full([], value.size(-1) ** 0.5, dtype=w.dtype, device=w.device)
        q_len, k_len = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, k_len - q_len: k_len, :k_len]
        mask_value = torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype)
        w = torch.where(causal_mask, w.to(w.dtype), mask_value)
        w = torch.nn.functional.softmax(w, dim=-1)
        out = torch.matmul(w, value)
        out = out.permute(0, 2, 1, 3).contiguous()
        out = out.view(out.size()[:-2] + (HIDDEN,))
        return self.c_proj(out)


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c_fc = Conv1D(FFN, HIDDEN)
        self.c_proj = Conv1D(HIDDEN, FFN)

    def forward(self, x):
        return self.c_proj(gelu_new(self.c_fc(x)))


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = torch.nn.LayerNorm(HIDDEN, eps=EPS)
        self.attn = Attention()
        self.ln_2 = torch.nn.LayerNorm(HIDDEN, eps=EPS)
        self.mlp = MLP()

    def forward(self, x):
        h = x + self.attn(self.ln_1(x))
        return h + self.mlp(self.ln_2(h))


class LMHeadModel(torch.nn.Module):
    """GPT2LMHeadModel's forward without a mask or a cache: wte(ids) + wpe(positions), the
    blocks, ln_f, and logits by the token embedding's weight (tied, as HF ties them)."""

    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(VOCAB, HIDDEN)
        self.wpe = torch.nn.Embedding(MAX_POSITIONS, HIDDEN)
        self.h = torch.nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = torch.nn.LayerNorm(HIDDEN, eps=EPS)

    def forward(self, input_ids):
        positions = torch.arange(0, input_ids.size(-1), dtype=torch.long).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(positions)
        for block in self.h:
            x = block(x)
        return torch.nn.functional.linear(self.ln_f(x), self.wte.weight)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--model", action="store_true", help="the whole GPT2LMHeadModel from input_ids")
    ap.add_argument("out", nargs="?")
    args = ap.parse_args()
    if args.seq > MAX_POSITIONS:
        ap.error(f"--seq {args.seq}: GPT-2's causal mask covers {MAX_POSITIONS} positions")
    name = "gpt2" if args.model else "gpt2_layer"
    with torch.no_grad():
        if args.model:
            module, example, names = LMHeadModel().eval(), torch.zeros(args.batch, args.seq, dtype=torch.long), (
                ["input_ids"], ["logits"])
        else:
            module, example, names = Block().eval(), torch.zeros(args.batch, args.seq, HIDDEN), (["x"], ["layer_out"])
        buf = io.BytesIO()
        torch.onnx.export(module, (example,), buf, opset_version=17, input_names=names[0], output_names=names[1])
    # The causal mask, a window of the bool buffer, is folded by the exporter into a
    # Constant node of 1 MiB: as an initializer, its data is dropped with the weights'.
    save_without_weights(onnx.load_from_string(buf.getvalue()), args.out or f"examples/{name}.onnx", name,
                         constants_too=True)


if __name__ == "__main__":
    main()
