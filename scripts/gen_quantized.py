#!/usr/bin/env python3
"""Generate the quantized ONNX test set (issue 16): whole models and per-op cases.

Whole models (tests/models/quant/NAME_VARIANT.{onnx,ref.json}): the f32 fixtures of gen_models.py
(12 models) and five architectures of gen_architectures.py, each quantized by onnxruntime's own
tool, `onnxruntime.quantization.quantize_static`, after `quant_pre_process` (shape inference and
ORT's basic graph optimisation: BatchNormalization folded into Conv, constant weights folded):

    qdq_s8   QDQ format, int8 activations, int8 weights, per-channel   (every model)
    qdq_u8   QDQ format, uint8 activations, 7-bit int8 weights (reduce_range), per-channel
             (QDQ_U8_MODELS)
    qop_s8   QOperator format, int8 activations, int8 weights, per-channel (QOP_MODELS)
    qop_u8   QOperator format, uint8 activations, 7-bit int8 weights, per-channel (QOP_U8_MODELS)

Why 7-bit weights with uint8 activations: ORT's u8 x s8 integer kernels on x86 without VNNI (this
machine: AVX2) add pairs of products in int16 with saturation (vpmaddubsw); with full-range int8
weights its "integer execution" is then not exact arithmetic (measured on the per-op cases: up to
32 steps off for a QLinearConv, thousands for a MatMulInteger). reduce_range is ORT's own remedy
(its quantize_static documentation recommends it for such CPUs).

Calibration: MinMax over CALIB_SAMPLES inputs drawn like the f32 fixtures' (same distribution per
input: standard normal, or uniform [0,1) for image models), from numpy.random.default_rng([seed, 2]).
The test input is the f32 fixture's own input (default_rng([seed, 1]), checked equal), and small
models get extra samples from default_rng([seed, 3]).

Per-op cases (tests/models/quant/ops/CASE.{onnx,ref.json}), built by hand with onnx.helper:
    qdq_*   int8/uint8 input ports -> DequantizeLinear -> one float op -> QuantizeLinear -> int ports;
            weights are int8 initializers (per-channel symmetric) behind DequantizeLinear, biases
            int32 with scale input_scale * weight_scale (what quantize_static writes);
    qop_*   one QOperator node (QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger, and
            the com.microsoft QLinearAdd/Mul/AveragePool/GlobalAveragePool/Concat/Sigmoid/
            LeakyRelu/Softmax, QGemm) between integer ports;
    q_*     QuantizeLinear or DequantizeLinear alone (float <-> integer ports).
  Output scales: calibrated on the case's own test input (min/max of the float op's output,
  widened to include 0), except where the op keeps its input's scale (MaxPool, Reshape, Transpose,
  Pad, Relu folded into the zero point) or has TFLite's fixed one (Softmax, Sigmoid: 1/256; Tanh:
  1/128).

References: onnxruntime, CPU, one thread, DEFAULT graph optimisations (ORT_ENABLE_ALL) and
`session.qdqisint8allowed = 1` (INT8_ALLOWED below): on x86 ORT otherwise turns every int8 QDQ
activation into uint8 (zero point + 128) before fusing, and its u8 x s8 kernels then saturate with the
full-range int8 weights of the qdq_s8 files (vpmaddubsw, see above; measured: lenet 15 steps,
reshape_views 23 steps from int8 execution); with the entry it runs int8 x int8 kernels, which are
exact, as on ARM, where the entry is on by default. ORT fuses
each DQ -> op -> Q group it knows into an integer kernel (QLinearConv, QLinearAdd, ...) and runs
the rest as float ops between DQ and Q ("float-simulated"); `ort_executed_ops` in the ref.json
lists the ops of ORT's optimised graph (saved at ORT_ENABLE_EXTENDED, where the QDQ fusions
happen). The same file run with ORT_DISABLE_ALL (every op in float between Q and DQ) is the
float-simulated result; its deviation from the reference is stored per output in quantization
steps.

    python3 scripts/gen_quantized.py                 # everything (about a minute)
    python3 scripts/gen_quantized.py models resnet8  # whole models whose name contains 'resnet8'
    python3 scripts/gen_quantized.py ops conv        # per-op cases whose name contains 'conv'
    python3 scripts/gen_quantized.py --big           # also ResNet-18 (an 11.7 MB file, not committed)

Deterministic: rerunning gives byte-identical files. Needs scripts/requirements-quant.txt.
"""

