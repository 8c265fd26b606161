#!/usr/bin/env python3
"""Compile and run the light models shipped in the Python `onnx` wheel with sramfit.

onnx/backend/test/data/light/*.onnx are nine classic ImageNet CNNs (AlexNet,
DenseNet-121, Inception v1/v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19,
ZFNet-512; opset 9, weights listed among the graph inputs as in old ONNX IR)
whose weights are ConstantOfShape splats of 0.02, so the files are tiny but
the folded weights are not (VGG-19: 548 MiB). For each model this script
builds the crate scripts/light_models/ (its build.rs compiles the model with
sramfit-build: the planner, verifier and code generation of `sramfit::model!`),
runs it on the input the ONNX backend test uses (arange(n)/n), and compares it
with tract and with the wheel's saved output (light_NAME_output_0.pb).

With splat weights every class gets the same logit, so every softmax output is
exactly 0.001 whatever the network computed. Each model that ends in Softmax is
therefore run a second time as "NAME/logits": the same file with the final
Softmax removed, compared with tract on the logits.

    python3 scripts/light_models.py                  # all nine (+ logits variants)
    python3 scripts/light_models.py vgg19 squeezenet # a subset
    python3 scripts/light_models.py --no-logits      # shipped files only

Installs onnx==1.23.2 with pip if it is missing. Uses $CARGO_TARGET_DIR if
set (else target/ in the repository) and removes its own artifacts at the end
(the compiled tract stays). Exit status 1 if any model fails.
"""

import json
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # keep scripts/ free of __pycache__

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATE = os.path.join(REPO_ROOT, "scripts", "light_models", "Cargo.toml")
MODELS = ["bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
          "shufflenet", "squeezenet", "vgg19", "zfnet512"]
ONNX_VERSION = "1.23.2"


def ensure_onnx():
    try:
        import onnx  # noqa: F401
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", f"onnx=={ONNX_VERSION}"], check=True)
    import onnx
    return onnx


def prepare(onnx, light_dir, work_dir, name, logits):
    """Writes the model to compile (the shipped file, or its logits variant), the input and the
    expected output as raw little-endian float32; returns their paths."""
    import numpy as np
    from onnx import numpy_helper

    src = os.path.join(light_dir, f"light_{name}.onnx")
    model = onnx.load(src)
    inits = {i.name for i in model.graph.initializer}
    (data,) = [i for i in model.graph.input if i.name not in inits]
    # The input onnx.backend's runner generates for these models (generate_dummy_data, random=False).
    shape = [d.dim_value if d.HasField("dim_value") else 1 for d in data.type.tensor_type.shape.dim]
    n = int(np.prod(shape))
    x = (np.arange(n).reshape(shape) / n).astype("<f4")
    os.makedirs(work_dir, exist_ok=True)
    input_bin = os.path.join(work_dir, f"{name}.input.bin")
    x.tofile(input_bin)
    if logits:
        last = model.graph.node[-1]
        assert last.op_type == "Softmax" and last.output[0] == model.graph.output[0].name
        model.graph.node.remove(last)
        del model.graph.output[:]
        model.graph.output.append(onnx.helper.make_tensor_value_info(last.input[0], onnx.TensorProto.FLOAT, None))
        path = os.path.join(work_dir, f"light_{name}_logits.onnx")
        onnx.save(model, path)
        return path, input_bin, None
    ref = onnx.TensorProto()
    with open(os.path.join(light_dir, f"light_{name}_output_0.pb"), "rb") as f:
        ref.ParseFromString(f.read())
    expected_bin = os.path.join(work_dir, f"{name}.expected.bin")
    numpy_helper.to_array(ref).astype("<f4").tofile(expected_bin)
    return src, input_bin, expected_bin


def ends_in_softmax(onnx, light_dir, name):
    model = onnx.load(os.path.join(light_dir, f"light_{name}.onnx"))
    return model.graph.node[-1].op_type == "Softmax"


def build_and_run(model_path, input_bin, expected_bin, target_dir):
    env = dict(os.environ, SRAMFIT_LIGHT_MODEL=model_path, CARGO_TARGET_DIR=target_dir)
    start = time.monotonic()
    build = subprocess.run(["cargo", "build", "--locked", "--manifest-path", CRATE],
                           env=env, capture_output=True, text=True)
    build_s = time.monotonic() - start
    if build.returncode != 0:
        lines = [l for l in build.stderr.splitlines() if "warning:" in l or "error" in l]
        return {"error": " | ".join(lines[-6:]) or build.stderr[-600:], "build_s": build_s}
    args = [os.path.join(target_dir, "debug", "sramfit-light-models"), model_path, input_bin]
    if expected_bin:
        args.append(expected_bin)
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        return {"error": run.stderr.strip().splitlines()[-1:], "build_s": build_s}
    result = json.loads(run.stdout.strip().splitlines()[-1])
    result["build_s"] = build_s
    return result


def mib(b):
    return f"{b / 2**20:9.2f}"


def main():
    args = sys.argv[1:]
    with_logits = "--no-logits" not in args
    names = [a for a in args if not a.startswith("--")] or MODELS
    onnx = ensure_onnx()
    light_dir = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    target_dir = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO_ROOT, "target"))
    work_dir = os.path.join(target_dir, "light-models")
    rows = []
    for name in names:
        variants = [False] + ([True] if with_logits and ends_in_softmax(onnx, light_dir, name) else [])
        for logits in variants:
            label = f"{name}/logits" if logits else name
            print(f"... {label}", file=sys.stderr, flush=True)
            r = build_and_run(*prepare(onnx, light_dir, work_dir, name, logits), target_dir)
            rows.append((label, r))
    tol = 1e-4
    print(f"{'model':24} {'ok':3} {'arena MiB':>9} {'bound MiB':>9} {'weights MiB':>11} "
          f"{'rel vs tract':>12} {'rel vs saved':>12} {'build s':>7} {'run s':>6} {'tract s':>7}")
    failed = 0
    for label, r in rows:
        if "error" in r:
            failed += 1
            print(f"{label:24} no  {r['error']}  (build {r['build_s']:.1f} s)")
            continue
        worst = max(r["vs_tract"] + ([r["vs_saved"]] if r["vs_saved"] is not None else []))
        ok = worst <= tol
        failed += not ok
        saved = f"{r['vs_saved']:12.2e}" if r["vs_saved"] is not None else f"{'-':>12}"
        print(f"{label:24} {'yes' if ok else 'NO':3} {mib(r['arena'])} {mib(r['lower_bound'])} "
              f"{mib(r['weights']):>11} {max(r['vs_tract']):12.2e} {saved} {r['build_s']:7.1f} "
              f"{r['run_s']:6.2f} {r['tract_s']:7.2f}")
    print(f"{len(rows) - failed} passed, {failed} failed (max relative difference <= {tol})")
    # The last model's binary and weights are up to 1 GB: remove this crate's artifacts (not tract's).
    subprocess.run(["cargo", "clean", "--manifest-path", CRATE, "-p", "sramfit-light-models"],
                   env=dict(os.environ, CARGO_TARGET_DIR=target_dir), capture_output=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
