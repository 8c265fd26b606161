#!/usr/bin/env python3
"""Re-verify every committed ONNX (and .tflite) fixture against its reference engine.

For each NAME.ref.json under tests/models/ (recursively) and examples/models/:
  * NAME.onnx exists, passes onnx.checker (full_check), is opset 13 (17 where it uses
    LayerNormalization) / ir 8,
    and every node has a name;
  * the stored inputs match the graph inputs (names, order, static shapes) and
    every stored value is exactly representable as float32;
  * onnxruntime (CPU, 1 thread, graph optimizations disabled) run on the stored
    inputs reproduces the stored outputs: bit-exact is expected on the machine
    that generated them; within rtol 1e-5 / atol 1e-6 is still a pass (other
    CPUs may pick different kernels), and is reported as such.

  * typed fixtures (tensors with a "dtype" field: gen_quantized.py, gen_tflite.py) are read with
    their dtype (integer data must be integers in range); those whose ref.json has an "ort" field
    are rerun with the session settings it names (the quantized ones: ORT_ENABLE_ALL, ORT's
    integer execution) and their "extra_samples" too; integer outputs must be equal (a
    difference of one step is reported as a note, more fails), float outputs of a DequantizeLinear
    within one step of their scale;
  * producer and opset: "sramfit-scripts" at opset 13/17 for the fixtures built with onnx.helper,
    anything for the files written by onnxruntime's quantizer (tests/models/quant/) and tf2onnx
    (tests/models/nhwc/), which have a "generator" field naming their script;
  * .tflite fixtures (tests/models/tflite/**, ref.json with "engine") are rerun in TFLite Micro's
    interpreter when the package tflite_micro can be imported (the virtualenv of
    scripts/requirements-tflite.txt) and skipped otherwise, counted as skipped.

    python3 scripts/check_fixtures.py              # prints "N passed, M failed, K skipped"
    python3 scripts/check_fixtures.py --reference  # also cross-check with onnx.reference (slow-ish)

Exit status is non-zero if anything failed.
"""

import glob
import json
import os
import sys

sys.dont_write_bytecode = True  # keep scripts/ free of __pycache__

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402

import fixture_json as fj  # noqa: E402

from fixture_lib import (IR_VERSION, LAYERNORM_OPSET, OPSET, PRODUCER, REPO_ROOT, make_session,  # noqa: E402
                         static_shape)

RTOL, ATOL = 1e-5, 1e-6
REF_RTOL, REF_ATOL = 1e-4, 1e-4
MAX_ONNX_BYTES = 1_500_000


def fixture_paths():
    pats = [os.path.join(REPO_ROOT, "tests", "models", "**", "*.ref.json"),
            os.path.join(REPO_ROOT, "examples", "models", "**", "*.ref.json")]
    paths = []
    for p in pats:
        paths.extend(glob.glob(p, recursive=True))
    return sorted(paths)


class Skip(Exception):
    pass


def as_array(entry):
    if "dtype" in entry:
        return fj.array(entry)
    a = np.asarray(entry["data"], dtype=np.float64)
    f = a.astype(np.float32)
    if not np.array_equal(f.astype(np.float64), a):
        raise AssertionError(f"{entry['name']}: stored values are not exact float32")
    n = int(np.prod(entry["shape"])) if entry["shape"] else 1
    if f.size != n:
        raise AssertionError(f"{entry['name']}: {f.size} values for shape {entry['shape']}")
    return f.reshape(entry["shape"])


def _inference_batchnorm():
    """onnx.reference's BatchNormalization for opsets 9..13 fills in the default
    momentum and then normalises with the *batch* statistics (training mode),
    which is wrong for these inference graphs; override it with the inference
    formula."""
    from onnx.reference.op_run import OpRun

    class BatchNormalization(OpRun):
        op_domain = ""

        def _run(self, x, scale, bias, mean, var, epsilon=None, momentum=None,  # noqa: ARG002
                 training_mode=None):
            shape = (-1,) + (1,) * (x.ndim - 2)
            eps = 1e-5 if epsilon is None else epsilon
            y = scale.reshape(shape) * (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) \
                + bias.reshape(shape)
            return (y.astype(x.dtype),)

    return BatchNormalization


