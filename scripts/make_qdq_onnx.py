#!/usr/bin/python3
"""Writes an int8 version of an example model in onnxruntime's QDQ format, as
`onnxruntime.quantization.quantize_static` writes one (QuantFormat.QDQ, per-tensor, uint8
activations, int8 weights): each MatMul's, Gemm's and Conv's x (and a MatMul's B when it
is an activation too) goes through a QuantizeLinear and a DequantizeLinear, its weight is
int8 data behind a DequantizeLinear, and a Conv's or Gemm's bias int32 data behind one.
The scales and zero points are placeholders (tunefleet's cost does not read them); the
weights' data stays dropped, as in the model read (scripts/onnx_weights.py).
    /usr/bin/python3 scripts/make_qdq_onnx.py examples/resnet50.onnx examples/resnet50_int8.onnx
    /usr/bin/python3 scripts/make_qdq_onnx.py examples/vit_b16.onnx examples/vit_b16_int8.onnx
    /usr/bin/python3 scripts/make_qdq_onnx.py examples/bert_base.onnx examples/bert_base_int8.onnx
    /usr/bin/python3 scripts/make_qdq_onnx.py examples/mobilenet_v2.onnx examples/mobilenet_v2_int8.onnx"""
import sys

import onnx
from onnx import TensorProto, helper

CUBE_OPS = ("Conv", "MatMul", "Gemm")


def quantize(model):
    g = model.graph
    floats = (TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE)
    if any(i.type.tensor_type.elem_type in floats for i in g.input):
        # DequantizeLinear writes float32 before opset 19, as quantize_static's input is
        # (integer inputs, a language model's token ids, are left as they are).
        sys.exit(f"{g.name}: quantize a float32 model (this one has float inputs of other types)")
    weights = {t.name: t for t in g.initializer}
    g.initializer.extend([
        helper.make_tensor("qdq.scale", TensorProto.FLOAT, [], [0.05]),
        helper.make_tensor("qdq.zp_u8", TensorProto.UINT8, [], [128]),
        helper.make_tensor("qdq.zp_i8", TensorProto.INT8, [], [0]),
    ])
    nodes, dequantized = [], {}  # tensor -> its dequantized name

    def dequantize(name, kind):
        if name in dequantized:
            return dequantized[name]
        out = name + "/dq"
        if kind == "activation":
            nodes.append(helper.make_node("QuantizeLinear", [name, "qdq.scale", "qdq.zp_u8"], [name + "/q"],
                                          name=name + "/QuantizeLinear"))
            nodes.append(helper.make_node("DequantizeLinear", [name + "/q", "qdq.scale", "qdq.zp_u8"], [out],
                                          name=name + "/DequantizeLinear"))
        else:  # a weight (int8, its zero point 0) or a bias (int32, none), beside the float one,
            # which others may still read (torch's export shares equal constants through Identity)
            t = g.initializer.add()
            t.CopyFrom(weights[name])
            t.name = name + "/quantized"
            t.data_type = TensorProto.INT8 if kind == "weight" else TensorProto.INT32
            extra = ["qdq.zp_i8"] if kind == "weight" else []
            nodes.append(helper.make_node("DequantizeLinear", [t.name, "qdq.scale"] + extra, [out],
                                          name=name + "/DequantizeLinear"))
        dequantized[name] = out
        return out

    # torch's export shares equal weights through Identity nodes: read through them, so a
    # shared weight is quantized offline as the others are, not at run time.
    shared = {n.output[0]: n.input[0] for n in g.node if n.op_type == "Identity" and n.input[0] in weights}
    for n in list(g.node):
        if n.op_type in CUBE_OPS and len(n.input) >= 2:
            for k in (0, 1):
                source = shared.get(n.input[k], n.input[k])
                if source in weights:
                    n.input[k] = dequantize(source, "weight")
                else:
                    n.input[k] = dequantize(n.input[k], "activation")
            if len(n.input) >= 3 and shared.get(n.input[2], n.input[2]) in weights:
                n.input[2] = dequantize(shared.get(n.input[2], n.input[2]), "bias")
        nodes.append(n)
    del g.node[:]
    g.node.extend(nodes)
    g.name += "_int8"
    return model


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    onnx.save(quantize(onnx.load(sys.argv[1], load_external_data=False)), sys.argv[2])
