//! The harness of the MicroFlow comparison (scripts/microflow_compare.py): each binary compiles
//! one MLPerf Tiny int8 `.tflite` file with MicroFlow's `#[model]` and calls [`main`] with its
//! `predict_quantized`, which runs every sample of the model's TensorFlow Lite Micro fixture
//! (`tests/models/tflite/mlperf/NAME.ref.json`, made by scripts/gen_tflite.py) and prints how
//! many output elements equal TFLM's.
//!
//! `--stack BYTES` runs the samples on a thread with that stack: MicroFlow keeps every tensor on
//! the stack, so the smallest stack that completes (found by the script, one process per try) is
//! its working memory.

use nalgebra::SMatrix;
use serde_json::Value;

/// An NHWC image of `rows x cols x CH` int8 values as MicroFlow's one-image 4-D buffer.
pub fn image<const R: usize, const C: usize, const CH: usize>(x: &[i8]) -> [SMatrix<[i8; CH], R, C>; 1] {
    [SMatrix::from_fn(|r, c| core::array::from_fn(|ch| x[(r * C + c) * CH + ch]))]
}

/// A row-major `R x C` int8 matrix as MicroFlow's 2-D buffer.
pub fn matrix<const R: usize, const C: usize>(x: &[i8]) -> SMatrix<i8, R, C> {
    SMatrix::from_fn(|r, c| x[r * C + c])
}

/// The row-major values of a MicroFlow 2-D output.
pub fn values<const R: usize, const C: usize>(y: &SMatrix<f32, R, C>) -> Vec<f32> {
    (0..R).flat_map(|r| (0..C).map(move |c| y[(r, c)])).collect()
}

/// The integers of one fixture tensor.
fn ints(t: &Value) -> Vec<i64> {
    t["data"].as_array().expect("tensor data").iter().map(|v| v.as_f64().expect("a number") as i64).collect()
}

/// Runs `predict` (int8 input, dequantized output) on every sample of fixture `name` and prints
/// `NAME: E of N output elements equal to TFLM's, max D steps, S samples`.
pub fn main(name: &str, predict: impl Fn(&[i8]) -> Vec<f32> + Send + 'static) {
    let stack = std::env::args().skip_while(|a| a != "--stack").nth(1).map(|s| s.parse::<usize>().expect("bytes"));
    let name = name.to_string();
    let run = move || evaluate(&name, &predict);
    match stack {
        Some(bytes) => std::thread::Builder::new().stack_size(bytes).spawn(run).expect("thread").join().expect("run"),
        None => run(),
    }
}

fn evaluate(name: &str, predict: &impl Fn(&[i8]) -> Vec<f32>) {
    let path = format!("{}/../../tests/models/tflite/mlperf/{name}.ref.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let fixture: Value = serde_json::from_str(&text).expect("fixture JSON");
    let mut samples = vec![(fixture["inputs"][0].clone(), fixture["outputs"][0].clone())];
    for s in fixture["extra_samples"].as_array().into_iter().flatten() {
        samples.push((s["inputs"][0].clone(), s["outputs"][0].clone()));
    }
    let (mut equal, mut elements, mut max_steps) = (0, 0, 0i64);
    for (input, output) in &samples {
        let x: Vec<i8> = ints(input).into_iter().map(|v| v as i8).collect();
        let (scale, zero_point) =
            (output["quant"]["scale"].as_f64().unwrap(), output["quant"]["zero_point"].as_i64().unwrap());
        let y = predict(&x);
        let want = ints(output);
        assert_eq!(y.len(), want.len(), "{name}: output length");
        for (&g, &w) in y.iter().zip(&want) {
            // MicroFlow dequantizes its int8 output: (q - zero_point) * scale, exactly invertible.
            let q = (g as f64 / scale).round() as i64 + zero_point;
            elements += 1;
            equal += usize::from(q == w);
            max_steps = max_steps.max((q - w).abs());
        }
    }
    println!(
        "{name}: {equal} of {elements} output elements equal to TFLM's, max {max_steps} steps, {} samples",
        samples.len()
    );
}
