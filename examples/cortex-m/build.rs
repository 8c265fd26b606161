//! Build script of the Cortex-M firmware:
//! - writes `memory.x` for the board selected by a cargo feature, and `board.rs` with the same sizes
//!   (so the linker's memory map and the `sram:` budget come from one table);
//! - turns each model's fixture into `NAME.ref.rs`: the inputs and the expected outputs as exact
//!   values (`f32` bit patterns, int8 numbers), kept in flash, how to compare them, and the model's
//!   multiply-accumulates. f32 models: onnxruntime's fixture (`tests/models/NAME.ref.json`),
//!   compared within a tolerance. int8 models: the official MLPerf Tiny `.tflite` files, read in
//!   place from `../shared/mlperf-tiny/`, against TFLM's outputs (`tests/models/tflite/mlperf/`,
//!   written by scripts/gen_tflite.py) on a few of its inputs, compared bit for bit;
//! - writes each `.tflite` model's CMSIS-NN layer list, `NAME.cmsis.rs` (`build/cmsis_layers.rs`);
//! - counts each model's MACs with planner-core's report (what `sramfit inspect` prints);
//! - gives the crate an `OUT_DIR`, where `sramfit::model!` writes the weights it embeds.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[path = "build/cmsis_layers.rs"]
mod cmsis_layers;

/// An emulated board: its memory map and the stack it keeps out of the model's budget.
struct Board {
    feature: &'static str,
    flash_origin: u32,
    flash_bytes: u32,
    ram_origin: u32,
    ram_bytes: u32,
    stack_reserve: u32,
    about: &'static str,
}

const BOARDS: &[Board] = &[
    Board {
        feature: "mps2-an386",
        flash_origin: 0x0000_0000,
        flash_bytes: 4 << 20,
        ram_origin: 0x2000_0000,
        ram_bytes: 4 << 20,
        stack_reserve: 8 << 10,
        about: "QEMU mps2-an386 (Arm AN386, Cortex-M4F): code in ZBT SSRAM1, data in ZBT SSRAM2/3",
    },
    Board {
        feature: "lm3s6965evb",
        flash_origin: 0x0000_0000,
        flash_bytes: 256 << 10,
        ram_origin: 0x2000_0000,
        ram_bytes: 64 << 10,
        stack_reserve: 6 << 10,
        about: "QEMU lm3s6965evb (TI Stellaris LM3S6965, Cortex-M3): 256 KB flash, 64 KB SRAM",
    },
    Board {
        feature: "mps2-an500",
        flash_origin: 0x0000_0000,
        flash_bytes: 4 << 20,
        ram_origin: 0x2000_0000,
        ram_bytes: 4 << 20,
        stack_reserve: 8 << 10,
        about: "QEMU mps2-an500 (Arm AN500, Cortex-M7): code in ZBT SSRAM1, data in ZBT SSRAM2/3 (AN386's map)",
    },
    Board {
        feature: "mps2-an505",
        // The core starts in the Secure state (QEMU's AN505 sets the secure vector table at
        // 0x1000_0000) and may not execute from Non-secure memory: code and data are in the
        // Secure aliases of ZBT SSRAM1 (0x1000_0000) and of SSRAM2 + SSRAM3 (2 + 2 MB at
        // 0x3800_0000), as QEMU's mps2-tz.c maps them for AN505.
        flash_origin: 0x1000_0000,
        flash_bytes: 4 << 20,
        ram_origin: 0x3800_0000,
        ram_bytes: 4 << 20,
        stack_reserve: 8 << 10,
        about: "QEMU mps2-an505 (Arm AN505, Cortex-M33, Secure state): code in ZBT SSRAM1, data in SSRAM2/3",
    },
    Board {
        feature: "microbit",
        flash_origin: 0x0000_0000,
        flash_bytes: 256 << 10,
        ram_origin: 0x2000_0000,
        ram_bytes: 16 << 10,
        stack_reserve: 4 << 10,
        about: "QEMU microbit (BBC micro:bit, nRF51822, Cortex-M0): 256 KB flash, 16 KB SRAM",
    },
];

/// Where a model and its fixture are, which decides how its outputs are checked.
#[derive(Clone, Copy, PartialEq)]
enum Source {
    /// `tests/models/NAME.onnx` (f32), against onnxruntime (`NAME.ref.json`) within the harness's
    /// tolerance.
    F32,
    /// An int8 `.tflite` file (`model`, from the checkout's root: the official MLPerf Tiny files in
    /// `../shared/mlperf-tiny/`, read in place, never copied; or a bundled one), bit for bit against
    /// TFLM's outputs (`fixture`, written by scripts/gen_tflite.py) on [`TFLITE_SAMPLES`] of its
    /// inputs; with `cmsis`, also run through CMSIS-NN (`NAME.cmsis.rs`, when the firmware is built
    /// with feature `cmsis-nn`).
    Tflite { model: &'static str, fixture: &'static str, cmsis: bool },
}

