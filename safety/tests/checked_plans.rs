//! Checked mode catches wrong plans: `build.rs` compiles committed models in checked mode, once with
//! their verified plan and several times with a deliberately wrong one (see `build/corrupt.rs`).
//! The correct ones must run clean and match onnxruntime and tract; every wrong one must return
//! the `PlanViolation` naming the step and the tensor the corruption damages (an overlapped step's
//! input moved nearer its output included).

#[path = "../../tests/common/mod.rs"]
mod common;

use common::RunDyn;

/// A model compiled in checked mode with its verified plan.
pub struct Checked {
    model: &'static str,
    run: RunDyn,
    run_typed: common::quant::RunTyped,
    output_types: &'static [sramfit::DType],
    output_shapes: &'static [&'static [usize]],
}

/// The same model with a wrong plan.
pub struct Corrupted {
    name: &'static str,
    what: &'static str,
    run: RunDyn,
    output_shapes: &'static [&'static [usize]],
    expected: sramfit::Error,
}

/// One model's modules.
pub struct Model {
    checked: Checked,
    corrupted: &'static [Corrupted],
}

include!(concat!(env!("OUT_DIR"), "/corrupted.rs"));

#[test]
fn checked_runs_of_verified_plans_are_clean_and_correct() {
    for m in MODELS {
        let c = &m.checked;
        let model = format!("../{}", c.model);
        if c.model.contains("/quant/") {
            // As tests/quant_models.rs measures the unchecked build of the same model.
            let a = common::quant::agreement(&model, c.output_types, c.output_shapes, c.run_typed);
            assert!(a.max_steps <= 2.0 && a.equal_fraction() >= 0.7, "{model}: {a:?}");
        } else {
            common::check_model(&model, c.output_shapes, c.run);
        }
    }
}

#[test]
fn every_wrong_plan_is_reported_with_the_damaged_tensor() {
    for m in MODELS {
        let model = format!("../{}", m.checked.model);
        let inputs: Vec<Vec<f32>> = match m.checked.model.contains("/quant/") {
            // The int8 model's ports are float.
            true => (common::quant::samples(&common::fixture_of(&model)).swap_remove(0).inputs.into_iter())
                .map(|t| t.data.into_iter().map(|v| v as f32).collect())
                .collect(),
            false => common::fixture(&model).inputs.into_iter().map(|t| t.data).collect(),
        };
        let ins: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
        for c in m.corrupted {
            let mut outs: Vec<Vec<f32>> = c.output_shapes.iter().map(|s| vec![0.0; s.iter().product()]).collect();
            let mut outs: Vec<&mut [f32]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
            let got = (c.run)(&ins, &mut outs);
            assert_eq!(got, Err(c.expected), "{}: {}", c.name, c.what);
            eprintln!("{}: {} -> {}", c.name, c.what, c.expected);
        }
    }
    // An overlapped step's displacement is among the corruptions (a model with overlapped steps).
    assert!(MODELS.iter().flat_map(|m| m.corrupted).any(|c| c.name.ends_with("_displacement")));
}
