//! Build script of the Cortex-M firmware:
//! - writes `memory.x` for the board selected by a cargo feature, and `board.rs` with the same sizes
//!   (so the linker's memory map and the `sram:` budget come from one table);
//! - turns each model's fixture into `NAME.ref.rs`: the input and the expected outputs as exact
//!   `f32` bit patterns, kept in flash, how to compare them, and the model's multiply-accumulates.
//!   f32 models: onnxruntime's fixture (`tests/models/NAME.ref.json`), compared within a
//!   tolerance. int8 models: the host's outputs of the same generated code (`expected/NAME.json`,
//!   written and kept current by the root crate's `tests/quant_models.rs`), compared bit for bit;
//!   onnxruntime's own are up to 2 quantization steps away (requantization in float, its softmax);
//! - counts each model's MACs with planner-core's report (what `sramfit inspect` prints);
//! - gives the crate an `OUT_DIR`, where `sramfit::model!` writes the weights it embeds.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

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
];

/// How a model's outputs are checked, which decides where its fixture is.
#[derive(Clone, Copy, PartialEq)]
enum Precision {
    /// `tests/models/NAME.onnx`, against onnxruntime within the harness's tolerance.
    F32,
    /// `tests/models/quant/NAME.onnx` (int8 QDQ with float ports), bit for bit against the host.
    Int8,
}

/// The bundled models some binary of this crate runs (their fixtures become `NAME.ref.rs`).
const MODELS: &[(&str, Precision)] = &[
    ("kws_dscnn", Precision::F32),
    ("resnet8", Precision::F32),
    ("mobilenetv2_block", Precision::F32),
    ("mlp", Precision::F32),
    ("branch_merge", Precision::F32),
    ("kws_dscnn_qdq_s8", Precision::Int8),
    ("vww_mobilenetv1_qdq_s8", Precision::Int8),
    ("resnet8_qdq_s8", Precision::Int8),
    ("fc_autoencoder_qdq_s8", Precision::Int8),
];

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
    for &(name, precision) in MODELS {
        let (onnx, json) = match precision {
            Precision::F32 => {
                (format!("../../tests/models/{name}.onnx"), format!("../../tests/models/{name}.ref.json"))
            }
            Precision::Int8 => (format!("../../tests/models/quant/{name}.onnx"), format!("expected/{name}.json")),
        };
        let (onnx, json) = (manifest.join(onnx), manifest.join(json));
        println!("cargo:rerun-if-changed={}", json.display());
        println!("cargo:rerun-if-changed={}", onnx.display());
        let text = std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{}: {e}", json.display()));
        let fixture: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", json.display()));
        let (inputs, outputs) = match precision {
            Precision::F32 => (f32_bits(name, &fixture, "inputs"), f32_bits(name, &fixture, "outputs")),
            Precision::Int8 => (bit_patterns(name, &fixture, "inputs"), bit_patterns(name, &fixture, "outputs")),
        };
        let fixture = Fixture { name, precision, inputs, outputs, macs: macs(&onnx) };
        write(&out.join(format!("{name}.ref.rs")), &reference_rs(&fixture));
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

/// A model's fixture, as the firmware gets it.
struct Fixture<'a> {
    name: &'a str,
    precision: Precision,
    /// Each input's `f32` bit patterns.
    inputs: Vec<Vec<u32>>,
    /// Each expected output's `f32` bit patterns.
    outputs: Vec<Vec<u32>>,
    /// Multiply-accumulates of one inference.
    macs: u64,
}

/// The tensors under `key` of an onnxruntime fixture (decimal text of `f32` values), as bit patterns.
fn f32_bits(name: &str, fixture: &serde_json::Value, key: &str) -> Vec<Vec<u32>> {
    let tensors = fixture[key].as_array().unwrap_or_else(|| panic!("{name}: fixture has no {key}"));
    let tensor = |v: &serde_json::Value| -> Vec<u32> {
        let data = v["data"].as_array().expect("fixture tensor has a data array");
        data.iter().map(|x| (x.as_f64().expect("fixture data are numbers") as f32).to_bits()).collect()
    };
    tensors.iter().map(tensor).collect()
}

