//! Expansion snapshots: committed models compiled with the default `CodegenOptions` (no tracked
//! file, weights inline), formatted with prettyplease, and compared with
//! `tests/snapshots/<model>.expanded.rs`. Any change to code generation shows up here as a diff to
//! review; `SRAMFIT_BLESS=1 cargo test -p sramfit-planner-core --test expansion` accepts it.
//!
//! The weight blob's byte-string literal is replaced by `b"<N bytes, fnv1a64 HASH>"` in the
//! snapshot: the escaped bytes are unreadable in a diff, while the length and hash still catch any
//! change of the weight layout.
#![cfg(feature = "onnx")]

use std::path::{Path, PathBuf};

use proc_macro2::{Group, Literal, TokenStream, TokenTree};
use sramfit_planner_core::codegen::{self, CodegenOptions};
use sramfit_planner_core::compile;
use sramfit_planner_core::request::{PoolSpec, Request};
use sramfit_planner_core::target::Target;

/// Lines of context around each change in a mismatch report, and the most lines it shows.
const CONTEXT: usize = 3;
const MAX_REPORT_LINES: usize = 80;

#[test]
fn tiny_conv_relu() {
    check("tiny", "../ui-tests/models/tiny.onnx", &[]);
}

#[test]
fn branch_merge() {
    check("branch_merge", "../tests/models/branch_merge.onnx", &[]);
}

/// The same model in two pools, the second in a section: one static per pool, slices of each.
#[test]
fn branch_merge_in_pools() {
    let pools = [PoolSpec::parse("fast=9KiB").unwrap(), PoolSpec::parse("slow=1MiB@.psram").unwrap()];
    check("branch_merge_pools", "../tests/models/branch_merge.onnx", &pools);
}

/// The formatted expansion of `model` (relative to this crate, in `pools` when there are any)
/// with the weights replaced, for x86-64 whatever the host (the target decides the weights'
/// alignment).
fn expansion(model: &str, pools: &[PoolSpec]) -> String {
    let mut request = Request::new(Path::new(env!("CARGO_MANIFEST_DIR")).join(model));
    request.pools = pools.to_vec();
    request.target = Target::new("x86_64-unknown-linux-gnu");
    let program = compile::compile_model(&request).expect("the model compiles").into_program();
    let options = CodegenOptions::default();
    assert!(options.track_files.is_empty() && options.weights_file.is_none(), "machine-independent expansion");
    let items = codegen::emit(&program, &options);
    let weights = Literal::byte_string(&program.weights.bytes).to_string();
    let placeholder =
        format!("<{} bytes, fnv1a64 {:016x}>", program.weights.bytes.len(), fnv1a64(&program.weights.bytes));
    let mut replaced = 0;
    let items = replace_literal(items, &weights, &Literal::byte_string(placeholder.as_bytes()), &mut replaced);
    assert_eq!(replaced, 1, "the weight literal appears once in the expansion");
    let file: syn::File = syn::parse2(items).expect("the expansion parses as a file (inner #![doc] first)");
    prettyplease::unparse(&file)
}

/// Replaces every literal whose text is `old` by `new`, counting replacements.
fn replace_literal(ts: TokenStream, old: &str, new: &Literal, count: &mut usize) -> TokenStream {
    ts.into_iter()
        .map(|tt| match tt {
            TokenTree::Group(g) => {
                let mut out = Group::new(g.delimiter(), replace_literal(g.stream(), old, new, count));
                out.set_span(g.span());
                TokenTree::Group(out)
            }
            TokenTree::Literal(l) if l.to_string() == old => {
                *count += 1;
                TokenTree::Literal(new.clone())
            }
            other => other,
        })
        .collect()
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

fn check(name: &str, model: &str, pools: &[PoolSpec]) {
    let actual = expansion(model, pools);
    assert_eq!(actual, expansion(model, pools), "same model, same options => same expansion");
    let snapshot: PathBuf =
        [env!("CARGO_MANIFEST_DIR"), "tests", "snapshots", &format!("{name}.expanded.rs")].iter().collect();
    let bless = std::env::var_os("SRAMFIT_BLESS").is_some_and(|v| v == "1");
    let expected = std::fs::read_to_string(&snapshot).ok().map(|s| s.replace("\r\n", "\n"));
    if expected.as_deref() == Some(actual.as_str()) {
        return;
    }
    if bless {
        std::fs::write(&snapshot, &actual).expect("write the snapshot");
        eprintln!("blessed {}", snapshot.display());
        return;
    }
    let how = "if the change is intended, review the diff and rerun with SRAMFIT_BLESS=1 \
               (SRAMFIT_BLESS=1 cargo test -p sramfit-planner-core --test expansion), then commit the snapshot";
    match expected {
        None => panic!("missing snapshot {}: {how}", snapshot.display()),
        Some(expected) => panic!(
            "the expansion of {model} differs from {} (- snapshot, + now):\n{}\n{how}",
            snapshot.display(),
            diff(&expected, &actual)
        ),
    }
}

/// A unified-style line diff (`-` expected, `+` actual, hunks with a few lines of context),
/// truncated to the first [`MAX_REPORT_LINES`] lines.
fn diff(expected: &str, actual: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    // Longest common subsequence table, from the ends.
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    // The edit script: (tag, expected line number, line).
    let mut ops: Vec<(char, usize, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', i, a[i]));
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', i, a[i]));
            i += 1;
        } else {
            ops.push(('+', i, b[j]));
            j += 1;
        }
    }
    let changed: Vec<usize> = (0..ops.len()).filter(|&k| ops[k].0 != ' ').collect();
    let mut out = Vec::new();
    let mut shown_to = 0;
    for &k in &changed {
        let start = k.saturating_sub(CONTEXT).max(shown_to);
        let end = (k + CONTEXT + 1).min(ops.len());
        if start > shown_to || (shown_to == 0 && start == 0 && out.is_empty()) {
            out.push(format!("@@ snapshot line {} @@", ops[start].1 + 1));
        }
        for &(tag, _, line) in &ops[start..end.max(start)] {
            out.push(format!("{tag}{line}"));
        }
        shown_to = shown_to.max(end);
    }
    if out.len() > MAX_REPORT_LINES {
        let more = out.len() - MAX_REPORT_LINES;
        out.truncate(MAX_REPORT_LINES);
        out.push(format!("... ({more} more diff lines)"));
    }
    out.join("\n")
}

#[test]
fn diff_shows_changes_with_context() {
    let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
    let new = "a\nb\nc\nd\nE\nf\ng\nh\ni\nj\nk\n";
    let d = diff(old, new);
    assert!(d.starts_with("@@ snapshot line 2 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"), "{d}");
    assert!(d.contains("+k"), "{d}");
    assert_eq!(diff(old, old), "");
}
