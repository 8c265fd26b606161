//! Pins what the importer makes of tract's decluttered graphs, so a tract upgrade that changes the
//! lowering shows up here first. Models are the committed fixtures (scripts/gen_models.py).
#![cfg(feature = "onnx")]

use std::path::PathBuf;

use sramfit_planner_core::import::{import, InputShape};
use sramfit_planner_core::ir::{Graph, Op, TensorKind};
use sramfit_planner_core::ops::unary::Unary;
use sramfit_planner_core::tensor::Data;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/models").join(name)
}

fn kernels(g: &Graph) -> Vec<String> {
    g.nodes
        .iter()
        .map(|n| match &n.op {
            Op::Unary(u) => format!("{}:{u:?}", n.source_op),
            op => format!("{}:{}", n.source_op, op.kind().kernel_name()),
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

#[test]
fn weights_computed_in_the_graph_are_folded_at_build_time() {
    // ResNet-18's large weights are Reshape(MatMul(U, V)) of small factors (scripts/gen_architectures.py);
    // layer4's 512x256x3x3 products are over tract's 4 MiB folding budget, so the importer folds them.
    let g = import(&fixture("arch/resnet18.onnx"), &[]).unwrap();
    let k = kernels(&g);
    assert!(!g.nodes.iter().any(|n| n.name.contains(".weight")), "{k:#?}");
    let conv = g.nodes.iter().find(|n| n.name == "layer4_1_conv2").expect("layer4_1_conv2");
    let TensorKind::Const(Data::F32(values)) = &g.tensors[conv.inputs[1]].kind else {
        panic!("layer4_1_conv2's weight is not a constant: {k:#?}")
    };
    assert_eq!(values.len(), 512 * 512 * 9);
    // Non-trivial weights: not a splat, and of the He-normal scale the generator chose (times the
    // BatchNorm scale, in [0.47, 1.8], that tract folded into them).
    let mean = values.iter().sum::<f32>() / values.len() as f32;
    let std = (values.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / values.len() as f32).sqrt();
    let he = (2.0f32 / 4608.0).sqrt();
    assert!(mean.abs() < 0.1 * he && std > 0.4 * he && std < 2.0 * he, "mean {mean}, std {std}, He {he}");
    // With constant weights tract turns the convolutions into Conv (k > 1) and EinSum (1x1, the head).
    assert_eq!(k.iter().filter(|s| *s == "Conv:conv2d").count(), 17, "{k:#?}");
}

/// The Keras models exported by tf2onnx (NHWC graphs, `tests/models/nhwc/`) run with no transposing
/// copy once the rewrites ran: their input transposes are read in place by the first convolution
/// (`ConvInput::Nhwc`), the transposes around channels-last convolutions cancel (ResNet-8's
/// strided copies are tract's Downsample, the subsampling of its strided 1x1 convolutions).
#[test]
fn nhwc_graphs_keep_no_transposing_copy() {
    use sramfit_planner_core::compile::compile_model;
    use sramfit_planner_core::request::Request;
    use sramfit_runtime_min::ConvInput;
    for name in ["nhwc/vww_mobilenetv1_keras.onnx", "nhwc/resnet8_keras.onnx"] {
        let p = compile_model(&Request::new(fixture(name))).unwrap_or_else(|e| panic!("{name}: {e}")).into_program();
        let copies: Vec<&str> = p
            .graph
            .nodes
            .iter()
            .filter(|n| matches!(n.op, Op::Copy(_)) && n.source_op == "Transpose")
            .map(|n| n.name.as_str())
            .collect();
        assert!(copies.is_empty(), "{name}: transposing copies {copies:?}");
        let first_conv = p.graph.nodes.iter().find_map(|n| match &n.op {
            Op::Conv(c) => Some(c.input),
            _ => None,
        });
        assert_eq!(first_conv, Some(ConvInput::Nhwc), "{name}: the first convolution reads the NHWC input");
    }
}
