//! The subsampling fold on a real export: ResNet-8's two shortcuts (strided 1x1 convolutions,
//! which tract imports as two `Downsample` copies and a matrix product each) compile to strided
//! 1x1 convolutions reading the block's input, with no copy left; `subsample: false` keeps the
//! copies. (tests/rewrites.rs checks that both builds give the same bits.)

use std::path::PathBuf;

use sramfit_planner_core::compile::compile_model;
use sramfit_planner_core::ir::Op;
use sramfit_planner_core::ops::conv_blocked::ConvBlocked;
use sramfit_planner_core::pipeline::Program;
use sramfit_planner_core::request::Request;

fn resnet8(subsample: bool) -> Program {
    let mut request = Request::new(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/models/resnet8.onnx"));
    request.optimizations.subsample = subsample;
    compile_model(&request).unwrap_or_else(|e| panic!("{e}")).into_program()
}

#[test]
fn resnet8_shortcuts_become_strided_pointwise_convolutions() {
    let folded = resnet8(true);
    assert_eq!(folded.optimizations.1.folded_subsamplings, 4);
    let g = &folded.graph;
    assert!(!g.nodes.iter().any(|n| matches!(n.op, Op::Copy(_))), "a copy is left");
    // (input channels, input height, output height, stride) of each strided 1x1 convolution.
    let strided: Vec<_> = (g.nodes.iter())
        .filter_map(|n| match n.op {
            // On x86-64 hosts they run blocked, with ResNet-8's other convolutions.
            Op::Conv(p) | Op::ConvBlocked(ConvBlocked(p)) if p.kernel_h == 1 && p.stride_h > 1 => {
                assert_eq!((p.kernel_w, p.stride_w, p.in_w, p.out_w), (1, p.stride_h, p.in_h, p.out_h));
                Some((p.in_channels, p.in_h, p.out_h, p.stride_h))
            }
            _ => None,
        })
        .collect();
    assert_eq!(strided, [(16, 32, 16, 2), (32, 16, 8, 2)]);

    let copied = resnet8(false);
    assert_eq!(copied.optimizations.1.folded_subsamplings, 0);
    let copies = copied.graph.nodes.iter().filter(|n| matches!(n.op, Op::Copy(_))).count();
    assert_eq!(copies, 4);
}
