//! Compiles Arm's CMSIS-NN int8 kernels from `../shared/cmsis-nn` (or `$SRAMFIT_CMSIS_NN`)
//! together with `shim.c`, and sets `cfg(cmsis)`. When the sources are absent the crate builds
//! without them and its tests print that they are skipped. The sources are read in place, never
//! copied into the repository.
//!
//! For the host: the pure-C paths (no `ARM_MATH_DSP` / `ARM_MATH_MVEI`), at `-O1`. For a bare-metal
//! Arm target (`*-none-eabi*`): with `arm-none-eabi-gcc` (the `cc` crate's default for those
//! targets), `-mcpu=` the core (feature `cortex-m7`, or the target's base core: [`default_cpu`]) and
//! [`ARM_CFLAGS`], so that CMSIS-NN selects its DSP paths from the compiler's predefined macros
//! exactly as in an Arm build.

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

/// Flags of a Cortex-M build besides `-mcpu` and the float ABI, the same for every core:
/// `-Ofast`, the optimisation level CMSIS-NN's own build uses by default
/// (`CMSIS_OPTIMIZATION_LEVEL`; "Compiler Options" of the upstream README), Thumb code, and one
/// section per function so the linker drops the kernels a network does not call.
const ARM_CFLAGS: [&str; 4] = ["-Ofast", "-mthumb", "-ffunction-sections", "-fdata-sections"];

/// The core CMSIS-NN is compiled for without feature `cortex-m7`: the base core of the target's
/// architecture.
fn default_cpu(target: &str) -> &'static str {
    match target.split('-').next().unwrap_or("") {
        "thumbv6m" => "cortex-m0plus",
        "thumbv7m" => "cortex-m3",
        "thumbv8m.base" => "cortex-m23",
        "thumbv8m.main" => "cortex-m33",
        _ => "cortex-m4",
    }
}

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
    build.include(&include).file("shim.c").warnings(false);
    let target = std::env::var("TARGET").expect("set by cargo");
    if target.contains("-none-eabi") {
        let m7 = std::env::var_os("CARGO_FEATURE_CORTEX_M7").is_some();
        let cpu = if m7 { "cortex-m7" } else { default_cpu(&target) };
        // Without `cc`'s defaults for the target (its `-march` would override `-mcpu`'s tuning,
        // its `-O` the level below): exactly these flags.
        build.no_default_flags(true).flag(format!("-mcpu={cpu}"));
        for flag in ARM_CFLAGS {
            build.flag(flag);
        }
        if target.ends_with("eabihf") {
            build.flag("-mfloat-abi=hard");
        }
    } else {
        build.opt_level(1);
    }
    for folder in FOLDERS {
        build.files(sources(&root.join("Source").join(folder)));
    }
    build.compile("cmsisnn_host");
    println!("cargo::rustc-cfg=cmsis");
}