def typed_session(model_path, settings):
    so = ort.SessionOptions()
    so.intra_op_num_threads = settings.get("threads", 1)
    so.inter_op_num_threads = 1
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, settings["graph_optimization_level"])
    so.log_severity_level = 3
    return ort.InferenceSession(model_path, sess_options=so, providers=["CPUExecutionProvider"])


def compare_typed(name, have, want, entry, notes):
    if have.shape != want.shape or have.dtype != want.dtype:
        raise AssertionError(f"{name}: ORT gives {have.dtype}{list(have.shape)}, stored {want.dtype}{list(want.shape)}")
    if np.array_equal(have, want):
        return
    q = entry.get("quant")
    if want.dtype == np.float32:
        if q and not isinstance(q["scale"], list):
            steps = float(np.max(np.abs(have.astype(np.float64) - want) / q["scale"]))
        elif np.allclose(have, want, rtol=RTOL, atol=ATOL):
            notes.append(f"{name} not bit-exact (within tolerance)")
            return
        else:
            raise AssertionError(f"{name}: ORT differs, max |diff| {float(np.max(np.abs(have - want))):.3g}")
    else:
        steps = float(np.max(np.abs(have.astype(np.int64) - want.astype(np.int64))))
    n = int(np.sum(have != want))
    if steps <= 1.0 + 1e-6:
        notes.append(f"{name}: {n} elements one step off")
    else:
        raise AssertionError(f"{name}: ORT differs by up to {steps:.3g} steps ({n} elements)")


def check_typed(ref, ref_path, model_path, notes):
    """Quantized / exported fixtures: every sample rerun with the ref's own session settings."""
    model = onnx.load(model_path)
    onnx.checker.check_model(model, full_check=True)
    unnamed = [n.op_type for n in model.graph.node if not n.name]
    if unnamed:
        raise AssertionError(f"unnamed nodes: {unnamed}")
    g_inputs = [(vi.name, static_shape(vi)) for vi in model.graph.input]
    g_outputs = [(vi.name, static_shape(vi)) for vi in model.graph.output]
    settings = ref.get("ort", {"graph_optimization_level": "ORT_DISABLE_ALL", "threads": 1})
    sess = typed_session(model_path, settings)
    names = [o.name for o in sess.get_outputs()]
    samples = [ref] + ref.get("extra_samples", [])
    for k, smp in enumerate(samples):
        if [(e["name"], list(e["shape"])) for e in smp["inputs"]] != g_inputs:
            raise AssertionError(f"sample {k}: inputs do not match the graph inputs {g_inputs}")
        if [(e["name"], list(e["shape"])) for e in smp["outputs"]] != g_outputs:
            raise AssertionError(f"sample {k}: outputs do not match the graph outputs {g_outputs}")
        feeds = {e["name"]: as_array(e) for e in smp["inputs"]}
        got = dict(zip(names, sess.run(names, feeds)))
        for e in smp["outputs"]:
            compare_typed(f"{e['name']}[{k}]" if k else e["name"], got[e["name"]], as_array(e), e, notes)
    if len(samples) > 1:
        notes.append(f"{len(samples)} samples")
    return notes


def check_tflite(ref, ref_path, notes):
    try:
        import tflite_micro  # noqa: F401
    except ImportError:
        raise Skip("tflite_micro not installed (scripts/requirements-tflite.txt)")
    import tflm_lib
    return tflm_lib.check(ref, ref_path, notes)


