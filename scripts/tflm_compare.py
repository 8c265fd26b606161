#!/usr/bin/env python3
"""Arena of sramfit (from the ONNX file) next to TensorFlow Lite Micro's (from a .tflite file).

Issue 6 asks to rebuild the five MLPerf-Tiny-style models in Keras, export them to TFLite, and
compare TFLM's tensor arena with sramfit's `ARENA_BYTES` on the ONNX rebuilds that
scripts/gen_models.py commits (tests/models/*.onnx, same layer shapes, NCHW instead of NHWC).

TFLite Micro's Python interpreter is on PyPI only as development builds (`pip install --pre
tflite-micro`; this script installs it when missing). The script runs it on each .tflite file and
reads its RecordingMicroAllocator report: the arena head is TFLM's tensor arena (the planned tensors),
head + tail its whole arena (with tensor structs, operator data and persistent buffers). As a
cross-check it also re-implements, from TFLM's documented behaviour, the part that decides the
tensor arena for a float model:
  * lifetimes (micro_allocation_info.cc): graph inputs and outputs are created at scope 0, each
    operator opens a new scope; an operator's outputs are created there, its inputs and outputs are
    last used there; graph outputs live to the end. Constant tensors (weights) are not planned.
  * sizes: bytes rounded up to 16 (the arena buffer alignment);
  * offsets: GreedyMemoryPlanner — buffers in decreasing size (stable), each placed at the lowest
    offset where it fits between already placed buffers whose lifetimes overlap its own.
The re-implemented tensor arena is that planner's maximum memory size. It agrees with TFLM's
report on four of the five models; on MobileNetV1-0.25 it finds 258,048 B where TFLM reports
294,912 B, so TFLM's real lifetimes or order differ from this reading somewhere (not investigated:
the measured figure is the one that counts).

The .tflite files come from Keras models with the same layers as the ONNX rebuilds, converted with
tf.lite.TFLiteConverter (float32, which folds BatchNormalization into the convolutions and fuses
activations, as TFLM deployments do). The operator list and tensor shapes are read back with
tf.lite.Interpreter.

Usage: python3 scripts/tflm_compare.py   (pip-installs tensorflow if missing; needs cargo for the
sramfit side: `cargo run -p sramfit-cli -- inspect` on each ONNX file)

Second mode, on .tflite files themselves (issue 17, item 4):

    python3 scripts/tflm_compare.py FILE.tflite ...   # any .tflite files
    python3 scripts/tflm_compare.py --mlperf          # the files of ../shared/mlperf-tiny/
    python3 scripts/tflm_compare.py --keras           # tests/models/tflite/keras/*.tflite
    (add --no-sramfit to skip cargo)

prints one row per file: TFLM's tensor arena (head) and whole arena (head + tail, the smallest
arena_size that runs), whether TFLM reproduces the outputs of the fixture made from that file
(tests/models/tflite/**/*.ref.json, found by sha256: "equal" or the differing element count),
and sramfit's ARENA_BYTES with and without `io: arena` (`sramfit inspect FILE --json`, which
reads full-integer .tflite files; for a file sramfit refuses, such as a float32 one, its columns
give the reason instead of failing). sramfit's outputs are
not computed here (the CLI has no command that runs a model): the Rust tests compare sramfit
with the same fixtures. Needs the virtualenv of scripts/requirements-tflite.txt.
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALIGN = 16


def ensure_packages():
    try:
        import tensorflow  # noqa: F401
    except ImportError:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", "tensorflow-cpu"])
    try:
        import tflite_micro  # noqa: F401
    except ImportError:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", "--pre", "tflite-micro"])


def tflm_measured(tflite_bytes):
    """(tensor arena, whole arena) as TFLite Micro's own interpreter reports them after one run."""
    # TFLM prints its allocation report from C code: run it in a child process and read its output.
    run_tflm = (
        "import sys\n"
        "from tflite_micro.python.tflite_micro import runtime\n"
        "interp = runtime.Interpreter.from_file(sys.argv[1], arena_size=1 << 24)\n"
        "interp.invoke()\n"
        "interp.print_allocations()\n"
    )
    with tempfile.NamedTemporaryFile(suffix=".tflite") as model:
        model.write(tflite_bytes)
        model.flush()
        child = subprocess.run([sys.executable, "-c", run_tflm, model.name], check=True,
                               capture_output=True, text=True)
    report = child.stdout + child.stderr
    value = lambda what: int(report.split(f"Arena allocation {what} ")[1].split()[0])
    return value("head"), value("total")


