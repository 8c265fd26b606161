//! Gives the crate's tests an `OUT_DIR`: `model!` then writes weights there and embeds them with
//! `include_bytes!`, which compiles large models (ResNet-18's 47 MB) far faster than a literal.
//! Also sets `cfg(sramfit_mlperf_tiny)` when `../shared/mlperf-tiny/` (the MLPerf Tiny reference
//! `.tflite` files, read in place, never copied) is beside the checkout, for the tests that
//! compile them.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(sramfit_mlperf_tiny)");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/mlperf-tiny");
    println!("cargo::rerun-if-changed={}", dir.display());
    if dir.join("kws_ref_model.tflite").is_file() {
        println!("cargo::rustc-cfg=sramfit_mlperf_tiny");
    }
}