/// The tensors under `key` of an `expected/NAME.json` file: arrays of `f32` bit patterns.
fn bit_patterns(name: &str, fixture: &serde_json::Value, key: &str) -> Vec<Vec<u32>> {
    let tensors = fixture[key].as_array().unwrap_or_else(|| panic!("{name}: no {key}"));
    let word = |x: &serde_json::Value| x.as_u64().and_then(|b| u32::try_from(b).ok()).expect("f32 bit patterns");
    tensors.iter().map(|t| t.as_array().expect("arrays of bit patterns").iter().map(word).collect()).collect()
}

/// Multiply-accumulates of one inference of the model at `onnx`: the sum over the steps of
/// planner-core's report (the `MACs` column of `sramfit inspect`).
fn macs(onnx: &Path) -> u64 {
    let request = planner_core::request::Request::new(onnx);
    let compiled =
        planner_core::compile::compile_model(&request).unwrap_or_else(|e| panic!("{}: {e:?}", onnx.display()));
    let target = planner_core::target::Target::host();
    let report = planner_core::report::PlanReport::from_program(compiled.program(), "model", &target);
    report.steps.iter().map(|s| s.macs).sum()
}

fn array(bits: &[u32]) -> String {
    let mut s = format!("[f32; {}] = [", bits.len());
    for b in bits {
        write!(s, "f32::from_bits({b:#010x}),").unwrap();
    }
    s + "];\n"
}

/// The fixture as Rust: `INPUT_i` / `EXPECTED_i` statics (flash), `INPUTS`, `EXPECTED`,
/// `COMPARISON`, `PRECISION`, `MACS`, and an `Outputs` struct with one zeroed buffer per output,
/// for the caller's stack.
fn reference_rs(f: &Fixture) -> String {
    let name = f.name;
    let (source, comparison, precision) = match f.precision {
        Precision::F32 => (format!("onnxruntime's (tests/models/{name}.ref.json)"), "Tolerance", "f32"),
        Precision::Int8 => (format!("the host build's (examples/cortex-m/expected/{name}.json)"), "BitExact", "int8"),
    };
    let mut s = format!("// Inputs and expected outputs for {name}: {source}, written by build.rs.\n");
    for (i, v) in f.inputs.iter().enumerate() {
        write!(s, "/// Input {i}.\npub static INPUT_{i}: {}", array(v)).unwrap();
    }
    for (i, v) in f.outputs.iter().enumerate() {
        write!(s, "/// Expected output {i}.\npub static EXPECTED_{i}: {}", array(v)).unwrap();
    }
    let refs = |prefix: &str, n: usize| (0..n).map(|i| format!("&{prefix}_{i}")).collect::<Vec<_>>().join(", ");
    let (n_in, n_out) = (f.inputs.len(), f.outputs.len());
    write!(s, "/// All inputs, in graph order.\npub static INPUTS: [&[f32]; {n_in}] = [{}];\n", refs("INPUT", n_in))
        .unwrap();
    write!(
        s,
        "/// All expected outputs, in graph order.\npub static EXPECTED: [&[f32]; {n_out}] = [{}];\n",
        refs("EXPECTED", n_out)
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
    let fields: Vec<String> = f.outputs.iter().map(|o| format!("pub [f32; {}]", o.len())).collect();
    let zeros: Vec<String> = f.outputs.iter().map(|o| format!("[0.0; {}]", o.len())).collect();
    let slices: Vec<String> = (0..n_out).map(|i| format!("&mut self.{i}")).collect();
    write!(
        s,
        "/// The output buffers the model writes.\npub struct Outputs({});\n\
         impl Outputs {{\n    /// Zeroed buffers.\n    pub const fn new() -> Self {{ Outputs({}) }}\n    \
         /// The buffers as the slices `run_dyn` takes.\n    pub fn slices(&mut self) -> [&mut [f32]; {n_out}] {{ [{}] }}\n}}\n",
        fields.join(", "),
        zeros.join(", "),
        slices.join(", ")
    )
    .unwrap();
    s
}
