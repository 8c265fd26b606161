//! The build-script example: `build.rs` compiles the bundled keyword-spotting model with
//! `sramfit-build` into `$OUT_DIR/kws.rs`; this file includes it, runs the model once and compares
//! the scores with the output onnxruntime computed for the same input
//! (examples/models/kws.ref.json, made by scripts/gen_models.py).
//!
//! Run it with `cargo run --release -p sramfit-example-build-script`.

include!(concat!(env!("OUT_DIR"), "/kws.rs"));

/// Largest relative difference to onnxruntime accepted.
const TOLERANCE: f32 = 1e-4;

/// Runs the model on the fixture input; returns the scores and the largest relative difference to
/// the stored onnxruntime output.
fn run_reference() -> Result<([f32; 12], f32), Box<dyn std::error::Error>> {
    let reference: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../models/kws.ref.json"
    ))?)?;
    let floats = |v: &serde_json::Value| -> Vec<f32> {
        v["data"].as_array().into_iter().flatten().filter_map(|x| x.as_f64()).map(|x| x as f32).collect()
    };
    let input: [f32; 490] = floats(&reference["inputs"][0]).try_into().map_err(|_| "fixture input length")?;
    let expected = floats(&reference["outputs"][0]);
    if expected.len() != 12 {
        return Err(format!("fixture output has {} values, expected 12", expected.len()).into());
    }

    let mut scores = [0.0f32; 12];
    kws::run(&input, &mut scores)?;
    let worst = scores.iter().zip(&expected).map(|(a, b)| (a - b).abs() / b.abs().max(1e-6)).fold(0.0f32, f32::max);
    Ok((scores, worst))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("keyword spotting DS-CNN, compiled by build.rs (sramfit-build)");
    println!("  arena (ARENA_BYTES):              {:>8} bytes", kws::ARENA_BYTES);
    println!("  lower bound (LOWER_BOUND_BYTES):  {:>8} bytes", kws::LOWER_BOUND_BYTES);
    println!("  weights in flash (WEIGHT_BYTES):  {:>8} bytes", kws::WEIGHT_BYTES);
    let (scores, worst) = run_reference()?;
    println!("  scores: {scores:.4?}");
    println!("  largest relative difference to onnxruntime: {worst:.2e}");
    if worst > TOLERANCE {
        return Err("output differs from onnxruntime".into());
    }
    println!("  matches onnxruntime");
    Ok(())
}

/// The same model with a bounded dimension, with every rewrite and with two of them off.
#[cfg(test)]
#[allow(dead_code)] // the test uses a few of the modules' items
mod bounded {
    include!(concat!(env!("OUT_DIR"), "/strided.rs"));
    include!(concat!(env!("OUT_DIR"), "/strided_plain.rs"));

    #[test]
    fn rewrite_switches_keep_every_output_bit_at_every_length() {
        assert_eq!((strided::MIN_LEN, strided::MAX_LEN), (1, 40));
        for n in strided::MIN_LEN..=strided::MAX_LEN {
            let input: Vec<f32> =
                (0..strided::input_lens(n)[0]).map(|i| ((i * 7919) % 13) as f32 / 6.0 - 1.0).collect();
            let mut a = vec![f32::NAN; strided::output_lens(n)[0]];
            let mut b = vec![f32::NAN; strided_plain::output_lens(n)[0]];
            strided::run_dyn_in(&mut strided::Arena::new(), n, &[&input], &mut [&mut a]).unwrap();
            strided_plain::run_dyn_in(&mut strided_plain::Arena::new(), n, &[&input], &mut [&mut b]).unwrap();
            assert!(a.iter().all(|v| v.is_finite()), "length {n}: {a:?}");
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&a), bits(&b), "length {n}");
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn matches_onnxruntime() {
        let (scores, worst) = super::run_reference().unwrap();
        assert!(worst <= super::TOLERANCE, "scores {scores:?} differ from onnxruntime by {worst:e} (relative)");
    }

    #[test]
    fn module_contract() {
        assert_eq!(super::kws::INPUT_SHAPES.len(), 1);
        assert_eq!(super::kws::OUTPUT_SHAPES, &[&[1usize, 12][..]]);
        const { assert!(super::kws::LOWER_BOUND_BYTES <= super::kws::ARENA_BYTES) };
        const { assert!(super::kws::ARENA_BYTES <= 64 * 1024) };
    }
}
