"""The per-op cases of gen_quantized.py (tests/models/quant/ops/): see that script's doc.

Each case is a function of a builder `b` that calls one op helper (b.conv, b.add, ...) on integer
input ports. The same function builds three graphs:
  1. calibration (QDQ, float op output exposed): run on the test input by ORT with optimisations
     off, its output's min/max (widened to include 0) give the output scale and zero point;
  2. the QDQ case (DequantizeLinear -> op -> QuantizeLinear), or
  3. the QOperator case (one QLinear*/Q*/…Integer node).
Weights come from numpy.random.default_rng(seed), test inputs from default_rng([seed, 1]) (uniform
over the whole integer range), seed = zlib.crc32(case name) % 1_000_000.
"""

import collections
import os
import tempfile
import zlib

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import fixture_json as fj

OPSET = 13
IR_VERSION = 8
PRODUCER = "sramfit-scripts"
MS = "com.microsoft"

NP = {"int8": np.int8, "uint8": np.uint8, "int32": np.int32, "float32": np.float32}
ONNX_T = {"int8": TensorProto.INT8, "uint8": TensorProto.UINT8, "int32": TensorProto.INT32,
          "float32": TensorProto.FLOAT}
# Default zero points of input ports (deliberately not 0 / 128, so a kernel that ignores them fails).
IN_ZP = {"int8": -5, "uint8": 121}
# Largest weight magnitude: 127 with int8 activations, 64 (7 bits, ORT's reduce_range) with uint8.
WEIGHT_QMAX = {"int8": 127, "uint8": 64}


class QT:
    """A quantized tensor: integer tensor name plus the names and values of its scale/zero point."""

    def __init__(self, name, scale_name, zp_name, scale, zp, dtype):
        self.name, self.scale_name, self.zp_name = name, scale_name, zp_name
        self.scale, self.zp, self.dtype = float(scale), int(zp), dtype