import collections
import os
import sys
import tempfile
import zlib

sys.dont_write_bytecode = True  # keep scripts/ free of __pycache__

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat,  # noqa: E402
                                      QuantType, quantize_static)
from onnxruntime.quantization.shape_inference import quant_pre_process  # noqa: E402

import fixture_json as fj  # noqa: E402
import gen_architectures  # noqa: E402
import gen_models  # noqa: E402
from fixture_lib import REPO_ROOT, static_shape  # noqa: E402

GENERATOR = "scripts/gen_quantized.py"
OUT_DIR = os.path.join(REPO_ROOT, "tests", "models", "quant")
OPS_DIR = os.path.join(OUT_DIR, "ops")
BIG_DIR = os.path.join(OUT_DIR, "big")  # git-ignored; scripts/gen_quant_big.sh makes it in CI
CALIB_SAMPLES = 16
# Extra test samples for models with small inputs and outputs: as many as fit EXTRA_ELEMENTS
# input + output elements, at most MAX_EXTRA.
EXTRA_ELEMENTS = 8192
MAX_EXTRA = 15

# (name, generator module, folder of the f32 fixture)
SOURCES = [(n, gen_models, "") for n, _, _ in gen_models.MODELS] + [
    (n, gen_architectures, "arch")
    for n in ["mobilenetv2_035", "resnet18", "squeezenet11", "shufflenetv2", "transformer_encoder"]]
BIG = {"resnet18"}
QDQ_U8_MODELS = ["kws_dscnn", "resnet8", "vww_mobilenetv1", "fc_autoencoder", "mobilenetv2_035",
                 "mnist_cnn"]
QOP_MODELS = ["kws_dscnn", "resnet8", "vww_mobilenetv1", "fc_autoencoder", "mobilenetv2_035",
              "mnist_cnn"]
QOP_U8_MODELS = ["kws_dscnn", "resnet8"]
VARIANTS = {
    "qdq_s8": (QuantFormat.QDQ, QuantType.QInt8),
    "qdq_u8": (QuantFormat.QDQ, QuantType.QUInt8),
    "qop_s8": (QuantFormat.QOperator, QuantType.QInt8),
    "qop_u8": (QuantFormat.QOperator, QuantType.QUInt8),
}

ONNX_TO_NP = {TensorProto.FLOAT: np.float32, TensorProto.INT8: np.int8, TensorProto.UINT8: np.uint8,
              TensorProto.INT32: np.int32, TensorProto.INT16: np.int16}


# --------------------------------------------------------------------------- #
# ORT sessions
# --------------------------------------------------------------------------- #
# ORT's session configuration for every reference run: keep int8 QDQ activations int8 (see the docs).
INT8_ALLOWED = ("session.qdqisint8allowed", "1")


def session(path, level):
    so = ort.SessionOptions()
    so.add_session_config_entry(*INT8_ALLOWED)
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.graph_optimization_level = level
    so.log_severity_level = 3
    return ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])


def run(path, feeds, level):
    s = session(path, level)
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(names, feeds)))


def executed_ops(path):
    """Op counts of ORT's optimised graph (QDQ fusions happen at ORT_ENABLE_EXTENDED; ENABLE_ALL
    only adds layout changes of float convolutions)."""
    with tempfile.TemporaryDirectory() as d:
        so = ort.SessionOptions()
        so.add_session_config_entry(*INT8_ALLOWED)
        so.intra_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        so.optimized_model_filepath = os.path.join(d, "opt.onnx")
        so.log_severity_level = 3
        ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])
        m = onnx.load(so.optimized_model_filepath)
    c = collections.Counter(n.op_type for n in m.graph.node)
    return dict(sorted(c.items()))


