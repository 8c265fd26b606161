//! Compiles the bundled keyword-spotting model into `$OUT_DIR/kws.rs` (and `kws.weights.bin`),
//! which `src/main.rs` includes: the build-script alternative to `sramfit::model!`. Its tests also
//! include a model with a bounded dimension, compiled twice: with every rewrite, and with
//! activation fusion and in-place execution switched off.
fn main() {
    sramfit_build::Model::new("../models/kws.onnx") // relative to this crate's Cargo.toml
        .sram(64 * 1024)
        .module("kws")
        .write("kws.rs")
        .unwrap_or_else(|e| e.fail());
    let strided = || {
        sramfit_build::Model::new("../../tests/models/dynamic/strided_conv.onnx")
            .input_dims("input", &["1", "8", "frames <= 40"])
    };
    strided().module("strided").write("strided.rs").unwrap_or_else(|e| e.fail());
    (strided().module("strided_plain").optimize("fuse_activations", false).optimize("in_place", false))
        .write("strided_plain.rs")
        .unwrap_or_else(|e| e.fail());
}
