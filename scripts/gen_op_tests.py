#!/usr/bin/env python3
"""Generate single-op (or tiny) ONNX test models for sramfit.

Writes tests/models/ops/CASE.onnx + CASE.ref.json for every case registered
below. Each case's seed is zlib.crc32(case name) % 1_000_000, so adding or
removing a case never changes the others. Deterministic: rerunning gives
byte-identical files.

    python3 scripts/gen_op_tests.py            # write all cases
    python3 scripts/gen_op_tests.py conv_      # only cases whose name contains "conv_"

When an op would just hand a graph input through unchanged (Identity,
Reshape, Flatten, Squeeze, Unsqueeze, Dropout), a Relu is put before or after
it so the model still computes something; which one is noted per case.
"""

import os
import sys
import zlib

sys.dont_write_bytecode = True  # keep scripts/ free of __pycache__

import numpy as np  # noqa: E402

from fixture_lib import REPO_ROOT, GraphBuilder, print_summary, write_fixture  # noqa: E402

GENERATOR = "scripts/gen_op_tests.py"
OUT_DIR = os.path.join(REPO_ROOT, "tests", "models", "ops")

CASES = []  # (name, build(b: GraphBuilder) -> None, doc)

# Inputs used as divisors are drawn away from zero.
DIVISOR = ("uniform", 0.5, 2.0)
# Wide range so Sigmoid/Tanh saturation is exercised.
WIDE = ("uniform", -6.0, 6.0)


def case(name, doc=""):
    def deco(fn):
        assert all(n != name for n, _, _ in CASES), name
        CASES.append((name, fn, doc or fn.__doc__ or name))
        return fn
    return deco


def out(b):
    return b.output("output")


# --------------------------------------------------------------------------- #
# Conv
# --------------------------------------------------------------------------- #
def _conv_case(name, in_shape, cout, k, doc, **kw):
    @case(name, doc)
    def _(b):
        x = b.input("input", in_shape)
        b.conv(x, in_shape[1], cout, k, "conv", out=out(b), gain=1.0, **kw)


_conv_case("conv_plain", [1, 4, 10, 10], 8, 3, "Conv 3x3, no padding")
_conv_case("conv_pad1", [1, 4, 10, 10], 8, 3, "Conv 3x3, pads 1", pads=1)
_conv_case("conv_stride2", [1, 4, 10, 10], 8, 3, "Conv 3x3, stride 2, pads 1", stride=2, pads=1)
_conv_case("conv_pads_asym", [1, 4, 10, 10], 8, 3, "Conv 3x3, pads [1,0,2,1]", pads=[1, 0, 2, 1])
_conv_case("conv_dilation2", [1, 4, 10, 10], 8, 3, "Conv 3x3, dilation 2, pads 2",
           dilation=2, pads=2)
_conv_case("conv_groups2", [1, 4, 10, 10], 8, 3, "Conv 3x3, group 2 (4->8)", group=2, pads=1)
_conv_case("conv_depthwise", [1, 8, 10, 10], 8, 3, "Depthwise Conv 3x3, group 8 (8->8)",
           group=8, pads=1)
_conv_case("conv_depthwise_mult2", [1, 4, 10, 10], 8, 3,
           "Depthwise Conv 3x3 with channel multiplier 2, group 4 (4->8)", group=4, pads=1)
_conv_case("conv_nobias", [1, 4, 10, 10], 8, 3, "Conv 3x3, pads 1, no bias input", pads=1, bias=False)
_conv_case("conv_1x1", [1, 4, 10, 10], 8, 1, "Pointwise Conv 1x1")
_conv_case("conv_1x1_stride2", [1, 4, 10, 10], 8, 1, "Pointwise Conv 1x1, stride 2", stride=2)
_conv_case("conv_rect_kernel", [1, 4, 10, 10], 8, (3, 1),
           "Conv 3x1 kernel, strides [2,1], pads [1,0,1,0]", stride=[2, 1], pads=[1, 0, 1, 0])
_conv_case("conv_nonsquare", [1, 3, 9, 13], 6, 5, "Conv 5x5, stride 2, pads 2 on a 9x13 map",
           stride=2, pads=2)
_conv_case("conv1d", [1, 4, 20], 6, (3,), "1-D Conv k3, pads 1", pads=1)
_conv_case("conv1d_stride2_dilation2", [1, 4, 20], 6, (3,),
           "1-D Conv k3, stride 2, dilation 2, pads [2,1]", stride=2, dilation=2, pads=[2, 1])


# --------------------------------------------------------------------------- #
# Gemm / MatMul
# --------------------------------------------------------------------------- #
GM, GK, GN = 3, 8, 5


def _gemm_case(name, doc, trans_a=0, trans_b=0, c_shape=(GN,), alpha=None, beta=None):
    @case(name, doc)
    def _(b):
        x = b.input("input", [GK, GM] if trans_a else [GM, GK])
        w = b.init("gemm.weight", b.he((GN, GK) if trans_b else (GK, GN), GK, 1.0))
        ins = [x, w]
        if c_shape is not None:
            ins.append(b.init("gemm.bias", b.rng.uniform(-0.5, 0.5, size=c_shape)))
        attrs = {"transA": trans_a, "transB": trans_b}
        if alpha is not None:
            attrs["alpha"] = alpha
        if beta is not None:
            attrs["beta"] = beta
        b.node("Gemm", ins, "gemm", out=out(b), **attrs)


