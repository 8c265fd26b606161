//! The target a model is compiled for: the triple, and the family of cores it names, from which
//! the plan's scratch and stack figures follow (not from the machine that runs the compiler).
//!
//! `model!` defaults to the triple rustc compiles the user's crate for ([`Target::from_rustc_args`]:
//! `--target` on rustc's command line when cross-compiling, else the host); `sramfit-build` to the
//! `TARGET` variable cargo gives build scripts; the CLI to the host ([`Target::host`]).

use serde::{Deserialize, Serialize};

/// The family of cores a triple names: what kernel facts (scratch, stack, SIMD) depend on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Family {
    /// Arm Cortex-M (`thumbv6m`, `thumbv7m`, `thumbv7em`, `thumbv8m.*`).
    CortexM {
        /// A hardware floating-point unit (`eabihf`).
        fpu: bool,
    },
    /// Other 32-bit Arm (`arm*`, `armv7*`, `thumbv7a`...).
    Arm32,
    /// 64-bit Arm (`aarch64`).
    Aarch64,
    /// x86-64.
    X86_64,
    /// RISC-V (`riscv32*`, `riscv64*`).
    RiscV,
    /// Xtensa (ESP32).
    Xtensa,
    /// Anything else (WebAssembly, 32-bit x86, ...).
    Other,
}

/// A compilation target: the triple as written and its [`Family`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    /// The target triple, e.g. `thumbv7em-none-eabihf` (or a custom target's name).
    pub triple: String,
    /// The family parsed from it.
    pub family: Family,
}

impl Target {
    /// The target named by `triple` (any string: an unknown one is [`Family::Other`]).
    pub fn new(triple: &str) -> Target {
        let triple = triple.trim().to_owned();
        let arch = triple.split('-').next().unwrap_or_default();
        let family = if arch.starts_with("thumbv6m")
            || arch.starts_with("thumbv7m")
            || arch.starts_with("thumbv7em")
            || arch.starts_with("thumbv8m")
        {
            Family::CortexM { fpu: triple.ends_with("eabihf") }
        } else if arch.starts_with("aarch64") || arch.starts_with("arm64") {
            Family::Aarch64
        } else if arch.starts_with("arm") || arch.starts_with("thumb") {
            Family::Arm32
        } else if arch == "x86_64" {
            Family::X86_64
        } else if arch.starts_with("riscv") {
            Family::RiscV
        } else if arch.starts_with("xtensa") {
            Family::Xtensa
        } else {
            Family::Other
        };
        Target { triple, family }
    }

    /// The kernels a build for this target runs, which decide the stack figures
    /// (`runtime-min`'s facts): every x86-64 kernel path there, the portable kernels elsewhere.
    pub fn kernels(&self) -> crate::ops::Target {
        let arch = self.triple.split('-').next().unwrap_or_default();
        let wide = arch.contains("64");
        match self.family {
            Family::X86_64 => crate::ops::Target::X86_64,
            _ => crate::ops::Target::Portable { pointer_bytes: if wide { 8 } else { 4 } },
        }
    }

    /// Whether a build for this target spends time to save arena bytes without being asked
    /// ([`crate::optimize::tile`]'s default): every target but the 64-bit application processors
    /// (x86-64, AArch64), whose caches hold a model's activations many times over and whose memory
    /// is counted in gigabytes. There, patch-based execution made VWW 1.25-1.27x and MNIST
    /// 1.13-1.16x slower for arenas 3x smaller (same-process A/B, x86-64 with AVX-512), so it runs
    /// only where an `sram` budget or pools need it, or where the user asks (`optimize: { tile:
    /// true }`).
    pub fn memory_first(&self) -> bool {
        !matches!(self.family, Family::X86_64 | Family::Aarch64)
    }

    /// The machine the compiler runs on (the triple this crate was built for).
    pub fn host() -> Target {
        Target::new(env!("SRAMFIT_HOST_TRIPLE"))
    }

