//! The channel-blocked layout (`optimize: { blocked_layout }`): x86-64 builds run the bench's
//! depthwise-separable models' chains, ResNet-8's and ResNet-18's residual blocks and MNIST's
//! convolutions and pooling on it (dense convolutions with their weights in panels), other
//! targets never do, and it costs no arena byte.

use std::path::PathBuf;

use sramfit_planner_core::compile::compile_model;
use sramfit_planner_core::ir::{Node, Op};
use sramfit_planner_core::ops::conv_blocked::ConvBlocked;
use sramfit_planner_core::pipeline::Program;
use sramfit_planner_core::request::Request;
use sramfit_planner_core::target::Target;
use sramfit_runtime_min::ConvWeights;

/// The request for model `name` of `tests/models` on `triple`.
fn request(name: &str, triple: &str) -> Request {
    let mut request = Request::new(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/models").join(name));
    request.target = Target::new(triple);
    request
}

fn compile(request: &Request) -> Program {
    compile_model(request).unwrap_or_else(|e| panic!("{}: {e}", request.path.display())).into_program()
}

/// How many steps are blocked convolutions.
fn blocked_steps(p: &Program) -> usize {
    p.graph.nodes.iter().filter(|n| matches!(n.op, Op::ConvBlocked(_))).count()
}

#[test]
fn x86_64_builds_run_chains_blocked_in_the_same_arena() {
    // KWS: its four depthwise-separable blocks, 64 channels each; VWW and MobileNetV2-0.35:
    // their chains after the first layers, whose conversions would raise the lower bound;
    // ResNet-8: every convolution (the first reads its 3-channel NCHW input), its residual sums
    // between; MNIST: both convolutions and the max pooling after them; ResNet-18: every
    // convolution, its 2x2 ones of 512 channels too. Dense ones read their weights in panels
    // (all of the ResNets' convolutions; the others' first layers and 3x3 ones).
    let models = [
        ("kws_dscnn.onnx", 8, 0),
        ("vww_mobilenetv1.onnx", 20, 0),
        ("arch/mobilenetv2_035.onnx", 20, 0),
        ("resnet8.onnx", 9, 9),
        ("mnist_cnn.onnx", 2, 2),
        ("arch/resnet18.onnx", 20, 20),
    ];
    for (model, least, least_panels) in models {
        // The layout's own promise, without the Winograd convolutions that may follow it (their
        // scratch is theirs: tests/winograd.rs).
        let mut on = request(model, "x86_64-unknown-linux-gnu");
        on.optimizations.set("winograd", false).unwrap();
        let blocked = compile(&on);
        let (o, applied) = &blocked.optimizations;
        assert!(
            applied.blocked_convs >= least && blocked_steps(&blocked) == applied.blocked_convs,
            "{model}: {applied:?}"
        );
        let in_panels = |n: &&Node| matches!(n.op, Op::ConvBlocked(ConvBlocked(p)) if p.weights == ConvWeights::Panels);
        let panels = blocked.graph.nodes.iter().filter(in_panels).count();
        assert!(panels == applied.panel_weights && panels >= least_panels, "{model}: {applied:?}");
        if model == "mnist_cnn.onnx" {
            assert!(blocked.graph.nodes.iter().any(|n| matches!(n.op, Op::PoolBlocked(_))), "{model}");
        }
        let line = match panels {
            0 => format!("{} convolution(s) on channel-blocked tensors", applied.blocked_convs),
            n => format!(
                "{} convolution(s) on channel-blocked tensors ({n} with weights in panels)",
                applied.blocked_convs
            ),
        };
        assert!(applied.summary(o).contains(&line), "{model}: {}", applied.summary(o));

        let mut off = on.clone();
        off.optimizations.set("blocked_layout", false).unwrap();
        let nchw = compile(&off);
        assert_eq!(blocked_steps(&nchw), 0, "{model}");
        assert!(nchw.optimizations.1.summary(&nchw.optimizations.0).contains("channel-blocked layout off"));
        assert!(
            blocked.plan.arena_bytes <= nchw.plan.arena_bytes,
            "{model}: {} > {}",
            blocked.plan.arena_bytes,
            nchw.plan.arena_bytes
        );
    }
}

#[test]
fn other_targets_keep_nchw() {
    for triple in
        ["thumbv7em-none-eabihf", "thumbv6m-none-eabi", "aarch64-unknown-linux-gnu", "riscv32imac-unknown-none-elf"]
    {
        let p = compile(&request("kws_dscnn.onnx", triple));
        assert_eq!((blocked_steps(&p), p.optimizations.1.blocked_convs), (0, 0), "{triple}");
    }
}

#[test]
fn tiling_asked_for_is_the_tiling_without_the_layout() {
    // The layout runs after tiling, on the bands' steps too, and only where it costs no byte:
    // VWW tiled on x86-64 (asked for, or for a budget) has the arena it has without it.
    let tiled = |blocked: bool, budget: Option<u64>| {
        let mut r = request("vww_mobilenetv1.onnx", "x86_64-unknown-linux-gnu");
        r.optimizations.set("blocked_layout", blocked).unwrap();
        match budget {
            Some(bytes) => r.sram = Some(bytes),
            None => r.optimizations.set("tile", true).unwrap(),
        }
        let p = compile(&r);
        let applied = &p.optimizations.1;
        assert!(applied.tiled.is_some() && (applied.blocked_convs > 0) == blocked, "{applied:?}");
        p.plan.arena_bytes
    };
    let untiled = compile(&request("vww_mobilenetv1.onnx", "x86_64-unknown-linux-gnu")).plan.arena_bytes;
    assert_eq!(tiled(true, None), tiled(false, None));
    assert_eq!(tiled(true, Some(untiled - 1)), tiled(false, Some(untiled - 1)));
}
