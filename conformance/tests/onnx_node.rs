//! ONNX's single-operator backend tests, compiled by `build.rs` through sramfit's code generation
//! path and run here on the cases' own inputs.
//!
//! Each case ends as passed, failed (mismatch, wrong shape, run error, or not compiled), or skipped
//! (out of scope, or data absent). A case listed in `known-failures.tsv` may fail; it counts as
//! skipped, and the test fails if it passes, so the list stays current. Set
//! `SRAMFIT_CONFORMANCE_WRITE_KNOWN=1` to rewrite the list from the current results.

use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;

use sramfit::{DType, TensorMut, TensorRef};

/// A generated module's `run_typed`.
type RunTyped = fn(&[TensorRef<'_>], &mut [TensorMut<'_>]) -> Result<(), sramfit::Error>;

/// A tensor of a case's data set, embedded by the build script.
pub struct Tensor {
    /// Dimensions, as the `.pb` file gives them.
    pub shape: &'static [usize],
    /// Its element type.
    pub dtype: DType,
    /// Little-endian values.
    pub bytes: &'static [u8],
}

/// A tensor's values in their element type.
#[derive(Debug)]
enum Values {
    F32(Vec<f32>),
    I8(Vec<i8>),
    U8(Vec<u8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
}

impl Tensor {
    fn values(&self) -> Values {
        let b = self.bytes;
        match self.dtype {
            DType::F32 => {
                Values::F32(b.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
            }
            DType::I8 => Values::I8(b.iter().map(|&v| v as i8).collect()),
            DType::U8 => Values::U8(b.to_vec()),
            DType::I16 => Values::I16(b.chunks_exact(2).map(|b| i16::from_le_bytes([b[0], b[1]])).collect()),
            DType::I32 => {
                Values::I32(b.chunks_exact(4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
            }
        }
    }

    /// A buffer of this tensor's type and length, filled with [`UNWRITTEN`] (integers: its
    /// type's minimum would be a common value, so 0x5A bytes).
    fn unwritten(&self) -> Values {
        let n = self.shape.iter().product();
        match self.dtype {
            DType::F32 => Values::F32(vec![UNWRITTEN; n]),
            DType::I8 => Values::I8(vec![0x5A; n]),
            DType::U8 => Values::U8(vec![0x5A; n]),
            DType::I16 => Values::I16(vec![0x5A5A; n]),
            DType::I32 => Values::I32(vec![0x5A5A_5A5A; n]),
        }
    }
}

impl Values {
    fn as_ref(&self) -> TensorRef<'_> {
        match self {
            Values::F32(v) => TensorRef::F32(v),
            Values::I8(v) => TensorRef::I8(v),
            Values::U8(v) => TensorRef::U8(v),
            Values::I16(v) => TensorRef::I16(v),
            Values::I32(v) => TensorRef::I32(v),
        }
    }

    fn as_mut(&mut self) -> TensorMut<'_> {
        match self {
            Values::F32(v) => TensorMut::F32(v),
            Values::I8(v) => TensorMut::I8(v),
            Values::U8(v) => TensorMut::U8(v),
            Values::I16(v) => TensorMut::I16(v),
            Values::I32(v) => TensorMut::I32(v),
        }
    }

    /// The values as `i64` (integer types), for exact comparison.
    fn ints(&self) -> Option<Vec<i64>> {
        Some(match self {
            Values::F32(_) => return None,
            Values::I8(v) => v.iter().map(|&x| x.into()).collect(),
            Values::U8(v) => v.iter().map(|&x| x.into()).collect(),
            Values::I16(v) => v.iter().map(|&x| x.into()).collect(),
            Values::I32(v) => v.iter().map(|&x| x.into()).collect(),
        })
    }
}

/// What the build did with a case.
pub enum Status {
    /// The case compiled to a module.
    Compiled {
        run: RunTyped,
        input_shapes: &'static [&'static [usize]],
        output_shapes: &'static [&'static [usize]],
        /// Run-time inputs (the others were baked into the model as constants).
        inputs: &'static [Tensor],
        /// Expected outputs.
        outputs: &'static [Tensor],
        /// Indices of the graph inputs baked as constants.
        baked: &'static [usize],
    },
    /// Import or compilation failed: the first line of the error.
    Unsupported(&'static str),
    /// Out of scope: why.
    Skipped(&'static str),
}

/// One case of the corpus.
pub struct Case {
    pub name: &'static str,
    pub op: &'static str,
    /// A quantized op, or integer data.
    pub integer: bool,
    pub status: Status,
}

include!(concat!(env!("OUT_DIR"), "/onnx_node.rs"));

const RTOL: f32 = 1e-4;
const ATOL: f32 = 1e-5;
/// What output buffers hold before a run, so that an element the model never writes is noticed.
const UNWRITTEN: f32 = -9.876_543e30;

enum Outcome {
    Passed,
    Failed(String),
    Skipped(String),
}

fn main() {
    if !DATA_PRESENT {
        println!("skipped: the ONNX node corpus is absent (looked in {DATA_DIR}); no case was run");
        println!("0 passed, 0 failed, 0 skipped");
        return;
    }
    let known_path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("known-failures.tsv");
    let known = read_known(&known_path);

    // Per op: passed, failed, known failures, skipped; and the same over the quantized and
    // integer cases.
    let mut per_op: BTreeMap<&str, [usize; 4]> = BTreeMap::new();
    let mut integer = [0; 4];
    let mut disagreements = Vec::new();
    let mut failures = Vec::new();
    for case in CASES {
        let outcome = match &case.status {
            Status::Compiled { run, input_shapes, output_shapes, inputs, outputs, .. } => {
                check(*run, input_shapes, output_shapes, inputs, outputs)
            }
            Status::Unsupported(e) => Outcome::Failed(format!("unsupported: {e}")),
            Status::Skipped(why) => Outcome::Skipped((*why).to_string()),
        };
        let listed = known.get(case.name);
        let column = match (outcome, listed) {
            (Outcome::Passed, None) => 0,
            (Outcome::Passed, Some(reason)) => {
                println!("{}: PASSES, but known-failures.tsv lists it ({reason}): remove it", case.name);
                disagreements.push(case.name.to_string());
                0
            }
            (Outcome::Failed(why), None) => {
                println!("{}: FAILED: {why}", case.name);
                disagreements.push(case.name.to_string());
                failures.push((case.name, why));
                1
            }
            (Outcome::Failed(why), Some(reason)) => {
                println!("{}: known failure ({reason}): {why}", case.name);
                failures.push((case.name, why));
                2
            }
            (Outcome::Skipped(why), _) => {
                println!("{}: skipped: {why}", case.name);
                3
            }
        };
        per_op.entry(case.op).or_default()[column] += 1;
        if case.integer {
            integer[column] += 1;
        }
    }
    for stale in known.keys().filter(|k| !CASES.iter().any(|c| c.name == k.as_str())) {
        println!("{stale}: known-failures.tsv lists it, but the corpus has no such case: remove it");
        disagreements.push(stale.clone());
    }

    println!();
    println!("{:<22} {:>6} {:>6} {:>6} {:>7}", "op", "passed", "failed", "known", "skipped");
    let mut total = [0; 4];
    for (op, counts) in &per_op {
        let [p, f, k, s] = counts;
        println!("{op:<22} {p:>6} {f:>6} {k:>6} {s:>7}");
        total.iter_mut().zip(counts).for_each(|(t, c)| *t += c);
    }
    let [passed, failed, known_failed, skipped] = total;
    println!("{:<22} {passed:>6} {failed:>6} {known_failed:>6} {skipped:>7}", "total");
    let [ip, if_, ik, is] = integer;
    println!("{:<22} {ip:>6} {if_:>6} {ik:>6} {is:>7}", "of which integer");
    let share = |p: usize, n: usize| 100.0 * p as f64 / n.max(1) as f64;
    let in_scope = passed + failed + known_failed;
    println!(
        "in scope (cases of the target ops and element types): {passed} of {in_scope} pass ({:.1}%); known failures count as skipped below",
        share(passed, in_scope)
    );
    let int_scope = ip + if_ + ik;
    println!(
        "quantized and integer cases in scope: {ip} of {int_scope} pass ({:.1}%), {is} out of scope",
        share(ip, int_scope)
    );

    if std::env::var_os("SRAMFIT_CONFORMANCE_WRITE_KNOWN").is_some_and(|v| v == "1") {
        write_known(&known_path, &known, &failures);
        println!("rewrote {} with the {} failing cases", known_path.display(), failures.len());
        disagreements.clear();
    }
    println!("{passed} passed, {failed} failed, {} skipped", known_failed + skipped);
    if !disagreements.is_empty() {
        eprintln!(
            "error: {} case(s) disagree with known-failures.tsv: {}",
            disagreements.len(),
            disagreements.join(", ")
        );
        std::process::exit(1);
    }
}

/// Runs one compiled case and compares it with the expected outputs.
fn check(
    run: RunTyped,
    input_shapes: &[&[usize]],
    output_shapes: &[&[usize]],
    inputs: &[Tensor],
    expected: &[Tensor],
) -> Outcome {
    if input_shapes.len() != inputs.len() {
        return Outcome::Failed(format!("{} run-time inputs, the module takes {}", inputs.len(), input_shapes.len()));
    }
    if output_shapes.len() != expected.len() {
        return Outcome::Failed(format!("{} outputs, the module has {}", expected.len(), output_shapes.len()));
    }
    for (j, (got, want)) in output_shapes.iter().zip(expected).enumerate() {
        if *got != want.shape {
            return Outcome::Failed(format!("output {j} has shape {got:?}, expected {:?}", want.shape));
        }
    }
    let ins: Vec<Values> = inputs.iter().map(Tensor::values).collect();
    let mut outs: Vec<Values> = expected.iter().map(Tensor::unwritten).collect();
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        let ins: Vec<TensorRef> = ins.iter().map(Values::as_ref).collect();
        let mut outs: Vec<TensorMut> = outs.iter_mut().map(Values::as_mut).collect();
        run(&ins, &mut outs)
    }));
    match result {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Outcome::Failed(format!("run_typed returned {e:?}")),
        Err(p) => {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            return Outcome::Failed(format!("run_typed panicked: {}", msg.unwrap_or_default()));
        }
    }
    for (j, (got, want)) in outs.iter().zip(expected).enumerate() {
        let why = match (got, want.values()) {
            (Values::F32(got), Values::F32(want)) => compare(got, &want),
            (got, want) => compare_exact(got, &want),
        };
        if let Some(why) = why {
            return Outcome::Failed(format!("output {j}: {why}"));
        }
    }
    Outcome::Passed
}