_gemm_case("gemm_plain", "Gemm A[3,8] B[8,5] C[5]")
_gemm_case("gemm_transA", "Gemm transA=1, A[8,3]", trans_a=1)
_gemm_case("gemm_transB", "Gemm transB=1, B[5,8]", trans_b=1)
_gemm_case("gemm_transA_transB", "Gemm transA=1 transB=1", trans_a=1, trans_b=1)
_gemm_case("gemm_alpha_beta", "Gemm alpha=0.5 beta=2.0, transB=1", trans_b=1, alpha=0.5, beta=2.0)
_gemm_case("gemm_c_1n", "Gemm with C of shape [1,n]", c_shape=(1, GN))
_gemm_case("gemm_c_mn", "Gemm with C of shape [m,n]", c_shape=(GM, GN))
_gemm_case("gemm_c_scalar", "Gemm with C of shape [1]", c_shape=(1,))
_gemm_case("gemm_no_c", "Gemm without C", c_shape=None)


def _matmul_case(name, doc, a_shape, b_shape, b_is_input=False):
    @case(name, doc)
    def _(b):
        if b_is_input:
            a = b.input("input_0", a_shape)
            w = b.input("input_1", b_shape)
        else:
            a = b.input("input", a_shape)
            w = b.init("matmul.weight", b.he(b_shape, b_shape[-2], 1.0))
        b.node("MatMul", [a, w], "matmul", out=out(b))


_matmul_case("matmul_2d", "MatMul [3,8] x [8,5]", [3, 8], [8, 5])
_matmul_case("matmul_3d_bcast", "MatMul [2,3,8] x [8,5] (2-D rhs broadcast over batch)",
             [2, 3, 8], [8, 5])
_matmul_case("matmul_3d_bcast_batch", "MatMul [2,3,8] x [1,8,5] (batch dim broadcast)",
             [2, 3, 8], [1, 8, 5])
_matmul_case("matmul_4d_attention", "MatMul of two inputs [1,2,5,8] x [1,2,8,5] (attention scores)",
             [1, 2, 5, 8], [1, 2, 8, 5], b_is_input=True)


# --------------------------------------------------------------------------- #
# Elementwise binary
# --------------------------------------------------------------------------- #
def _const(b, op, shape):
    if op == "Div":
        v = b.rng.uniform(0.5, 2.0, size=shape) * np.where(b.rng.random(size=shape) < 0.5, -1.0, 1.0)
    else:
        v = b.rng.standard_normal(size=shape)
    return v


for _op in ["Add", "Sub", "Mul", "Div"]:
    _rhs_kind = DIVISOR if _op == "Div" else "normal"
    _lo = _op.lower()

    def _reg(op=_op, lo=_lo, rhs_kind=_rhs_kind):
        @case(f"{lo}_same", f"{op} of two inputs [1,4,6,6]")
        def _(b):
            x0 = b.input("input_0", [1, 4, 6, 6])
            x1 = b.input("input_1", [1, 4, 6, 6], kind=rhs_kind)
            b.node(op, [x0, x1], lo, out=out(b))

        @case(f"{lo}_scalar", f"{op} input [1,4,6,6] with a 0-d initializer")
        def _(b):
            x = b.input("input", [1, 4, 6, 6])
            c = b.init(f"{lo}.const", np.float32(_const(b, op, ())))
            b.node(op, [x, c], lo, out=out(b))

        @case(f"{lo}_scalar_lhs", f"{op} with a 0-d initializer on the left, input on the right")
        def _(b):
            x = b.input("input", [1, 4, 6, 6], kind=rhs_kind)
            c = b.init(f"{lo}.const", np.float32(b.rng.standard_normal()))
            b.node(op, [c, x], lo, out=out(b))

        @case(f"{lo}_channel", f"{op} input [1,4,6,6] with a per-channel initializer [1,4,1,1]")
        def _(b):
            x = b.input("input", [1, 4, 6, 6])
            c = b.init(f"{lo}.const", _const(b, op, (1, 4, 1, 1)))
            b.node(op, [x, c], lo, out=out(b))

        @case(f"{lo}_bcast_both", f"{op} of inputs [3,1,5] and [1,4,1] (both sides broadcast)")
        def _(b):
            x0 = b.input("input_0", [3, 1, 5])
            x1 = b.input("input_1", [1, 4, 1], kind=rhs_kind)
            b.node(op, [x0, x1], lo, out=out(b))

    _reg()


# --------------------------------------------------------------------------- #
# Activations
# --------------------------------------------------------------------------- #
@case("relu")
def _(b):
    """Relu on [1,4,6,6]"""
    b.node("Relu", [b.input("input", [1, 4, 6, 6])], "relu", out=out(b))


