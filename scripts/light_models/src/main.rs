//! `sramfit-light-models MODEL.onnx INPUT.bin [EXPECTED.bin]`: runs the compiled model (the one
//! `build.rs` compiled, which must be MODEL.onnx) on the raw little-endian f32 input, runs tract on
//! the same file and input, and prints one JSON line: arena, lower bound and weight bytes, the
//! largest relative difference of every output from tract's (and of output 0 from EXPECTED.bin,
//! the wheel's saved reference output), and both run times.

use std::time::Instant;

use tract_onnx::prelude::*;

include!(concat!(env!("OUT_DIR"), "/model.rs"));

fn read_f32(path: &str) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// max |got - want| / (|want| + 1e-7) over all elements: the worst relative error.
fn max_rel_diff(got: &[f32], want: &[f32]) -> f64 {
    assert_eq!(got.len(), want.len(), "output lengths differ");
    got.iter().zip(want).map(|(&g, &w)| (g as f64 - w as f64).abs() / (w.abs() as f64 + 1e-7)).fold(0.0, f64::max)
}

fn tract_run(path: &str, shape: &[usize], input: &[f32]) -> TractResult<Vec<Vec<f32>>> {
    let mut model = tract_onnx::onnx().model_for_path(path)?;
    model.set_input_fact(0, f32::fact(shape).into())?;
    let plan = model.into_optimized()?.into_runnable()?;
    let outputs = plan.run(tvec!(Tensor::from_shape(shape, input)?.into()))?;
    outputs.iter().map(|t| Ok(t.to_plain_array_view::<f32>()?.iter().copied().collect())).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, onnx, input, rest @ ..] = args.as_slice() else {
        panic!("usage: sramfit-light-models MODEL.onnx INPUT.bin [EXPECTED.bin]")
    };
    assert_eq!(model::INPUT_SHAPES.len(), 1, "the light models have one input");
    let input = read_f32(input);
    let mut outputs: Vec<Vec<f32>> = model::OUTPUT_SHAPES.iter().map(|s| vec![f32::NAN; s.iter().product()]).collect();
    let start = Instant::now();
    {
        let mut outs: Vec<&mut [f32]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
        model::run_dyn(&[&input], &mut outs).expect("run_dyn");
    }
    let run_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let want = tract_run(onnx, model::INPUT_SHAPES[0], &input).expect("tract");
    let tract_s = start.elapsed().as_secs_f64();
    let vs_tract: Vec<String> = outputs.iter().zip(&want).map(|(g, w)| format!("{:e}", max_rel_diff(g, w))).collect();
    let vs_saved =
        rest.first().map_or("null".to_string(), |p| format!("{:e}", max_rel_diff(&outputs[0], &read_f32(p))));
    println!(
        "{{\"arena\":{},\"lower_bound\":{},\"weights\":{},\"vs_tract\":[{}],\"vs_saved\":{},\"run_s\":{run_s:.3},\"tract_s\":{tract_s:.3},\"output0\":[{},{}]}}",
        model::ARENA_BYTES,
        model::LOWER_BOUND_BYTES,
        model::WEIGHT_BYTES,
        vs_tract.join(","),
        vs_saved,
        outputs[0].iter().copied().fold(f32::INFINITY, f32::min),
        outputs[0].iter().copied().fold(f32::NEG_INFINITY, f32::max),
    );
}
