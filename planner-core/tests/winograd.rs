//! Winograd convolutions (`optimize: { winograd }`): x86-64 builds run MNIST's second layer,
//! ResNet-8's and ResNet-18's stride-1 3x3 layers of 32 channels or more on 16 tiles or more by
//! F(2x2, 3x3), with weights transformed at build time and scratch for one chunk of tiles each;
//! switched off, or on other targets, none; and a model whose Winograd scratch breaks the SRAM
//! budget or its pools compiles without it (and, as always, tiled if its tiling was declined).
//! (The outputs against onnxruntime and tract: the facade's `models`
//! and `architectures` tests, which build these models for the host.)

use std::path::PathBuf;

use sramfit_planner_core::compile::compile_model;
use sramfit_planner_core::ir::Op;
use sramfit_planner_core::ops::conv_winograd::ConvWinograd;
use sramfit_planner_core::pipeline::Program;
use sramfit_planner_core::pools::PoolSpec;
use sramfit_planner_core::request::Request;
use sramfit_planner_core::target::Target;
use sramfit_runtime_min::{conv2d_winograd_scratch_len, winograd_weights_len};

/// The request for model `name` of `tests/models` on `triple`.
fn request(name: &str, triple: &str) -> Request {
    let mut request = Request::new(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/models").join(name));
    request.target = Target::new(triple);
    request
}

fn compile(request: &Request) -> Program {
    compile_model(request).unwrap_or_else(|e| panic!("{}: {e}", request.path.display())).into_program()
}

/// The Winograd steps' parameters, with their weights' lengths.
fn winograd_steps(p: &Program) -> Vec<(sramfit_runtime_min::Conv2d, usize)> {
    (p.graph.nodes.iter())
        .filter_map(|n| match n.op {
            Op::ConvWinograd(ConvWinograd(c)) => Some((c, p.graph.tensors[n.inputs[1]].len())),
            _ => None,
        })
        .collect()
}

#[test]
fn x86_64_builds_run_the_wide_3x3_layers_by_winograd() {
    // MNIST: its second layer (32 -> 64 channels, 24x24); ResNet-8: its second and third stages'
    // stride-1 layers (32 channels at 16x16, 64 at 8x8); ResNet-18: layer1's four (64 channels,
    // 16x16) and layer2's three stride-1 ones (128, 8x8), not the 4x4 and 2x2 ones (4 tiles, 1).
    for (model, count) in [("mnist_cnn.onnx", 1), ("resnet8.onnx", 2), ("arch/resnet18.onnx", 7)] {
        let on = compile(&request(model, "x86_64-unknown-linux-gnu"));
        let (o, applied) = &on.optimizations;
        let steps = winograd_steps(&on);
        assert_eq!((steps.len(), applied.winograd_convs), (count, count), "{model}: {applied:?}");
        for (p, weights) in &steps {
            assert!(p.in_channels >= 32 && p.out_h * p.out_w >= 64, "{model}: {p:?}");
            assert_eq!(*weights, winograd_weights_len(p), "{model}: {p:?}");
        }
        let line = format!("{count} 3x3 convolution(s) by Winograd F(2x2, 3x3)");
        assert!(applied.summary(o).contains(&line), "{model}: {}", applied.summary(o));

        let mut off = request(model, "x86_64-unknown-linux-gnu");
        off.optimizations.set("winograd", false).unwrap();
        let direct = compile(&off);
        assert!(winograd_steps(&direct).is_empty() && direct.optimizations.1.winograd_convs == 0, "{model}");
        assert!(direct.optimizations.1.summary(&direct.optimizations.0).contains("Winograd convolutions off"));
        // The arena grows by no more than the scratch of the largest Winograd step.
        let scratch = steps.iter().map(|(p, _)| conv2d_winograd_scratch_len(p) as u64 * 4).max().unwrap();
        assert!(
            on.plan.arena_bytes <= direct.plan.arena_bytes + scratch.next_multiple_of(64),
            "{model}: {} > {} + {scratch}",
            on.plan.arena_bytes,
            direct.plan.arena_bytes
        );
    }
}

#[test]
fn other_targets_run_none() {
    for triple in ["thumbv7em-none-eabihf", "aarch64-unknown-linux-gnu"] {
        let p = compile(&request("mnist_cnn.onnx", triple));
        assert_eq!((winograd_steps(&p).len(), p.optimizations.1.winograd_convs), (0, 0), "{triple}");
        assert!(!p.optimizations.1.summary(&p.optimizations.0).contains("Winograd"), "{triple}");
    }
}

#[test]
fn a_budget_the_winograd_scratch_breaks_is_met_without_it() {
    let mut off = request("mnist_cnn.onnx", "x86_64-unknown-linux-gnu");
    off.optimizations.set("winograd", false).unwrap();
    let direct = compile(&off).plan.arena_bytes;
    let on = compile(&request("mnist_cnn.onnx", "x86_64-unknown-linux-gnu"));
    assert!(on.plan.arena_bytes > direct, "MNIST's second layer is at the peak: its scratch adds to it");
    let mut budgeted = request("mnist_cnn.onnx", "x86_64-unknown-linux-gnu");
    budgeted.sram = Some(direct);
    let fitted = compile(&budgeted);
    let applied = fitted.optimizations.1;
    assert!(applied.winograd_convs == 0 && fitted.plan.arena_bytes <= direct, "{applied:?}");
}

#[test]
fn pools_the_winograd_scratch_breaks_are_met_without_it() {
    // The second pool's bytes with a first pool of 64 KiB and room to spare, with and without
    // Winograd.
    let pooled = |psram: &str, winograd: bool| {
        let mut r = request("mnist_cnn.onnx", "x86_64-unknown-linux-gnu");
        r.pools = vec![PoolSpec::parse("sram=64KiB").unwrap(), PoolSpec::parse(psram).unwrap()];
        r.optimizations.set("winograd", winograd).unwrap();
        // Without tiling, whose retry would meet these pools by tiling MNIST's layers instead.
        r.optimizations.set("tile", false).unwrap();
        r
    };
    let second = |p: &Program| p.pools.as_ref().expect("planned in pools").pools[1].bytes();
    let direct = second(&compile(&pooled("psram=1MiB", false)));
    let on = compile(&pooled("psram=1MiB", true));
    assert!(on.optimizations.1.winograd_convs == 1 && second(&on) > direct, "the scratch lands in the second pool");
    let fitted = compile(&pooled(&format!("psram={direct}"), true));
    let applied = fitted.optimizations.1;
    assert!(applied.winograd_convs == 0 && second(&fitted) <= direct, "{applied:?}");
}