@case("sigmoid")
def _(b):
    """Sigmoid on [1,4,6,6], inputs uniform in [-6,6)"""
    b.node("Sigmoid", [b.input("input", [1, 4, 6, 6], kind=WIDE)], "sigmoid", out=out(b))


@case("tanh")
def _(b):
    """Tanh on [1,4,6,6], inputs uniform in [-6,6)"""
    b.node("Tanh", [b.input("input", [1, 4, 6, 6], kind=WIDE)], "tanh", out=out(b))


def _clip_case(name, doc, lo, hi, kind="normal"):
    @case(name, doc)
    def _(b):
        x = b.input("input", [1, 4, 6, 6], kind=kind)
        ins = [x, b.init("clip.min", np.float32(lo)) if lo is not None else ""]
        if hi is not None:
            ins.append(b.init("clip.max", np.float32(hi)))
        b.node("Clip", ins, "clip", out=out(b))


_clip_case("clip_min_max", "Clip min=-0.5 max=0.8 (initializer inputs)", -0.5, 0.8)
_clip_case("clip_min_only", "Clip with only min=0.1 (max input omitted)", 0.1, None)
_clip_case("clip_max_only", "Clip with only max=0.3 (min input is the empty name)", None, 0.3)
_clip_case("clip_relu6", "Clip min=0 max=6 (ReLU6), inputs uniform in [-3,9)", 0.0, 6.0,
           kind=("uniform", -3.0, 9.0))


# --------------------------------------------------------------------------- #
# Pooling
# --------------------------------------------------------------------------- #
def _pool_case(name, op, doc, in_shape=(1, 4, 8, 8), **attrs):
    @case(name, doc)
    def _(b):
        x = b.input("input", list(in_shape))
        b.node(op, [x], "pool", out=out(b), **attrs)


_pool_case("maxpool_2x2_s2", "MaxPool", "MaxPool 2x2 stride 2", kernel_shape=[2, 2], strides=[2, 2])
_pool_case("maxpool_3x3_s2_pad1", "MaxPool", "MaxPool 3x3 stride 2 pads 1",
           kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
_pool_case("maxpool_ceil", "MaxPool", "MaxPool 3x3 stride 2 ceil_mode=1 (8x8 -> 4x4)",
           kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
_pool_case("maxpool_dilation2", "MaxPool", "MaxPool 2x2 stride 1 dilation 2",
           kernel_shape=[2, 2], strides=[1, 1], dilations=[2, 2])
_pool_case("maxpool_same_asym", "MaxPool", "MaxPool 2x2 stride 2 pads [0,0,1,1] on 7x7 (TF 'same')",
           in_shape=(1, 4, 7, 7), kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1])
_pool_case("avgpool_2x2_s2", "AveragePool", "AveragePool 2x2 stride 2",
           kernel_shape=[2, 2], strides=[2, 2])
_pool_case("avgpool_pad1_exclude", "AveragePool", "AveragePool 3x3 stride 1 pads 1 count_include_pad=0",
           kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=0)
_pool_case("avgpool_pad1_include", "AveragePool", "AveragePool 3x3 stride 1 pads 1 count_include_pad=1",
           kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=1)
_pool_case("avgpool_s2_pads_asym_exclude", "AveragePool",
           "AveragePool 3x3 stride 2 pads [0,0,1,1] count_include_pad=0 (TF 'same')",
           kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 1, 1], count_include_pad=0)
_pool_case("avgpool_s2_pads_asym_include", "AveragePool",
           "AveragePool 3x3 stride 2 pads [0,0,1,1] count_include_pad=1",
           kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 1, 1], count_include_pad=1)
_pool_case("global_avgpool", "GlobalAveragePool", "GlobalAveragePool on [1,8,5,7]", in_shape=(1, 8, 5, 7))


# --------------------------------------------------------------------------- #
# Softmax
# --------------------------------------------------------------------------- #
def _softmax_case(name, doc, shape, axis):
    @case(name, doc)
    def _(b):
        b.node("Softmax", [b.input("input", shape)], "softmax", out=out(b), axis=axis)


_softmax_case("softmax_last", "Softmax axis=-1 on [1,10]", [1, 10], -1)
_softmax_case("softmax_last_3d", "Softmax axis=-1 on [1,3,10]", [1, 3, 10], -1)
_softmax_case("softmax_axis1_3d", "Softmax axis=1 on [2,5,4] (non-innermost axis)", [2, 5, 4], 1)


# --------------------------------------------------------------------------- #
# Layout / shape ops
# --------------------------------------------------------------------------- #
def _transpose_case(name, doc, shape, perm):
    @case(name, doc)
    def _(b):
        attrs = {} if perm is None else {"perm": perm}
        b.node("Transpose", [b.input("input", shape)], "transpose", out=out(b), **attrs)


_transpose_case("transpose_0231", "Transpose NCHW->NHWC perm [0,2,3,1] on [1,3,4,5]", [1, 3, 4, 5], [0, 2, 3, 1])
_transpose_case("transpose_10", "Transpose perm [1,0] on [3,5]", [3, 5], [1, 0])
_transpose_case("transpose_201", "Transpose perm [2,0,1] on [3,4,5]", [3, 4, 5], [2, 0, 1])
_transpose_case("transpose_default", "Transpose without perm (reverse dims) on [2,3,4]", [2, 3, 4], None)


