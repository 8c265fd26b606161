//! Records the triple this crate is compiled for: it runs inside the front ends (the proc macro,
//! `sramfit-build`, the CLI), all built for the machine that compiles, so this is the host triple
//! `target::Target::host` answers with (a model compiled without a `target` is compiled for it).
fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    println!("cargo:rustc-env=SRAMFIT_HOST_TRIPLE={target}");
    println!("cargo:rerun-if-changed=build.rs");
}
