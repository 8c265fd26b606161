//! Compiles ONNX's single-operator backend tests (`shared/conformance/onnx-node`, next to the
//! workspace) through sramfit's own path: decode -> bake constant inputs -> `import_proto` ->
//! `compile_graph` -> `codegen::emit`. The result is one Rust file in `OUT_DIR` holding a module per
//! compiled case and a table of every case, which `tests/onnx_node.rs` includes and runs.

#[path = "build/case.rs"]
mod case;
#[path = "build/emit.rs"]
mod emit;
#[path = "build/index.rs"]
mod index;

use std::path::PathBuf;

/// The generated file, relative to `OUT_DIR`.
const GENERATED: &str = "onnx_node.rs";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build");
    println!("cargo:rerun-if-env-changed=SRAMFIT_CONFORMANCE_DATA");
    println!("cargo:rerun-if-env-changed=SRAMFIT_CONFORMANCE_DUMP");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let data_dir = data_dir();
    let index_path = data_dir.join("INDEX.tsv");
    // A missing path makes cargo rerun the script on every build, so the table appears as soon as
    // the data does.
    println!("cargo:rerun-if-changed={}", index_path.display());

    let source = if index_path.is_file() {
        let rows = index::read(&index_path).unwrap_or_else(|e| panic!("{}: {e}", index_path.display()));
        let cases: Vec<case::Case> = rows.iter().map(|row| case::prepare(&data_dir, row)).collect();
        emit::file(&data_dir, &out_dir, &cases)
    } else {
        emit::absent(&data_dir)
    };
    std::fs::write(out_dir.join(GENERATED), source).expect("write the generated file");
}

/// `SRAMFIT_CONFORMANCE_DATA`, else `<workspace root>/../shared/conformance/onnx-node`.
fn data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SRAMFIT_CONFORMANCE_DATA") {
        return PathBuf::from(dir);
    }
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let workspace = manifest.parent().expect("conformance/ lives in the workspace root");
    workspace.join("..").join("shared").join("conformance").join("onnx-node")
}
