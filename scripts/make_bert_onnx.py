#!/usr/bin/python3
"""Writes examples/bert_base_layer.onnx: the BERT-base encoder layer of
examples/bert_base_layer.json as PyTorch's ONNX exporter writes it (opset 17): input
x [batch, seq, 768] with symbolic batch and seq, heads split by Reshape + Transpose,
GELU as x * 0.5 * (1 + erf(x / sqrt(2))), LayerNormalization. The weights are
initializers whose data lives in an external file that is not shipped: tunefleet reads
only their shapes, and the model stays a few kilobytes.
Run with Debian's python3-onnx:  /usr/bin/python3 scripts/make_bert_onnx.py [OUT]"""
import sys

import onnx
from onnx import TensorProto, helper

F16 = TensorProto.FLOAT16


def weight(name, shape):
    t = TensorProto()
    t.name = name
    t.data_type = F16
    t.dims.extend(shape)
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "bert_base_layer.weights.bin"), ("offset", "0"), ("length", "0")):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    return t


def const(name, values, dtype=TensorProto.INT64):
    return helper.make_tensor(name, dtype, [len(values)], values)


def scalar(name, value):
    return helper.make_tensor(name, F16, [], [value])


nodes, inits = [], []
for w, shape in (("w_q", [768, 768]), ("b_q", [768]), ("w_k", [768, 768]), ("b_k", [768]), ("w_v", [768, 768]),
                 ("b_v", [768]), ("w_o", [768, 768]), ("b_o", [768]), ("ln1_gamma", [768]), ("ln1_beta", [768]),
                 ("w_ffn1", [768, 3072]), ("b_ffn1", [3072]), ("w_ffn2", [3072, 768]), ("b_ffn2", [768]),
                 ("ln2_gamma", [768]), ("ln2_beta", [768])):
    inits.append(weight(w, shape))
inits += [const("heads_shape", [0, 0, 12, 64]), const("merge_shape", [0, 0, 768]),
          scalar("sqrt_d", 8.0), scalar("sqrt2", 1.4142135), scalar("one", 1.0), scalar("half", 0.5)]
N = helper.make_node
for p in ("q", "k", "v"):
    nodes += [N("MatMul", ["x", f"w_{p}"], [f"{p}_mm"], name=f"attention.{p}.matmul"),
              N("Add", [f"{p}_mm", f"b_{p}"], [p], name=f"attention.{p}.bias"),
              N("Reshape", [p, "heads_shape"], [f"{p}_split"], name=f"attention.{p}.split"),
              N("Transpose", [f"{p}_split"], [f"{p}_heads"], perm=[0, 2, 1, 3], name=f"attention.{p}.heads")]
nodes += [
    N("Transpose", ["k_heads"], ["k_t"], perm=[0, 1, 3, 2], name="attention.k.transpose"),
    N("MatMul", ["q_heads", "k_t"], ["scores"], name="attention.scores"),
    N("Div", ["scores", "sqrt_d"], ["scores_scaled"], name="attention.scores.scale"),
    N("Softmax", ["scores_scaled"], ["probs"], axis=-1, name="attention.softmax"),
    N("MatMul", ["probs", "v_heads"], ["context_heads"], name="attention.context"),
    N("Transpose", ["context_heads"], ["context_t"], perm=[0, 2, 1, 3], name="attention.context.merge_heads"),
    N("Reshape", ["context_t", "merge_shape"], ["context"], name="attention.context.merge"),
    N("MatMul", ["context", "w_o"], ["attn_mm"], name="attention.output.matmul"),
    N("Add", ["attn_mm", "b_o"], ["attn_out"], name="attention.output.bias"),
    N("Add", ["attn_out", "x"], ["attn_res"], name="attention.residual"),
    N("LayerNormalization", ["attn_res", "ln1_gamma", "ln1_beta"], ["h1"], axis=-1, epsilon=1e-12,
      name="attention.layernorm"),
    N("MatMul", ["h1", "w_ffn1"], ["ffn1_mm"], name="ffn.intermediate.matmul"),
    N("Add", ["ffn1_mm", "b_ffn1"], ["ffn1"], name="ffn.intermediate.bias"),
    N("Div", ["ffn1", "sqrt2"], ["gelu_div"], name="ffn.gelu.div"),
    N("Erf", ["gelu_div"], ["gelu_erf"], name="ffn.gelu.erf"),
    N("Add", ["gelu_erf", "one"], ["gelu_add"], name="ffn.gelu.add"),
    N("Mul", ["ffn1", "gelu_add"], ["gelu_mul"], name="ffn.gelu.mul"),
    N("Mul", ["gelu_mul", "half"], ["ffn1_act"], name="ffn.gelu"),
    N("MatMul", ["ffn1_act", "w_ffn2"], ["ffn2_mm"], name="ffn.output.matmul"),
    N("Add", ["ffn2_mm", "b_ffn2"], ["ffn2"], name="ffn.output.bias"),
    N("Add", ["ffn2", "h1"], ["ffn_res"], name="ffn.residual"),
    N("LayerNormalization", ["ffn_res", "ln2_gamma", "ln2_beta"], ["layer_out"], axis=-1, epsilon=1e-12,
      name="ffn.layernorm"),
]
graph = helper.make_graph(nodes, "bert_base_layer",
                          [helper.make_tensor_value_info("x", F16, ["batch", "seq", 768])],
                          [helper.make_tensor_value_info("layer_out", F16, ["batch", "seq", 768])],
                          initializer=inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tunefleet")
model.ir_version = 8
onnx.save(model, sys.argv[1] if len(sys.argv) > 1 else "examples/bert_base_layer.onnx")
