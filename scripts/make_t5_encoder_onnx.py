#!/usr/bin/python3
"""Writes examples/t5_encoder.onnx: the encoder of T5 v1.1 base (google/t5-v1_1-base: 12
layers, d_model 768, 12 heads of 64, gated-GELU feed-forward of 2048, vocabulary 32128), the
text encoder family of FLAN-T5 and, at XXL size, of Stable Diffusion 3 and Flux, as PyTorch's
ONNX exporter writes it (opset 17, float32) from a module written the way Hugging Face's
T5EncoderModel is:
- the token embedding, a Gather of input_ids;
- per layer, pre-norm: T5LayerNorm (an RMSNorm: x * rsqrt(mean(x^2) + eps) * weight, the
  variance in float32), self-attention without bias or score scaling, its scores plus the
  position bias, softmax in float32, the output projection and the residual; then
  T5LayerNorm, the gated-GELU feed-forward (gelu_new(wi_0(x)) * wi_1(x), gelu_new the tanh
  approximation written out) and wo, and the residual;
- the position bias computed once, in the first layer, as T5Attention.compute_bias does:
  32 buckets of the key's distance to the query (bidirectional: the sign, exact up to 8,
  log-spaced up to 128), an Embedding of 32 x 12 permuted to [1, 12, seq, seq], plus the
  extended attention mask (1 - mask[:, None, None, :]) * min, and passed to every layer;
- the final T5LayerNorm.
Inputs: input_ids and attention_mask [batch, seq], int64; batch and seq are fixed at export
(--batch 32, --seq 128), so the buckets are constants and the bias is computed at compile
time. Output: last_hidden_state [batch, seq, 768]. The weights' data is dropped after the
export: tunefleet reads only their shapes, and the model stays small.
Run with Debian's python3-torch and python3-onnx:
    /usr/bin/python3 scripts/make_t5_encoder_onnx.py [--batch 32] [--seq 128] [OUT]"""
import argparse
import io
import math

import onnx
import torch
from onnx_weights import save_without_weights
from relative_position import relative_position_bucket

D_MODEL, D_KV, D_FF, LAYERS, HEADS, VOCAB, EPS = 768, 64, 2048, 12, 12, 32128, 1e-6
BUCKETS = 32  # of distances up to 128


class T5LayerNorm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(D_MODEL))

    def forward(self, x):
        variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + EPS))


def gelu_new(x):  # transformers' NewGELUActivation
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        inner = HEADS * D_KV
        self.attention_norm = T5LayerNorm()
        self.q = torch.nn.Linear(D_MODEL, inner, bias=False)
        self.k = torch.nn.Linear(D_MODEL, inner, bias=False)
        self.v = torch.nn.Linear(D_MODEL, inner, bias=False)
        self.o = torch.nn.Linear(inner, D_MODEL, bias=False)
        self.ff_norm = T5LayerNorm()
        self.wi_0 = torch.nn.Linear(D_MODEL, D_FF, bias=False)
        self.wi_1 = torch.nn.Linear(D_MODEL, D_FF, bias=False)
        self.wo = torch.nn.Linear(D_FF, D_MODEL, bias=False)

    def heads(self, t):
        return t.view(t.size(0), -1, HEADS, D_KV).transpose(1, 2)

    def forward(self, x, position_bias):
        h = self.attention_norm(x)
        q, k, v = self.heads(self.q(h)), self.heads(self.k(h)), self.heads(self.v(h))
        scores = torch.matmul(q, k.transpose(3, 2)) + position_bias  # T5 does not scale its scores
        weights = torch.softmax(scores.float(), dim=-1).type_as(scores)
        context = torch.matmul(weights, v).transpose(1, 2).contiguous().view(x.size(0), -1, HEADS * D_KV)
        x = x + self.o(context)
        h = self.ff_norm(x)
        return x + self.wo(gelu_new(self.wi_0(h)) * self.wi_1(h))


class T5Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(VOCAB, D_MODEL)
        self.relative_attention_bias = torch.nn.Embedding(BUCKETS, HEADS)
        self.block = torch.nn.ModuleList(Layer() for _ in range(LAYERS))
        self.final_layer_norm = T5LayerNorm()

    def compute_bias(self, qlen, klen):
        context_position = torch.arange(qlen, dtype=torch.long)[:, None]
        memory_position = torch.arange(klen, dtype=torch.long)[None, :]
        buckets = relative_position_bucket(memory_position - context_position, num_buckets=BUCKETS)
        return self.relative_attention_bias(buckets).permute([2, 0, 1]).unsqueeze(0)  # [1, heads, q, k]

    def forward(self, input_ids, attention_mask):
        x = self.embed_tokens(input_ids)
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        position_bias = self.compute_bias(input_ids.size(1), input_ids.size(1)) + mask
        for layer in self.block:
            x = layer(x, position_bias)
        return self.final_layer_norm(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("out", nargs="?", default="examples/t5_encoder.onnx")
    args = ap.parse_args()
    torch.nn.Linear.reset_parameters = lambda self: None  # the weights' values are dropped: skip their init
    with torch.no_grad():
        model = T5Encoder().eval()
        ids = torch.zeros(args.batch, args.seq, dtype=torch.long)
        buf = io.BytesIO()
        torch.onnx.export(model, (ids, torch.ones_like(ids)), buf, opset_version=17,
                          input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"])
    save_without_weights(onnx.load_from_string(buf.getvalue()), args.out, "t5_encoder", constants_too=True)


if __name__ == "__main__":
    main()
