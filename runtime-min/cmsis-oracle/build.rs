//! Compiles Arm's CMSIS-NN int8 kernels (pure-C paths: no `ARM_MATH_DSP` / `ARM_MATH_MVEI` on
//! the host) from `../shared/cmsis-nn` (or `$SRAMFIT_CMSIS_NN`) together with `shim.c`, and sets
//! `cfg(cmsis)`. When the sources are absent the crate builds without them and its tests print
//! that they are skipped. The sources are read in place, never copied into the repository.

use std::path::PathBuf;

/// Source folders of the kernels the tests call, and the support functions they use.
const FOLDERS: [&str; 6] = [
    "ConvolutionFunctions",
    "FullyConnectedFunctions",
    "BasicMathFunctions",
    "PoolingFunctions",
    "SoftmaxFunctions",
    "NNSupportFunctions",
];

fn cmsis_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("SRAMFIT_CMSIS_NN") {
        return PathBuf::from(dir);
    }
    // runtime-min/cmsis-oracle -> the workspace -> its sibling `shared`.
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    manifest.join("../../../shared/cmsis-nn")
}

/// The 8-bit integer sources of a folder (s8 / u8 kernels and the tables), no float ones.
fn sources(folder: &std::path::Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
        .unwrap_or_else(|e| panic!("reading {}: {e}", folder.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".c")
                && (name.contains("s8") || name.contains("u8") || name.contains("q7") || name == "arm_nntables.c")
                && !name.contains("f16")
                && !name.contains("f32")
                && !name.contains("lstm")
        })
        .collect();
    files.sort();
    files
}

fn main() {
    println!("cargo::rustc-check-cfg=cfg(cmsis)");
    println!("cargo::rerun-if-env-changed=SRAMFIT_CMSIS_NN");
    println!("cargo::rerun-if-changed=shim.c");
    let root = cmsis_root();
    let include = root.join("Include");
    if !include.join("arm_nnfunctions.h").exists() {
        println!(
            "cargo::warning=CMSIS-NN sources not found at {} (set SRAMFIT_CMSIS_NN): the CMSIS-NN oracle tests are skipped",
            root.display()
        );
        return;
    }
    println!("cargo::rerun-if-changed={}", root.display());
    let mut build = cc::Build::new();
    build.include(&include).file("shim.c").opt_level(1).warnings(false);
    for folder in FOLDERS {
        build.files(sources(&root.join("Source").join(folder)));
    }
    build.compile("cmsisnn_host");
    println!("cargo::rustc-cfg=cmsis");
}
