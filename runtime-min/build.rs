//! Sets `cfg(arm_dsp)` on Arm targets with the DSP extension, where `arch/arm/` runs the int8
//! kernels on its instructions: every Armv7E-M target (`thumbv7em-*`: Cortex-M4, M7, whose
//! architecture includes the extension) and any Arm build that enables the `dsp` target feature
//! (`thumbv8m.main-*` with `-C target-feature=+dsp`, Cortex-M33). The target's name is read because
//! stable toolchains leave Arm target features out of `cfg(target_feature)`. Not with the crate's
//! `portable` feature, which keeps the portable kernels everywhere.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(arm_dsp)");
    println!("cargo::rerun-if-changed=build.rs");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let armv7em = var("TARGET").starts_with("thumbv7em");
    let dsp_feature = var("CARGO_CFG_TARGET_FEATURE").split(',').any(|f| f == "dsp");
    let portable = std::env::var_os("CARGO_FEATURE_PORTABLE").is_some();
    if var("CARGO_CFG_TARGET_ARCH") == "arm" && (armv7em || dsp_feature) && !portable {
        println!("cargo::rustc-cfg=arm_dsp");
    }
}