class Builder:
    def __init__(self, case, mode, calib=None):
        self.case = case
        self.mode = mode  # "calib", "qdq", "qop"
        self.dtype = case.dtype
        self.seed = case.seed
        self.rng = np.random.default_rng(self.seed)
        self.data_rng = np.random.default_rng([self.seed, 1])
        self.nodes, self.inits, self.inputs, self.outputs = [], [], [], []
        self.feeds = {}
        self.port_quant = {}
        self.calib = calib
        self.calib_outputs = []
        self.opset = case.opset
        self.uses_ms = False
        self._n = collections.Counter()

    # -- basics ------------------------------------------------------------- #
    def uid(self, base):
        self._n[base] += 1
        return base if self._n[base] == 1 else f"{base}{self._n[base]}"

    def init(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(self, op, inputs, outputs, name, domain=None, **attrs):
        if domain == MS:
            self.uses_ms = True
        self.nodes.append(helper.make_node(op, list(inputs), list(outputs), name=name,
                                           domain=domain, **attrs))
        return outputs[0]

    def qrange(self, dtype=None):
        info = np.iinfo(NP[dtype or self.dtype])
        return int(info.min), int(info.max)

    # -- ports -------------------------------------------------------------- #
    def input(self, name, shape, scale=0.05, zp=None, dtype=None):
        dtype = dtype or self.dtype
        zp = IN_ZP[dtype] if zp is None else zp
        lo, hi = self.qrange(dtype)
        data = self.data_rng.integers(lo, hi + 1, size=shape).astype(NP[dtype])
        self.inputs.append(helper.make_tensor_value_info(name, ONNX_T[dtype], list(shape)))
        self.feeds[name] = data
        s = self.init(f"{name}.scale", np.float32(scale))
        z = self.init(f"{name}.zero_point", np.asarray(zp, dtype=NP[dtype]))
        self.port_quant[name] = {"scale": float(np.float32(scale)), "zero_point": int(zp), "dtype": dtype}
        return QT(name, s, z, np.float32(scale), zp, dtype)

    def float_input(self, name, shape, lo=-4.0, hi=4.0):
        data = self.data_rng.uniform(lo, hi, size=shape).astype(np.float32)
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)))
        self.feeds[name] = data
        return name

    def raw_int_input(self, name, shape, dtype):
        lo, hi = self.qrange(dtype)
        data = self.data_rng.integers(lo, hi + 1, size=shape).astype(NP[dtype])
        self.inputs.append(helper.make_tensor_value_info(name, ONNX_T[dtype], list(shape)))
        self.feeds[name] = data
        return name

    def graph_output(self, name, elem_type):
        self.outputs.append(helper.make_tensor_value_info(name, elem_type, None))

    # -- Q / DQ ----------------------------------------------------------- #
    def dq(self, t):
        out = self.uid(f"{t.name}_dq")
        return self.node("DequantizeLinear", [t.name, t.scale_name, t.zp_name], [out], out)

    def _params_from_range(self, lo, hi, dtype):
        qmin, qmax = self.qrange(dtype)
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        if hi - lo < 1e-6:
            hi = lo + 1e-6
        scale = np.float32((hi - lo) / (qmax - qmin))
        zp = int(np.clip(np.round(qmin - lo / scale), qmin, qmax))
        return scale, zp

    def out_params(self, how, like=None):
        """(scale, zero point) of the op's output: "same" as `like`, ("fixed", s, zp_int8, zp_uint8),
        or calibrated: "calib" / "calib_relu" (range clipped below at 0) / "calib_relu6"."""
        if how == "same":
            return np.float32(like.scale), like.zp
        if isinstance(how, tuple) and how[0] == "fixed":
            return np.float32(how[1]), (how[2] if self.dtype == "int8" else how[3])
        k = len(self.calib_outputs) if self.mode == "calib" else self._calib_k
        lo, hi = self.calib[k]
        if how == "calib_relu":
            lo = 0.0
        elif how == "calib_relu6":
            lo, hi = 0.0, min(hi, 6.0)
        return self._params_from_range(lo, hi, self.dtype)

    def finish(self, yf, how, out, like=None):
        """Float op output -> QuantizeLinear -> the quantized tensor `out` (a graph output when
        out == "output"); in the calibration build, expose the float tensor instead."""
        if self.mode == "calib":
            if how == "same" or (isinstance(how, tuple) and how[0] == "fixed"):
                scale, zp = self.out_params(how, like)
            else:
                name = f"calib_{len(self.calib_outputs)}"
                self.node("Identity", [yf], [name], name)
                self.graph_output(name, TensorProto.FLOAT)
                self.calib_outputs.append(name)
                return QT(yf, "", "", 1.0, 0, self.dtype)
        else:
            self._calib_k = 0
            scale, zp = self.out_params(how, like)
        return self.quantize(yf, scale, zp, out)

    def quantize(self, yf, scale, zp, out, dtype=None):
        dtype = dtype or self.dtype
        s = self.init(f"{out}.scale", np.float32(scale))
        z = self.init(f"{out}.zero_point", np.asarray(zp, dtype=NP[dtype]))
        self.node("QuantizeLinear", [yf, s, z], [out], f"{out}_q")
        if out == "output" or out.startswith("output_"):
            self.graph_output(out, ONNX_T[dtype])
            self.port_quant[out] = {"scale": float(np.float32(scale)), "zero_point": int(zp), "dtype": dtype}
        return QT(out, s, z, scale, zp, dtype)

    def qop_out(self, how, out, like=None):
        """Output scale/zero point initializers of a QOperator node (calibrated like `finish`)."""
        if self.mode == "calib":
            raise AssertionError("QOperator cases calibrate through their QDQ twin")
        self._calib_k = 0
        scale, zp = self.out_params(how, like)
        s = self.init(f"{out}.scale", np.float32(scale))
        z = self.init(f"{out}.zero_point", np.asarray(zp, dtype=NP[self.dtype]))
        if out == "output":
            self.graph_output(out, ONNX_T[self.dtype])
            self.port_quant[out] = {"scale": float(np.float32(scale)), "zero_point": int(zp),
                                    "dtype": self.dtype}
        return QT(out, s, z, scale, zp, self.dtype)

    # -- weights ------------------------------------------------------------ #
    def weight(self, name, w, axis, per_channel=True):
        """Symmetric int8 weight (zero point 0); per-channel along `axis` or per-tensor. With uint8
        activations the weights use 7 bits ([-64, 64], ORT's reduce_range): ORT's u8 x s8 kernels on
        x86 without VNNI add pairs of products in int16 with saturation (vpmaddubsw), which full-range
        weights overflow, so its integer result would not be exact (measured: up to 32 steps off)."""
        w = np.asarray(w, dtype=np.float64)
        qmax = WEIGHT_QMAX[self.dtype]
        if per_channel:
            red = tuple(i for i in range(w.ndim) if i != axis)
            scales = (np.max(np.abs(w), axis=red) / qmax).astype(np.float32)
            shape = [1] * w.ndim
            shape[axis] = -1
            q = np.clip(np.round(w / scales.reshape(shape)), -qmax, qmax).astype(np.int8)
            zp = np.zeros(scales.shape, np.int8)
        else:
            scales = np.float32(np.max(np.abs(w)) / qmax)
            q = np.clip(np.round(w / scales), -qmax, qmax).astype(np.int8)
            zp = np.int8(0)
        wn = self.init(f"{name}.weight", q)
        sn = self.init(f"{name}.weight_scale", scales)
        zn = self.init(f"{name}.weight_zero_point", zp)
        return wn, sn, zn, np.atleast_1d(scales).astype(np.float64)

    def bias(self, name, b, s_in, w_scales):
        s = (np.float64(np.float32(s_in)) * w_scales).astype(np.float32)
        q = np.round(np.asarray(b, np.float64) / s.astype(np.float64)).astype(np.int32)
        bn = self.init(f"{name}.bias", q)
        return bn, s

    def dq_weight(self, wn, sn, zn, axis, per_channel):
        out = f"{wn}_dq"
        attrs = {"axis": axis} if per_channel else {}
        return self.node("DequantizeLinear", [wn, sn, zn], [out], out, **attrs)

    def dq_bias(self, bn, s, name):
        sn = self.init(f"{name}.bias_scale", s)
        zn = self.init(f"{name}.bias_zero_point", np.zeros(s.shape, np.int32))
        out = f"{bn}_dq"
        return self.node("DequantizeLinear", [bn, sn, zn], [out], out, axis=0)

    # -- ops -------------------------------------------------------------- #
    def conv(self, x, cin, cout, k, stride=1, pads=0, group=1, dilation=1, bias=True,
             per_channel=True, act=None, out="output"):
        ks = (k, k) if isinstance(k, int) else tuple(k)
        nd = len(ks)
        attrs = dict(kernel_shape=list(ks),
                     strides=[stride] * nd if isinstance(stride, int) else list(stride),
                     pads=[pads] * (2 * nd) if isinstance(pads, int) else list(pads),
                     dilations=[dilation] * nd if isinstance(dilation, int) else list(dilation),
                     group=group)
        fan_in = (cin // group) * int(np.prod(ks))
        w = self.rng.normal(0.0, np.sqrt(2.0 / fan_in), size=(cout, cin // group) + ks)
        b = self.rng.uniform(-0.5, 0.5, size=cout)
        wn, sn, zn, ws = self.weight("conv", w, 0, per_channel)
        bn = None
        if bias:
            bn, bs = self.bias("conv", b, x.scale, ws)
        how = {None: "calib", "relu": "calib_relu", "relu_folded": "calib_relu", "relu6": "calib_relu6"}[act]
        if self.mode == "qop":
            y = self.qop_out(how, out)
            ins = [x.name, x.scale_name, x.zp_name, wn, sn, zn, y.scale_name, y.zp_name] + ([bn] if bn else [])
            self.node("QLinearConv", ins, [out], "conv", **attrs)
            return y
        ins = [self.dq(x), self.dq_weight(wn, sn, zn, 0, per_channel)]
        if bias:
            ins.append(self.dq_bias(bn, bs, "conv"))
        y = self.node("Conv", ins, ["conv_out"], "conv", **attrs)
        if act == "relu":
            y = self.node("Relu", [y], ["relu_out"], "relu")
        elif act == "relu6":
            lo = self.init("clip.min", np.float32(0.0))
            hi = self.init("clip.max", np.float32(6.0))
            y = self.node("Clip", [y, lo, hi], ["clip_out"], "clip")
        return self.finish(y, how, out)

    def gemm(self, x, k, n, trans_b=1, bias=True, per_channel=True, out="output"):
        w = self.rng.normal(0.0, np.sqrt(2.0 / k), size=(n, k) if trans_b else (k, n))
        b = self.rng.uniform(-0.5, 0.5, size=n)
        axis = 0 if trans_b else 1
        wn, sn, zn, ws = self.weight("gemm", w, axis, per_channel)
        if bias:
            bn, bs = self.bias("gemm", b, x.scale, ws)
        if self.mode == "qop":
            y = self.qop_out("calib", out)
            ins = [x.name, x.scale_name, x.zp_name, wn, sn, zn, bn if bias else "", y.scale_name, y.zp_name]
            self.node("QGemm", ins, [out], "gemm", domain=MS, transB=trans_b)
            return y
        ins = [self.dq(x), self.dq_weight(wn, sn, zn, axis, per_channel)]
        if bias:
            ins.append(self.dq_bias(bn, bs, "gemm"))
        y = self.node("Gemm", ins, ["gemm_out"], "gemm", transB=trans_b)
        return self.finish(y, "calib", out)

    def matmul_w(self, x, k, n, per_channel=True, out="output"):
        w = self.rng.normal(0.0, np.sqrt(2.0 / k), size=(k, n))
        wn, sn, zn, _ = self.weight("matmul", w, 1, per_channel)
        if self.mode == "qop":
            y = self.qop_out("calib", out)
            self.node("QLinearMatMul", [x.name, x.scale_name, x.zp_name, wn, sn, zn, y.scale_name, y.zp_name],
                      [out], "matmul")
            return y
        y = self.node("MatMul", [self.dq(x), self.dq_weight(wn, sn, zn, 1, per_channel)], ["matmul_out"],
                      "matmul")
        return self.finish(y, "calib", out)

    def matmul(self, a, b, out="output"):
        if self.mode == "qop":
            y = self.qop_out("calib", out)
            self.node("QLinearMatMul", [a.name, a.scale_name, a.zp_name, b.name, b.scale_name, b.zp_name,
                                        y.scale_name, y.zp_name], [out], "matmul")
            return y
        y = self.node("MatMul", [self.dq(a), self.dq(b)], ["matmul_out"], "matmul")
        return self.finish(y, "calib", out)

    def binary(self, op, a, b, out="output"):
        if self.mode == "qop":
            y = self.qop_out("calib", out)
            self.node(f"QLinear{op}", [a.name, a.scale_name, a.zp_name, b.name, b.scale_name, b.zp_name,
                                       y.scale_name, y.zp_name], [out], op.lower(), domain=MS)
            return y
        y = self.node(op, [self.dq(a), self.dq(b)], [f"{op.lower()}_out"], op.lower())
        return self.finish(y, "calib", out)

    def maxpool(self, x, k, stride, pads, out="output", ceil_mode=0):
        attrs = dict(kernel_shape=[k, k], strides=[stride, stride], pads=pads, ceil_mode=ceil_mode)
        if self.mode == "qop":  # ONNX MaxPool takes int8/uint8 directly (opset 12+)
            self.node("MaxPool", [x.name], [out], "maxpool", **attrs)
            self.graph_output(out, ONNX_T[self.dtype])
            self.port_quant[out] = {"scale": x.scale, "zero_point": x.zp, "dtype": self.dtype}
            return QT(out, x.scale_name, x.zp_name, x.scale, x.zp, self.dtype)
        y = self.node("MaxPool", [self.dq(x)], ["maxpool_out"], "maxpool", **attrs)
        return self.finish(y, "same", out, like=x)

    def avgpool(self, x, k, stride, pads, count_include_pad=0, out="output", how="same"):
        attrs = dict(kernel_shape=[k, k], strides=[stride, stride], pads=pads,
                     count_include_pad=count_include_pad)
        if self.mode == "qop":
            y = self.qop_out(how, out, like=x)
            self.node("QLinearAveragePool", [x.name, x.scale_name, x.zp_name, y.scale_name, y.zp_name], [out],
                      "avgpool", domain=MS, **attrs)
            return y
        y = self.node("AveragePool", [self.dq(x)], ["avgpool_out"], "avgpool", **attrs)
        return self.finish(y, how, out, like=x)

    def gap(self, x, out="output"):
        if self.mode == "qop":
            y = self.qop_out("calib", out)
            self.node("QLinearGlobalAveragePool", [x.name, x.scale_name, x.zp_name, y.scale_name, y.zp_name],
                      [out], "gap", domain=MS, channels_last=0)
            return y
        y = self.node("GlobalAveragePool", [self.dq(x)], ["gap_out"], "gap")
        return self.finish(y, "calib", out)

    def concat(self, xs, axis, out="output"):
        if self.mode == "qop":
            y = self.qop_out("calib", out)
            ins = [y.scale_name, y.zp_name]
            for x in xs:
                ins += [x.name, x.scale_name, x.zp_name]
            self.node("QLinearConcat", ins, [out], "concat", domain=MS, axis=axis)
            return y
        y = self.node("Concat", [self.dq(x) for x in xs], ["concat_out"], "concat", axis=axis)
        return self.finish(y, "calib", out)

    def unary(self, op, x, how="calib", out="output", qop=None, **attrs):
        if self.mode == "qop":
            y = self.qop_out(how, out, like=x)
            extra = {"opset": self.opset} if qop == "QLinearSoftmax" else {}
            self.node(qop, [x.name, x.scale_name, x.zp_name, y.scale_name, y.zp_name], [out], op.lower(),
                      domain=MS, **attrs, **extra)
            return y
        y = self.node(op, [self.dq(x)], [f"{op.lower()}_out"], op.lower(), **attrs)
        return self.finish(y, how, out, like=x)

    def layernorm(self, x, n, out="output"):
        """LayerNormalization over the last axis (opset 17): an int8 per-tensor scale through its
        DequantizeLinear, a float bias; QDQ only (there is no QOperator form)."""
        wn, sn, zn, _ = self.weight("norm", self.rng.uniform(0.5, 1.5, n), 0, per_channel=False)
        gamma = self.dq_weight(wn, sn, zn, 0, False)
        beta = self.init("norm.bias", self.rng.uniform(-0.5, 0.5, n).astype(np.float32))
        y = self.node("LayerNormalization", [self.dq(x), gamma, beta], ["layernorm_out"], "layernorm",
                      axis=-1, epsilon=1e-5)
        return self.finish(y, "calib", out, like=x)

    def view(self, op, x, extra_inputs=(), out="output", **attrs):
        """Reshape / Transpose / Flatten / Squeeze / Pad: output keeps the input's parameters."""
        if self.mode == "qop":
            ins = [x.name] + list(extra_inputs)
            if op == "Pad":
                ins = [x.name, extra_inputs[0], x.zp_name]
            self.node(op, ins, [out], op.lower(), **attrs)
            self.graph_output(out, ONNX_T[self.dtype])
            self.port_quant[out] = {"scale": x.scale, "zero_point": x.zp, "dtype": self.dtype}
            return QT(out, x.scale_name, x.zp_name, x.scale, x.zp, self.dtype)
        ins = [self.dq(x)] + list(extra_inputs)
        if op == "Pad":
            ins = ins[:2] + [self.init("pad.value", np.float32(0.0))]
        y = self.node(op, ins, [f"{op.lower()}_out"], op.lower(), **attrs)
        return self.finish(y, "same", out, like=x)


# --------------------------------------------------------------------------- #
# The cases
# --------------------------------------------------------------------------- #
class Case:
    def __init__(self, base, fn, mode, dtype, opset=OPSET):
        self.base, self.fn, self.mode, self.dtype, self.opset = base, fn, mode, dtype, opset
        sfx = {"int8": "s8", "uint8": "u8"}[dtype]
        self.name = f"{mode}_{base}_{sfx}"
        self.seed = zlib.crc32(self.name.encode()) % 1_000_000


def i64(b, name, values):
    return b.init(name, np.asarray(values, np.int64))


# Each: name -> (function of the builder, modes, description of what it covers)


OPS = {
    "conv3x3": (lambda b: b.conv(b.input("input", [1, 4, 8, 8], 0.04), 4, 6, 3, pads=1),
                "qdq qop", "3x3, pads 1, bias, per-channel weights"),
    "conv_strided": (lambda b: b.conv(b.input("input", [1, 3, 9, 9], 0.03), 3, 8, 3, stride=2,
                                      pads=[0, 0, 1, 1]),
                     "qdq qop", "3x3 stride 2, asymmetric pads [0,0,1,1]"),
    "conv_depthwise": (lambda b: b.conv(b.input("input", [1, 8, 8, 8], 0.05), 8, 8, 3, pads=1, group=8),
                       "qdq qop", "depthwise 3x3 (group = channels)"),
    "conv_depthwise_mult2": (lambda b: b.conv(b.input("input", [1, 4, 7, 7], 0.05), 4, 8, 3, stride=2,
                                              pads=1, group=4),
                             "qdq", "depthwise with channel multiplier 2, stride 2"),
    "conv_pointwise": (lambda b: b.conv(b.input("input", [1, 16, 6, 6], 0.02), 16, 8, 1),
                       "qdq qop", "1x1"),
    "conv_1d": (lambda b: b.conv(b.input("input", [1, 4, 20], 0.05), 4, 6, (5,), pads=2, dilation=1),
                "qdq qop", "1-D, kernel 5, pads 2"),
    "conv_dilated": (lambda b: b.conv(b.input("input", [1, 3, 10, 10], 0.05), 3, 4, 3, pads=2, dilation=2),
                     "qdq", "3x3 dilation 2"),
    "conv_per_tensor_nobias": (lambda b: b.conv(b.input("input", [1, 4, 6, 6], 0.05), 4, 5, 3,
                                                bias=False, per_channel=False),
                               "qdq qop", "per-tensor weight scale, no bias"),
    "conv_relu": (lambda b: b.conv(b.input("input", [1, 4, 8, 8], 0.04), 4, 6, 3, pads=1, act="relu"),
                  "qdq", "Conv -> Relu -> Q (explicit Relu node; output zero point = qmin)"),
    "conv_relu_folded": (lambda b: b.conv(b.input("input", [1, 4, 8, 8], 0.04), 4, 6, 3, pads=1,
                                          act="relu_folded"),
                         "qdq qop", "Relu folded into the output zero point (qmin): no Relu node"),
    "conv_relu6": (lambda b: b.conv(b.input("input", [1, 4, 8, 8], 0.04), 4, 6, 3, pads=1, act="relu6"),
                   "qdq", "Conv -> Clip(0, 6) -> Q"),
    "gemm": (lambda b: b.gemm(b.input("input", [2, 16], 0.05), 16, 10),
             "qdq qop", "Gemm transB=1, bias, per-channel (axis 0), batch 2 (QOperator: com.microsoft QGemm)"),
    "gemm_notrans": (lambda b: b.gemm(b.input("input", [1, 12], 0.05), 12, 7, trans_b=0),
                     "qdq qop", "Gemm transB=0, per-channel (axis 1)"),
    "matmul_const": (lambda b: b.matmul_w(b.input("input", [1, 3, 16], 0.05), 16, 12),
                     "qdq", "MatMul by a constant [16,12], per-channel (axis 1)"),
    "matmul_const_per_tensor": (lambda b: b.matmul_w(b.input("input", [1, 3, 16], 0.05), 16, 12,
                                                     per_channel=False),
                                "qdq qop", "MatMul by a constant, per-tensor (QOperator: QLinearMatMul)"),
    "matmul_act": (lambda b: b.matmul(b.input("input_0", [1, 4, 8], 0.04),
                                      b.input("input_1", [1, 8, 6], 0.06, zp=7 if b.dtype == "int8" else 140)),
                   "qdq qop", "MatMul of two activations (two input ports, different scales)"),
    "matmul_batched": (lambda b: b.matmul(b.input("input_0", [2, 3, 4, 8], 0.04),
                                          b.input("input_1", [2, 3, 8, 5], 0.05, zp=0 if b.dtype == "int8" else 128)),
                       "qdq qop", "batched MatMul [2,3,4,8] x [2,3,8,5] of two activations"),
    "add": (lambda b: b.binary("Add", b.input("input_0", [1, 4, 6, 6], 0.04, zp=10 if b.dtype == "int8" else 138),
                               b.input("input_1", [1, 4, 6, 6], 0.09, zp=-20 if b.dtype == "int8" else 100)),
            "qdq qop", "Add of two activations with different scales (QOperator: QLinearAdd)"),
    "add_bcast": (lambda b: b.binary("Add", b.input("input_0", [1, 4, 6, 6], 0.04),
                                     b.input("input_1", [1, 4, 1, 1], 0.02, zp=3 if b.dtype == "int8" else 125)),
                  "qdq qop", "Add with broadcasting [1,4,6,6] + [1,4,1,1]"),
    "mul": (lambda b: b.binary("Mul", b.input("input_0", [1, 4, 6, 6], 0.04, zp=10 if b.dtype == "int8" else 138),
                               b.input("input_1", [1, 4, 6, 6], 0.02, zp=-3 if b.dtype == "int8" else 125)),
            "qdq qop", "Mul of two activations (QOperator: QLinearMul)"),
    "maxpool": (lambda b: b.maxpool(b.input("input", [1, 4, 9, 9], 0.05), 3, 2, [1, 1, 1, 1]),
                "qdq qop", "MaxPool 3x3 stride 2 pads 1 (QOperator: plain MaxPool on integers)"),
    "avgpool": (lambda b: b.avgpool(b.input("input", [1, 4, 8, 8], 0.05), 3, 1, [1, 1, 1, 1], 0),
                "qdq qop", "AveragePool 3x3 pads 1 count_include_pad 0, same scale in and out"),
    "avgpool_include_pad": (lambda b: b.avgpool(b.input("input", [1, 4, 8, 8], 0.05), 3, 2, [1, 1, 1, 1], 1),
                            "qdq qop", "AveragePool 3x3 stride 2 pads 1 count_include_pad 1"),
    "avgpool_rescale": (lambda b: b.avgpool(b.input("input", [1, 4, 8, 8], 0.05), 2, 2, [0, 0, 0, 0], 0,
                                            how="calib"),
                        "qdq qop", "AveragePool 2x2 stride 2 with a different output scale"),
    "globalavgpool": (lambda b: b.gap(b.input("input", [1, 8, 5, 5], 0.05)),
                      "qdq qop", "GlobalAveragePool, calibrated output scale"),
    "concat": (lambda b: b.concat([b.input("input_0", [1, 2, 4, 4], 0.03, zp=0),
                                   b.input("input_1", [1, 3, 4, 4], 0.07, zp=-10 if b.dtype == "int8" else 100),
                                   b.input("input_2", [1, 1, 4, 4], 0.05)], 1),
               "qdq qop", "Concat (axis 1) of three inputs with different scales and zero points"),
    "concat_same_scale": (lambda b: b.concat([b.input("input_0", [1, 2, 4, 4], 0.05),
                                              b.input("input_1", [1, 3, 4, 4], 0.05)], 1),
                          "qdq", "Concat of inputs with equal parameters (output calibrated)"),
    "softmax": (lambda b: b.unary("Softmax", b.input("input", [2, 10], 0.08), how=("fixed", 1 / 256, -128, 0),
                                  qop="QLinearSoftmax", axis=-1),
                "qdq qop", "Softmax over the last axis, output 1/256 (TFLite's convention)"),
    "layernorm": (lambda b: b.layernorm(b.input("input", [1, 6, 24], 0.05), 24),
                  "qdq", "LayerNormalization over the last axis (integer: quant::layer_norm)"),
    "sigmoid": (lambda b: b.unary("Sigmoid", b.input("input", [1, 4, 6, 6], 0.05),
                                  how=("fixed", 1 / 256, -128, 0), qop="QLinearSigmoid"),
                "qdq qop", "Sigmoid, output 1/256"),
    "tanh": (lambda b: b.unary("Tanh", b.input("input", [1, 4, 6, 6], 0.03), how=("fixed", 1 / 128, 0, 128)),
             "qdq", "Tanh, output 1/128"),
    "leakyrelu": (lambda b: b.unary("LeakyRelu", b.input("input", [1, 4, 6, 6], 0.05), qop="QLinearLeakyRelu",
                                    alpha=0.1),
                  "qdq qop", "LeakyRelu alpha 0.1, calibrated output"),
    "hardswish": (lambda b: b.unary("HardSwish", b.input("input", [1, 4, 6, 6], 0.05)),
                  "qdq", "HardSwish (opset 14), calibrated output"),
    "relu": (lambda b: b.unary("Relu", b.input("input", [1, 4, 6, 6], 0.05), how="calib_relu"),
             "qdq", "Relu alone, output zero point qmin"),
    "reshape": (lambda b: b.view("Reshape", b.input("input", [1, 4, 6, 6], 0.05),
                                 [i64(b, "shape", [1, 144])]),
                "qdq qop", "Reshape [1,4,6,6] -> [1,144], same parameters"),
    "transpose": (lambda b: b.view("Transpose", b.input("input", [1, 4, 6, 5], 0.05), perm=[0, 2, 3, 1]),
                  "qdq qop", "Transpose NCHW -> NHWC, same parameters"),
    "flatten": (lambda b: b.view("Flatten", b.input("input", [1, 4, 3, 3], 0.05), axis=1),
                "qdq", "Flatten"),
    "pad": (lambda b: b.view("Pad", b.input("input", [1, 4, 6, 6], 0.05),
                             [i64(b, "pads", [0, 0, 1, 2, 0, 0, 2, 1])], mode="constant"),
            "qdq qop", "constant Pad by 0.0 (= the zero point), asymmetric"),
}
DTYPES = ["int8", "uint8"]


def _quantize_alone(b, per_axis):
    x = b.float_input("input", [1, 4, 3, 3])
    if per_axis:
        s = b.init("output.scale", np.asarray([0.02, 0.03, 0.05, 0.04], np.float32))
        zps = [-3, 0, 5, 2] if b.dtype == "int8" else [125, 128, 133, 130]
        z = b.init("output.zero_point", np.asarray(zps, NP[b.dtype]))
        b.node("QuantizeLinear", [x, s, z], ["output"], "quantize", axis=1)
        b.port_quant["output"] = {"scale": [0.02, 0.03, 0.05, 0.04], "zero_point": zps, "axis": 1,
                                  "dtype": b.dtype}
    else:
        zp = -7 if b.dtype == "int8" else 121
        b.quantize(x, 0.03, zp, "output")
        return
    b.graph_output("output", ONNX_T[b.dtype])


def _dequantize_alone(b, per_axis):
    x = b.raw_int_input("input", [1, 4, 3, 3], b.dtype)
    if per_axis:
        scales = [0.02, 0.03, 0.05, 0.04]
        zps = [-3, 0, 5, 2] if b.dtype == "int8" else [125, 128, 133, 130]
        s = b.init("input.scale", np.asarray(scales, np.float32))
        z = b.init("input.zero_point", np.asarray(zps, NP[b.dtype]))
        b.node("DequantizeLinear", [x, s, z], ["output"], "dequantize", axis=1)
        b.port_quant["input"] = {"scale": scales, "zero_point": zps, "axis": 1, "dtype": b.dtype}
    else:
        zp = -7 if b.dtype == "int8" else 121
        s = b.init("input.scale", np.float32(0.03))
        z = b.init("input.zero_point", np.asarray(zp, NP[b.dtype]))
        b.node("DequantizeLinear", [x, s, z], ["output"], "dequantize")
        b.port_quant["input"] = {"scale": float(np.float32(0.03)), "zero_point": zp, "dtype": b.dtype}
    b.graph_output("output", TensorProto.FLOAT)


def _conv_integer(b):
    x = b.raw_int_input("input", [1, 3, 7, 7], b.dtype)
    w = b.init("conv.weight", b.rng.integers(-127, 128, size=(4, 3, 3, 3)).astype(np.int8)) \
        if b.dtype == "int8" else b.init("conv.weight", b.rng.integers(0, 256, size=(4, 3, 3, 3)).astype(np.uint8))
    xz = b.init("input.zero_point", np.asarray(-5 if b.dtype == "int8" else 121, NP[b.dtype]))
    wz = b.init("conv.weight_zero_point", np.asarray(0 if b.dtype == "int8" else 127, NP[b.dtype]))
    b.node("ConvInteger", [x, w, xz, wz], ["output"], "conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
           strides=[2, 2])
    b.graph_output("output", TensorProto.INT32)


def _matmul_integer(b):
    a = b.raw_int_input("input_0", [2, 3, 8], b.dtype)
    q = WEIGHT_QMAX[b.dtype]  # u8 x s8: 7-bit weights, see Builder.weight
    w = b.init("matmul.weight", b.rng.integers(-q, q + 1, size=(8, 5)).astype(np.int8))
    az = b.init("input_0.zero_point", np.asarray(-5 if b.dtype == "int8" else 121, NP[b.dtype]))
    wz = b.init("matmul.weight_zero_point", np.asarray(0, np.int8))
    b.node("MatMulInteger", [a, w, az, wz], ["output"], "matmul")
    b.graph_output("output", TensorProto.INT32)


def _matmul_integer_act(b):
    a = b.raw_int_input("input_0", [1, 4, 8], b.dtype)
    c = b.raw_int_input("input_1", [1, 8, 6], b.dtype)
    az = b.init("input_0.zero_point", np.asarray(-5 if b.dtype == "int8" else 121, NP[b.dtype]))
    cz = b.init("input_1.zero_point", np.asarray(3 if b.dtype == "int8" else 130, NP[b.dtype]))
    b.node("MatMulInteger", [a, c, az, cz], ["output"], "matmul")
    b.graph_output("output", TensorProto.INT32)


# Cases that are not "one float op between DQ and Q": (base, fn, mode, description)
SPECIAL = [
    ("quantizelinear", lambda b: _quantize_alone(b, False), "q", "QuantizeLinear alone, float -> int"),
    ("quantizelinear_axis", lambda b: _quantize_alone(b, True), "q", "QuantizeLinear per-axis (axis 1)"),
    ("dequantizelinear", lambda b: _dequantize_alone(b, False), "q", "DequantizeLinear alone, int -> float"),
    ("dequantizelinear_axis", lambda b: _dequantize_alone(b, True), "q", "DequantizeLinear per-axis (axis 1)"),
    ("convinteger", _conv_integer, "qop", "ConvInteger 3x3 stride 2 pads 1 -> int32 (input and weight zero points)"),
    ("matmulinteger", _matmul_integer, "qop", "MatMulInteger by an int8 constant -> int32"),
    ("matmulinteger_act", _matmul_integer_act, "qop", "MatMulInteger of two activations -> int32"),
]

CASES = []
DESCRIPTIONS = {}
for _base, (_fn, _modes, _desc) in OPS.items():
    for _mode in _modes.split():
        for _dt in DTYPES:
            c = Case(_base, _fn, _mode, _dt, opset={"hardswish": 14, "layernorm": 17}.get(_base, OPSET))
            CASES.append(c)
            DESCRIPTIONS[c.name] = _desc
for _base, _fn, _mode, _desc in SPECIAL:
    for _dt in DTYPES:
        c = Case(_base, _fn, _mode, _dt)
        CASES.append(c)
        DESCRIPTIONS[c.name] = _desc


# --------------------------------------------------------------------------- #
# Building, running, writing
# --------------------------------------------------------------------------- #
def _model(b, doc, shapes=None):
    graph = helper.make_graph(b.nodes, b.case.name, b.inputs, b.outputs, initializer=b.inits, doc_string=doc)
    opsets = [helper.make_opsetid("", b.opset)] + ([helper.make_opsetid(MS, 1)] if b.uses_ms else [])
    m = helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION, producer_name=PRODUCER)
    inferred = onnx.shape_inference.infer_shapes(m)
    types = {o.name: o.type for o in inferred.graph.output}
    for o in m.graph.output:
        t = types.get(o.name)
        if t is not None and t.tensor_type.HasField("shape"):
            o.type.CopyFrom(t)
        elif shapes is not None:
            o.type.tensor_type.shape.Clear()
            for d in shapes[o.name]:
                o.type.tensor_type.shape.dim.add().dim_value = d
    return m


def _calibrate(case):
    b = Builder(case, "calib")
    b.calib = collections.defaultdict(lambda: (0.0, 1.0))
    case.fn(b)
    if not b.calib_outputs:
        return {}
    m = _model(b, "calibration")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    s = ort.InferenceSession(m.SerializeToString(), sess_options=so, providers=["CPUExecutionProvider"])
    outs = s.run(b.calib_outputs, b.feeds)
    return {k: (float(np.min(o)), float(np.max(o))) for k, o in enumerate(outs)}


def build_case(case, out_dir, generator, run, executed_ops, steps_stats):
    calib = _calibrate(case) if case.mode in ("qdq", "qop") else {}
    b = Builder(case, case.mode if case.mode != "q" else "qdq", calib)
    case.fn(b)
    desc = DESCRIPTIONS[case.name]
    m = _model(b, f"{case.name}: {desc} ({generator})")
    path = os.path.join(out_dir, f"{case.name}.onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    outs = run(path, b.feeds, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    # contrib ops have no ONNX shape inference: the output shapes come from ORT's run
    m = _model(b, f"{case.name}: {desc} ({generator})", {k: list(v.shape) for k, v in outs.items()})
    onnx.checker.check_model(m, full_check=True)
    data = m.SerializeToString()
    with open(path, "wb") as f:
        f.write(data)
    if case.mode == "qop":
        # the float-simulated twin: the same weights and parameters as DQ -> op -> Q
        twin = Builder(case, "qdq", calib)
        case.fn(twin)
        tm = _model(twin, "twin")
        with tempfile.TemporaryDirectory() as d:
            tp = os.path.join(d, "twin.onnx")
            onnx.save(tm, tp)
            sim = run(tp, b.feeds, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    else:
        sim = run(path, b.feeds, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    ref = {"model": f"{case.name}.onnx", "generator": generator, "seed": case.seed,
           "case": {"op": case.base, "format": {"qdq": "QDQ", "qop": "QOperator", "q": "Q/DQ"}[case.mode],
                    "dtype": case.dtype, "description": desc},
           "ort": {"version": ort.__version__, "graph_optimization_level": "ORT_ENABLE_ALL", "threads": 1,
                   "session_config": {"session.qdqisint8allowed": "1"}},  # gen_quantized.INT8_ALLOWED
           "ort_executed_ops": executed_ops(path),
           "inputs": [], "outputs": []}
    for vi in m.graph.input:
        e = fj.tensor(vi.name, b.feeds[vi.name])
        if vi.name in b.port_quant:
            e["quant"] = b.port_quant[vi.name]
        ref["inputs"].append(e)
    worst = 0
    for vi in m.graph.output:
        e = fj.tensor(vi.name, outs[vi.name])
        q = b.port_quant.get(vi.name)
        if q:
            e["quant"] = q
        st, eq = steps_stats(sim[vi.name], outs[vi.name], q if e["dtype"] == "float32" and q
                             and not isinstance(q["scale"], list) else None)
        e["float_sim_max_steps"], e["float_sim_equal_fraction"] = st, eq
        worst = max(worst, st)
        ref["outputs"].append(e)
    ref["onnx_reference_max_diff"] = _reference_check(m, b.feeds, outs)
    fj.dump(ref, os.path.join(out_dir, f"{case.name}.ref.json"))
    print(f"ops/{case.name}: {len(data)} B; ORT ran {ref['ort_executed_ops']}; float-sim max {worst} steps; "
          f"onnx.reference max diff {ref['onnx_reference_max_diff']}")


def _reference_check(m, feeds, outs):
    """Largest difference (in steps for integer outputs, absolute for float ones) between ORT and
    onnx.reference (the ONNX spec's Python evaluator) on the case; None where onnx.reference lacks an
    op (the com.microsoft ones)."""
    if any(n.domain == MS for n in m.graph.node):
        return None
    from onnx import version_converter
    from onnx.reference import ReferenceEvaluator
    # onnx.reference implements QuantizeLinear/DequantizeLinear from opset 19 on
    got = ReferenceEvaluator(version_converter.convert_version(m, 21)).run(None, feeds)
    worst = 0.0
    for o, g in zip(m.graph.output, got):
        want = outs[o.name]
        d = np.abs(np.asarray(g).astype(np.float64) - want.astype(np.float64))
        worst = max(worst, float(d.max()) if d.size else 0.0)
    return fj.rounded(worst)
