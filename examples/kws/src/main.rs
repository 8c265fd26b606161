//! The main example: compile the bundled keyword-spotting model at build time, run it once, and
//! compare with the output onnxruntime computed for the same input (examples/models/kws.ref.json,
//! made by scripts/gen_models.py).
//!
//! Run it with `cargo run --release -p sramfit-example-kws`.

sramfit::model! {
    /// Keyword spotting DS-CNN (MLPerf Tiny architecture), 49x10 MFCC features in, 12 classes out.
    pub mod kws {
        path: "../models/kws.onnx",
        sram: 64 KiB,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("keyword spotting DS-CNN, planned at build time");
    println!("  arena (ARENA_BYTES):              {:>8} bytes", kws::ARENA_BYTES);
    println!("  lower bound (LOWER_BOUND_BYTES):  {:>8} bytes", kws::LOWER_BOUND_BYTES);
    println!("  without reuse (NAIVE_BYTES):      {:>8} bytes", kws::NAIVE_BYTES);
    println!("  weights in flash (WEIGHT_BYTES):  {:>8} bytes", kws::WEIGHT_BYTES);
    println!("  input {:?} -> output {:?}", kws::INPUT_SHAPES[0], kws::OUTPUT_SHAPES[0]);

    let reference: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../models/kws.ref.json"
    ))?)?;
    let floats = |v: &serde_json::Value| -> Vec<f32> {
        v["data"].as_array().into_iter().flatten().filter_map(|x| x.as_f64()).map(|x| x as f32).collect()
    };
    let input: [f32; 490] = floats(&reference["inputs"][0]).try_into().map_err(|_| "fixture input length")?;
    let expected = floats(&reference["outputs"][0]);

    let mut scores = [0.0f32; 12];
    kws::run(&input, &mut scores)?;

    let (class, p) = scores.iter().enumerate().fold((0, f32::MIN), |b, (i, &s)| if s > b.1 { (i, s) } else { b });
    let worst = scores.iter().zip(&expected).map(|(a, b)| (a - b).abs() / b.abs().max(1e-6)).fold(0.0f32, f32::max);
    println!("  scores: {scores:.4?}");
    println!("  predicted class {class} (p = {p:.4}); largest relative difference to onnxruntime: {worst:.2e}");
    if worst > 1e-4 {
        return Err("output differs from onnxruntime".into());
    }
    println!("  matches onnxruntime");
    Ok(())
}