# -- Keras rebuilds (layer shapes as in scripts/gen_models.py) ---------------------------------- #
def keras_models():
    from tensorflow import keras
    from tensorflow.keras import layers as L

    def bn_relu(x):
        return L.ReLU()(L.BatchNormalization()(x))

    def kws():
        i = keras.Input((49, 10, 1), batch_size=1)
        x = bn_relu(L.Conv2D(64, (10, 4), strides=2, padding="same")(i))
        for _ in range(4):
            x = bn_relu(L.DepthwiseConv2D(3, padding="same")(x))
            x = bn_relu(L.Conv2D(64, 1)(x))
        x = L.AveragePooling2D((25, 5))(x)
        x = L.Flatten()(x)
        return keras.Model(i, L.Softmax()(L.Dense(12)(x)))

    def vww():
        i = keras.Input((96, 96, 3), batch_size=1)
        x = bn_relu(L.Conv2D(8, 3, strides=2, padding="same", use_bias=False)(i))
        blocks = [(16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2),
                  (128, 1), (128, 1), (128, 1), (128, 1), (128, 1), (256, 2), (256, 1)]
        for cout, stride in blocks:
            x = bn_relu(L.DepthwiseConv2D(3, strides=stride, padding="same", use_bias=False)(x))
            x = bn_relu(L.Conv2D(cout, 1, use_bias=False)(x))
        x = L.GlobalAveragePooling2D()(x)
        return keras.Model(i, L.Softmax()(L.Dense(2)(x)))

    def resnet8():
        i = keras.Input((32, 32, 3), batch_size=1)
        x = bn_relu(L.Conv2D(16, 3, padding="same")(i))
        cin = 16
        for s, cout in enumerate([16, 32, 64], start=1):
            stride = 1 if s == 1 else 2
            y = bn_relu(L.Conv2D(cout, 3, strides=stride, padding="same")(x))
            y = L.BatchNormalization()(L.Conv2D(cout, 3, padding="same")(y))
            shortcut = x if stride == 1 and cin == cout else L.Conv2D(cout, 1, strides=2)(x)
            x = L.ReLU()(L.Add()([y, shortcut]))
            cin = cout
        x = L.Flatten()(L.AveragePooling2D(8)(x))
        return keras.Model(i, L.Softmax()(L.Dense(10)(x)))

    def fc_autoencoder():
        i = keras.Input((640,), batch_size=1)
        x = i
        for width in [128, 128, 128, 128, 8, 128, 128, 128, 128]:
            x = bn_relu(L.Dense(width)(x))
        return keras.Model(i, L.Dense(640)(x))

    def mnist_cnn():
        i = keras.Input((28, 28, 1), batch_size=1)
        x = L.Conv2D(32, 3, activation="relu")(i)
        x = L.Conv2D(64, 3, activation="relu")(x)
        x = L.Flatten()(L.MaxPooling2D(2)(x))
        x = L.Dense(32, activation="relu")(x)
        return keras.Model(i, L.Softmax()(L.Dense(10)(x)))

    return [
        ("keyword spotting DS-CNN 49x10", "kws_dscnn", kws, (64000, 64000, 72048)),
        ("visual wake words MobileNetV1-0.25 96x96", "vww_mobilenetv1", vww, (294912, 294912, 324624)),
        ("image classification ResNet-8 32x32", "resnet8", resnet8, (196608, 196608, 203216)),
        ("anomaly detection FC autoencoder 640", "fc_autoencoder", fc_autoencoder, (3072, 3072, 6192)),
        ("MNIST CNN 28x28", "mnist_cnn", mnist_cnn, (294912, 233984, 236848)),
    ]