# --------------------------------------------------------------------------- #
# Quantization parameters of graph ports
# --------------------------------------------------------------------------- #
def _init_value(model, name):
    for t in model.graph.initializer:
        if t.name == name:
            return numpy_helper.to_array(t)
    for n in model.graph.node:  # Constant nodes
        if n.op_type == "Constant" and n.output[0] == name:
            return numpy_helper.to_array(n.attribute[0].t)
    return None


def port_quant(model, name, output):
    """{"scale", "zero_point", "dtype"} of a float output produced by DequantizeLinear, or of a float
    input consumed (only) by QuantizeLinear; None otherwise."""
    nodes = [n for n in model.graph.node if (name in n.output if output else name in n.input)]
    if output:
        if len(nodes) != 1 or nodes[0].op_type != "DequantizeLinear":
            return None
    else:
        if not nodes or any(n.op_type != "QuantizeLinear" or n.input[0] != name for n in nodes):
            return None
    n = nodes[0]
    scale = _init_value(model, n.input[1])
    zp = _init_value(model, n.input[2]) if len(n.input) > 2 and n.input[2] else None
    if scale is None or scale.size != 1:
        return None
    return {"scale": float(np.float32(scale.reshape(-1)[0])),
            "zero_point": int(zp.reshape(-1)[0]) if zp is not None else 0,
            "dtype": fj.dtype_name(zp.dtype) if zp is not None else "uint8"}


def float_islands(model):
    """Ops (other than Q/DQ) of a QDQ model that read a float tensor not made by DequantizeLinear, or
    whose float output feeds something other than QuantizeLinear: what stays float in the file."""
    producer = {o: n for n in model.graph.node for o in n.output}
    consumers = collections.defaultdict(list)
    for n in model.graph.node:
        for i in n.input:
            consumers[i].append(n)
    inits = {t.name for t in model.graph.initializer}
    outs = {o.name for o in model.graph.output}
    shape_only = {"Reshape": [1], "Pad": [1, 2], "Slice": [1, 2, 3, 4], "Squeeze": [1],
                  "Unsqueeze": [1], "Resize": [1, 2, 3], "Clip": [1, 2], "Split": [1]}
    out = []
    for n in model.graph.node:
        if n.op_type in ("QuantizeLinear", "DequantizeLinear", "Constant") or n.domain == "com.microsoft" \
                or n.op_type.startswith("QLinear") or n.op_type.endswith("Integer"):
            continue
        skip = shape_only.get(n.op_type, [])
        bad_in = [i for k, i in enumerate(n.input) if i and k not in skip and i not in inits
                  and (i not in producer or producer[i].op_type != "DequantizeLinear")]
        bad_out = [o for o in n.output if o in outs
                   or any(c.op_type != "QuantizeLinear" for c in consumers[o])]
        if bad_in or bad_out:
            out.append(f"{n.op_type}:{n.name}")
    return out


def steps_stats(have, want, q):
    """(max deviation in quantization steps, fraction of exactly equal elements)."""
    if want.dtype == np.float32:
        if q is None:
            d = np.abs(have.astype(np.float64) - want.astype(np.float64))
            return fj.rounded(float(d.max()) if d.size else 0.0), fj.rounded(float(np.mean(have == want)))
        d = np.abs(have.astype(np.float64) - want.astype(np.float64)) / q["scale"]
    else:
        d = np.abs(have.astype(np.int64) - want.astype(np.int64))
    return fj.rounded(float(np.round(d.max(), 3)) if d.size else 0.0), fj.rounded(float(np.mean(have == want)))


# --------------------------------------------------------------------------- #
# Whole models
# --------------------------------------------------------------------------- #
def draw(model, rng, kinds):
    feeds = {}
    for vi in model.graph.input:
        shape = static_shape(vi)
        kind = kinds.get(vi.name, "normal")
        if kind == "normal":
            a = rng.standard_normal(size=shape)
        elif kind == "uniform":
            a = rng.random(size=shape)
        elif isinstance(kind, tuple) and kind[0] == "uniform":
            a = rng.uniform(kind[1], kind[2], size=shape)
        else:
            raise ValueError(kind)
        feeds[vi.name] = a.astype(np.float32)
    return feeds


