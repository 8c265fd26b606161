#!/usr/bin/env python3
"""Build-time cost and resource limits, measured (issue 21): writes nothing in the repository.

1. `limits`: runs the release `sramfit inspect` on every hostile model of
   ui-tests/models/limits/ (scripts/gen_limit_models.py) under `/usr/bin/time -v` and prints the
   wall time, the peak resident memory and the first line of the error (each must fail in under
   1 s and 200 MB, naming the limit).
2. `chains`: builds Relu / Add-residual / Conv chains of 1,000 to 20,000 nodes (in
   target/build_scale/) and prints the time per node of the release `sramfit inspect --timings`
   (and its slowest phase), and with `--macro` the time `cargo build` of a throwaway crate with
   one `sramfit::model!` line takes (the default dev profile: the proc macro and tract at
   opt-level 0; add `--build-override` for `[profile.dev.build-override] opt-level = 3`).

    cargo build --release -p sramfit-cli
    python3 scripts/build_scale.py limits
    python3 scripts/build_scale.py chains [--sizes 1000,2000,5000,10000,20000] [--macro] [--build-override]
"""

import argparse
import os
import re
import subprocess
import sys
import time

sys.dont_write_bytecode = True

import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target"))
SRAMFIT = os.path.join(TARGET, "release", "sramfit")
WORK = os.path.join(TARGET, "build_scale")


def timed(cmd, cwd=None):
    """(seconds, peak RSS in MB, exit code, stdout, stderr) of `cmd` under /usr/bin/time -v."""
    start = time.time()
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, cwd=cwd, capture_output=True, text=True)
    seconds = time.time() - start
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    stderr = "\n".join(line for line in p.stderr.splitlines() if not line.startswith("\t"))
    return seconds, int(rss.group(1)) / 1024 if rss else float("nan"), p.returncode, p.stdout, stderr


def limits():
    folder = os.path.join(REPO, "ui-tests", "models", "limits")
    print(f"| model | bytes | exit | seconds | peak RSS (MB) | error |\n|---|--:|--:|--:|--:|---|")
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        seconds, rss, code, _, err = timed([SRAMFIT, "inspect", path])
        first = err.strip().splitlines()[0] if err.strip() else ""
        limit = re.search(r"the `(\w+)` limit", first)
        print(f"| {name} | {os.path.getsize(path)} | {code} | {seconds:.2f} | {rss:.0f} | "
              f"{limit.group(1) if limit else first[:100]} |")


def chain(kind, n):
    """A chain of `n` nodes: Relu after Relu; `h = h + Relu(h)` blocks; 3x3 convolutions sharing one weight."""
    nodes, inits, h = [], [], "x"
    shape = [1, 64] if kind != "conv" else [1, 4, 8, 8]
    if kind == "conv":
        inits.append(helper.make_tensor("w", TensorProto.FLOAT, [4, 4, 3, 3], [0.01] * 144))
    for i in range(n):
        out = "y" if i == n - 1 else f"t{i}"
        if kind == "relu":
            nodes.append(helper.make_node("Relu", [h], [out], name=f"n{i}"))
        elif kind == "residual":
            if i % 2 == 0 and i + 1 < n:
                nodes.append(helper.make_node("Relu", [h], [f"r{i}"], name=f"n{i}"))
                continue
            nodes.append(helper.make_node("Add", [h, f"r{i - 1}" if i % 2 else h], [out], name=f"n{i}"))
        else:
            nodes.append(helper.make_node("Conv", [h, "w"], [out], name=f"n{i}", pads=[1, 1, 1, 1]))
        h = out
    graph = helper.make_graph(nodes, f"{kind}{n}", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    path = os.path.join(WORK, f"{kind}_{n}.onnx")
    onnx.save(model, path)
    return path


MACRO_CRATE = """[package]
name = "scale"
version = "0.1.0"
edition = "2021"
[dependencies]
sramfit = {{ path = "{repo}" }}
[workspace]
{override}
"""


def macro_build(path, build_override):
    crate = os.path.join(WORK, "crate-override" if build_override else "crate")
    os.makedirs(os.path.join(crate, "src"), exist_ok=True)
    override = "[profile.dev.build-override]\nopt-level = 3\n" if build_override else ""
    with open(os.path.join(crate, "Cargo.toml"), "w") as f:
        f.write(MACRO_CRATE.format(repo=REPO, override=override))
    with open(os.path.join(crate, "src", "main.rs"), "w") as f:
        f.write(f'sramfit::model! {{ mod m {{ path: "{path}", limits: {{ nodes: 1_000_000 }} }} }}\n'
                'fn main() { println!("{}", m::ARENA_BYTES); }\n')
    env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(crate, "target"))
    subprocess.run(["cargo", "build", "--quiet"], cwd=crate, env=env, capture_output=True)  # dependencies, once
    os.utime(os.path.join(crate, "src", "main.rs"))
    start = time.time()
    p = subprocess.run(["cargo", "build", "--quiet"], cwd=crate, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        return float("nan"), p.stderr.strip().splitlines()[0] if p.stderr.strip() else "failed"
    return time.time() - start, ""


def chains(sizes, with_macro, build_override):
    os.makedirs(WORK, exist_ok=True)
    header = "| chain | nodes | inspect s | µs/node | slowest phase | peak RSS (MB) |"
    print(header + (" model! s | µs/node |" if with_macro else "") + "\n" + "|---" * (6 + 2 * with_macro) + "|")
    for kind in ["relu", "residual", "conv"]:
        for n in sizes:
            path = chain(kind, n)
            seconds, rss, code, out, err = timed([SRAMFIT, "inspect", path, "--timings", "--limit", "nodes=1000000"])
            phases = re.findall(r"^(\w+)\s+([\d.]+)\s+\d+", out.split("timings")[-1], re.M) if code == 0 else []
            slowest = max(phases, key=lambda p: float(p[1]), default=("-", "0"))
            row = (f"| {kind} | {n} | {seconds:.2f} | {seconds / n * 1e6:.0f} | {slowest[0]} {float(slowest[1]):.2f} s "
                   f"| {rss:.0f} |" if code == 0 else f"| {kind} | {n} | failed: {err.strip()[:80]} | | | |")
            if with_macro:
                m, why = macro_build(path, build_override)
                row += f" {m:.1f} | {m / n * 1e6:.0f} |" if not why else f" {why[:60]} | |"
            print(row, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["limits", "chains"])
    ap.add_argument("--sizes", default="1000,2000,5000,10000,20000")
    ap.add_argument("--macro", action="store_true")
    ap.add_argument("--build-override", action="store_true")
    a = ap.parse_args()
    if not os.path.exists(SRAMFIT):
        sys.exit(f"{SRAMFIT} is missing: cargo build --release -p sramfit-cli")
    if a.what == "limits":
        limits()
    else:
        chains([int(s) for s in a.sizes.split(",")], a.macro, a.build_override)


if __name__ == "__main__":
    main()
