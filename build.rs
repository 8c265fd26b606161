//! Gives the crate's tests an `OUT_DIR`: `model!` then writes weights there and embeds them with
//! `include_bytes!`, which compiles large models (ResNet-18's 47 MB) far faster than a literal.
//! Also sets a cfg for each set of test models that is not committed, for the tests that compile
//! them:
//! - `cfg(sramfit_mlperf_tiny)` when `../shared/mlperf-tiny/` (the MLPerf Tiny reference `.tflite`
//!   files, read in place, never copied) is beside the checkout;
//! - `cfg(sramfit_quant_big)` when `tests/models/quant/big/` holds the int8 ResNet-18
//!   (`python3 scripts/gen_quantized.py models resnet18 --big`, which `.ci/run` does: an 11.8 MB
//!   file made from the committed f32 model, with its onnxruntime fixture).

use std::path::Path;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    cfg_when_file("sramfit_mlperf_tiny", &root.join("../shared/mlperf-tiny"), "kws_ref_model.tflite");
    cfg_when_file("sramfit_quant_big", &root.join("tests/models/quant/big"), "resnet18_qdq_s8.ref.json");
}

/// Sets `cfg(name)` when `dir/file` exists, and reruns when `dir` changes.
fn cfg_when_file(name: &str, dir: &Path, file: &str) {
    println!("cargo::rustc-check-cfg=cfg({name})");
    println!("cargo::rerun-if-changed={}", dir.display());
    if dir.join(file).is_file() {
        println!("cargo::rustc-cfg={name}");
    }
}
