#!/usr/bin/env python3
"""Build cost of `sramfit::model!`: macro expansion time, build time and code size per model.

For each model (the eight of `bench_models!` in bench/src/main.rs, read from that file, plus
ResNet-50 from the `onnx` wheel's light models) this script builds a throwaway crate whose
`main.rs` is one `sramfit::model! { mod net { path: "/abs/model.onnx" } }` and a `main` that runs
the model once on zeros and prints its first output (so nothing is optimised away), and prints a
markdown table:

- macro expansion: rustc's `macro_expand_crate` pass (`-Z time-passes`, allowed on stable for this
  one crate by RUSTC_BOOTSTRAP=bc_model; not `=1`, which would make proc-macro2's build script
  switch to its nightly code in the macro's dependencies), which includes running the proc macro: ONNX import
  through tract, rewrites, planning, verification and code generation. Release profile, so, as in
  every release build of a crate using `model!` (the bench's too), Cargo compiles the proc macro and
  its dependencies (tract, the planner) with its `build-override` default, opt-level 0.
- rustc total: the same rustc run's `total` (expansion, type checking, LLVM, linking);
- cargo build: wall time of `cargo build --release` of that crate when its dependencies are already
  built, i.e. what the model adds to its user's build;
- planner: `compile_model` (import, rewrites, plan, verify; no code generation) called from an
  optimised (opt-level 3) binary: the work of the macro without the unoptimised build of it;
- `.text` / `.rodata` of the release binary (`size -A`); "sramfit .text": the part of `.text` in
  symbols (`nm -S -C`) whose demangled name contains the generated module (`bc_model::net::`) or
  `sramfit` (the runtime-min kernels and the facade); the rest is Rust's std and `main`. Weights
  are in `.rodata` (`WEIGHT_BYTES` is printed next to it), never in `.text`;
- tract `.text` / `.rodata`: one binary doing the same job with tract-onnx (=0.23.9, the
  workspace's): it loads the ONNX file named on its command line, `into_optimized`, runs once on
  zeros and prints the first output. It is the same binary for every model (its size does not
  depend on the model), and it reads the model's weights from the file at run time;
- out[0]: the first output value of both binaries on zeros, as a check that they did the same job.

Above the table it prints the one-off cold (or warm, see below) builds of the dependencies: what a
crate using `sramfit::model!` compiles before its first model, and what a crate using tract does.

    python3 scripts/build_cost.py                  # all nine models
    python3 scripts/build_cost.py kws resnet8      # models whose name contains an argument
    python3 scripts/build_cost.py --cold           # delete the dependency build first

The crates and their build directory live in $CARGO_TARGET_DIR/build-cost (else
target/build-cost in the repository). The dependency build is kept between runs (the figure is
labelled "warm" then; `--cold` deletes it first); the crates' sources and the model binary (with
ResNet-50's ~100 MB of weights) are removed at the end. The workspace's Cargo.lock is copied into
the throwaway workspace and every build is `--locked --offline`, so the same dependency versions
are used (the script checks that resolving the throwaway crates added no version). The workspace's
`.cargo/config.toml` sets `-C target-cpu=native` for the host; a crate outside the workspace does
not read it, so the script passes the host triple's rustflags from that file as RUSTFLAGS, and the
figures match what the bench builds. Installs onnx==1.23.2 with pip if ResNet-50 is selected and
it is missing. Exit status 1 if a model fails to build or run.
"""

import os
import re
import shutil
import subprocess
import sys
import time
import tomllib

sys.dont_write_bytecode = True  # keep scripts/ free of __pycache__

import light_models  # noqa: E402  (same folder: the onnx wheel install and its light models)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULE = "net"
MODEL_CRATE = "bc_model"

WORKSPACE_TOML = """[workspace]
members = ["model", "tract-run", "plan"]
resolver = "3"
"""

MODEL_TOML = """[package]
name = "bc-model"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
sramfit = {{ path = "{repo}" }}
"""

# An empty build script gives the crate an OUT_DIR, so `model!` embeds the weights with
# include_bytes! (as the bench does; the README recommends it for large models).
MODEL_BUILD_RS = "fn main() {}\n"

# Before any model: builds the dependencies only.
MODEL_STUB = "use sramfit as _;\n\nfn main() {}\n"

