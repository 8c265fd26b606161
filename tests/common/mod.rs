//! Shared helpers of the end-to-end tests: fixtures with onnxruntime outputs, tract as an
//! independent reference, and tolerant comparison.
#![allow(dead_code)]

pub mod quant;

use std::path::PathBuf;

use tract_onnx::prelude::*;

/// One tensor of a `.ref.json` fixture.
pub struct RefTensor {
    pub name: String,
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// A fixture: inputs and the outputs onnxruntime computed for them (scripts/gen_*.py).
pub struct Fixture {
    pub inputs: Vec<RefTensor>,
    pub outputs: Vec<RefTensor>,
}

pub fn repo_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn tensors(v: &serde_json::Value) -> Vec<RefTensor> {
    v.as_array()
        .expect("array of tensors")
        .iter()
        .map(|t| RefTensor {
            name: t["name"].as_str().unwrap().to_string(),
            shape: t["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap() as usize).collect(),
            data: t["data"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect(),
        })
        .collect()
}

/// The fixture beside an ONNX model: `<model without .onnx>.ref.json`.
pub fn fixture_of(model_rel: &str) -> String {
    model_rel.replace(".onnx", ".ref.json")
}

/// Loads `<model without .onnx>.ref.json`.
pub fn fixture(model_rel: &str) -> Fixture {
    let path = repo_path(&fixture_of(model_rel));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    Fixture { inputs: tensors(&v["inputs"]), outputs: tensors(&v["outputs"]) }
}

/// Runs the ONNX file with tract (optimized plan) on the given inputs.
pub fn tract_run(model_rel: &str, inputs: &[(Vec<usize>, Vec<f32>)]) -> Vec<Vec<f32>> {
    tract_outputs(model_rel, inputs).into_iter().map(|(_, data)| data).collect()
}

/// Runs the ONNX file with tract (optimized plan, input shapes fixed to the given ones): every
/// output's shape and values.
pub fn tract_outputs(model_rel: &str, inputs: &[(Vec<usize>, Vec<f32>)]) -> Vec<(Vec<usize>, Vec<f32>)> {
    let mut model = tract_onnx::onnx().model_for_path(repo_path(model_rel)).unwrap();
    for (i, (shape, _)) in inputs.iter().enumerate() {
        model.set_input_fact(i, f32::fact(shape).into()).unwrap();
    }
    let plan = model.into_optimized().unwrap().into_runnable().unwrap();
    let values: TVec<TValue> =
        inputs.iter().map(|(shape, data)| Tensor::from_shape(shape, data).unwrap().into()).collect();
    plan.run(values)
        .unwrap()
        .iter()
        .map(|t| (t.shape().to_vec(), t.to_plain_array_view::<f32>().unwrap().iter().copied().collect()))
        .collect()
}

/// Asserts `got` matches `want` element-wise within `rtol * |want| + atol`.
pub fn assert_close(what: &str, got: &[f32], want: &[f32], rtol: f32, atol: f32) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let mut worst = (0usize, 0f32);
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let err = (g - w).abs();
        let allowed = rtol * w.abs() + atol;
        assert!(err.is_finite() || (g.is_nan() && w.is_nan()) || g == w, "{what}[{i}]: got {g}, want {w}");
        if err > allowed && err / allowed > worst.1 {
            worst = (i, err / allowed);
        }
    }
    assert!(
        worst.1 == 0.0,
        "{what}[{}]: got {}, want {} (error {:.2}x the tolerance)",
        worst.0,
        got[worst.0],
        want[worst.0],
        worst.1
    );
}

/// Deterministic pseudo-random inputs (xorshift), uniform in [-1, 1).
pub fn random(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// A generated model's `run_dyn`.
pub type RunDyn = fn(&[&[f32]], &mut [&mut [f32]]) -> Result<(), sramfit::Error>;

/// Runs two builds `(a, b)` of one f32 model on the same random inputs and asserts that the
/// outputs are equal bit for bit (for rewrites that change where values are computed, never what).
pub fn same_bits(name: &str, (inputs, outputs): (&[&[usize]], &[&[usize]]), (a, b): (RunDyn, RunDyn)) {
    for seed in 1..=3u64 {
        let ins: Vec<Vec<f32>> =
            inputs.iter().enumerate().map(|(i, s)| random(s.iter().product(), seed * 13 + i as u64)).collect();
        let ins: Vec<&[f32]> = ins.iter().map(Vec::as_slice).collect();
        let run = |f: RunDyn| {
            let mut outs: Vec<Vec<f32>> = outputs.iter().map(|s| vec![f32::NAN; s.iter().product()]).collect();
            let mut refs: Vec<&mut [f32]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
            f(&ins, &mut refs).unwrap();
            outs.into_iter().map(|o| o.into_iter().map(f32::to_bits).collect::<Vec<u32>>()).collect::<Vec<_>>()
        };
        assert_eq!(run(a), run(b), "{name}: outputs differ (seed {seed})");
    }
}

/// Checks a compiled model against onnxruntime (fixture) and against tract on random inputs.
pub fn check_model(model_rel: &str, output_shapes: &[&[usize]], run: RunDyn) {
    let fx = fixture(model_rel);
    let run_with = |inputs: &[Vec<f32>]| -> Vec<Vec<f32>> {
        let mut outs: Vec<Vec<f32>> = output_shapes.iter().map(|s| vec![f32::NAN; s.iter().product()]).collect();
        let ins: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
        let mut outs_ref: Vec<&mut [f32]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
        run(&ins, &mut outs_ref).expect("run_dyn");
        outs
    };
    // onnxruntime, on the fixture's inputs.
    let got = run_with(&fx.inputs.iter().map(|t| t.data.clone()).collect::<Vec<_>>());
    for (o, want) in got.iter().zip(&fx.outputs) {
        assert_close(&format!("{model_rel} vs onnxruntime, output {}", want.name), o, &want.data, 1e-4, 1e-5);
    }
    // tract, on random inputs.
    for seed in 1..=2u64 {
        let inputs: Vec<(Vec<usize>, Vec<f32>)> = fx
            .inputs
            .iter()
            .enumerate()
            .map(|(i, t)| (t.shape.clone(), random(t.data.len(), seed * 31 + i as u64)))
            .collect();
        let want = tract_run(model_rel, &inputs);
        let got = run_with(&inputs.iter().map(|(_, d)| d.clone()).collect::<Vec<_>>());
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_close(&format!("{model_rel} vs tract (seed {seed}), output {k}"), g, w, 1e-4, 1e-5);
        }
    }
}

/// One `model!` per fixture, and a test checking it against onnxruntime and tract.
#[allow(unused_macros)] // used by models.rs and ops.rs, not by every test file that includes this module
macro_rules! fixtures {
    ($($name:ident => $path:literal),* $(,)?) => {
        $(
            mod $name {
                sramfit::model! { pub mod model { path: $path } }

                #[test]
                fn matches_onnxruntime_and_tract() {
                    crate::common::check_model($path, model::OUTPUT_SHAPES, model::run_dyn);
                }
            }
        )*
    };
}
#[allow(unused_imports)]
pub(crate) use fixtures;

/// Calls `$callback! { name => "path", ... }` with the twelve bundled whole models, then `$extra`
/// (more `name => "path"` entries), so that every test over "all bundled models" uses one list.
#[allow(unused_macros)] // used by models.rs and rewrites.rs
macro_rules! bundled_models {
    ($callback:path $(, $($extra:tt)*)?) => {
        $callback! {
            branch_merge => "tests/models/branch_merge.onnx",
            concat_branches => "tests/models/concat_branches.onnx",
            fc_autoencoder => "tests/models/fc_autoencoder.onnx",
            kws_dscnn => "tests/models/kws_dscnn.onnx",
            lenet => "tests/models/lenet.onnx",
            mlp => "tests/models/mlp.onnx",
            mnist_cnn => "tests/models/mnist_cnn.onnx",
            mobilenetv2_block => "tests/models/mobilenetv2_block.onnx",
            reshape_views => "tests/models/reshape_views.onnx",
            resnet8 => "tests/models/resnet8.onnx",
            two_inputs_two_outputs => "tests/models/two_inputs_two_outputs.onnx",
            vww_mobilenetv1 => "tests/models/vww_mobilenetv1.onnx",
            $($($extra)*)?
        }
    };
}
#[allow(unused_imports)]
pub(crate) use bundled_models;