@case("concat_axis1_4d")
def _(b):
    """Concat axis=1 of inputs [1,3,4,4] and [1,5,4,4]"""
    x0 = b.input("input_0", [1, 3, 4, 4])
    x1 = b.input("input_1", [1, 5, 4, 4])
    b.node("Concat", [x0, x1], "concat", out=out(b), axis=1)


@case("concat_axis0")
def _(b):
    """Concat axis=0 of inputs [2,3] and [1,3]"""
    x0 = b.input("input_0", [2, 3])
    x1 = b.input("input_1", [1, 3])
    b.node("Concat", [x0, x1], "concat", out=out(b), axis=0)


@case("concat_axis_neg1")
def _(b):
    """Concat axis=-1 of input_0 [1,2,3], an initializer [1,2,4] and input_1 [1,2,2]"""
    x0 = b.input("input_0", [1, 2, 3])
    x1 = b.input("input_1", [1, 2, 2])
    c = b.init("concat.const", b.rng.standard_normal(size=(1, 2, 4)))
    b.node("Concat", [x0, c, x1], "concat", out=out(b), axis=-1)


@case("reshape_neg1")
def _(b):
    """Reshape [1,4,6,6] -> shape [1,-1], then Relu"""
    x = b.input("input", [1, 4, 6, 6])
    x = b.node("Reshape", [x, b.init_i64("reshape.shape", [1, -1])], "reshape")
    b.node("Relu", [x], "relu", out=out(b))


@case("reshape_zero")
def _(b):
    """Relu, then Reshape [1,4,6,6] -> shape [0,-1,4] (0 copies the input dim) = [1,36,4]"""
    x = b.node("Relu", [b.input("input", [1, 4, 6, 6])], "relu")
    b.node("Reshape", [x, b.init_i64("reshape.shape", [0, -1, 4])], "reshape", out=out(b))


@case("flatten_axis1")
def _(b):
    """Relu, then Flatten axis=1 on [1,3,4,5] -> [1,60]"""
    x = b.node("Relu", [b.input("input", [1, 3, 4, 5])], "relu")
    b.node("Flatten", [x], "flatten", out=out(b), axis=1)


@case("flatten_axis2")
def _(b):
    """Flatten axis=2 on [1,3,4,5] -> [3,20], then Relu"""
    x = b.node("Flatten", [b.input("input", [1, 3, 4, 5])], "flatten", axis=2)
    b.node("Relu", [x], "relu", out=out(b))


@case("squeeze_axes")
def _(b):
    """Squeeze axes [1,3] (initializer) on [1,1,5,1] -> [1,5], then Relu"""
    x = b.input("input", [1, 1, 5, 1])
    x = b.node("Squeeze", [x, b.init_i64("squeeze.axes", [1, 3])], "squeeze")
    b.node("Relu", [x], "relu", out=out(b))


@case("squeeze_neg_axis")
def _(b):
    """Relu, then Squeeze axes [-1] on [1,5,1] -> [1,5]"""
    x = b.node("Relu", [b.input("input", [1, 5, 1])], "relu")
    b.node("Squeeze", [x, b.init_i64("squeeze.axes", [-1])], "squeeze", out=out(b))


@case("squeeze_noaxes")
def _(b):
    """Relu, then Squeeze without axes on [1,5,1] -> [5]"""
    x = b.node("Relu", [b.input("input", [1, 5, 1])], "relu")
    b.node("Squeeze", [x], "squeeze", out=out(b))


@case("unsqueeze_axes")
def _(b):
    """Relu, then Unsqueeze axes [2] (initializer) on [1,6] -> [1,6,1]"""
    x = b.node("Relu", [b.input("input", [1, 6])], "relu")
    b.node("Unsqueeze", [x, b.init_i64("unsqueeze.axes", [2])], "unsqueeze", out=out(b))


@case("unsqueeze_multi_neg")
def _(b):
    """Unsqueeze axes [0,-1] on [3,4] -> [1,3,4,1], then Relu"""
    x = b.input("input", [3, 4])
    x = b.node("Unsqueeze", [x, b.init_i64("unsqueeze.axes", [0, -1])], "unsqueeze")
    b.node("Relu", [x], "relu", out=out(b))


@case("identity_then_relu")
def _(b):
    """Identity on the graph input, then Relu"""
    x = b.node("Identity", [b.input("input", [1, 4, 6, 6])], "identity")
    b.node("Relu", [x], "relu", out=out(b))


@case("relu_then_identity")
def _(b):
    """Relu, then Identity producing the graph output"""
    x = b.node("Relu", [b.input("input", [1, 4, 6, 6])], "relu")
    b.node("Identity", [x], "identity", out=out(b))


@case("dropout")
def _(b):
    """Relu, then Dropout (inference: pass-through) producing the graph output"""
    x = b.node("Relu", [b.input("input", [1, 4, 6, 6])], "relu")
    b.node("Dropout", [x], "dropout", out=out(b))