MODEL_MAIN = """sramfit::model! {{ mod {module} {{ path: {path} }} }}

fn main() {{
    let inputs: Vec<Vec<f32>> = {module}::INPUT_SHAPES.iter().map(|s| vec![0.0; s.iter().product()]).collect();
    let mut outputs: Vec<Vec<f32>> = {module}::OUTPUT_SHAPES.iter().map(|s| vec![0.0; s.iter().product()]).collect();
    let ins: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
    let mut outs: Vec<&mut [f32]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
    {module}::run_dyn(&ins, &mut outs).expect("the model runs");
    let shapes: Vec<String> =
        {module}::INPUT_SHAPES.iter().map(|s| s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",")).collect();
    println!("weights {{}}", {module}::WEIGHT_BYTES);
    println!("arena {{}}", {module}::ARENA_BYTES);
    println!("inputs {{}}", shapes.join(" "));
    println!("out0 {{:e}}", outputs[0][0]);
}}
"""

TRACT_TOML = """[package]
name = "bc-tract-run"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
tract-onnx = "=0.23.9"
"""

TRACT_MAIN = """//! `bc-tract-run MODEL.onnx SHAPE...` (SHAPE: `1,49,10,1`, one per graph input): the same job as
//! the sramfit binary with tract: load, optimise, run once on zeros, print the first output.
use tract_onnx::prelude::*;

fn main() -> TractResult<()> {
    let args: Vec<String> = std::env::args().collect();
    let shapes: Vec<Vec<usize>> =
        args[2..].iter().map(|s| s.split(',').map(|d| d.parse().expect("a dimension")).collect()).collect();
    let mut model = tract_onnx::onnx().model_for_path(&args[1])?;
    for (i, shape) in shapes.iter().enumerate() {
        model.set_input_fact(i, f32::fact(shape).into())?;
    }
    let plan = model.into_optimized()?.into_runnable()?;
    let inputs: TVec<TValue> = shapes.iter().map(|s| Tensor::zero::<f32>(s).map(Into::into)).collect::<TractResult<_>>()?;
    let outputs = plan.run(inputs)?;
    println!("out0 {:e}", outputs[0].to_plain_array_view::<f32>()?.iter().next().expect("an output value"));
    Ok(())
}
"""

PLAN_TOML = """[package]
name = "bc-plan"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
sramfit-planner-core = {{ path = "{repo}/planner-core", features = ["onnx"] }}
"""

PLAN_MAIN = """//! `bc-plan MODEL.onnx`: seconds `compile_model` takes, with the options `model!` uses by default.
use sramfit_planner_core::compile::compile_model;
use sramfit_planner_core::request::Request;

fn main() {
    let path = std::env::args().nth(1).expect("usage: bc-plan MODEL.onnx");
    let mut request = Request::new(path);
    request.use_plan_file = true;
    let start = std::time::Instant::now();
    compile_model(&request).expect("the model compiles");
    println!("{:.3}", start.elapsed().as_secs_f64());
}
"""


def bench_models():
    """(name, absolute path) of the bench's models, in its order, from `bench_models!`."""
    bench = os.path.join(REPO_ROOT, "bench")
    with open(os.path.join(bench, "src", "main.rs")) as f:
        text = f.read()
    body = text[text.index("macro_rules! bench_models"):]
    found = re.findall(r'(\w+): "[^"]*" => "([^"]+\.onnx)"', body[: body.index("$($($extra)*)?")])
    return [(name, os.path.normpath(os.path.join(bench, rel))) for name, rel in found]


def resnet50_path():
    onnx = light_models.ensure_onnx()
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", "light_resnet50.onnx")


def host_rustflags():
    """The workspace's `.cargo/config.toml` rustflags for the host triple, as a RUSTFLAGS string."""
    triple = re.search(r"^host: (\S+)$", run(["rustc", "-vV"]).stdout, re.M).group(1)
    config = os.path.join(REPO_ROOT, ".cargo", "config.toml")
    if not os.path.exists(config):
        return ""
    with open(config, "rb") as f:
        flags = tomllib.load(f).get("target", {}).get(triple, {}).get("rustflags", [])
    return " ".join(flags)


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


