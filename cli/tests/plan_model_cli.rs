//! `sramfit plan MODEL.onnx`: writes the offline plan file beside the model, and `model!`'s
//! compile path (with `use_plan_file`) then uses it, or reports it stale when the model changes.
#![cfg(feature = "onnx")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use sramfit_planner_core::compile::compile_model;
use sramfit_planner_core::offline::{plan_path, sha256_hex, PlanSource};
use sramfit_planner_core::request::Request;

/// A copy of a fixture model in a fresh directory (plan files are written beside the model).
fn model_copy(name: &str, test: &str) -> PathBuf {
    copy_of(&format!("{name}.onnx"), test)
}

/// A copy of `tests/models/REL` in a fresh directory.
fn copy_of(rel: &str, test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sramfit-plan-model-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/models").join(rel);
    let to = dir.join(Path::new(rel).file_name().unwrap());
    std::fs::copy(from, &to).unwrap();
    to
}

fn plan(model: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sramfit")).arg("plan").arg(model).args(extra).output().unwrap()
}

fn compile(model: &Path) -> sramfit_planner_core::pipeline::Program {
    let mut request = Request::new(model);
    request.use_plan_file = true;
    compile_model(&request).unwrap().into_program()
}

#[test]
fn writes_a_plan_file_that_the_build_uses() {
    let model = model_copy("branch_merge", "used");
    let out = plan(&model, &["--algorithm", "naive"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("arena 41856 B") && stdout.contains("the build-time planner finds 24576 B"), "{stdout}");

    let file = plan_path(&model);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(json["model_sha256"], sha256_hex(&std::fs::read(&model).unwrap()));
    assert_eq!(json["algorithm"], "naive");
    assert_eq!(json["arena_bytes"], 41856);

    let program = compile(&model);
    assert_eq!(program.plan_source, PlanSource::File(file.clone()));
    assert_eq!(program.plan.arena_bytes, 41856);
    assert_eq!(program.plan.arena_bytes, program.naive_bytes());

    // The default (no --algorithm) writes the best plan, which the build then uses.
    assert!(plan(&model, &[]).status.success());
    let program = compile(&model);
    assert_eq!(program.plan_source, PlanSource::File(file));
    assert_eq!(program.plan.arena_bytes, 24576);
    assert!(program.plan.optimal);
}

#[test]
fn a_tflite_model_gets_a_plan_file_too() {
    let model = copy_of("tflite/keras/ds_cnn_int8.tflite", "tflite");
    let out = plan(&model, &["--algorithm", "naive"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let file = plan_path(&model);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(json["model_sha256"], sha256_hex(&std::fs::read(&model).unwrap()));
    let program = compile(&model);
    assert_eq!(program.plan_source, PlanSource::File(file));
    assert_eq!(Some(program.plan.arena_bytes), json["arena_bytes"].as_u64());
}

#[test]
fn a_changed_model_makes_the_plan_file_stale() {
    let model = model_copy("mlp", "stale");
    assert!(plan(&model, &["--algorithm", "naive", "--budget-steps", "0"]).status.success());
    // Same graph, different bytes: an empty field with an unused number (10) appended, which
    // protobuf decoders skip. The plan would still fit, but the file is keyed by the model's hash.
    let mut bytes = std::fs::read(&model).unwrap();
    bytes.extend_from_slice(&[0x52, 0x00]);
    std::fs::write(&model, bytes).unwrap();
    let program = compile(&model);
    match &program.plan_source {
        PlanSource::Stale { file, reason } => {
            assert_eq!(file, &plan_path(&model));
            assert!(reason.contains("model file changed"), "{reason}");
        }
        other => panic!("expected a stale plan file, got {other:?}"),
    }
    // Planned during the build instead of the file's naive plan, and the module docs say why.
    assert!(program.plan.arena_bytes < program.naive_bytes());
    let note = sramfit_planner_core::codegen::plan_source_note(&program);
    assert!(note.starts_with("Note: `mlp.plan.json` was ignored (the model file changed"), "{note}");
}

#[test]
fn bad_arguments_exit_with_code_2() {
    let model = model_copy("mlp", "args");
    for (args, expected) in [
        (&["--algorithm", "best"][..], "--algorithm: `best` is not one of naive, greedy_by_size"),
        (&["--budget-steps", "many"][..], "--budget-steps: `many` is not a number"),
        (&["--frobnicate"][..], "plan: unknown option `--frobnicate`"),
        (&["--input", "x"][..], "--input: `x` is not NAME=D,D,..."),
    ] {
        let out = plan(&model, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    let out = plan(Path::new("/nonexistent/model.onnx"), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr).unwrap().contains("model file not found"));
}
