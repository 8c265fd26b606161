//! Compiles the bundled keyword-spotting model into `$OUT_DIR/kws.rs` (and `kws.weights.bin`),
//! which `src/main.rs` includes: the build-script alternative to `sramfit::model!`.
fn main() {
    sramfit_build::Model::new("../models/kws.onnx") // relative to this crate's Cargo.toml
        .sram(64 * 1024)
        .module("kws")
        .write("kws.rs")
        .unwrap_or_else(|e| e.fail());
}