class Reader(CalibrationDataReader):
    def __init__(self, feeds):
        self._it = iter(feeds)

    def get_next(self):
        return next(self._it, None)


def clean(model, doc):
    """Drop the value_info and the unused opset imports quant_pre_process adds; document."""
    del model.graph.value_info[:]
    used = {n.domain for n in model.graph.node}
    keep = [o for o in model.opset_import if o.domain in ("", "ai.onnx") or o.domain in used]
    del model.opset_import[:]
    model.opset_import.extend(keep)
    model.doc_string = doc
    unnamed = [n for n in model.graph.node if not n.name]
    for i, n in enumerate(unnamed):
        n.name = f"{n.op_type}_{i}"
    return model


def quantize(src_path, variant, calib):
    fmt, act = VARIANTS[variant]
    with tempfile.TemporaryDirectory() as d:
        pre = os.path.join(d, "pre.onnx")
        out = os.path.join(d, "q.onnx")
        quant_pre_process(src_path, pre, skip_symbolic_shape=True)
        quantize_static(pre, out, Reader(calib), quant_format=fmt, per_channel=True,
                        reduce_range=act == QuantType.QUInt8,
                        activation_type=act, weight_type=QuantType.QInt8,
                        calibrate_method=CalibrationMethod.MinMax)
        return onnx.load(out)


def entries(model, feeds, outs, output_q):
    ins = [fj.tensor(vi.name, feeds[vi.name]) for vi in model.graph.input]
    os_ = []
    for o in model.graph.output:
        e = fj.tensor(o.name, outs[o.name])
        if output_q.get(o.name):
            e["quant"] = output_q[o.name]
        os_.append(e)
    return ins, os_


