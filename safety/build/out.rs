//! Writing generated modules into `OUT_DIR`.

use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use sramfit_planner_core::codegen::{self, CodegenOptions};
use sramfit_planner_core::pipeline::Program;

/// The build script's output folder.
pub struct Out {
    dir: PathBuf,
}

impl Out {
    /// `OUT_DIR`.
    pub fn new() -> Self {
        Out { dir: PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")) }
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The items of `program`'s module, in checked mode or not, weights in a file next to it.
    pub fn module_items(&self, name: &str, program: &Program, checked: bool) -> TokenStream {
        let weights = self.dir.join(format!("{name}.weights.bin"));
        std::fs::write(&weights, &program.weights.bytes).expect("write the weights");
        codegen::emit(program, &CodegenOptions { weights_file: Some(weights), checked, ..Default::default() })
    }

    /// Writes `file` into `OUT_DIR`.
    pub fn write(&self, file: &str, items: TokenStream) {
        std::fs::write(self.dir.join(file), items.to_string()).expect("write the generated file");
    }
}

/// A committed model of the workspace, by path relative to the workspace root.
pub fn workspace_file(rel: &str) -> PathBuf {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let path = manifest.parent().expect("safety/ lives in the workspace root").join(rel);
    println!("cargo:rerun-if-changed={}", path.display());
    path
}

/// The file name of `path`, without `.onnx`.
pub fn stem(path: &Path) -> String {
    path.file_stem().expect("a file").to_string_lossy().into_owned()
}