/// One of the four MLPerf Tiny int8 files.
const fn mlperf(model: &'static str, fixture: &'static str) -> Source {
    Source::Tflite { model, fixture, cmsis: true }
}

/// The bundled models some binary of this crate runs (their fixtures become `NAME.ref.rs`).
const MODELS: &[(&str, Source)] = &[
    ("kws_dscnn", Source::F32),
    ("resnet8", Source::F32),
    ("mobilenetv2_block", Source::F32),
    ("mlp", Source::F32),
    ("branch_merge", Source::F32),
    (
        "kws_ref_model",
        mlperf("../shared/mlperf-tiny/kws_ref_model.tflite", "tests/models/tflite/mlperf/kws_ref_model.ref.json"),
    ),
    (
        "vww_96_int8",
        mlperf("../shared/mlperf-tiny/vww_96_int8.tflite", "tests/models/tflite/mlperf/vww_96_int8.ref.json"),
    ),
    (
        "pretrained_resnet_quant",
        mlperf(
            "../shared/mlperf-tiny/pretrainedResnet_quant.tflite",
            "tests/models/tflite/mlperf/pretrainedResnet_quant.ref.json",
        ),
    ),
    ("ad01_int8", mlperf("../shared/mlperf-tiny/ad01_int8.tflite", "tests/models/tflite/mlperf/ad01_int8.ref.json")),
    // VWW with the default rewrites (patch-based execution), next to its untiled CMSIS-NN twin.
    (
        "vww_96_int8_tiled",
        Source::Tflite {
            model: "../shared/mlperf-tiny/vww_96_int8.tflite",
            fixture: "tests/models/tflite/mlperf/vww_96_int8.ref.json",
            cmsis: false,
        },
    ),
    // A small int8 DS-CNN (Keras, bundled) for the micro:bit's 16 KB.
    (
        "ds_cnn_int8",
        Source::Tflite {
            model: "tests/models/tflite/keras/ds_cnn_int8.tflite",
            fixture: "tests/models/tflite/keras/ds_cnn_int8.ref.json",
            cmsis: false,
        },
    ),
];

