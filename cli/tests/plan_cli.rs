//! Runs the built `sramfit` binary on small CSVs in a temporary directory.

use std::path::PathBuf;
use std::process::{Command, Output};

fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sramfit-cli-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run_plan(test: &str, csv: &str, extra: &[&str]) -> (Output, PathBuf) {
    let dir = temp_dir(test);
    let input = dir.join("in.csv");
    std::fs::write(&input, csv).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sramfit")).arg("plan").arg(&input).args(extra).output().unwrap();
    (out, dir)
}

fn assert_bad_input(test: &str, csv: &str, expected: &[&str]) {
    let (out, _) = run_plan(test, csv, &[]);
    assert_eq!(out.status.code(), Some(2), "{test}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.trim_end().lines().count(), 1, "{test}: one line: {stderr}");
    for e in expected {
        assert!(stderr.contains(e), "{test}: `{e}` not in {stderr}");
    }
    assert!(out.stdout.is_empty());
}

#[test]
fn plans_and_writes_offsets() {
    let csv = "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n";
    let (out, dir) = run_plan("ok", csv, &["--budget-steps", "1000", "--out", "offsets.csv"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.starts_with(r#"{"buffers":5,"arena_bytes":12,"lower_bound":12,"algorithm":""#), "{stdout}");
    assert!(stdout.contains(r#""optimal":true,"ms":"#), "{stdout}");
    assert_eq!(stdout.lines().count(), 1);
    // --out is relative to the working directory.
    let written = std::fs::read_to_string("offsets.csv").or_else(|_| std::fs::read_to_string(dir.join("offsets.csv")));
    let written = written.unwrap();
    let _ = std::fs::remove_file("offsets.csv");
    assert!(written.starts_with("id,offset\nb1,"), "{written}");
    assert_eq!(written.lines().count(), 6);
}

#[test]
fn alignment_column_is_honoured() {
    let csv = "id,lower,upper,size,alignment\na,0,2,3,1\nb,1,3,5,8\n";
    let out_path = temp_dir("align").join("o.csv");
    let (out, _) = run_plan("align", csv, &["--out", out_path.to_str().unwrap()]);
    assert!(out.status.success());
    let written = std::fs::read_to_string(out_path).unwrap();
    let b: u64 = written.lines().find(|l| l.starts_with("b,")).unwrap()[2..].parse().unwrap();
    assert_eq!(b % 8, 0);
}

#[test]
fn missing_column() {
    assert_bad_input("missing", "id,lower,upper\na,0,1\n", &["line 1", "size"]);
}

#[test]
fn negative_size() {
    assert_bad_input("negative", "id,lower,upper,size\na,0,1,4\nb,0,2,-4\n", &["line 3", "`b`", "negative"]);
}

#[test]
fn upper_not_after_lower() {
    assert_bad_input("upper", "id,lower,upper,size\na,3,3,4\n", &["line 2", "`a`", "upper"]);
}

#[test]
fn duplicate_id() {
    assert_bad_input("dup", "id,lower,upper,size\na,0,1,4\nb,0,1,4\na,1,2,4\n", &["line 4", "duplicate", "`a`"]);
}

#[test]
fn not_a_number() {
    assert_bad_input("nan", "id,lower,upper,size\na,0,x1,4\n", &["line 2", "upper", "x1"]);
}

#[test]
fn usage_errors() {
    let out = Command::new(env!("CARGO_BIN_EXE_sramfit")).arg("plan").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(env!("CARGO_BIN_EXE_sramfit")).args(["plan", "/nonexistent/x.csv"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
