#!/usr/bin/python3
"""Writes examples/bert_base.onnx: the whole BERT-base (12 layers, hidden 768, 12 heads of
64, FFN 3072, vocabulary 30522) from its three int64 inputs to its pooled output, as
PyTorch's ONNX exporter writes it (opset 17, float32) from a module written the way
Hugging Face's BertModel is:
- embeddings: word (a Gather of the token ids), position (positions 0..seq-1, a buffer)
  and token type (a Gather of token_type_ids), summed, LayerNorm;
- the extended attention mask computed in the graph from attention_mask [batch, seq]:
  (1.0 - mask[:, None, None, :].to(float32)) * finfo(float32).min, added to every layer's
  scores;
- 12 encoder layers (q, k, v Linear, heads by view + permute, softmax of the scaled and
  masked scores, output Linear + residual + LayerNorm, FFN with GELU + residual +
  LayerNorm), and the pooler (the first token, Linear, tanh).
Inputs: input_ids, token_type_ids, attention_mask [batch, seq], int64; batch and seq are
fixed at export (--batch 32, --seq 128). The weights' data is dropped after the export:
tunefleet reads only their shapes, and the model stays small.
--minilm writes examples/minilm_l6.onnx instead: sentence-transformers' all-MiniLM-L6-v2, the
same encoder at 6 layers, hidden 384, 12 heads of 32 and FFN 1536, without the pooler,
followed by sentence-transformers' mean pooling and normalisation:
sum(x * mask, 1) / clamp(mask.sum(1), min=1e-9) with mask = attention_mask.unsqueeze(-1)
.expand(x.size()).float(), then F.normalize(p=2, dim=1); output sentence_embedding [batch, 384].
--roberta writes examples/roberta_base.onnx instead: RoBERTa-base (Hugging Face's RobertaModel;
XLM-R base is the same with a vocabulary of 250002), BERT-base's encoder and pooler with a
vocabulary of 50265, 514 positions, one token type, LayerNorm eps 1e-5, and position ids
computed from the token ids as create_position_ids_from_input_ids does (padding_idx 1):
mask = input_ids.ne(1).int(); (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + 1.
--mpnet writes examples/mpnet_base.onnx instead: sentence-transformers' all-mpnet-base-v2,
Hugging Face's MPNetModel (vocabulary 30527, RoBERTa's positions, no token types, LayerNorm
eps 1e-5; two inputs, input_ids and attention_mask) with a relative position bias added to
every layer's scores, from 32 buckets of the key's distance to the query (its
relative_position_bucket: the distances' sign, exact up to 8, log-spaced up to 128), then
the mean pooling and normalisation of --minilm. At fixed shapes the buckets are constants,
and the export computes the bias [batch, 12, seq, seq] (its Embedding of the buckets,
permuted and expanded) at compile time.
Run with Debian's python3-torch and python3-onnx:
    /usr/bin/python3 scripts/make_bert_model_onnx.py [--batch 32] [--seq 128] [--minilm | --roberta | --mpnet] [OUT]"""
import argparse
import io
import math

import onnx
import torch
from onnx_weights import save_without_weights
from relative_position import relative_position_bucket

HIDDEN, HEADS, FFN, LAYERS, VOCAB, MAX_POSITIONS, TYPES, EPS = 768, 12, 3072, 12, 30522, 512, 2, 1e-12
MINILM = {"HIDDEN": 384, "HEADS": 12, "FFN": 1536, "LAYERS": 6}  # all-MiniLM-L6-v2's BertModel config
ROBERTA = {"VOCAB": 50265, "MAX_POSITIONS": 514, "TYPES": 1, "EPS": 1e-5}  # roberta-base's config
MPNET = {"VOCAB": 30527, "MAX_POSITIONS": 514, "TYPES": 0, "EPS": 1e-5, "BUCKETS": 32}  # all-mpnet-base-v2's
PAD = None  # RoBERTa's and MPNet's padding_idx (1): position ids are computed from the token ids
BUCKETS = 0  # MPNet's relative position buckets (0: no relative position bias)


