#!/usr/bin/python3
"""Writes examples/llama_layer.onnx: one Llama-2-7B decoder layer (hidden 4096, 32 heads of
128, SwiGLU MLP of 11008, RMSNorm, rotary position embeddings) as PyTorch's ONNX exporter
writes it (opset 17, float32), from a module written the way Hugging Face's
LlamaDecoderLayer is: RMSNorm in float32 with rsqrt, q/k/v projections split into heads
by view + transpose, apply_rotary_pos_emb with rotate_half (Slice, Neg, Concat), the
additive causal mask as an input, softmax in float32, SiLU as x * sigmoid(x).
`--config llama3-8b` writes examples/llama3_layer.onnx: Llama-3-8B's layer, grouped-query
attention (8 key/value heads repeated for the 32 query heads by HF's repeat_kv: Unsqueeze,
Expand, Reshape), MLP of 14336.
Inputs: x [batch, seq, 4096], cos and sin [batch, seq, 128] (HF's position_embeddings),
mask [batch, 1, seq, seq]; batch and seq are fixed at export (--batch, --seq), since
rotate_half's bounds and the heads' view are constants only in a fixed-shape export.
`--past N` writes a decoding step with a KV cache (examples/llama_decode_layer.onnx with
`--seq 1 --past 2047`): inputs past_k and past_v [batch, key/value heads, N, 128], joined
with the new keys and values on the sequence axis (Concat), the mask [batch, 1, seq,
N + seq], outputs the layer's and the present keys and values.
`--model --config tinyllama-1.1b --layers N OUT` writes TinyLlama-1.1B's causal LM with its
first N layers (of grouped-query attention, 4 key/value heads) as HF's LlamaForCausalLM runs
a prompt, from input_ids and attention_mask [batch, seq] (int64) to the logits: the token
embedding a Gather, RoPE's cos and sin computed from the positions as transformers >= 4.38
does (constants at a fixed shape, which the importer computes at compile time), the causal
mask plus the padding mask (1 - attention_mask) * min, the final RMSNorm and lm_head. N is
at most 8: the exporter holds the weights in one protobuf of at most 2 GB (all 22 layers in
float32 are 4.4 GB), so no whole-model example is shipped; 2 layers at sequence 256 import
to 49 kernels.
`--dynamic` exports batch and seq as dynamic axes instead (examples/llama_dynamic_layer.onnx):
the views' shapes and rotate_half's bounds are then computed from Shape ops, which the
import folds once --dim batch=N --dim seq=N size them.
The weights' data is dropped after the export (each initializer points at an external
file that is not shipped): tunefleet reads only their shapes, and the model stays small.
Run with Debian's python3-torch and python3-onnx:
    /usr/bin/python3 scripts/make_llama_onnx.py [--config llama2-7b] [--batch 1] [--seq 2048] [--past 0] [OUT]
    /usr/bin/python3 scripts/make_llama_onnx.py --model --config tinyllama-1.1b [--layers 2] [--seq 2048] [OUT]"""
import argparse
import io
import math

import onnx
import torch
from onnx_weights import save_without_weights

CONFIGS = {  # hidden, heads, key/value heads, head dim, MLP, RMSNorm epsilon
    "llama2-7b": (4096, 32, 32, 128, 11008, 1e-6),
    "llama3-8b": (4096, 32, 8, 128, 14336, 1e-5),
    "tinyllama-1.1b": (2048, 32, 4, 64, 5632, 1e-5),
}
MODELS = {"tinyllama-1.1b": (32000, 22, 10000.0)}  # vocabulary, layers, RoPE theta: the ones --model exports
HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, EPS = CONFIGS["llama2-7b"]


class RMSNorm(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(n))

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + EPS)
        return self.weight * x.to(dtype)