# -- TFLM's tensor arena, re-implemented ------------------------------------------------------- #
def tflm_buffers(tflite_bytes):
    """(size, first, last) of every tensor TFLM plans, from the converted model."""
    import numpy as np
    import tensorflow as tf

    interp = tf.lite.Interpreter(model_content=tflite_bytes)
    ops = interp._get_ops_details()
    tensors = {t["index"]: t for t in interp.get_tensor_details()}
    inputs = [d["index"] for d in interp.get_input_details()]
    outputs = [d["index"] for d in interp.get_output_details()]
    produced = {o for op in ops for o in op["outputs"]}
    first, last = {}, {}
    for t in inputs + outputs:
        first[t] = last[t] = 0
    for scope, op in enumerate(ops, start=1):
        for t in op["outputs"]:
            first[t] = last[t] = scope
        for t in list(op["inputs"]) + list(op["outputs"]):
            if t >= 0 and t in first:
                last[t] = scope
    for t in outputs:
        last[t] = len(ops)
    planned = [t for t in first if t in produced or t in inputs]
    buffers = []
    for t in planned:
        nbytes = int(np.prod(tensors[t]["shape"])) * np.dtype(tensors[t]["dtype"]).itemsize
        buffers.append(((nbytes + ALIGN - 1) // ALIGN * ALIGN, first[t], last[t]))
    return buffers, [op["op_name"] for op in ops]


def greedy_by_size(buffers):
    """TFLM's GreedyMemoryPlanner: the arena height it reaches."""
    order = sorted(range(len(buffers)), key=lambda i: -buffers[i][0])  # stable, like its sort
    placed = []  # (offset, size, first, last), kept sorted by offset
    for i in order:
        size, first, last = buffers[i]
        offset = 0
        for p_off, p_size, p_first, p_last in placed:
            if p_first > last or first > p_last:
                continue  # not alive at the same time
            if p_off - offset >= size:
                break  # the gap before this buffer fits
            offset = max(offset, p_off + p_size)
        placed.append((offset, size, first, last))
        placed.sort(key=lambda p: p[0])
    return max((p[0] + p[1] for p in placed), default=0)


# -- sramfit's side ----------------------------------------------------------------------------- #
def sramfit_arena(onnx_path, rewrites, io_arena=False):
    """(arena, lower bound) from `sramfit inspect --json`."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = ["cargo", "run", "-q", "-p", "sramfit-cli", "--", "inspect", onnx_path, "--json", out.name]
        if not rewrites:
            cmd.append("--no-rewrites")
        if io_arena:
            cmd.append("--io-arena")
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        report = json.load(open(out.name))
    return report["arena_bytes"], report["lower_bound_bytes"]


# -- .tflite files: TFLM next to sramfit ------------------------------------------------------ #
def sramfit_try(path, io_arena=False):
    """(arena bytes, None) from `sramfit inspect PATH --json`, or (None, why not)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = ["cargo", "run", "-q", "-p", "sramfit-cli", "--", "inspect", os.path.abspath(path), "--json", out.name]
        if io_arena:
            cmd.append("--io-arena")
        child = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if child.returncode != 0:
            lines = [ln for ln in (child.stderr + child.stdout).splitlines() if ln.strip()]
            # The reason: the first refused operator's line, else the error's last line.
            nodes = [ln for ln in lines if "node `" in ln]
            why = (nodes or lines or [f"exit status {child.returncode}"])[0 if nodes else -1].strip()
            return None, f"refused: {why[:160]}"
        return json.load(open(out.name))["arena_bytes"], None


def tflite_fixtures():
    """sha256 -> (ref.json path, ref) of every .tflite fixture."""
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import glob

    import fixture_json as fj
    found = {}
    for p in sorted(glob.glob(os.path.join(ROOT, "tests", "models", "tflite", "**", "*.ref.json"), recursive=True)):
        ref = fj.load(p)
        found[ref["model_sha256"]] = (p, ref)
    return found


def compare_tflite(paths, with_sramfit):
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import hashlib

    import numpy as np

    import fixture_json as fj
    import tflm_lib
    fixtures = tflite_fixtures()
    print(f"TFLM: tflite-micro {tflm_lib.tflm_version()} (Python interpreter, reference kernels)")
    print()
    print("| model | TFLM tensor arena (head) | TFLM whole arena | TFLM vs fixture | sramfit ARENA_BYTES "
          "| sramfit, io: arena | sramfit / TFLM head |")
    print("|---|--:|--:|---|--:|--:|--:|")
    for path in paths:
        data = open(path, "rb").read()
        name = os.path.basename(path)
        try:
            a = tflm_lib.arena(data)
            head, whole = f"{a['head']:,}", f"{a['total']:,}"
        except RuntimeError as e:
            a, head, whole = None, "refused", "-"
            refusal = str(e).split(" (")[0].replace("TFLM refuses the model: ", "")
        fx = fixtures.get(hashlib.sha256(data).hexdigest())
        if fx is None:
            vs = "no fixture"
        elif a is None:
            vs = f"TFLM refuses it: {refusal[-90:]}"
        elif fx[1].get("engine_name") != "tflm":
            vs = f"fixture from {fx[1].get('engine_name')}"
        else:
            ref = fx[1]
            samples = [ref] + ref.get("extra_samples", [])
            got = tflm_lib.run(data, [[fj.array(e) for e in s["inputs"]] for s in samples])
            diff = sum(int(np.sum(h != fj.array(e))) for s, o in zip(samples, got) for e, h in zip(s["outputs"], o))
            vs = f"equal ({len(samples)} samples)" if diff == 0 else f"{diff} elements differ"
        if with_sramfit:
            arena, why = sramfit_try(path)
            whole_sf, why_io = sramfit_try(path, io_arena=True)
            sf = f"{arena:,}" if arena is not None else f"sramfit: {why}"
            sf_io = f"{whole_sf:,}" if whole_sf is not None else "-"
            ratio = f"{arena / a['head']:.3f}" if arena is not None and a and a["head"] else "-"
        else:
            sf, sf_io, ratio = "not run (--no-sramfit)", "-", "-"
        print(f"| {name} | {head} | {whole} | {vs} | {sf} | {sf_io} | {ratio} |")


def main():
    argv = sys.argv[1:]
    paths = [a for a in argv if a.endswith(".tflite")]
    if "--mlperf" in argv:
        import glob
        paths += sorted(glob.glob(os.path.join(os.path.dirname(ROOT), "shared", "mlperf-tiny", "*.tflite")))
    if "--keras" in argv:
        import glob
        paths += sorted(glob.glob(os.path.join(ROOT, "tests", "models", "tflite", "keras", "*.tflite")))
    if paths or "--mlperf" in argv or "--keras" in argv:
        if not paths:
            print("no .tflite files found (../shared/mlperf-tiny/ absent?)")
            return
        compare_tflite(paths, with_sramfit="--no-sramfit" not in argv)
        return
    main_keras_rebuilds()


def main_keras_rebuilds():
    ensure_packages()
    import tensorflow as tf

    tf.keras.utils.set_random_seed(0)
    rows = []
    for title, stem, build, issue in keras_models():
        model = build()
        tflite = tf.lite.TFLiteConverter.from_keras_model(model).convert()
        buffers, ops = tflm_buffers(tflite)
        tflm = greedy_by_size(buffers)
        tflm_head, tflm_whole = tflm_measured(tflite)
        onnx = os.path.join("tests", "models", stem + ".onnx")
        _, lb_plain = sramfit_arena(onnx, rewrites=False)
        arena, lb = sramfit_arena(onnx, rewrites=True)
        whole, _ = sramfit_arena(onnx, rewrites=True, io_arena=True)
        rows.append((title, lb_plain, (tflm_head, tflm_whole, tflm), arena, lb, whole, issue))
        print(f"{stem}: {len(ops)} TFLite ops: {' '.join(ops)}", file=sys.stderr)

    print("TFLM's tensor arena holds the graph input and output; sramfit's ARENA_BYTES does not (they are")
    print("the caller's buffers) unless the model is built with `io: arena` (last sramfit column).")
    print()
    print("| model | ONNX lower bound, no aliasing | TFLM tensor arena (its planner re-implemented) "
          "| TFLM tensor arena | TFLM whole arena | sramfit ARENA_BYTES | sramfit / TFLM tensor "
          "| sramfit, io: arena | issue's figures (ONNX LB / TFLM tensor / TFLM whole) |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for title, lb_plain, (head, whole_tflm, greedy), arena, lb, whole, (i_lb, i_tflm, i_whole) in rows:
        print(f"| {title} | {lb_plain:,} | {greedy:,} | {head:,} | {whole_tflm:,} | {arena:,} (LB {lb:,}) "
              f"| {arena / head:.3f} | {whole:,} | {i_lb:,} / {i_tflm:,} / {i_whole:,} |")


if __name__ == "__main__":
    main()