class Embeddings(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = torch.nn.Embedding(VOCAB, HIDDEN)
        self.position_embeddings = torch.nn.Embedding(MAX_POSITIONS, HIDDEN)
        if TYPES:
            self.token_type_embeddings = torch.nn.Embedding(TYPES, HIDDEN)
        self.LayerNorm = torch.nn.LayerNorm(HIDDEN, eps=EPS)
        self.register_buffer("position_ids", torch.arange(MAX_POSITIONS).expand((1, -1)), persistent=False)

    def forward(self, input_ids, token_type_ids):
        if PAD is None:
            positions = self.position_ids[:, :input_ids.size(1)]
        else:  # Hugging Face's create_position_ids_from_input_ids
            mask = input_ids.ne(PAD).int()
            positions = (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + PAD
        x = self.word_embeddings(input_ids)
        if TYPES:
            x = x + self.token_type_embeddings(token_type_ids)
        return self.LayerNorm(x + self.position_embeddings(positions))


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.query = torch.nn.Linear(HIDDEN, HIDDEN)
        self.key = torch.nn.Linear(HIDDEN, HIDDEN)
        self.value = torch.nn.Linear(HIDDEN, HIDDEN)
        self.attention_output = torch.nn.Linear(HIDDEN, HIDDEN)
        self.attention_norm = torch.nn.LayerNorm(HIDDEN, eps=EPS)
        self.intermediate = torch.nn.Linear(HIDDEN, FFN)
        self.output = torch.nn.Linear(FFN, HIDDEN)
        self.output_norm = torch.nn.LayerNorm(HIDDEN, eps=EPS)

    def heads(self, t):
        return t.view(t.size()[:-1] + (HEADS, HIDDEN // HEADS)).permute(0, 2, 1, 3)

    def forward(self, x, mask, position_bias=None):
        q, k, v = self.heads(self.query(x)), self.heads(self.key(x)), self.heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(HIDDEN // HEADS)
        if position_bias is not None:  # MPNetSelfAttention's order: the bias, then the mask
            scores = scores + position_bias
        scores = scores + mask
        context = torch.matmul(torch.softmax(scores, dim=-1), v).permute(0, 2, 1, 3).contiguous()
        context = context.view(context.size()[:-2] + (HIDDEN,))
        h = self.attention_norm(self.attention_output(context) + x)
        return self.output_norm(self.output(torch.nn.functional.gelu(self.intermediate(h))) + h)


class BertModel(torch.nn.Module):
    def __init__(self, sentence_embedding=False):
        super().__init__()
        self.sentence_embedding = sentence_embedding
        self.embeddings = Embeddings()
        self.layer = torch.nn.ModuleList(Layer() for _ in range(LAYERS))
        if not sentence_embedding:
            self.pooler = torch.nn.Linear(HIDDEN, HIDDEN)
        if BUCKETS:
            self.relative_attention_bias = torch.nn.Embedding(BUCKETS, HEADS)

    def position_bias(self, x):
        # MPNetEncoder.compute_position_bias: [batch, heads, seq, seq].
        bsz, qlen, klen = x.size(0), x.size(1), x.size(1)
        context_position = torch.arange(qlen, dtype=torch.long)[:, None]
        memory_position = torch.arange(klen, dtype=torch.long)[None, :]
        rp_bucket = relative_position_bucket(memory_position - context_position, num_buckets=BUCKETS)
        values = self.relative_attention_bias(rp_bucket).permute([2, 0, 1]).unsqueeze(0)
        return values.expand((bsz, -1, qlen, klen)).contiguous()

    def forward(self, input_ids, *rest):
        token_type_ids, attention_mask = rest if TYPES else (None, *rest)  # MPNet has no token types
        mask = attention_mask[:, None, None, :].to(torch.float32)
        mask = (1.0 - mask) * torch.finfo(torch.float32).min
        x = self.embeddings(input_ids, token_type_ids)
        bias = self.position_bias(x) if BUCKETS else None
        for layer in self.layer:
            x = layer(x, mask, bias)
        if not self.sentence_embedding:
            return torch.tanh(self.pooler(x[:, 0]))
        # sentence-transformers' Pooling (mean tokens) and Normalize modules.
        tokens = attention_mask.unsqueeze(-1).expand(x.size()).float()
        mean = torch.sum(x * tokens, 1) / torch.clamp(tokens.sum(1), min=1e-9)
        return torch.nn.functional.normalize(mean, p=2, dim=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128)
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--minilm", action="store_true", help="all-MiniLM-L6-v2 with mean pooling, normalised")
    which.add_argument("--roberta", action="store_true", help="RoBERTa-base, position ids from the token ids")
    which.add_argument("--mpnet", action="store_true", help="all-mpnet-base-v2 with its relative position bias")
    ap.add_argument("out", nargs="?")
    args = ap.parse_args()
    # The modules read their sizes as module constants: set before they are built.
    if args.minilm:
        globals().update(MINILM)
    if args.roberta:
        globals().update(ROBERTA, PAD=1)
    if args.mpnet:
        globals().update(MPNET, PAD=1)
    name = "minilm_l6" if args.minilm else "roberta_base" if args.roberta else "mpnet_base" if args.mpnet else "bert_base"
    embedding = args.minilm or args.mpnet  # sentence-transformers' pooling and normalisation
    out = args.out or f"examples/{name}.onnx"
    positions = MAX_POSITIONS - (0 if PAD is None else PAD + 1)  # RoBERTa's start after padding_idx
    if args.seq > positions:
        ap.error(f"--seq {args.seq}: the model has {positions} positions")
    torch.nn.Linear.reset_parameters = lambda self: None  # the weights' values are dropped: skip their init
    with torch.no_grad():
        model = BertModel(sentence_embedding=embedding).eval()
        ids = torch.zeros(args.batch, args.seq, dtype=torch.long)
        inputs = {"input_ids": ids, "token_type_ids": ids, "attention_mask": torch.ones_like(ids)}
        if not TYPES:
            del inputs["token_type_ids"]
        buf = io.BytesIO()
        torch.onnx.export(model, tuple(inputs.values()), buf, opset_version=17, input_names=list(inputs),
                          output_names=["sentence_embedding" if embedding else "pooler_output"])
    save_without_weights(onnx.load_from_string(buf.getvalue()), out, name, constants_too=True)


if __name__ == "__main__":
    main()
