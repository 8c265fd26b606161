//! Pins what the importer makes of tract's decluttered graphs, so a tract upgrade that changes the
//! lowering shows up here first. Models are the committed fixtures (scripts/gen_models.py).
#![cfg(feature = "onnx")]

use std::path::PathBuf;

use sramfit_planner_core::import::{import, InputShape};
use sramfit_planner_core::ir::{Graph, Op, Unary};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/models").join(name)
}

fn kernels(g: &Graph) -> Vec<String> {
    g.nodes
        .iter()
        .map(|n| match &n.op {
            Op::Unary(u) => format!("{}:{u:?}", n.source_op),
            op => format!("{}:{}", n.source_op, op.kernel_name()),
        })
        .collect()
}

#[test]
fn kws_lowering_is_pinned() {
    let g = import(&fixture("kws_dscnn.onnx"), &[]).unwrap();
    let k = kernels(&g);
    println!("{k:#?}");
    // BatchNormalization after a k>1 convolution folds into it; Relu arrives as Max(x, 0).
    assert_eq!(k[0], "Conv:conv2d");
    assert_eq!(k[1], "Max:Relu");
    // Pointwise convolutions become EinSum, lowered to one GEMM; their BatchNorm stays Mul + Add.
    assert!(k.contains(&"EinSum:matmul".to_string()));
    assert!(k.iter().any(|s| s == "Mul:binary") && k.iter().any(|s| s == "Add:binary"));
    // The average pool is a normalised SumPool; Flatten is a view; the head is EinSum + Add + Softmax.
    assert!(k.contains(&"SumPool:avg_pool2d".to_string()));
    assert_eq!(k.last().unwrap(), "Softmax:softmax");
    assert!(!g.nodes.iter().any(|n| matches!(n.op, Op::Unary(Unary::Clip { .. }))));
}

#[test]
fn mobilenet_clip_becomes_clip_kernels() {
    let g = import(&fixture("mobilenetv2_block.onnx"), &[]).unwrap();
    let clips = g.nodes.iter().filter(|n| matches!(n.op, Op::Unary(Unary::Clip { .. }))).count();
    // Clip(0, 6) arrives as Max(x, 0) then Min(x, 6): a Relu and a Clip{-inf, 6} per activation.
    assert_eq!(clips, 4, "{:#?}", kernels(&g));
}

#[test]
fn fixed_input_shape_overrides_the_declared_one() {
    let g = import(&fixture("mlp.onnx"), &[InputShape { name: "input".into(), dims: vec![1, 64] }]).unwrap();
    assert_eq!(g.tensors[g.inputs[0]].shape, vec![1, 64]);
    let err = import(&fixture("mlp.onnx"), &[InputShape { name: "nope".into(), dims: vec![1, 64] }]).unwrap_err();
    assert!(err.to_string().contains("not an input of the model"), "{err}");
}