def whole_model(name, module, sub, variant, out_dir):
    seed = {n: s for n, _, s in module.MODELS}[name]
    fn = {n: f for n, f, _ in module.MODELS}[name]
    kinds = fn(seed).input_kinds()
    src_rel = os.path.join("tests", "models", sub, f"{name}.onnx")
    src_path = os.path.join(REPO_ROOT, src_rel)
    src = onnx.load(src_path)
    f32_ref = fj.load(src_path[: -len(".onnx")] + ".ref.json")

    calib_rng = np.random.default_rng([seed, 2])
    calib = [draw(src, calib_rng, kinds) for _ in range(CALIB_SAMPLES)]
    fmt, act = VARIANTS[variant]
    model = quantize(src_path, variant, calib)
    stem = f"{name}_{variant}"
    doc = (f"{src_rel} quantized by onnxruntime {ort.__version__} quantize_static ({variant}: "
           f"{'QDQ' if fmt == QuantFormat.QDQ else 'QOperator'}, activations "
           f"{'int8' if act == QuantType.QInt8 else 'uint8'}, weights int8 per-channel, MinMax "
           f"calibration on {CALIB_SAMPLES} samples) after quant_pre_process; {GENERATOR}")
    model = clean(model, doc)
    onnx.checker.check_model(model, full_check=True)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{stem}.onnx")
    data = model.SerializeToString()
    with open(path, "wb") as f:
        f.write(data)

    feeds = draw(src, np.random.default_rng([seed, 1]), kinds)
    for e in f32_ref["inputs"]:
        assert np.array_equal(fj.array(e), feeds[e["name"]]), f"{name}: inputs differ from the f32 fixture"
    n_io = sum(a.size for a in feeds.values()) + sum(fj.array(e).size for e in f32_ref["outputs"])
    n_extra = min(MAX_EXTRA, EXTRA_ELEMENTS // n_io)
    extra_rng = np.random.default_rng([seed, 3])
    extra_feeds = [draw(src, extra_rng, kinds) for _ in range(n_extra)]

    output_q = {o.name: port_quant(model, o.name, True) for o in model.graph.output}
    input_q = {i.name: port_quant(model, i.name, False) for i in model.graph.input}
    f32_out = {e["name"]: fj.array(e) for e in f32_ref["outputs"]}

    ref = {"model": f"{stem}.onnx", "generator": GENERATOR, "seed": seed, "source": src_rel,
           "quantization": {"tool": f"onnxruntime {ort.__version__} quantize_static",
                            "format": "QDQ" if fmt == QuantFormat.QDQ else "QOperator",
                            "activations": "int8" if act == QuantType.QInt8 else "uint8",
                            "weights": "int8" if act == QuantType.QInt8 else "int8 (7-bit range, reduce_range)",
                            "per_channel": True, "calibration": "MinMax",
                            "calibration_samples": CALIB_SAMPLES},
           "ort": {"version": ort.__version__, "graph_optimization_level": "ORT_ENABLE_ALL",
                   "threads": 1, "session_config": dict([INT8_ALLOWED])},
           "ort_executed_ops": executed_ops(path),
           "float_ops": float_islands(model) if fmt == QuantFormat.QDQ else [],
           "extra_samples": []}
    sim_rows = []
    for i, fd in enumerate([feeds] + extra_feeds):
        outs = run(path, fd, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
        sim = run(path, fd, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
        ins, os_ = entries(model, fd, outs, output_q)
        for e in ins:
            if input_q.get(e["name"]):
                e["quant"] = input_q[e["name"]]
        for e in os_:
            st, eq = steps_stats(sim[e["name"]], outs[e["name"]], output_q.get(e["name"]))
            e["float_sim_max_steps"], e["float_sim_equal_fraction"] = st, eq
            sim_rows.append((e["name"], st, eq))
            if i == 0 and e.get("quant"):
                d = np.abs(outs[e["name"]].astype(np.float64) - f32_out[e["name"]]) / e["quant"]["scale"]
                e["f32_model_max_steps"] = fj.rounded(float(np.round(d.max(), 3)))
        if i == 0:
            ref["inputs"], ref["outputs"] = ins, os_
        else:
            ref["extra_samples"].append({"inputs": ins, "outputs": os_})
    ref_path = os.path.join(out_dir, f"{stem}.ref.json")
    fj.dump(ref, ref_path)
    worst = max(s for _, s, _ in sim_rows)
    eq = min(e for _, _, e in sim_rows)
    ops = collections.Counter(n.op_type for n in model.graph.node)
    f32d = max((e.get("f32_model_max_steps", 0) for e in ref["outputs"]), default=0)
    print(f"{os.path.relpath(path, REPO_ROOT)}: {len(data)} B onnx, {os.path.getsize(ref_path)} B ref, "
          f"{1 + n_extra} samples; float-sim max {worst} steps (min equal {eq}); vs f32 model max "
          f"{f32d} steps; ops {dict(sorted(ops.items()))}; ORT ran {ref['ort_executed_ops']}; "
          f"float ops {ref['float_ops']}")


def gen_models_main(filters, big):
    for name, module, sub in SOURCES:
        if filters and not any(f in name for f in filters):
            continue
        if name in BIG and not big:
            print(f"skip {name} (use --big: its int8 file is about 11.7 MB, not committed)")
            continue
        out_dir = BIG_DIR if name in BIG else OUT_DIR
        variants = ["qdq_s8"]
        variants += ["qdq_u8"] if name in QDQ_U8_MODELS else []
        variants += ["qop_s8"] if name in QOP_MODELS else []
        variants += ["qop_u8"] if name in QOP_U8_MODELS else []
        for v in variants:
            whole_model(name, module, sub, v, out_dir)


# --------------------------------------------------------------------------- #
# Per-op cases
# --------------------------------------------------------------------------- #
from gen_quantized_ops import CASES, build_case  # noqa: E402


def gen_ops_main(filters):
    os.makedirs(OPS_DIR, exist_ok=True)
    for case in CASES:
        if filters and not any(f in case.name for f in filters):
            continue
        build_case(case, OPS_DIR, GENERATOR, run, executed_ops, steps_stats)


def main():
    argv = sys.argv[1:]
    big = "--big" in argv
    args = [a for a in argv if not a.startswith("--")]
    what = args[0] if args and args[0] in ("models", "ops") else None
    filters = args[1:] if what else args
    if what in (None, "models"):
        gen_models_main(filters, big)
    if what in (None, "ops"):
        gen_ops_main(filters)


if __name__ == "__main__":
    main()
