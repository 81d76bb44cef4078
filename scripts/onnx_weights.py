"""What the example exporters (scripts/make_*_onnx.py) share: a model exported by PyTorch
saved without its weights' data. Each weight (an initializer of more than 64 bytes)
points at an external file that is not shipped, so the model stays a few kilobytes:
tunefleet reads only the weights' shapes. Small constants (shapes, axes, scalars) keep
their values, which the importer reads. A dropped tensor that held a causal mask (GPT-2's
tril buffer) is named in the model's metadata_props under `tunefleet.causal_masks`, as the
importer would have found it from the values (docs/profiling.md)."""
import onnx
from onnx import TensorProto, numpy_helper

MAX_KEPT_BYTES = 64
CAUSAL_MASKS_KEY = "tunefleet.causal_masks"


def is_causal_mask(t):
    """Whether initializer `t` holds a causal mask as tunefleet's importer reads one: over its
    last two axes [R, C], C >= R, every column j > row i + C - R masked (false, or at most -1e4
    for a float), for every leading index; below it may keep or mask as it likes."""
    import numpy as np

    if len(t.dims) < 2 or t.data_type not in (TensorProto.BOOL, TensorProto.FLOAT, TensorProto.FLOAT16):
        return False
    rows, cols = t.dims[-2], t.dims[-1]
    if rows < 1 or cols < rows:
        return False
    a = numpy_helper.to_array(t).reshape(-1, rows, cols)
    later = ~np.tril(np.ones((rows, cols), dtype=bool), k=cols - rows)
    if t.data_type == TensorProto.BOOL:
        return bool((~a[:, later]).all())
    return bool((a[:, later] <= -1e4).all())


def save_without_weights(model, out, name, constants_too=False):
    """Saves `model` as `out`, named `name`, its weights' data dropped. constants_too: large
    Constant nodes (a causal mask the exporter folded into one) become initializers first,
    so their data is dropped with the weights'."""
    if constants_too:
        for n in list(model.graph.node):
            value = n.attribute[0].t if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value" else None
            if value is not None and len(value.raw_data) > MAX_KEPT_BYTES:
                t = model.graph.initializer.add()
                t.CopyFrom(value)
                t.name = n.output[0]
                model.graph.node.remove(n)
    location = out.rsplit("/", 1)[-1].replace(".onnx", ".weights.bin")
    causal = [t.name for t in model.graph.initializer
              if t.raw_data and len(t.raw_data) > MAX_KEPT_BYTES and is_causal_mask(t)]
    if causal:
        entry = model.metadata_props.add()
        entry.key, entry.value = CAUSAL_MASKS_KEY, ",".join(causal)
    for t in model.graph.initializer:
        # Data held here, or already external (a model over 2 GB, loaded without its data).
        if (t.raw_data and len(t.raw_data) > MAX_KEPT_BYTES) or t.data_location == TensorProto.EXTERNAL:
            t.ClearField("raw_data")
            del t.external_data[:]
            t.data_location = TensorProto.EXTERNAL
            for key, value in (("location", location), ("offset", "0"), ("length", "0")):
                entry = t.external_data.add()
                entry.key, entry.value = key, value
    model.graph.name = name
    onnx.save(model, out)


def export_without_weights(model, inputs, input_names, output_names, out, name, constants_too=False):
    """Exports torch `model` in eval mode on the example `inputs` (a tuple), opset 17, with
    the given input and output names, and saves it as `out`, named `name`, without its
    weights' data (save_without_weights, `constants_too` as there)."""
    import io

    import torch

    with torch.no_grad():
        buf = io.BytesIO()
        torch.onnx.export(model.eval(), inputs, buf, opset_version=17, input_names=input_names,
                          output_names=output_names)
    save_without_weights(onnx.load_from_string(buf.getvalue()), out, name, constants_too=constants_too)


def export_image_classifier(doc, make_model, name, default_out, batch=32, image=(3, 224, 224), output="logits",
                            args=None):
    """The command line of an image model's exporter (ResNet, DenseNet, MobileNet,
    EfficientNet, U-Net, a VAE's encoder or decoder): --batch (`batch`) and OUT
    (`default_out`); exports `make_model()` in eval mode at [batch, *image], opset 17, input x
    and output `output`, and saves it as `name` without its weights' data. `args`: the
    command line to parse (default sys.argv)."""
    import argparse

    import torch

    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--batch", type=int, default=batch)
    ap.add_argument("out", nargs="?", default=default_out)
    args = ap.parse_args(args)
    with torch.no_grad():
        model_t = make_model()
    export_without_weights(model_t, (torch.zeros(args.batch, *image),), ["x"], [output], args.out, name)