def check_one(ref_path, use_reference):
    notes = []
    with open(ref_path, encoding="utf-8") as f:
        ref = json.load(f)
    for key in ("model", "inputs", "outputs", "generator", "seed"):
        if key not in ref:
            raise AssertionError(f"missing key {key!r}")
    if "engine" in ref:
        return check_tflite(ref, ref_path, notes)
    model_path = os.path.join(os.path.dirname(ref_path), ref["model"])
    if os.path.basename(ref_path)[: -len(".ref.json")] + ".onnx" != ref["model"]:
        raise AssertionError(f"model field {ref['model']!r} does not match file name")
    if "dtype" in ref["inputs"][0] or "ort" in ref:
        if os.path.getsize(model_path) > MAX_ONNX_BYTES:
            notes.append(f"WARNING onnx is {os.path.getsize(model_path)} bytes")
        return check_typed(ref, ref_path, model_path, notes)
    model_path = os.path.join(os.path.dirname(ref_path), ref["model"])
    if os.path.basename(ref_path)[: -len(".ref.json")] + ".onnx" != ref["model"]:
        raise AssertionError(f"model field {ref['model']!r} does not match file name")
    size = os.path.getsize(model_path)
    if size > MAX_ONNX_BYTES:
        notes.append(f"WARNING onnx is {size} bytes")

    model = onnx.load(model_path)
    onnx.checker.check_model(model, full_check=True)
    if model.ir_version != IR_VERSION or model.producer_name != PRODUCER:
        raise AssertionError(f"ir_version {model.ir_version} / producer {model.producer_name!r}")
    opsets = {o.domain: o.version for o in model.opset_import}
    if opsets.get("", opsets.get("ai.onnx")) not in (OPSET, LAYERNORM_OPSET):
        raise AssertionError(f"opset {opsets}")
    unnamed = [n.op_type for n in model.graph.node if not n.name]
    if unnamed:
        raise AssertionError(f"unnamed nodes: {unnamed}")

    g_inputs = [(vi.name, static_shape(vi)) for vi in model.graph.input]
    s_inputs = [(e["name"], list(e["shape"])) for e in ref["inputs"]]
    if g_inputs != s_inputs:
        raise AssertionError(f"inputs {s_inputs} != graph inputs {g_inputs}")
    g_outputs = [(vi.name, static_shape(vi)) for vi in model.graph.output]
    s_outputs = [(e["name"], list(e["shape"])) for e in ref["outputs"]]
    if g_outputs != s_outputs:
        raise AssertionError(f"outputs {s_outputs} != graph outputs {g_outputs}")

    feeds = {e["name"]: as_array(e) for e in ref["inputs"]}
    expected = {e["name"]: as_array(e) for e in ref["outputs"]}

    sess = make_session(model_path)
    names = [o.name for o in sess.get_outputs()]
    got = dict(zip(names, sess.run(names, feeds)))
    for name, want in expected.items():
        have = got[name]
        if have.shape != want.shape:
            raise AssertionError(f"{name}: ORT shape {have.shape} != {want.shape}")
        if np.array_equal(have.view(np.uint32), want.view(np.uint32)):
            continue
        diff = float(np.max(np.abs(have - want)))
        if np.allclose(have, want, rtol=RTOL, atol=ATOL):
            notes.append(f"{name} not bit-exact (max |diff| {diff:.3g}, within tolerance)")
        else:
            raise AssertionError(f"{name}: ORT differs from stored output, max |diff| {diff:.3g}")

    if use_reference:
        from onnx.reference import ReferenceEvaluator
        ev = ReferenceEvaluator(model, new_ops=[_inference_batchnorm()])
        outs = ev.run(None, feeds)
        for name, have in zip([o.name for o in model.graph.output], outs):
            want = expected[name]
            have = np.asarray(have, dtype=np.float32)
            diff = float(np.max(np.abs(have - want))) if want.size else 0.0
            if have.shape != want.shape or not np.allclose(have, want, rtol=REF_RTOL, atol=REF_ATOL):
                raise AssertionError(f"{name}: onnx.reference differs, max |diff| {diff:.3g}")
            notes.append(f"onnx.reference max |diff| {diff:.2g}")
    return notes


def main():
    use_reference = "--reference" in sys.argv[1:]
    passed = failed = skipped = 0
    total_bytes = 0
    for ref_path in fixture_paths():
        rel = os.path.relpath(ref_path, REPO_ROOT)
        total_bytes += os.path.getsize(ref_path)
        total_bytes += os.path.getsize(ref_path[: -len(".ref.json")] + ".onnx") \
            if os.path.exists(ref_path[: -len(".ref.json")] + ".onnx") else 0
        try:
            notes = check_one(ref_path, use_reference)
        except Skip as e:
            skipped += 1
            print(f"skip {rel}: {e}")
            continue
        except Exception as e:  # noqa: BLE001 - report and keep going
            failed += 1
            print(f"FAIL {rel}: {e}")
            continue
        passed += 1
        suffix = f"  ({'; '.join(notes)})" if notes else ""
        print(f"ok   {rel}{suffix}")
    print(f"fixture bytes (onnx + ref.json): {total_bytes}")
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()
