#!/usr/bin/env python3
"""MicroFlow next to sramfit and TensorFlow Lite Micro on the MLPerf Tiny int8 reference models
(issue 17: "MicroFlow on the same files where it can load them: a side-by-side line").

MicroFlow (crate `microflow` 0.1.3, the Rust proc-macro compiler for int8 `.tflite` files) is
built by scripts/microflow/ (its own workspace, one binary per model, `#[model]` on the file in
../shared/mlperf-tiny/, never copied). For each model the line says:
  * whether MicroFlow compiles the file (else its error);
  * its outputs on the 20 inputs of the TFLM fixture (tests/models/tflite/mlperf/NAME.ref.json,
    made by scripts/gen_tflite.py): how many output elements equal TFLM's, and the largest
    difference in quantization steps (`predict_quantized`: the fixture's int8 input, MicroFlow's
    dequantized output quantized back with the output port's scale and zero point, exactly);
  * its RAM: MicroFlow keeps every tensor on the stack, so its working memory is the smallest
    thread stack with which the 20 inferences complete, found by bisection (one process per try,
    1 KiB steps; glibc gives a thread at least 16 KiB, and the figure includes the harness's own
    frames, a few hundred bytes);
  * sramfit on the same file: its arena, and with `io: arena` its whole working memory but the
    stack (`sramfit inspect FILE --json`); its outputs are bit-identical to TFLM's
    (tests/tflite_models.rs);
  * TFLM's tensor arena (head) and whole arena, from the fixture.

    python3 scripts/microflow_compare.py        # needs cargo (and ../shared/mlperf-tiny/)
"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATE = os.path.join(ROOT, "scripts", "microflow")
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "mlperf-tiny")
# (binary of scripts/microflow, file stem in ../shared/mlperf-tiny/)
MODELS = [("kws", "kws_ref_model"), ("vww", "vww_96_int8"), ("ic", "pretrainedResnet_quant"), ("ad", "ad01_int8")]
KIB = 1024
MIN_STACK = 16 * KIB

sys.path.insert(0, os.path.join(ROOT, "scripts"))
from tflm_compare import sramfit_try  # noqa: E402


def build(binary):
    """None when MicroFlow compiles the model, else its first error line."""
    child = subprocess.run(["cargo", "build", "--release", "--bin", binary], cwd=CRATE,
                           capture_output=True, text=True)
    if child.returncode == 0:
        return None
    errors = [ln.strip() for ln in child.stderr.splitlines() if ln.startswith("error")]
    return (errors or [f"exit status {child.returncode}"])[0]


def run(binary, stack=None):
    """MicroFlow's result line, or None when it did not complete (with `stack` bytes of stack)."""
    cmd = [os.path.join(CRATE, "target", "release", binary)] + (["--stack", str(stack)] if stack else [])
    child = subprocess.run(cmd, capture_output=True, text=True)
    return child.stdout.strip() if child.returncode == 0 else None


def smallest_stack(binary):
    """The smallest thread stack (bytes, 1 KiB steps, at least glibc's 16 KiB) that completes."""
    if run(binary, MIN_STACK):
        return MIN_STACK
    lo, hi = MIN_STACK, 2 * MIN_STACK
    while not run(binary, hi):
        lo, hi = hi, 2 * hi
    while hi - lo > KIB:
        mid = (lo + hi) // 2 // KIB * KIB
        lo, hi = (lo, mid) if run(binary, mid) else (mid, hi)
    return hi


def main():
    if not os.path.isdir(SHARED):
        sys.exit(f"{SHARED} is missing: the MLPerf Tiny files are read from there")
    rows = []
    for binary, stem in MODELS:
        fixture = json.load(open(os.path.join(ROOT, "tests", "models", "tflite", "mlperf", f"{stem}.ref.json")))
        tflm = fixture["tflm_arena"]
        arena, why = sramfit_try(os.path.join(SHARED, f"{stem}.tflite"))
        whole, _ = sramfit_try(os.path.join(SHARED, f"{stem}.tflite"), io_arena=True)
        sramfit = f"{arena:,} / {whole:,}" if arena else why
        error = build(binary)
        if error:
            mf = ("no: " + error, "-", "-")
        else:
            line = run(binary)
            m = re.search(r": (\d+) of (\d+) output elements equal to TFLM's, max (\d+) steps", line)
            outputs = f"{m.group(1)} of {m.group(2)} equal, max {m.group(3)} steps"
            mf = ("yes", outputs, f"{smallest_stack(binary):,}")
        rows.append((f"{stem}.tflite",) + mf + (sramfit, f"{tflm['head']:,} / {tflm['total']:,}"))
        print(rows[-1], flush=True)
    print()
    print("| file | MicroFlow compiles | MicroFlow outputs vs TFLM | MicroFlow stack (B) | "
          "sramfit arena / with io: arena (B) | TFLM tensor arena / whole (B) |")
    print("|---|---|---|--:|--:|--:|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