class Workspace:
    """The throwaway workspace: crates model/, tract-run/, plan/ and their build directory."""

    def __init__(self, root, rustflags):
        self.root = root
        self.target = os.path.join(root, "target")
        self.env = dict(os.environ, CARGO_TARGET_DIR=self.target, RUSTFLAGS=rustflags, RUSTC_BOOTSTRAP=MODEL_CRATE)

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def create(self):
        self.write("Cargo.toml", WORKSPACE_TOML)
        self.write("model/Cargo.toml", MODEL_TOML.format(repo=REPO_ROOT))
        self.write("model/build.rs", MODEL_BUILD_RS)
        self.write("model/src/main.rs", MODEL_STUB)
        self.write("tract-run/Cargo.toml", TRACT_TOML)
        self.write("tract-run/src/main.rs", TRACT_MAIN)
        self.write("plan/Cargo.toml", PLAN_TOML.format(repo=REPO_ROOT))
        self.write("plan/src/main.rs", PLAN_MAIN)
        shutil.copy(os.path.join(REPO_ROOT, "Cargo.lock"), os.path.join(self.root, "Cargo.lock"))
        # Resolve the throwaway members against the copied lock (offline: nothing newer can appear),
        # then check that no registry package version was added.
        r = self.cargo(["metadata", "--offline", "--format-version", "1"])
        if r.returncode != 0:
            sys.exit(f"cargo metadata failed:\n{r.stderr}")
        added = registry_packages(os.path.join(self.root, "Cargo.lock")) - registry_packages(
            os.path.join(REPO_ROOT, "Cargo.lock"))
        if added:
            sys.exit(f"the throwaway crates need versions the workspace's Cargo.lock lacks: {sorted(added)}")

    def cargo(self, args):
        manifest = ["--manifest-path", os.path.join(self.root, "Cargo.toml")]
        return run(["cargo", args[0], *manifest, *args[1:]], env=self.env)

    def build(self, package, extra=()):
        """Timed `cargo build --release` (or `cargo rustc` with `extra` rustc flags) of one package."""
        cmd = ["rustc" if extra else "build", "--release", "--locked", "--offline", "-p", package]
        start = time.monotonic()
        r = self.cargo(cmd + (["--", *extra] if extra else []))
        seconds = time.monotonic() - start
        if r.returncode != 0:
            raise BuildError(f"cargo {' '.join(cmd)}: " + " | ".join(error_lines(r.stderr)))
        return seconds, r.stderr

    def binary(self, name):
        return os.path.join(self.target, "release", name)


class BuildError(Exception):
    pass


def error_lines(stderr):
    lines = [l.strip() for l in stderr.splitlines() if l.startswith("error") or "panicked" in l]
    return lines[:4] or stderr.strip().splitlines()[-4:]


def registry_packages(lock_path):
    with open(lock_path, "rb") as f:
        lock = tomllib.load(f)
    return {(p["name"], p["version"]) for p in lock["package"] if "source" in p}


def time_passes(stderr, name):
    """Seconds of rustc's `-Z time-passes` line for pass `name`."""
    m = re.search(rf"^time:\s+([0-9.]+);.*\t{name}$", stderr, re.M)
    if not m:
        raise BuildError(f"no `{name}` line in rustc's -Z time-passes output")
    return float(m.group(1))


def sections(binary):
    """Section name -> size in bytes (`size -A`)."""
    out = run(["size", "-A", "-d", binary], check=True).stdout
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\.\S+)\s+(\d+)\s+\d+$", out, re.M)}


def sramfit_text(binary):
    """Bytes of `.text` in the generated module's and sramfit's symbols."""
    out = run(["nm", "-S", "-C", "--defined-only", binary], check=True).stdout
    total = 0
    for line in out.splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4 and parts[2] in "tT" and (f"{MODEL_CRATE}::{MODULE}::" in parts[3] or "sramfit" in parts[3]):
            total += int(parts[1], 16)
    return total


def key_values(stdout):
    return dict(line.split(" ", 1) for line in stdout.strip().splitlines())