@case("dropout_ratio")
def _(b):
    """Dropout with ratio=0.25 initializer input (ignored at inference), then Relu"""
    x = b.input("input", [1, 4, 6, 6])
    x = b.node("Dropout", [x, b.init("dropout.ratio", np.float32(0.25))], "dropout")
    b.node("Relu", [x], "relu", out=out(b))


# --------------------------------------------------------------------------- #
# BatchNormalization (inference)
# --------------------------------------------------------------------------- #
@case("batchnorm_4d")
def _(b):
    """BatchNormalization on [1,6,5,5], epsilon 1e-5"""
    b.bn(b.input("input", [1, 6, 5, 5]), 6, "bn", out=out(b))


@case("batchnorm_eps")
def _(b):
    """BatchNormalization on [1,6,5,5], epsilon 1e-3 (Keras default)"""
    b.bn(b.input("input", [1, 6, 5, 5]), 6, "bn", eps=1e-3, out=out(b))


@case("batchnorm_2d")
def _(b):
    """BatchNormalization on a 2-D [1,16] tensor"""
    b.bn(b.input("input", [1, 16]), 16, "bn", out=out(b))



# --------------------------------------------------------------------------- #
# Normalisation (tract: Reduce<MeanOfSquares> / RmsNorm), LRN
# --------------------------------------------------------------------------- #
def _layernorm_case(name, doc, shape, axis, bias=True):
    """LayerNormalization as exporters write it below opset 17 (ReduceMean, Sub, Mul, ReduceMean,
    Add eps, Sqrt, Div, scale, shift); tract folds it to Reduce<MeanOfSquares> or RmsNorm."""
    @case(name, doc)
    def _(b):
        x = b.input("input", shape)
        axes = list(range(axis % len(shape), len(shape)))
        norm = shape[axis:]
        mean = b.node("ReduceMean", [x], "mean", axes=axes, keepdims=1)
        d = b.node("Sub", [x, mean], "sub")
        sq = b.node("Mul", [d, d], "square")
        var = b.node("ReduceMean", [sq], "var", axes=axes, keepdims=1)
        ve = b.node("Add", [var, b.init("ln.eps", np.float32(1e-5))], "add_eps")
        std = b.node("Sqrt", [ve], "sqrt")
        y = b.node("Div", [d, std], "div")
        scale = b.init("ln.scale", b.rng.uniform(0.5, 1.5, size=norm))
        if bias:
            y = b.node("Mul", [y, scale], "scale")
            b.node("Add", [y, b.init("ln.bias", b.rng.uniform(-0.5, 0.5, size=norm))], "shift", out=out(b))
        else:
            b.node("Mul", [y, scale], "scale", out=out(b))


_layernorm_case("layernorm_last", "Layer normalisation over the last axis of [2,3,16], opset-13 form "
                "(tract: RmsNorm)", [2, 3, 16], -1)
_layernorm_case("layernorm_axis1", "Layer normalisation over axes 1.. of [2,3,4,5], no shift, opset-13 form "
                "(tract: Reduce<MeanOfSquares>)", [2, 3, 4, 5], 1, bias=False)


@case("instancenorm")
def _(b):
    """InstanceNormalization on [2,3,5,5], epsilon 1e-3"""
    x = b.input("input", [2, 3, 5, 5])
    s = b.init("in.scale", b.rng.uniform(0.5, 1.5, size=3))
    t = b.init("in.bias", b.rng.uniform(-0.5, 0.5, size=3))
    b.node("InstanceNormalization", [x, s, t], "in", out=out(b), epsilon=1e-3)


@case("lrn")
def _(b):
    """LRN size=3 alpha=1e-3 beta=0.75 bias=2 on [1,6,4,4], inputs uniform in [-3,3)"""
    x = b.input("input", [1, 6, 4, 4], kind=("uniform", -3.0, 3.0))
    b.node("LRN", [x], "lrn", out=out(b), size=3, alpha=1e-3, beta=0.75, bias=2.0)