/// `None` when two integer tensors of the same type are equal; else how many elements differ and
/// the first of them.
fn compare_exact(got: &Values, want: &Values) -> Option<String> {
    let (Some(g), Some(w)) = (got.ints(), want.ints()) else {
        return Some(format!("element types differ: got {got:?}, want {want:?}"));
    };
    if std::mem::discriminant(got) != std::mem::discriminant(want) {
        return Some(format!("element types differ: got {got:?}, want {want:?}"));
    }
    let bad: Vec<usize> = (0..w.len()).filter(|&i| g[i] != w[i]).collect();
    bad.first()
        .map(|&i| format!("{} of {} elements differ; first [{i}]: got {}, want {}", bad.len(), w.len(), g[i], w[i]))
}

/// `None` when every element is within `RTOL * |want| + ATOL` (NaN matches NaN); else the worst one.
fn compare(got: &[f32], want: &[f32]) -> Option<String> {
    let mut worst: Option<(usize, f32)> = None;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= RTOL * w.abs() + ATOL;
        if !ok {
            let ratio = (g - w).abs() / (RTOL * w.abs() + ATOL);
            let ratio = if ratio.is_nan() { f32::INFINITY } else { ratio };
            if worst.is_none_or(|(_, r)| ratio > r) {
                worst = Some((i, ratio));
            }
        }
    }
    let bad = got
        .iter()
        .zip(want)
        .filter(|(g, w)| !((g.is_nan() && w.is_nan()) || g == w || (*g - *w).abs() <= RTOL * w.abs() + ATOL))
        .count();
    worst.map(|(i, r)| {
        let g = if got[i] == UNWRITTEN { "never written".to_string() } else { got[i].to_string() };
        format!(
            "{bad} of {} elements differ; worst [{i}]: got {g}, want {} ({r:.3e}x the tolerance)",
            want.len(),
            want[i]
        )
    })
}

/// `case<TAB>reason` lines; `#` comments and blank lines are ignored.
fn read_known(path: &std::path::Path) -> BTreeMap<String, String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return BTreeMap::new();
    };
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (case, reason) = l.split_once('\t').unwrap_or((l, ""));
            (case.trim().to_string(), reason.trim().to_string())
        })
        .collect()
}

/// Rewrites the list with the current failures, keeping the reason already written for a case.
fn write_known(path: &std::path::Path, known: &BTreeMap<String, String>, failures: &[(&str, String)]) {
    let mut text = String::from(
        "# Cases of the ONNX node corpus that sramfit cannot pass yet: case<TAB>reason.\n\
         # Regenerate with SRAMFIT_CONFORMANCE_WRITE_KNOWN=1 cargo test -p sramfit-conformance\n\
         # (reasons already written here are kept).\n",
    );
    for (case, why) in failures {
        let reason = known.get(*case).cloned().unwrap_or_else(|| why.replace(['\t', '\n'], " "));
        text.push_str(&format!("{case}\t{reason}\n"));
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}
