#!/usr/bin/env python3
"""Hostile ONNX models for the build-time resource limits (issue 21): tiny files whose constant
subgraphs would make a compiler allocate gigabytes (terabytes) at build time. sramfit must refuse
each before allocating, naming the node, the quantity and the limit.

Writes ui-tests/models/limits/NAME.onnx, each a 1-element float input `x` plus a constant
subgraph reduced to a scalar and added to it (so that the constant is needed by the output):

- constant_of_shape: ConstantOfShape([1, 4096, 1024, 1024]) -> ReduceSum (the 207-byte model of
  issue 21: 16 GiB of float32);
- constant_of_shape_2_40: ConstantOfShape of 2^40 elements;
- expand: a 1-element constant Expand-ed to [1, 4096, 1024, 1024];
- tile: a [1, 1, 1024, 1024] splat (4 MiB) tiled 4096 times along axis 1;
- range: Range(0, 2^34, 1) in float32;
- resize: a [1, 1, 4, 4] splat resized by [1, 1, 65536, 65536] (nearest);
- reshape: a 1-element constant reshaped to [4096, 1024, 1024, 1] (a huge shape from nothing);
- scan: a Scan whose body builds the 16 GiB splat from an outer-scope shape each iteration.

Deterministic: rerunning gives byte-identical files.

    python3 scripts/gen_limit_models.py
"""

import os
import sys

sys.dont_write_bytecode = True  # keep scripts/ free of __pycache__

import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

# fixture_lib's conventions (not imported: it needs onnxruntime, which these models do not).
IR_VERSION = 8
PRODUCER = "sramfit-scripts"
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(REPO_ROOT, "ui-tests", "models", "limits")
HUGE = [1, 4096, 1024, 1024]


def i64(name, values):
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


def f32(name, values, dims=None):
    return helper.make_tensor(name, TensorProto.FLOAT, dims if dims is not None else [len(values)], values)


def splat(shape_name, out):
    """ConstantOfShape(shape_name) filled with 1.0."""
    return helper.make_node("ConstantOfShape", [shape_name], [out], name=out, value=f32("one", [1.0], [1]))


def model(name, nodes, initializers, big):
    """`y = x + ReduceSum(big)`: the constant subgraph ending in tensor `big` feeds the output."""
    nodes = nodes + [
        helper.make_node("ReduceSum", [big], ["s"], name="s", keepdims=0),
        helper.make_node("Add", ["x", "s"], ["y"], name="y"),
    ]
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], initializer=initializers)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=IR_VERSION,
                          producer_name=PRODUCER)
    onnx.checker.check_model(m)
    return m


def scan():
    """A Scan over a 3-element constant whose body sums the huge splat of an outer-scope shape."""
    body = helper.make_graph(
        [splat("shape", "c"), helper.make_node("ReduceSum", ["c"], ["r"], name="r", keepdims=1),
         helper.make_node("Add", ["state", "r"], ["state_out"], name="acc"),
         helper.make_node("Identity", ["item"], ["item_out"], name="pass")],
        "body",
        [helper.make_tensor_value_info("state", TensorProto.FLOAT, [1]),
         helper.make_tensor_value_info("item", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("state_out", TensorProto.FLOAT, [1]),
         helper.make_tensor_value_info("item_out", TensorProto.FLOAT, [1])])
    nodes = [helper.make_node("Scan", ["zero", "items"], ["total", "seen"], name="scan", body=body,
                              num_scan_inputs=1)]
    return model("scan", nodes, [i64("shape", HUGE), f32("zero", [0.0]), f32("items", [1, 2, 3], [3, 1])], "total")


MODELS = {
    "constant_of_shape": lambda: model("constant_of_shape", [splat("shape", "c")], [i64("shape", HUGE)], "c"),
    "constant_of_shape_2_40": lambda: model(
        "constant_of_shape_2_40", [splat("shape", "c")], [i64("shape", [1024, 1024, 1024, 1024])], "c"),
    "expand": lambda: model(
        "expand", [splat("one_dim", "c"), helper.make_node("Expand", ["c", "shape"], ["e"], name="e")],
        [i64("one_dim", [1]), i64("shape", HUGE)], "e"),
    "tile": lambda: model(
        "tile", [splat("plane", "c"), helper.make_node("Tile", ["c", "repeats"], ["t"], name="t")],
        [i64("plane", [1, 1, 1024, 1024]), i64("repeats", [1, 4096, 1, 1])], "t"),
    "range": lambda: model(
        "range", [helper.make_node("Range", ["start", "limit", "delta"], ["r"], name="r")],
        [f32("start", [0.0], []), f32("limit", [float(1 << 34)], []), f32("delta", [1.0], [])], "r"),
    "resize": lambda: model(
        "resize", [splat("small", "c"), helper.make_node("Resize", ["c", "", "scales"], ["big"], name="big",
                                                         mode="nearest")],
        [i64("small", [1, 1, 4, 4]), f32("scales", [1.0, 1.0, 65536.0, 65536.0])], "big"),
    "reshape": lambda: model(
        "reshape", [splat("one_dim", "c"), helper.make_node("Reshape", ["c", "shape"], ["r"], name="r")],
        [i64("one_dim", [1]), i64("shape", [4096, 1024, 1024, 1])], "r"),
    "scan": scan,
}


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    for name, make in MODELS.items():
        path = os.path.join(OUT_DIR, f"{name}.onnx")
        data = make().SerializeToString()
        with open(path, "wb") as f:
            f.write(data)
        print(f"{path}: {len(data)} bytes")


if __name__ == "__main__":
    main()
