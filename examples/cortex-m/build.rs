//! Build script of the Cortex-M firmware:
//! - writes `memory.x` for the board selected by a cargo feature, and `board.rs` with the same sizes
//!   (so the linker's memory map and the `sram:` budget come from one table);
//! - turns each model's onnxruntime fixture (`tests/models/NAME.ref.json`) into `NAME.ref.rs`:
//!   the input and the expected outputs as exact `f32` bit patterns, kept in flash;
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

/// The bundled models some binary of this crate runs (their fixtures become `NAME.ref.rs`).
const MODELS: &[&str] = &["kws_dscnn", "resnet8", "mobilenetv2_block", "mlp", "branch_merge"];

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
    let models = Path::new(&manifest).join("../../tests/models");
    for name in MODELS {
        let json = models.join(format!("{name}.ref.json"));
        println!("cargo:rerun-if-changed={}", json.display());
        let text = std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{}: {e}", json.display()));
        let fixture: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", json.display()));
        write(&out.join(format!("{name}.ref.rs")), &reference_rs(name, &fixture));
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

/// `f32` values of one fixture tensor, as written by onnxruntime (decimal text of `f32` values).
fn tensor(v: &serde_json::Value) -> Vec<f32> {
    let data = v["data"].as_array().expect("fixture tensor has a data array");
    data.iter().map(|x| x.as_f64().expect("fixture data are numbers") as f32).collect()
}

fn array(values: &[f32]) -> String {
    let mut s = format!("[f32; {}] = [", values.len());
    for v in values {
        write!(s, "f32::from_bits({:#010x}),", v.to_bits()).unwrap();
    }
    s + "];\n"
}

/// The fixture as Rust: `INPUT_i` / `EXPECTED_i` statics (flash), `INPUTS`, `EXPECTED`, and an
/// `Outputs` struct with one zeroed buffer per output, for the caller's stack.
fn reference_rs(name: &str, fixture: &serde_json::Value) -> String {
    let list = |key: &str| -> Vec<Vec<f32>> {
        fixture[key].as_array().unwrap_or_else(|| panic!("{name}: fixture has no {key}")).iter().map(tensor).collect()
    };
    let (inputs, outputs) = (list("inputs"), list("outputs"));
    let mut s = format!(
        "// onnxruntime's inputs and outputs for {name} (tests/models/{name}.ref.json), written by build.rs.\n"
    );
    for (i, v) in inputs.iter().enumerate() {
        write!(s, "/// Input {i}.\npub static INPUT_{i}: {}", array(v)).unwrap();
    }
    for (i, v) in outputs.iter().enumerate() {
        write!(s, "/// Expected output {i} (onnxruntime).\npub static EXPECTED_{i}: {}", array(v)).unwrap();
    }
    let refs = |prefix: &str, n: usize| (0..n).map(|i| format!("&{prefix}_{i}")).collect::<Vec<_>>().join(", ");
    let (n_in, n_out) = (inputs.len(), outputs.len());
    write!(s, "/// All inputs, in graph order.\npub static INPUTS: [&[f32]; {n_in}] = [{}];\n", refs("INPUT", n_in))
        .unwrap();
    write!(
        s,
        "/// All expected outputs, in graph order.\npub static EXPECTED: [&[f32]; {n_out}] = [{}];\n",
        refs("EXPECTED", n_out)
    )
    .unwrap();
    let fields: Vec<String> = outputs.iter().map(|o| format!("pub [f32; {}]", o.len())).collect();
    let zeros: Vec<String> = outputs.iter().map(|o| format!("[0.0; {}]", o.len())).collect();
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