    /// The target of a rustc command line: the value of `--target T` / `--target=T` (a path to a
    /// custom target's JSON file counts by its file stem), or the host without one. A proc macro
    /// runs inside rustc, so `Target::from_rustc_args(std::env::args())` is the triple the user's
    /// crate is being compiled for.
    pub fn from_rustc_args(args: impl IntoIterator<Item = String>) -> Target {
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let value = match arg.strip_prefix("--target=") {
                Some(v) => Some(v.to_owned()),
                None if arg == "--target" => args.next(),
                None => None,
            };
            if let Some(v) = value {
                let path = std::path::Path::new(&v);
                let name = match path.extension().is_some_and(|e| e == "json") {
                    true => path.file_stem().map_or(v.clone(), |s| s.to_string_lossy().into_owned()),
                    false => v,
                };
                return Target::new(&name);
            }
        }
        Target::host()
    }
}

impl Default for Target {
    fn default() -> Self {
        Target::host()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn families_of_triples() {
        assert_eq!(Target::new("thumbv7em-none-eabihf").family, Family::CortexM { fpu: true });
        assert_eq!(Target::new("thumbv7m-none-eabi").family, Family::CortexM { fpu: false });
        assert_eq!(Target::new("thumbv6m-none-eabi").family, Family::CortexM { fpu: false });
        assert_eq!(Target::new("thumbv8m.main-none-eabihf").family, Family::CortexM { fpu: true });
        assert_eq!(Target::new("armv7-unknown-linux-gnueabihf").family, Family::Arm32);
        assert_eq!(Target::new("aarch64-apple-darwin").family, Family::Aarch64);
        assert_eq!(Target::new("x86_64-unknown-linux-gnu").family, Family::X86_64);
        assert_eq!(Target::new("riscv32imac-unknown-none-elf").family, Family::RiscV);
        assert_eq!(Target::new("xtensa-esp32-none-elf").family, Family::Xtensa);
        assert_eq!(Target::new("wasm32-unknown-unknown").family, Family::Other);
    }

    #[test]
    fn microcontrollers_are_memory_first_and_application_processors_are_not() {
        for memory in
            ["thumbv6m-none-eabi", "thumbv7em-none-eabihf", "riscv32imc-unknown-none-elf", "xtensa-esp32-none-elf"]
        {
            assert!(Target::new(memory).memory_first(), "{memory}");
        }
        for speed in ["x86_64-unknown-linux-gnu", "aarch64-apple-darwin", "aarch64-unknown-linux-gnu"] {
            assert!(!Target::new(speed).memory_first(), "{speed}");
        }
    }

    #[test]
    fn kernel_targets_follow_the_family_and_pointer_width() {
        use crate::ops::Target as K;
        assert_eq!(Target::new("thumbv7em-none-eabihf").kernels(), K::Portable { pointer_bytes: 4 });
        assert_eq!(Target::new("riscv32imc-unknown-none-elf").kernels(), K::Portable { pointer_bytes: 4 });
        assert_eq!(Target::new("aarch64-apple-darwin").kernels(), K::Portable { pointer_bytes: 8 });
        assert_eq!(Target::new("riscv64gc-unknown-linux-gnu").kernels(), K::Portable { pointer_bytes: 8 });
        assert_eq!(Target::new("x86_64-unknown-linux-gnu").kernels(), K::X86_64);
    }

    #[test]
    fn rustc_command_lines() {
        let cross = Target::from_rustc_args(args("rustc --crate-name app --target thumbv7em-none-eabihf src/main.rs"));
        assert_eq!(cross.triple, "thumbv7em-none-eabihf");
        let joined = Target::from_rustc_args(args("rustc --target=riscv32imc-unknown-none-elf"));
        assert_eq!(joined.family, Family::RiscV);
        let custom = Target::from_rustc_args(args("rustc --target /boards/thumbv7em-custom.json"));
        assert_eq!(custom.triple, "thumbv7em-custom");
        assert_eq!(Target::from_rustc_args(args("rustc --edition 2021 src/lib.rs")), Target::host());
    }

    #[test]
    fn host_is_the_machine_running_the_tests() {
        // planner-core is built for the machine that runs its tests.
        let expected = match std::env::consts::ARCH {
            "x86_64" => Family::X86_64,
            "aarch64" => Family::Aarch64,
            "riscv64" => Family::RiscV,
            _ => return,
        };
        assert_eq!(Target::host().family, expected, "{}", Target::host().triple);
    }
}
