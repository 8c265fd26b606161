"""TensorFlow Lite Micro helpers shared by gen_tflite.py, tflm_compare.py and check_fixtures.py.

Needs the virtualenv of scripts/requirements-tflite.txt (the `tflite-micro` package: TFLM's own
Python interpreter, reference kernels, RecordingMicroAllocator). Reading a .tflite file's tensors and
operators uses the flatbuffer schema module that package ships, so TensorFlow itself is not needed
here.
"""

import collections
import os
import tempfile

import numpy as np

import fixture_json as fj

ARENA_SIZE = 1 << 24  # plenty; TFLM's figures below do not depend on it


def tflm_version():
    try:
        from importlib.metadata import version
        return version("tflite-micro")
    except Exception:  # noqa: BLE001
        return "unknown"


def _schema():
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema
    return schema


def _builtin_names():
    schema = _schema()
    return {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}


TFLITE_TYPES = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 6: "bool", 7: "int16",
                9: "int8"}


def describe(model_bytes):
    """Operators (TFLite names, in order), op counts, and the graph inputs/outputs of subgraph 0:
    index, name, dtype, shape, quantization (scale, zero point; lists for per-axis)."""
    schema = _schema()
    m = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(model_bytes, 0))
    names = _builtin_names()
    g = m.subgraphs[0]
    ops = []
    for op in g.operators or []:
        code = m.operatorCodes[op.opcodeIndex]
        b = max(code.builtinCode, code.deprecatedBuiltinCode)
        ops.append(names.get(b, f"BUILTIN_{b}") if b != schema.BuiltinOperator.CUSTOM
                   else f"CUSTOM:{code.customCode.decode()}")

    def port(i):
        t = g.tensors[i]
        q = t.quantization
        entry = {"index": int(i), "name": t.name.decode() if isinstance(t.name, bytes) else t.name,
                 "dtype": TFLITE_TYPES.get(t.type, f"type{t.type}"),
                 "shape": [int(d) for d in t.shape]}
        if q is not None and q.scale is not None and len(q.scale):
            scales = [float(np.float32(s)) for s in q.scale]
            zps = [int(z) for z in q.zeroPoint]
            entry["quant"] = {"scale": scales[0] if len(scales) == 1 else scales,
                              "zero_point": zps[0] if len(zps) == 1 else zps,
                              "dtype": entry["dtype"]}
            if len(scales) > 1:
                entry["quant"]["axis"] = int(q.quantizedDimension)
        return entry

    return {"ops": ops, "op_counts": dict(sorted(collections.Counter(ops).items())),
            "inputs": [port(i) for i in g.inputs], "outputs": [port(i) for i in g.outputs]}


class _CaptureStderr:
    """Captures what C code writes to file descriptor 2 (TFLM prints its allocation report there)."""

    def __enter__(self):
        self._tmp = tempfile.TemporaryFile(mode="w+b")
        self._saved = os.dup(2)
        os.dup2(self._tmp.fileno(), 2)
        return self

    def __exit__(self, *exc):
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._tmp.seek(0)
        self.text = self._tmp.read().decode(errors="replace")
        self._tmp.close()


def interpreter(model_bytes):
    from tflite_micro.python.tflite_micro import runtime
    err = None
    with _CaptureStderr() as cap:
        try:
            it = runtime.Interpreter.from_bytes(model_bytes, arena_size=ARENA_SIZE)
        except Exception as e:  # noqa: BLE001 - TFLM's reason is on stderr
            err = e
    if err is not None:
        reason = " ".join(cap.text.split())
        raise RuntimeError(f"TFLM refuses the model: {reason} ({err})")
    return it


def run(model_bytes, samples):
    """TFLM outputs for each sample (a list of input arrays, graph order); a fresh interpreter per
    file, samples run one after the other (the models are stateless)."""
    it = interpreter(model_bytes)
    n_out = len(describe(model_bytes)["outputs"])
    outs = []
    for inputs in samples:
        for k, a in enumerate(inputs):
            it.set_input(a, k)
        it.invoke()
        outs.append([np.array(it.get_output(k)) for k in range(n_out)])
    return outs


def arena(model_bytes):
    """TFLM's RecordingMicroAllocator after one inference on zeros: {"head", "tail", "total"} bytes.
    head = the planned tensors (TFLM's tensor arena), tail = persistent data (tensor structs, node
    and registration structs, operator data), total = head + tail, the smallest arena that runs."""
    it = interpreter(model_bytes)
    for k, p in enumerate(describe(model_bytes)["inputs"]):
        it.set_input(np.zeros(p["shape"], fj.DTYPES[p["dtype"]]), k)
    it.invoke()
    with _CaptureStderr() as cap:
        it.print_allocations()
    text = cap.text

    def value(what):
        return int(text.split(f"Arena allocation {what} ")[1].split()[0])

    return {"head": value("head"), "tail": value("tail"), "total": value("total")}


def check(ref, ref_path, notes):
    """check_fixtures.py's test of a .tflite fixture: the file is the one named (sha256), and TFLM
    reproduces every stored output exactly."""
    from fixture_lib import REPO_ROOT
    path = os.path.join(REPO_ROOT, ref["model_path"])
    if not os.path.exists(path):
        raise FileNotFoundError(f"{ref['model_path']} not found")
    if fj.sha256(path) != ref["model_sha256"]:
        raise AssertionError(f"{ref['model_path']} is not the file the fixture was made from (sha256)")
    data = open(path, "rb").read()
    samples = [ref] + ref.get("extra_samples", [])
    if ref.get("engine_name") != "tflm":
        notes.append(f"outputs from {ref['engine']}: not rechecked")
        return notes
    got = run(data, [[fj.array(e) for e in s["inputs"]] for s in samples])
    for k, (s, outs) in enumerate(zip(samples, got)):
        for e, have in zip(s["outputs"], outs):
            want = fj.array(e)
            if have.shape != want.shape or not np.array_equal(have, want):
                d = np.abs(have.astype(np.float64) - want.astype(np.float64)).max()
                raise AssertionError(f"sample {k} {e['name']}: TFLM differs (max |diff| {d})")
    notes.append(f"{len(samples)} samples equal")
    return notes