def repeat_kv(h, n_rep):
    b, kv, s, d = h.shape
    if n_rep == 1:
        return h
    h = h[:, :, None, :, :].expand(b, kv, n_rep, s, d)
    return h.reshape(b, kv * n_rep, s, d)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = torch.nn.Linear(HIDDEN, HEADS * HEAD_DIM, bias=False)
        self.k_proj = torch.nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM, bias=False)
        self.v_proj = torch.nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM, bias=False)
        self.o_proj = torch.nn.Linear(HEADS * HEAD_DIM, HIDDEN, bias=False)

    def forward(self, x, cos, sin, mask, past_k=None, past_v=None):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, HEADS, HEAD_DIM).transpose(1, 2)
        k = self.k_proj(x).view(b, s, KV_HEADS, HEAD_DIM).transpose(1, 2)
        v = self.v_proj(x).view(b, s, KV_HEADS, HEAD_DIM).transpose(1, 2)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = (q * cos) + (rotate_half(q) * sin)
        k = (k * cos) + (rotate_half(k) * sin)
        if past_k is not None:
            k, v = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)
        present = (k, v)
        k, v = repeat_kv(k, HEADS // KV_HEADS), repeat_kv(v, HEADS // KV_HEADS)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(HEAD_DIM)
        scores = scores + mask
        probs = torch.nn.functional.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        context = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, HIDDEN)
        return self.o_proj(context), present


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj = torch.nn.Linear(HIDDEN, FFN, bias=False)
        self.up_proj = torch.nn.Linear(HIDDEN, FFN, bias=False)
        self.down_proj = torch.nn.Linear(FFN, HIDDEN, bias=False)

    def forward(self, x):
        return self.down_proj(torch.nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm = RMSNorm(HIDDEN)
        self.self_attn = Attention()
        self.post_attention_layernorm = RMSNorm(HIDDEN)
        self.mlp = MLP()

    def forward(self, x, cos, sin, mask, past_k=None, past_v=None):
        attn, present = self.self_attn(self.input_layernorm(x), cos, sin, mask, past_k, past_v)
        h = x + attn
        out = h + self.mlp(self.post_attention_layernorm(h))
        return out if past_k is None else (out, *present)


class CausalLM(torch.nn.Module):
    def __init__(self, vocab, layers, theta):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(vocab, HIDDEN)
        self.layers = torch.nn.ModuleList(DecoderLayer() for _ in range(layers))
        self.norm = RMSNorm(HIDDEN)
        self.lm_head = torch.nn.Linear(HIDDEN, vocab, bias=False)
        self.theta = theta

    def forward(self, input_ids, attention_mask):
        b, s = input_ids.shape
        # HF's LlamaRotaryEmbedding.forward (transformers >= 4.38): the angles by a MatMul of
        # the inverse frequencies and the positions, cos and sin [1, s, d], broadcast over the batch.
        inv_freq = 1.0 / (self.theta ** (torch.arange(0, HEAD_DIM, 2, dtype=torch.float32) / HEAD_DIM))
        position_ids = torch.arange(s)[None]
        inv_freq_expanded = inv_freq[None, :, None].expand(position_ids.shape[0], -1, 1)
        freqs = (inv_freq_expanded @ position_ids[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        minimum = torch.finfo(torch.float32).min
        causal = torch.full((s, s), minimum).triu(1)[None, None]
        padding = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * minimum
        mask = causal + padding
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))


def export_model(args):
    """--model: the whole causal LM of args.config, from input_ids and attention_mask."""
    vocab, layers, theta = MODELS[args.config]
    torch.nn.Linear.reset_parameters = lambda self: None  # the weights' values are dropped: skip their init
    with torch.no_grad():
        model = CausalLM(vocab, min(args.layers, layers), theta).eval()
        ids = torch.zeros(args.batch, args.seq, dtype=torch.long)
        buf = io.BytesIO()
        # Without the exporter's constant folding, slow over this many weights: what it would
        # fold (the projections' weight transposes, shape arithmetic) the importer computes at
        # compile time, as ATC does (the same 49 kernels and step time either way).
        torch.onnx.export(model, (ids, torch.ones_like(ids)), buf, opset_version=17, do_constant_folding=False,
                          input_names=["input_ids", "attention_mask"], output_names=["logits"])
    name = f"{args.config.split('-')[0]}_{args.layers}l"
    save_without_weights(onnx.load_from_string(buf.getvalue()), args.out or f"{name}.onnx", name, constants_too=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--config", choices=sorted(CONFIGS), default="llama2-7b")
    ap.add_argument("--past", type=int, default=0, help="KV cache length: export a decoding step")
    ap.add_argument("--dynamic", action="store_true", help="batch and seq as dynamic axes")
    ap.add_argument("--model", action="store_true", help="the whole causal LM from input_ids (tinyllama-1.1b)")
    ap.add_argument("--layers", type=int, default=2, help="with --model: its first N layers (at most 8)")
    ap.add_argument("out", nargs="?")
    args = ap.parse_args()
    global HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, EPS
    HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, EPS = CONFIGS[args.config]
    if args.model:
        if args.config not in MODELS or args.past or args.dynamic or not 1 <= args.layers <= 8:
            ap.error(f"--model exports {', '.join(MODELS)} from input_ids with --layers 1 to 8, without --past or "
                     "--dynamic")
        export_model(args)
        return
    if args.config not in ("llama2-7b", "llama3-8b"):
        ap.error(f"--config {args.config}: a layer is exported for llama2-7b and llama3-8b; use --model")
    if args.dynamic and args.past:
        ap.error("--dynamic exports the layer without a KV cache: leave out --past")
    name = ("llama" if args.config == "llama2-7b" else "llama3") + ("_decode" if args.past else "") + \
        ("_dynamic" if args.dynamic else "")
    out = args.out or f"examples/{name}_layer.onnx"
    b, s, past = args.batch, args.seq, args.past
    torch.nn.Linear.reset_parameters = lambda self: None  # the weights' values are dropped: skip their init
    with torch.no_grad():
        layer = DecoderLayer().eval()
        inputs = (torch.zeros(b, s, HIDDEN), torch.zeros(b, s, HEAD_DIM), torch.zeros(b, s, HEAD_DIM),
                  torch.zeros(b, 1, s, past + s))
        names, outputs = ["x", "cos", "sin", "mask"], ["layer_out"]
        if past:
            inputs += (torch.zeros(b, KV_HEADS, past, HEAD_DIM), torch.zeros(b, KV_HEADS, past, HEAD_DIM))
            names += ["past_k", "past_v"]
            outputs += ["present_k", "present_v"]
        buf = io.BytesIO()
        dynamic = {"x": {0: "batch", 1: "seq"}, "cos": {0: "batch", 1: "seq"}, "sin": {0: "batch", 1: "seq"},
                   "mask": {0: "batch", 2: "seq", 3: "seq"}, "layer_out": {0: "batch", 1: "seq"}}
        torch.onnx.export(layer, inputs, buf, opset_version=17, input_names=names, output_names=outputs,
                          dynamic_axes=dynamic if args.dynamic else None)
    name = args.config.replace("-", "_") + ("_decode" if past else "") + ("_dynamic" if args.dynamic else "") + "_layer"
    save_without_weights(onnx.load_from_string(buf.getvalue()), out, name)


if __name__ == "__main__":
    main()
