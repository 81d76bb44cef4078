"""Writes examples/vit_b16.onnx: ViT-B/16 (Dosovitskiy et al.; 224x224 images in patches of
16, hidden 768, 12 heads, MLP 3072, pre-LayerNorm, GELU) as PyTorch's ONNX exporter writes
it (opset 17, float32), from modules written the way Hugging Face's ViTModel is: the patch
embedding a Conv 16x16 at stride 16 flattened and transposed, the class token expanded
over the batch and concatenated before the patches, learned position embeddings added,
--layers encoder layers (q, k and v Linear layers, heads split by view + permute), the
final LayerNorm, and the classifier reading the class token, x[:, 0] (a Gather).
Input: pixel_values [batch, 3, 224, 224]; batch is fixed at export (--batch).
The weights' data is dropped after the export (each initializer points at an external
file that is not shipped): tunefleet reads only their shapes, and the model stays small.
Run with Debian's python3-torch and python3-onnx:
    /usr/bin/python3 scripts/make_vit_onnx.py [--batch 32] [--layers 12] [OUT]"""
import argparse
import io

import onnx
import torch
from onnx_weights import save_without_weights

nn = torch.nn
HIDDEN, HEADS, FFN, PATCH, IMAGE, EPS = 768, 12, 3072, 16, 224, 1e-12


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.head_dim = HIDDEN // HEADS
        self.query, self.key, self.value = nn.Linear(HIDDEN, HIDDEN), nn.Linear(HIDDEN, HIDDEN), nn.Linear(HIDDEN, HIDDEN)
        self.dense = nn.Linear(HIDDEN, HIDDEN)

    def split_heads(self, t):
        return t.view(t.size()[:-1] + (HEADS, self.head_dim)).permute(0, 2, 1, 3)

    def forward(self, x):
        q, k, v = self.split_heads(self.query(x)), self.split_heads(self.key(x)), self.split_heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / (self.head_dim ** 0.5)
        out = torch.matmul(torch.softmax(scores, dim=-1), v).permute(0, 2, 1, 3).contiguous()
        return self.dense(out.view(out.size()[:-2] + (HIDDEN,)))


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.layernorm_before = nn.LayerNorm(HIDDEN, eps=EPS)
        self.attention = Attention()
        self.layernorm_after = nn.LayerNorm(HIDDEN, eps=EPS)
        self.intermediate = nn.Linear(HIDDEN, FFN)
        self.output = nn.Linear(FFN, HIDDEN)

    def forward(self, x):
        x = x + self.attention(self.layernorm_before(x))
        return x + self.output(nn.functional.gelu(self.intermediate(self.layernorm_after(x))))


class ViT(nn.Module):
    def __init__(self, layers, classes=1000):
        super().__init__()
        self.patch = nn.Conv2d(3, HIDDEN, PATCH, stride=PATCH)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, HIDDEN))
        self.position_embeddings = nn.Parameter(torch.zeros(1, (IMAGE // PATCH) ** 2 + 1, HIDDEN))
        self.layers = nn.Sequential(*[Layer() for _ in range(layers)])
        self.layernorm = nn.LayerNorm(HIDDEN, eps=EPS)
        self.classifier = nn.Linear(HIDDEN, classes)

    def forward(self, pixel_values):
        x = self.patch(pixel_values).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.size(0), -1, -1), x], dim=1) + self.position_embeddings
        x = self.layernorm(self.layers(x))
        return self.classifier(x[:, 0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("out", nargs="?", default="examples/vit_b16.onnx")
    args = ap.parse_args()
    with torch.no_grad():
        model_t = ViT(args.layers).eval()
        buf = io.BytesIO()
        torch.onnx.export(model_t, (torch.zeros(args.batch, 3, IMAGE, IMAGE),), buf, opset_version=17,
                          input_names=["pixel_values"], output_names=["logits"])
    save_without_weights(onnx.load_from_string(buf.getvalue()), args.out, "vit_b16", constants_too=True)


if __name__ == "__main__":
    main()