/// How many of a TFLM fixture's inputs the firmware runs (the first is the one counted).
const TFLITE_SAMPLES: usize = 3;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let enabled: Vec<&Board> = BOARDS.iter().filter(|b| std::env::var_os(feature_env(b.feature)).is_some()).collect();
    let [board] = enabled[..] else {
        let names: Vec<&str> = BOARDS.iter().map(|b| b.feature).collect();
        panic!("enable exactly one board feature: {}", names.join(", "));
    };
    write(&out.join("memory.x"), &memory_x(board));
    write(&out.join("board.rs"), &board_rs(board));
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg-bins=-Tlink.x");

    // The manifest directory of this run, not of the build that compiled this script (`env!`): a
    // cached build script would otherwise read the fixtures of a checkout that has moved.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let manifest = Path::new(&manifest);
    let cmsis = std::env::var_os("CARGO_FEATURE_CMSIS_NN").is_some();
    for &(name, source) in MODELS {
        let (model, json) = match source {
            Source::F32 => (format!("../../tests/models/{name}.onnx"), format!("../../tests/models/{name}.ref.json")),
            Source::Tflite { model, fixture, .. } => (format!("../../{model}"), format!("../../{fixture}")),
        };
        let (model, json) = (manifest.join(model), manifest.join(json));
        println!("cargo:rerun-if-changed={}", json.display());
        println!("cargo:rerun-if-changed={}", model.display());
        if !model.exists() {
            // Only the MLPerf Tiny files live outside the checkout; scripts/cortex-m.sh skips their
            // binaries, with a message, when ../shared/mlperf-tiny is absent.
            println!("cargo:warning={} not found: no fixture for {name}", model.display());
            continue;
        }
        let text = std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{}: {e}", json.display()));
        let fixture: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", json.display()));
        let samples = match source {
            Source::F32 => vec![Sample {
                inputs: f32_bits(name, &fixture, "inputs"),
                outputs: f32_bits(name, &fixture, "outputs"),
            }],
            Source::Tflite { .. } => tflm_samples(name, &fixture),
        };
        // A network compared with CMSIS-NN is built untiled (its binary says `tile: false`), so
        // that both run the same layers; every other binary keeps the default rewrites.
        let program = compile(&model, !matches!(source, Source::Tflite { cmsis: true, .. }));
        let fixture = Fixture { name, source, samples, macs: macs(&program) };
        write(&out.join(format!("{name}.ref.rs")), &reference_rs(&fixture));
        if let (Source::Tflite { cmsis: true, .. }, true) = (source, cmsis) {
            write(&out.join(format!("{name}.cmsis.rs")), &cmsis_layers::driver_rs(name, &program));
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}

fn feature_env(feature: &str) -> String {
    format!("CARGO_FEATURE_{}", feature.to_uppercase().replace('-', "_"))
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

fn memory_x(b: &Board) -> String {
    format!(
        "/* {} (written by build.rs) */\nMEMORY\n{{\n  FLASH : ORIGIN = {:#010x}, LENGTH = {}\n  RAM   : ORIGIN = {:#010x}, LENGTH = {}\n}}\n",
        b.about, b.flash_origin, b.flash_bytes, b.ram_origin, b.ram_bytes
    )
}

fn board_rs(b: &Board) -> String {
    format!(
        "/// The board: {about}.\npub const NAME: &str = {name:?};\n\
         /// Bytes of SRAM on the board.\npub const SRAM: usize = {ram};\n\
         /// Bytes of SRAM kept for the stack (and everything else that is not the model's arena).\npub const STACK_RESERVE: usize = {stack};\n",
        about = b.about,
        name = b.feature,
        ram = b.ram_bytes,
        stack = b.stack_reserve
    )
}

/// A tensor of a fixture, as exact values.
enum Elements {
    /// `f32` bit patterns.
    F32(Vec<u32>),
    /// `int8` values.
    I8(Vec<i8>),
}

/// One input of a fixture and its expected outputs.
struct Sample {
    /// Each input.
    inputs: Vec<Elements>,
    /// Each expected output.
    outputs: Vec<Elements>,
}

/// A model's fixture, as the firmware gets it.
struct Fixture<'a> {
    name: &'a str,
    source: Source,
    /// The inputs run, each with its expected outputs.
    samples: Vec<Sample>,
    /// Multiply-accumulates of one inference.
    macs: u64,
}

/// The tensors under `key` of an onnxruntime fixture (decimal text of `f32` values), as bit patterns.
fn f32_bits(name: &str, fixture: &serde_json::Value, key: &str) -> Vec<Elements> {
    let tensors = fixture[key].as_array().unwrap_or_else(|| panic!("{name}: fixture has no {key}"));
    let tensor = |v: &serde_json::Value| {
        let data = v["data"].as_array().expect("fixture tensor has a data array");
        Elements::F32(data.iter().map(|x| (x.as_f64().expect("fixture data are numbers") as f32).to_bits()).collect())
    };
    tensors.iter().map(tensor).collect()
}

/// The first [`TFLITE_SAMPLES`] samples of a TFLM fixture (scripts/gen_tflite.py: `inputs` and
/// `outputs`, then `extra_samples`), whose tensors are int8.
fn tflm_samples(name: &str, fixture: &serde_json::Value) -> Vec<Sample> {
    let tensors = |v: &serde_json::Value| -> Vec<Elements> {
        let list = v.as_array().unwrap_or_else(|| panic!("{name}: tensors are a list"));
        let tensor = |t: &serde_json::Value| {
            assert_eq!(t["dtype"], "int8", "{name}: the firmware's TFLite models have int8 ports");
            let data = t["data"].as_array().expect("fixture tensor has a data array");
            let value = |x: &serde_json::Value| x.as_i64().and_then(|x| i8::try_from(x).ok()).expect("int8 values");
            Elements::I8(data.iter().map(value).collect())
        };
        list.iter().map(tensor).collect()
    };
    let first = Sample { inputs: tensors(&fixture["inputs"]), outputs: tensors(&fixture["outputs"]) };
    let extra = fixture["extra_samples"].as_array().unwrap_or_else(|| panic!("{name}: no extra_samples"));
    let extra = extra.iter().map(|s| Sample { inputs: tensors(&s["inputs"]), outputs: tensors(&s["outputs"]) });
    std::iter::once(first).chain(extra).take(TFLITE_SAMPLES).collect()
}

/// The model at `path` compiled as `model!` compiles it with default options, patch-based
/// execution on if `tile` (the firmware's `sram:` budget changes no step).
fn compile(path: &Path, tile: bool) -> planner_core::pipeline::Program {
    let mut request = planner_core::request::Request::new(path);
    // The target the firmware is built for, whose tiling default the binaries get.
    request.target = planner_core::target::Target::new(&std::env::var("TARGET").expect("cargo sets TARGET"));
    request.optimizations.tile = tile;
    let compiled =
        planner_core::compile::compile_model(&request).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
    compiled.into_program()
}

/// Multiply-accumulates of one inference of `program`: the sum over the steps of planner-core's
/// report (the `MACs` column of `sramfit inspect`).
fn macs(program: &planner_core::pipeline::Program) -> u64 {
    let target = planner_core::target::Target::host();
    let report = planner_core::report::PlanReport::from_program(program, "model", &target);
    report.steps.iter().map(|s| s.macs).sum()
}

/// A tensor as a Rust array type and literal.
fn array(e: &Elements) -> String {
    match e {
        Elements::F32(bits) => {
            let mut s = format!("[f32; {}] = [", bits.len());
            for b in bits {
                write!(s, "f32::from_bits({b:#010x}),").unwrap();
            }
            s + "];\n"
        }
        Elements::I8(values) => format!("[i8; {}] = {values:?};\n", values.len()),
    }
}

/// `TensorRef` / `TensorMut` variant and zero of a tensor's element type.
fn element_type(e: &Elements) -> (&'static str, &'static str, &'static str, usize) {
    match e {
        Elements::F32(v) => ("F32", "f32", "0.0", v.len()),
        Elements::I8(v) => ("I8", "i8", "0", v.len()),
    }
}

/// The fixture as Rust: `S{s}_INPUT_{i}` / `S{s}_EXPECTED_{i}` statics (flash), `SAMPLES`,
/// `COMPARISON`, `PRECISION`, `MACS`, and an `Outputs` struct with one zeroed buffer per output,
/// for the caller's stack.
fn reference_rs(f: &Fixture) -> String {
    let name = f.name;
    let (source, comparison, precision) = match f.source {
        Source::F32 => (format!("onnxruntime's (tests/models/{name}.ref.json)"), "Tolerance", "f32"),
        Source::Tflite { fixture, .. } => (format!("TFLM's ({fixture})"), "BitExact", "int8"),
    };
    let mut s = format!("// Inputs and expected outputs for {name}: {source}, written by build.rs.\n");
    let mut samples = Vec::new();
    for (k, sample) in f.samples.iter().enumerate() {
        let mut refs = |prefix: &str, tensors: &[Elements]| {
            let mut list = Vec::new();
            for (i, t) in tensors.iter().enumerate() {
                write!(s, "/// Sample {k}: {prefix} {i}.\npub static S{k}_{prefix}_{i}: {}", array(t)).unwrap();
                list.push(format!("sramfit::TensorRef::{}(&S{k}_{prefix}_{i})", element_type(t).0));
            }
            list.join(", ")
        };
        let inputs = refs("INPUT", &sample.inputs);
        let expected = refs("EXPECTED", &sample.outputs);
        samples.push(format!("sramfit_cortex_m::Sample {{ inputs: &[{inputs}], expected: &[{expected}] }}"));
    }
    write!(
        s,
        "/// The inputs run and their expected outputs.\npub static SAMPLES: [sramfit_cortex_m::Sample; {}] = [{}];\n",
        samples.len(),
        samples.join(", ")
    )
    .unwrap();
    write!(
        s,
        "/// How the outputs are compared with the expected ones.\npub const COMPARISON: sramfit_cortex_m::Comparison = sramfit_cortex_m::Comparison::{comparison};\n\
         /// The model's arithmetic.\npub const PRECISION: &str = {precision:?};\n\
         /// Multiply-accumulates of one inference (planner-core's report).\npub const MACS: u64 = {};\n",
        f.macs
    )
    .unwrap();
    let outputs: Vec<_> = f.samples[0].outputs.iter().map(element_type).collect();
    let fields: Vec<String> = outputs.iter().map(|(_, t, _, n)| format!("pub [{t}; {n}]")).collect();
    let zeros: Vec<String> = outputs.iter().map(|(_, _, z, n)| format!("[{z}; {n}]")).collect();
    let slices: Vec<String> =
        outputs.iter().enumerate().map(|(i, (v, ..))| format!("sramfit::TensorMut::{v}(&mut self.{i})")).collect();
    write!(
        s,
        "/// The output buffers the model writes.\npub struct Outputs({});\n\
         impl Outputs {{\n    /// Zeroed buffers.\n    pub const fn new() -> Self {{ Outputs({}) }}\n    \
         /// The buffers as the tensors `run_typed` takes.\n    pub fn slices(&mut self) -> [sramfit::TensorMut<'_>; {}] {{ [{}] }}\n}}\n",
        fields.join(", "),
        zeros.join(", "),
        outputs.len(),
        slices.join(", ")
    )
    .unwrap();
    s
}
