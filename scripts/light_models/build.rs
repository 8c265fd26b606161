//! Compiles the model named by `SRAMFIT_LIGHT_MODEL` (an absolute path) into `$OUT_DIR/model.rs`.

fn main() {
    println!("cargo:rerun-if-env-changed=SRAMFIT_LIGHT_MODEL");
    let path = std::env::var("SRAMFIT_LIGHT_MODEL").expect("set SRAMFIT_LIGHT_MODEL to an .onnx path");
    sramfit_build::Model::new(path).module("model").write("model.rs").unwrap_or_else(|e| e.fail());
}
