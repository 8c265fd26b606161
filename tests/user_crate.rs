//! sramfit as a user gets it: a crate of its own outside this workspace, depending on `sramfit` by
//! path, one `sramfit::model!` of the keyword-spotting model, built with `cargo build --release`
//! and no flags at all (no `RUSTFLAGS`, no `.cargo/config.toml`). Its output must match the
//! onnxruntime fixture with the tolerance of `tests/models.rs`, and it must have run the best
//! kernel path this CPU supports (run-time detection, compared with `is_x86_feature_detected!`).
//!
//! Ignored by default: it builds the macro's host side (planner-core and tract) in release, which
//! takes minutes on a cold target directory. It builds in this test's own target directory, so
//! after `cargo build --release` of anything in the workspace that uses `model!` (the README's
//! `cargo run --release -p sramfit-example-kws`, the bench) only the user crate is compiled:
//!
//! ```sh
//! cargo test -p sramfit --test user_crate -- --ignored --nocapture
//! ```

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{assert_close, fixture, repo_path};

/// The bundled model the user crate compiles.
const MODEL: &str = "tests/models/kws_dscnn.onnx";

/// Writes the user crate into `dir`: a manifest depending only on `sramfit`, an empty build
/// script (weights embedded with `include_bytes!`, as the README recommends), and a `main` that
/// reads the input as little-endian `f32`s from stdin and prints the kernel path, then each output
/// value's bits.
fn write_user_crate(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = format!(
        "[package]\nname = \"sramfit-user-app\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
         [dependencies]\nsramfit = {{ path = {:?} }}\n\n\
         # Not part of any enclosing workspace.\n[workspace]\n",
        repo_path("").display().to_string()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    // The workspace's versions of every dependency, so that its release artifacts are reused.
    std::fs::copy(repo_path("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    std::fs::write(dir.join("build.rs"), "fn main() {}\n").unwrap();
    let main = format!(
        r#"use std::io::Read;

sramfit::model! {{
    mod kws {{
        path: {:?},
        sram: 64 KiB,
    }}
}}

fn main() {{
    let mut bytes = Vec::new();
    std::io::stdin().read_to_end(&mut bytes).unwrap();
    let input: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
    let mut output = vec![0.0f32; kws::OUTPUT_SHAPES[0].iter().product()];
    kws::run_dyn(&[&input], &mut [&mut output]).unwrap();
    println!("{{}}", sramfit::kernels::kernel_path().name());
    for v in output {{
        println!("{{}}", v.to_bits());
    }}
}}
"#,
        repo_path(MODEL).display().to_string()
    );
    std::fs::write(dir.join("src/main.rs"), main).unwrap();
}

/// The best kernel path of this CPU, by std's detection.
fn best_path() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        let fma = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
        if fma && is_x86_feature_detected!("avx512f") {
            return "avx512";
        }
        if fma {
            return "avx2+fma";
        }
    }
    "portable"
}

#[test]
#[ignore = "builds tract in release for the macro: minutes on a cold target directory (see the file's docs)"]
fn a_crate_built_without_flags_runs_the_best_kernels_and_matches_onnxruntime() {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let dir = tmp.join("user-crate");
    write_user_crate(&dir);
    // This test's target directory (`CARGO_TARGET_TMPDIR` is its `tmp/`): warm after a release
    // build of the workspace. A release build takes the `release/` lock, not the one of the
    // debug build running this test.
    let target_dir = tmp.parent().unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(&cargo);
    build.args(["build", "--release", "--quiet"]).current_dir(&dir).env("CARGO_TARGET_DIR", target_dir);
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS",
    ] {
        build.env_remove(var);
    }
    let start = std::time::Instant::now();
    let status = build.status().expect("cargo runs");
    assert!(status.success(), "the user crate builds");
    println!("user crate built in {:.1} s", start.elapsed().as_secs_f64());

    let fx = fixture(MODEL);
    let input: Vec<u8> = fx.inputs[0].data.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut child = Command::new(target_dir.join("release/sramfit-user-app"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the user binary starts");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), &input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the user binary runs");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let path = lines.next().expect("the kernel path");
    assert_eq!(path, best_path(), "the kernel path a crate built without flags runs");
    let got: Vec<f32> = lines.map(|l| f32::from_bits(l.parse().unwrap())).collect();
    assert_close("user crate vs onnxruntime", &got, &fx.outputs[0].data, 1e-4, 1e-5);
    println!("kernel path {path}; {} outputs match onnxruntime", got.len());
}
