#!/usr/bin/env python3
"""ONNX models with a dynamic (symbolic) time or sequence axis, for bounded dynamic shapes.

Writes tests/models/dynamic/NAME.onnx (the Rust tests compare sramfit with tract at every length
of the bound, so no reference outputs are stored) and ui-tests/models/dyn_flatten_gemm.onnx (a
model whose dynamic axis cannot vary: the compile-error test). The symbolic axis is declared with
a name (`frames` or `seq`) in the graph input. Deterministic: rerunning gives byte-identical files.

    python3 scripts/gen_dynamic.py
"""

import os
import sys

sys.dont_write_bytecode = True  # keep scripts/ free of __pycache__

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

from fixture_lib import IR_VERSION, LAYERNORM_OPSET, PRODUCER, REPO_ROOT, GraphBuilder, make_session  # noqa: E402

OUT_DIR = os.path.join(REPO_ROOT, "tests", "models", "dynamic")
UI_DIR = os.path.join(REPO_ROOT, "ui-tests", "models")


def build(b, input_shape, output_shape):
    """The builder's graph with symbolic dimensions (strings) in its input and output shapes."""
    (name, _, _), = b.inputs
    g_in = [helper.make_tensor_value_info(name, TensorProto.FLOAT, input_shape)]
    g_out = [helper.make_tensor_value_info(b.outputs[0], TensorProto.FLOAT, output_shape)]
    graph = helper.make_graph(b.nodes, b.name, g_in, g_out, initializer=b.initializers, doc_string=b.doc)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", b.opset)],
                              ir_version=IR_VERSION, producer_name=PRODUCER)
    onnx.checker.check_model(model, full_check=True)
    return model


def conv1d_gap(seed):
    """[1, 40, frames] (channels first) -> Conv1d k3 same + Relu -> pointwise Conv + Relu
    -> GlobalAveragePool over time -> Flatten -> Gemm 24 -> 12."""
    b = GraphBuilder("conv1d_gap", seed, "1-D conv over a dynamic time axis, then a global average and a Gemm")
    x = b.input("input", [1, 40, "frames"])
    x = b.relu(b.conv(x, 40, 16, (3,), "conv", pads=[1, 1]), "relu1")
    x = b.relu(b.conv(x, 16, 24, (1,), "pointwise"), "relu2")
    x = b.node("GlobalAveragePool", [x], "gap")
    x = b.node("Flatten", [x], "flatten", axis=1)
    b.output(b.gemm(x, 24, 12, "fc", gain=6.0, out="output"))
    return build(b, [1, 40, "frames"], [1, 12])


def strided_conv(seed):
    """[1, 8, frames] -> Conv1d k5 s2 p2 + Relu -> Conv1d k3 s2 p1: output [1, 12, T] with
    T = ceil(ceil(frames / 2) / 2), i.e. floor((n + p - k) / s) + 1 twice."""
    b = GraphBuilder("strided_conv", seed, "two strided 1-D convolutions along a dynamic time axis")
    x = b.input("input", [1, 8, "frames"])
    x = b.relu(b.conv(x, 8, 16, (5,), "conv1", stride=2, pads=[2, 2]), "relu1")
    b.output(b.conv(x, 16, 12, (3,), "conv2", stride=2, pads=[1, 1], out="output"))
    return build(b, [1, 8, "frames"], [1, 12, "out_frames"])


def attention(seed):
    """[1, seq, 32]: 2-head self-attention (MatMul, Softmax over seq) with a residual Add and
    LayerNormalization; Reshapes copy the sequence axis with 0 so that it stays dynamic."""
    d, heads = 32, 2
    hd = d // heads
    b = GraphBuilder("attention", seed, "2-head self-attention over a dynamic sequence axis", opset=LAYERNORM_OPSET)
    x = b.input("input", [1, "seq", d])

    def linear(x, name):
        w = b.init(f"{name}.weight", b.he((d, d), d, 1.0))
        y = b.node("MatMul", [x, w], f"{name}_matmul")
        return b.node("Add", [y, b.init(f"{name}.bias", b.small_bias(d))], f"{name}_add")

    heads_shape = b.init_i64("heads.shape", [0, 0, heads, hd])
    model_shape = b.init_i64("model.shape", [0, 0, d])

    def split(x, name, perm):
        x = b.node("Reshape", [x, heads_shape], f"{name}_reshape")
        return b.node("Transpose", [x], f"{name}_transpose", perm=perm)

    q = split(linear(x, "q"), "q", [0, 2, 1, 3])
    k = split(linear(x, "k"), "k", [0, 2, 3, 1])
    v = split(linear(x, "v"), "v", [0, 2, 1, 3])
    s = b.node("MatMul", [q, k], "scores")
    s = b.node("Mul", [s, b.init("scores.scale", np.float32(1.0 / np.sqrt(hd)))], "scores_scaled")
    p = b.node("Softmax", [s], "softmax", axis=-1)
    a = b.node("MatMul", [p, v], "context")
    a = b.node("Transpose", [a], "context_transpose", perm=[0, 2, 1, 3])
    a = linear(b.node("Reshape", [a, model_shape], "context_reshape"), "out")
    scale = b.init("norm.scale", b.rng.uniform(0.6, 1.4, size=d))
    bias = b.init("norm.bias", b.small_bias(d))
    y = b.node("Add", [x, a], "residual")
    b.output(b.node("LayerNormalization", [y, scale, bias], "norm", axis=-1, epsilon=1e-5, out="output"))
    return build(b, [1, "seq", d], [1, "seq", d])


def flatten_gemm(seed):
    """[1, frames, 8] -> Flatten -> Gemm with 80 inputs: only frames = 10 fits the weight."""
    b = GraphBuilder("dyn_flatten_gemm", seed, "a dynamic axis flattened into a fixed-size Gemm")
    x = b.input("input", [1, "frames", 8])
    x = b.node("Flatten", [x], "flatten", axis=1)
    b.output(b.gemm(x, 80, 4, "fc", out="output"))
    return build(b, [1, "frames", 8], [1, 4])


def check_runs(model, shape):
    """onnxruntime accepts the model at this input shape (the file is a valid dynamic model)."""
    sess = make_session(model)
    sess.run(None, {"input": np.zeros(shape, dtype=np.float32)})


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    for name, make, lengths in [("conv1d_gap", conv1d_gap, [1, 98]), ("strided_conv", strided_conv, [1, 7]),
                                ("attention", attention, [1, 16])]:
        model = make(1)
        for n in lengths:
            check_runs(model, [n if d.dim_param else d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim])
        onnx.save(model, os.path.join(OUT_DIR, f"{name}.onnx"))
        print(f"tests/models/dynamic/{name}.onnx")
    model = flatten_gemm(1)
    check_runs(model, [1, 10, 8])
    onnx.save(model, os.path.join(UI_DIR, "dyn_flatten_gemm.onnx"))
    print("ui-tests/models/dyn_flatten_gemm.onnx")


if __name__ == "__main__":
    main()