# --------------------------------------------------------------------------- #
# ConvTranspose (tract: Deconv with an OIHW kernel)
# --------------------------------------------------------------------------- #
def _convt_case(name, doc, in_shape, cout, k, group=1, bias=True, **attrs):
    @case(name, doc)
    def _(b):
        x = b.input("input", in_shape)
        cin = in_shape[1]
        ks = tuple(k)
        w = b.init("convt.weight", b.he((cin, cout // group) + ks, cin * int(np.prod(ks)), 1.0))
        ins = [x, w]
        if bias:
            ins.append(b.init("convt.bias", b.small_bias(cout)))
        b.node("ConvTranspose", ins, "convt", out=out(b), kernel_shape=list(ks), group=group, **attrs)


_convt_case("convtranspose_s2", "ConvTranspose 4->3, k3, stride 2, pads 1, output_padding 1 on [1,4,5,5]",
            [1, 4, 5, 5], 3, (3, 3), strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])
_convt_case("convtranspose_group2_dilation2", "ConvTranspose 4->6, group 2, k3, dilation 2, no bias, on [1,4,5,4]",
            [1, 4, 5, 4], 6, (3, 3), group=2, bias=False, dilations=[2, 2])
_convt_case("convtranspose_same_upper", "ConvTranspose 2->4, k4, stride 2, auto_pad SAME_UPPER on [1,2,3,5]",
            [1, 2, 3, 5], 4, (4, 4), strides=[2, 2], auto_pad="SAME_UPPER")
_convt_case("convtranspose1d", "1-D ConvTranspose 3->2, k4, stride 2 on [1,3,8]", [1, 3, 8], 2, (4,), strides=[2])


# --------------------------------------------------------------------------- #
# 3-D pooling
# --------------------------------------------------------------------------- #
_pool_case("maxpool3d_2x2x2_s2", "MaxPool", "3-D MaxPool 2x2x2 stride 2 on [1,2,6,6,6]",
           in_shape=(1, 2, 6, 6, 6), kernel_shape=[2, 2, 2], strides=[2, 2, 2])
_pool_case("avgpool3d_pad_ceil", "AveragePool",
           "3-D AveragePool 3x3x3 stride 2 pads 1 ceil_mode=1 count_include_pad=0 on [1,2,5,6,7]",
           in_shape=(1, 2, 5, 6, 7), kernel_shape=[3, 3, 3], strides=[2, 2, 2], pads=[1, 1, 1, 1, 1, 1],
           ceil_mode=1)
_pool_case("avgpool3d_include_pad", "AveragePool",
           "3-D AveragePool 2x3x2 strides [1,2,2] pads [1,0,1,0,1,1] count_include_pad=1 on [1,3,4,5,6]",
           in_shape=(1, 3, 4, 5, 6), kernel_shape=[2, 3, 2], strides=[1, 2, 2], pads=[1, 0, 1, 0, 1, 1],
           count_include_pad=1)


# --------------------------------------------------------------------------- #
# Comparison + select (tract expands Elu, Selu, PRelu into a bool comparison + Iff)
# --------------------------------------------------------------------------- #
@case("elu")
def _(b):
    """Elu alpha=0.7 on [1,4,6,6], inputs uniform in [-3,3)"""
    b.node("Elu", [b.input("input", [1, 4, 6, 6], kind=("uniform", -3.0, 3.0))], "elu", out=out(b), alpha=0.7)


@case("selu")
def _(b):
    """Selu (default alpha, gamma) on [1,4,6,6], inputs uniform in [-3,3)"""
    b.node("Selu", [b.input("input", [1, 4, 6, 6], kind=("uniform", -3.0, 3.0))], "selu", out=out(b))


@case("prelu_channel")
def _(b):
    """PRelu on [1,4,6,6] with a per-channel slope initializer [4,1,1]"""
    x = b.input("input", [1, 4, 6, 6])
    slope = b.init("prelu.slope", b.rng.uniform(0.05, 0.5, size=(4, 1, 1)))
    b.node("PRelu", [x, slope], "prelu", out=out(b))


@case("where_less")
def _(b):
    """Where(Less(input_0, input_1), input_0, 0.5 * input_1) on [2,3,4] and [1,3,1]"""
    x0 = b.input("input_0", [2, 3, 4])
    x1 = b.input("input_1", [1, 3, 1])
    cond = b.node("Less", [x0, x1], "less")
    half = b.node("Mul", [x1, b.init("half.const", np.float32(0.5))], "half")
    b.node("Where", [cond, x0, half], "where", out=out(b))


# --------------------------------------------------------------------------- #
# Gather with constant indices, Slice with negative steps, MatMul broadcast
# --------------------------------------------------------------------------- #
@case("gather_axis0")
def _(b):
    """Gather axis=0 of [5,4,3] with constant indices [3,0,3,-1]"""
    x = b.input("input", [5, 4, 3])
    b.node("Gather", [x, b.init_i64("gather.indices", [3, 0, 3, -1])], "gather", out=out(b), axis=0)


@case("gather_axis1_2d_indices")
def _(b):
    """Gather axis=1 of [2,5,3] with constant 2-D indices [[0,-2],[4,1]] -> [2,2,2,3]"""
    x = b.input("input", [2, 5, 3])
    idx = b.init_i64("gather.indices", [[0, -2], [4, 1]])
    b.node("Gather", [x, idx], "gather", out=out(b), axis=1)


@case("gather_scalar_index")
def _(b):
    """Gather axis=-1 of [3,4] with a 0-d constant index 2 -> [3]"""
    x = b.input("input", [3, 4])
    idx = b.init("gather.index", np.int64(2), dtype=np.int64)
    b.node("Gather", [x, idx], "gather", out=out(b), axis=-1)


@case("slice_neg_steps")
def _(b):
    """Slice of [6,9,4]: axis 1 from -1 down by -2, axis 2 from 3 to 0 by -1 -> [6,5,3]"""
    x = b.input("input", [6, 9, 4])
    ins = [x, b.init_i64("slice.starts", [-1, 3]), b.init_i64("slice.ends", [-100, 0]),
           b.init_i64("slice.axes", [1, 2]), b.init_i64("slice.steps", [-2, -1])]
    b.node("Slice", ins, "slice", out=out(b))


_matmul_case("matmul_bcast_both", "MatMul of two inputs [3,1,3,4] x [1,2,4,2] (each side broadcast)",
             [3, 1, 3, 4], [1, 2, 4, 2], b_is_input=True)

# --------------------------------------------------------------------------- #
# Resize (tract-onnx has no Upsample), DepthToSpace / SpaceToDepth
# --------------------------------------------------------------------------- #
def _resize_case(name, doc, shape, mode, scales=None, sizes=None, **attrs):
    @case(name, doc)
    def _(b):
        x = b.input("input", shape)
        roi = ""
        if scales is not None:
            ins = [x, roi, b.init("resize.scales", np.asarray(scales, dtype=np.float32))]
        else:
            ins = [x, roi, "", b.init_i64("resize.sizes", sizes)]
        b.node("Resize", ins, "resize", out=out(b), mode=mode, **attrs)


_resize_case("resize_nearest_x2", "Resize nearest, scales [1,1,2,2] (asymmetric, floor) on [1,3,4,5]",
             [1, 3, 4, 5], "nearest", scales=[1, 1, 2, 2], coordinate_transformation_mode="asymmetric",
             nearest_mode="floor")
_resize_case("resize_nearest_sizes", "Resize nearest to sizes [1,2,7,3] (half_pixel, round_prefer_floor) on [1,2,4,5]",
             [1, 2, 4, 5], "nearest", sizes=[1, 2, 7, 3])
_resize_case("resize_linear_x2", "Resize linear, scales [1,1,2,2] (half_pixel) on [1,3,4,5]",
             [1, 3, 4, 5], "linear", scales=[1, 1, 2, 2])
_resize_case("resize_linear_align_corners", "Resize linear to sizes [1,2,7,9] (align_corners) on [1,2,4,5]",
             [1, 2, 4, 5], "linear", sizes=[1, 2, 7, 9], coordinate_transformation_mode="align_corners")


@case("depth_to_space_dcr")
def _(b):
    """DepthToSpace blocksize 2, mode DCR, on [1,8,3,4]"""
    b.node("DepthToSpace", [b.input("input", [1, 8, 3, 4])], "d2s", out=out(b), blocksize=2, mode="DCR")


@case("depth_to_space_crd")
def _(b):
    """DepthToSpace blocksize 2, mode CRD, on [1,8,3,4]"""
    b.node("DepthToSpace", [b.input("input", [1, 8, 3, 4])], "d2s", out=out(b), blocksize=2, mode="CRD")


@case("space_to_depth")
def _(b):
    """SpaceToDepth blocksize 2 on [1,3,4,6]"""
    b.node("SpaceToDepth", [b.input("input", [1, 3, 4, 6])], "s2d", out=out(b), blocksize=2)


# --------------------------------------------------------------------------- #
# More activations, Pow
# --------------------------------------------------------------------------- #
@case("softplus")
def _(b):
    """Softplus on [1,4,6,6], inputs uniform in [-6,6)"""
    b.node("Softplus", [b.input("input", [1, 4, 6, 6], kind=WIDE)], "softplus", out=out(b))


@case("softsign")
def _(b):
    """Softsign on [1,4,6,6], inputs uniform in [-6,6)"""
    b.node("Softsign", [b.input("input", [1, 4, 6, 6], kind=WIDE)], "softsign", out=out(b))


@case("hardsigmoid")
def _(b):
    """HardSigmoid alpha=0.25 beta=0.4 on [1,4,6,6], inputs uniform in [-6,6)"""
    x = b.input("input", [1, 4, 6, 6], kind=WIDE)
    b.node("HardSigmoid", [x], "hardsigmoid", out=out(b), alpha=0.25, beta=0.4)


@case("pow_inputs")
def _(b):
    """Pow of two inputs: base [2,3,4] uniform in [0.5,2), exponent [1,3,1] uniform in [-2,2)"""
    x0 = b.input("input_0", [2, 3, 4], kind=("uniform", 0.5, 2.0))
    x1 = b.input("input_1", [1, 3, 1], kind=("uniform", -2.0, 2.0))
    b.node("Pow", [x0, x1], "pow", out=out(b))


@case("pow_const_exponent")
def _(b):
    """Pow of an input [1,4,6,6] (uniform in [0.5,2)) with a constant exponent 3"""
    x = b.input("input", [1, 4, 6, 6], kind=("uniform", 0.5, 2.0))
    b.node("Pow", [x, b.init("pow.exponent", np.float32(3.0))], "pow", out=out(b))


# --------------------------------------------------------------------------- #
# Split, Slice with steps, Concat on inner axes, Transpose, MatMul batch broadcast
# --------------------------------------------------------------------------- #
@case("split_uneven")
def _(b):
    """Split axis=1 of [2,6,4] into [1,3,2] (split initializer), each part through Relu"""
    x = b.input("input", [2, 6, 4])
    parts = b.node("Split", [x, b.init_i64("split.split", [1, 3, 2])], "split", n_out=3, axis=1)
    for i, t in enumerate(parts):
        b.node("Relu", [t], f"relu{i}", out=b.output(f"output_{i}"))


@case("slice_steps")
def _(b):
    """Slice of [7,10,5]: axis 0 from 1 by 2, axis 1 from 0 to 9 by 3, axis 2 from -4 to -1"""
    x = b.input("input", [7, 10, 5])
    ins = [x, b.init_i64("slice.starts", [1, 0, -4]), b.init_i64("slice.ends", [7, 9, -1]),
           b.init_i64("slice.axes", [0, 1, 2]), b.init_i64("slice.steps", [2, 3, 1])]
    b.node("Slice", ins, "slice", out=out(b))


@case("concat_axis2_4d")
def _(b):
    """Concat axis=2 of [1,3,2,4], [1,3,5,4] and an initializer [1,3,1,4]"""
    x0 = b.input("input_0", [1, 3, 2, 4])
    x1 = b.input("input_1", [1, 3, 5, 4])
    c = b.init("concat.const", b.rng.standard_normal(size=(1, 3, 1, 4)))
    b.node("Concat", [x0, x1, c], "concat", out=out(b), axis=2)


@case("concat_axis3_4d")
def _(b):
    """Concat axis=3 of [2,3,4,2] and [2,3,4,5]"""
    x0 = b.input("input_0", [2, 3, 4, 2])
    x1 = b.input("input_1", [2, 3, 4, 5])
    b.node("Concat", [x0, x1], "concat", out=out(b), axis=3)


_transpose_case("transpose_3102", "Transpose perm [3,1,0,2] on [2,3,4,5]", [2, 3, 4, 5], [3, 1, 0, 2])
_transpose_case("transpose_5d_41302", "Transpose perm [4,1,3,0,2] on [2,3,1,4,5]", [2, 3, 1, 4, 5], [4, 1, 3, 0, 2])

_matmul_case("matmul_batch_bcast_rank", "MatMul [2,1,3,4] x [5,4,6] (rank and batch broadcast) -> [2,5,3,6]",
             [2, 1, 3, 4], [5, 4, 6], b_is_input=True)
_matmul_case("matmul_one_token", "MatMul of two inputs [1,4,1,8] x [1,4,8,1] (one-token attention scores: "
             "the output's last two axes are 1, its innermost axis a batch axis for tract)",
             [1, 4, 1, 8], [1, 4, 8, 1], b_is_input=True)


# --------------------------------------------------------------------------- #
# CumSum
# --------------------------------------------------------------------------- #
def _cumsum_case(name, doc, shape, axis, **attrs):
    @case(name, doc)
    def _(b):
        x = b.input("input", shape)
        ax = b.init_i64("cumsum.axis", axis)
        b.node("CumSum", [x, ax], "cumsum", out=out(b), **attrs)


_cumsum_case("cumsum_axis1", "CumSum over axis 1 of [2,5,3]", [2, 5, 3], 1)
@case("cumsum_after_relu", "Relu, exclusive CumSum over axis 0 of [4,6], Neg (the sum overwrites the Relu's output in place)")
def _(b):
    x = b.input("input", [4, 6])
    r = b.node("Relu", [x], "relu")
    ax = b.init_i64("cumsum.axis", 0)
    c = b.node("CumSum", [r, ax], "cumsum", exclusive=1)
    b.node("Neg", [c], "neg", out=out(b))


_cumsum_case("cumsum_exclusive_reverse", "CumSum exclusive, reverse, over the last axis (-1) of [3,7]", [3, 7], -1,
             exclusive=1, reverse=1)


# --------------------------------------------------------------------------- #
# Variadic Sum / Max / Min / Mean
# --------------------------------------------------------------------------- #
def _variadic_case(op):
    @case(f"{op.lower()}_variadic", f"{op} of three inputs [2,3,4], [3,1] and [1,1,4] (broadcast)")
    def _(b):
        x0 = b.input("input_0", [2, 3, 4])
        x1 = b.input("input_1", [3, 1])
        x2 = b.input("input_2", [1, 1, 4])
        b.node(op, [x0, x1, x2], op.lower(), out=out(b))


for _op in ["Sum", "Max", "Min", "Mean"]:
    _variadic_case(_op)


# --------------------------------------------------------------------------- #
def case_seed(name):
    return zlib.crc32(name.encode("utf-8")) % 1_000_000


def main():
    filters = sys.argv[1:]
    rows = []
    for name, fn, doc in CASES:
        if filters and not any(f in name for f in filters):
            continue
        seed = case_seed(name)
        b = GraphBuilder(name, seed, doc.strip())
        fn(b)
        model = b.build()
        rows.append(write_fixture(model, OUT_DIR, name, GENERATOR, seed, b.input_kinds()))
    print_summary(rows)
    print(f"{len(rows)} op-test models written to {os.path.relpath(OUT_DIR, REPO_ROOT)}")


if __name__ == "__main__":
    main()