def measure(ws, path):
    """Builds, runs and sizes the crate for one model; returns the row's figures."""
    ws.write("model/src/main.rs", MODEL_MAIN.format(module=MODULE, path=f'"{path}"'))
    build_s, stderr = ws.build("bc-model", ["-Z", "time-passes"])
    binary = ws.binary("bc-model")
    out = run([binary])
    if out.returncode != 0:
        raise BuildError(f"the model binary failed: {error_lines(out.stderr)}")
    got = key_values(out.stdout)
    tract = run([ws.binary("bc-tract-run"), path, *got["inputs"].split()])
    if tract.returncode != 0:
        raise BuildError(f"tract failed: {error_lines(tract.stderr)}")
    plan = run([ws.binary("bc-plan"), path])
    if plan.returncode != 0:
        raise BuildError(f"compile_model failed: {error_lines(plan.stderr)}")
    sizes = sections(binary)
    return {
        "expand_s": time_passes(stderr, "macro_expand_crate"),
        "rustc_s": time_passes(stderr, "total"),
        "build_s": build_s,
        "plan_s": float(plan.stdout),
        "text": sizes[".text"],
        "sramfit_text": sramfit_text(binary),
        "rodata": sizes[".rodata"],
        "weights": int(got["weights"]),
        "out0": got["out0"],
        "tract_out0": key_values(tract.stdout)["out0"],
    }


def machine():
    with open("/proc/cpuinfo") as f:
        cpu = re.search(r"^model name\s*:\s*(.*)$", f.read(), re.M).group(1)
    rustc = run(["rustc", "--version"]).stdout.strip()
    return f"{cpu}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; {rustc}"


def main():
    args = sys.argv[1:]
    cold = "--cold" in args
    filters = [a.lower() for a in args if not a.startswith("--")]
    models = bench_models() + [("resnet50", None)]
    models = [(n, p) for n, p in models if not filters or any(f in n for f in filters)]
    if not models:
        sys.exit(f"no model matches {filters}; models: {[n for n, _ in bench_models()] + ['resnet50']}")
    models = [(n, p or resnet50_path()) for n, p in models]

    target_dir = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO_ROOT, "target"))
    root = os.path.join(target_dir, "build-cost")
    rustflags = host_rustflags()
    ws = Workspace(root, rustflags)
    if cold:
        shutil.rmtree(ws.target, ignore_errors=True)
    warmth = "warm: already built by an earlier run" if os.path.isdir(ws.target) else "cold"
    print(f"Machine: {machine()}", flush=True)
    print(f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; RUSTFLAGS=\"{rustflags}\"", flush=True)
    print(f"Command: python3 scripts/build_cost.py {' '.join(args)}".rstrip(), flush=True)
    ws.create()
    failed = 0
    try:
        print("... dependencies", file=sys.stderr, flush=True)
        deps = [(label, ws.build(package)[0]) for label, package in [
            ("`sramfit` (facade, macro with planner and tract at opt-level 0, runtime-min)", "bc-model"),
            ("the tract binary (tract-onnx at opt-level 3)", "bc-tract-run"),
            ("the planner binary (planner-core at opt-level 3; shares tract with the tract binary)", "bc-plan"),
        ]]
        tract_sizes = sections(ws.binary("bc-tract-run"))
        print()
        print(f"Dependency builds ({warmth}), `cargo build --release`, in this order:")
        print()
        for label, seconds in deps:
            print(f"- {label}: {seconds:.1f} s")
        rows = []
        for name, path in models:
            print(f"... {name}", file=sys.stderr, flush=True)
            try:
                rows.append((name, measure(ws, path)))
            except BuildError as e:
                failed += 1
                rows.append((name, str(e)))
        print()
        print("| model | macro expansion s | rustc total s | cargo build s | planner s | .text | sramfit .text "
              "| .rodata (weights) | tract .text | tract .rodata | out[0] sramfit / tract |")
        print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
        for name, r in rows:
            if isinstance(r, str):
                print(f"| {name} | failed: {r} |")
                continue
            print(f"| {name} | {r['expand_s']:.2f} | {r['rustc_s']:.2f} | {r['build_s']:.2f} | {r['plan_s']:.2f} "
                  f"| {r['text']:,} | {r['sramfit_text']:,} | {r['rodata']:,} ({r['weights']:,}) "
                  f"| {tract_sizes['.text']:,} | {tract_sizes['.rodata']:,} | {r['out0']} / {r['tract_out0']} |")
        print()
        print(f"(seconds, wall; bytes. Release profile. Load average at the end {os.getloadavg()[0]:.1f}.)")
    finally:
        # Keep the dependency build (target/), drop the model binary (up to ~100 MB of weights) and the sources.
        ws.cargo(["clean", "--release", "--offline", "-p", "bc-model"])
        for rel in ["model", "tract-run", "plan", "Cargo.toml", "Cargo.lock"]:
            path = os.path.join(root, rel)
            if os.path.isdir(path):
                shutil.rmtree(path)
            elif os.path.exists(path):
                os.remove(path)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
