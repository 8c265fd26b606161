//! Quantized ONNX models (`tests/models/quant/`): what the importer makes of them, that nothing
//! between the first QuantizeLinear and the last DequantizeLinear runs in float, the errors for
//! what has no integer form, and the int8 arenas against the f32 ones and TensorFlow Lite Micro's.
#![cfg(feature = "onnx")]

use std::path::PathBuf;

use sramfit_planner_core::compile::compile_model;
use sramfit_planner_core::error::CompileError;
use sramfit_planner_core::import::import;
use sramfit_planner_core::ir::{Graph, Op};
use sramfit_planner_core::ops::qconvert::Direction;
use sramfit_planner_core::pipeline::Program;
use sramfit_planner_core::request::Request;
use sramfit_planner_core::tensor::DType;
use tract_onnx::prelude::Framework;

fn model(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/models").join(rel)
}

fn compile(rel: &str) -> Program {
    compile_model(&Request::new(model(rel))).unwrap_or_else(|e| panic!("{rel}: {e}")).into_program()
}

fn kernels(g: &Graph) -> Vec<&'static str> {
    g.nodes.iter().map(|n| n.op.kind().kernel_name()).collect()
}

#[test]
fn kws_qdq_is_integer_from_the_first_quantize_to_the_last_dequantize() {
    let g = import(&model("quant/kws_dscnn_qdq_s8.onnx"), &[]).unwrap();
    let k = kernels(&g);
    println!("{k:#?}");
    assert_eq!(k.first(), Some(&"quant::quantize"));
    assert_eq!(k.last(), Some(&"quant::dequantize"));
    assert_eq!(k.iter().filter(|&&k| k == "quant::conv2d").count(), 5, "the first and the four pointwise");
    assert_eq!(k.iter().filter(|&&k| k == "quant::depthwise_conv2d").count(), 4);
    // The 25x5 average pool covers its whole input: a mean with the rescaling in its multiplier.
    assert!(k.contains(&"quant::mean") && k.contains(&"quant::fully_connected") && k.contains(&"quant::softmax"));
    // Weights are the file's int8 values, packed; biases int32, folded.
    let conv = g.nodes.iter().find(|n| matches!(n.op, Op::QConv(_))).unwrap();
    let dtypes: Vec<DType> = conv.inputs.iter().map(|&t| g.tensors[t].dtype).collect();
    assert_eq!(dtypes, [DType::I8, DType::I8, DType::I32, DType::I32, DType::I32]);
    assert_eq!(g.tensors[g.inputs[0]].dtype, DType::F32, "a float input followed by QuantizeLinear stays float");
}

/// Every step that writes a float tensor is a dequantization or reads only float tensors, and every
/// quantization reads a graph input: no float arithmetic inside the quantized part.
fn assert_integer_inside(rel: &str, g: &Graph) {
    for n in &g.nodes {
        let out = &g.tensors[n.output];
        let reads_int = n.inputs.iter().any(|&t| g.tensors[t].dtype != DType::F32);
        match &n.op {
            Op::QConvert(c) if c.direction == (Direction::Quantize { ties_to_even: true }) => {
                assert!(g.inputs.contains(&n.inputs[0]), "{rel}: `{}` quantizes a computed float tensor", n.name)
            }
            Op::QConvert(_) => {}
            _ if out.dtype == DType::F32 => assert!(!reads_int, "{rel}: `{}` turns integers into floats", n.name),
            _ => assert!(reads_int || n.inputs.is_empty(), "{rel}: `{}` writes integers from floats", n.name),
        }
    }
}

#[test]
fn no_quantized_model_runs_float_arithmetic_between_its_quantize_and_dequantize() {
    let dir = model("quant");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".onnx") {
            continue;
        }
        let g = import(&path, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_integer_inside(&name, &g);
        checked += 1;
    }
    assert_eq!(checked, 30);
}

#[test]
fn a_float_operator_inside_a_quantized_region_is_an_error_naming_it() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ui-tests/models/quant_float_op.onnx");
    let err = import(&path, &[]).unwrap_err();
    let CompileError::Unsupported(ops) = &err else { panic!("{err}") };
    let names: Vec<&str> = ops.iter().map(|o| o.node.as_str()).collect();
    assert_eq!(names, ["erf"], "{err}");
    assert!(ops[0].reason.contains("between DequantizeLinear and QuantizeLinear"), "{err}");
    assert!(err.to_string().contains("Erf"), "{err}");
}

/// The transformer layer's LayerNormalizations (DQ -> LayerNormalization -> Q, which onnxruntime
/// runs in float) are integer steps.
#[test]
fn layer_normalization_runs_in_integers() {
    let g = import(&model("quant/transformer_encoder_qdq_s8.onnx"), &[]).unwrap();
    let norms: Vec<&str> =
        g.nodes.iter().filter(|n| matches!(n.op, Op::QLayerNorm(_))).map(|n| n.name.as_str()).collect();
    assert_eq!(norms, ["norm1", "norm2"]);
}

#[test]
fn integer_accumulators_are_int32_outputs() {
    for case in ["qop_convinteger_s8", "qop_convinteger_u8", "qop_matmulinteger_u8", "qop_matmulinteger_act_s8"] {
        let g = import(&model(&format!("quant/ops/{case}.onnx")), &[]).unwrap();
        let out = &g.tensors[g.outputs[0]];
        assert_eq!((out.dtype, &out.quant), (DType::I32, &None), "{case}");
        let [n] = &g.nodes[..] else { panic!("{case}: {} steps", g.nodes.len()) };
        assert!(matches!(&n.op, Op::QConv(c) if c.accumulate) || matches!(n.op, Op::QMatMul(_)), "{case}: {:?}", n.op);
    }
}

/// Bytes of the largest scratch buffer of a program.
fn scratch_bytes(p: &Program) -> u64 {
    p.live.scratch.iter().flatten().map(|&b| p.live.problem.buffers[b].size).max().unwrap_or(0)
}

/// Bytes of the quantized copies of float graph inputs (QuantizeLinear of a float port): the int8
/// build holds them in its arena, where the f32 build reads the caller's buffer.
fn quantized_input_bytes(p: &Program) -> u64 {
    let g = &p.graph;
    let quantizes = |n: &&sramfit_planner_core::ir::Node| {
        matches!(&n.op, Op::QConvert(c) if matches!(c.direction, Direction::Quantize { .. }))
            && g.inputs.contains(&n.inputs[0])
    };
    g.nodes.iter().filter(quantizes).map(|n| g.tensors[n.output].len() as u64).sum()
}

#[test]
fn int8_arenas_are_a_quarter_of_the_f32_ones() {
    // TensorFlow Lite Micro's tensor arena for the MLPerf Tiny int8 reference models (head), from
    // ../shared/mlperf-tiny/README.md; the MNIST CNN has none.
    // ResNet-8's peak step is a 3x3 convolution: scratch fitting gives it no window (it reads its
    // input in place, run by run, as TFLM's kernels do) rather than raise the peak by one.
    let models = [
        ("kws_dscnn", Some(16_000)),
        ("vww_mobilenetv1", Some(55_296)), // the goal; TFLM: 73,728
        ("resnet8", Some(49_152)),
        ("fc_autoencoder", Some(768)),
        ("mnist_cnn", None),
    ];
    println!(
        "| model | f32 arena | int8 arena | int8 scratch | quantized input | int8 / f32 | bound (TFLM; VWW: goal) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, tflm) in models {
        let (f, q) = (compile(&format!("{name}.onnx")), compile(&format!("quant/{name}_qdq_s8.onnx")));
        let (fa, qa, qs, qi) = (f.plan.arena_bytes, q.plan.arena_bytes, scratch_bytes(&q), quantized_input_bytes(&q));
        if let Some(t) = tflm {
            assert!(qa <= t, "{name}: int8 arena {qa} > {t}");
        }
        let tflm = tflm.map_or("-".to_string(), |t: u64| t.to_string());
        println!("| {name} | {fa} | {qa} | {qs} | {qi} | {:.3} | {tflm} |", qa as f64 / fa as f64);
        // The FC autoencoder's f32 arena is two 128-float layers since its last layer writes the
        // caller's output (scale/shift folding): 1,024 B. Its int8 build holds the int8 copy of
        // its 640-float input besides (768 B; the .tflite file's int8 port: 256 B).
        assert!(
            qa <= fa / 4 + qs + qi,
            "{name}: int8 arena {qa} > f32 arena {fa} / 4 + scratch {qs} + quantized input {qi}"
        );
    }
}

/// `qdq_conv3x3_s8` as a protobuf, changed by `edit`, imported.
fn import_edited(edit: impl Fn(&mut tract_onnx::pb::GraphProto)) -> Result<Graph, CompileError> {
    let bytes = std::fs::read(model("quant/ops/qdq_conv3x3_s8.onnx")).unwrap();
    let mut proto = tract_onnx::onnx().proto_model_for_read(&mut &bytes[..]).unwrap();
    edit(proto.graph.as_mut().unwrap());
    sramfit_planner_core::import::import_proto(&proto, &[])
}

#[test]
fn malformed_quantization_is_an_error_naming_the_cause() {
    let unchanged = import_edited(|_| {});
    assert!(unchanged.is_ok(), "{:?}", unchanged.err());
    // Scales that are not positive normal numbers.
    for bad in [f32::INFINITY, f32::NAN, 0.0, -0.5] {
        let err = import_edited(|g| {
            let t = g.initializer.iter_mut().find(|t| t.name == "output.scale").unwrap();
            (t.raw_data, t.float_data) = (Vec::new(), vec![bad]);
        })
        .unwrap_err();
        assert!(err.to_string().contains(&format!("a scale of {bad}")), "{bad}: {err}");
    }
    // No scale at all, and a requantization no kernel shift reaches (x * w / y >= 2^31).
    let err = import_edited(|g| {
        let t = g.initializer.iter_mut().find(|t| t.name == "conv.weight_scale").unwrap();
        (t.dims, t.raw_data, t.float_data) = (vec![0], Vec::new(), Vec::new());
    })
    .unwrap_err();
    assert!(err.to_string().contains("an empty scale"), "{err}");
    let err = import_edited(|g| {
        let t = g.initializer.iter_mut().find(|t| t.name == "output.scale").unwrap();
        (t.raw_data, t.float_data) = (Vec::new(), vec![1e-30]);
    })
    .unwrap_err();
    assert!(err.to_string().contains("at least 2^31"), "{err}");
    // Windows: a zero kernel extent, pads and dilations beyond any input, a huge group count.
    let conv_attr = |name: &'static str, ints: Vec<i64>, i: i64| {
        move |g: &mut tract_onnx::pb::GraphProto| {
            let conv = g.node.iter_mut().find(|n| n.op_type == "Conv").unwrap();
            conv.attribute.retain(|a| a.name != name);
            conv.attribute.push(tract_onnx::pb::AttributeProto {
                name: name.into(),
                ints: ints.clone(),
                i,
                ..Default::default()
            });
        }
    };
    for (edit, cause) in [
        (conv_attr("pads", vec![i64::MAX, 0, i64::MAX, 0], 0), "pads larger than any input"),
        (conv_attr("dilations", vec![i64::MAX, 1], 0), "a window of 18446744073709551615 over an extent of 10"),
        (conv_attr("group", vec![], i64::MAX), "groups"),
    ] {
        let err = import_edited(edit).unwrap_err();
        assert!(err.to_string().contains(cause), "{cause}: {err}");
        assert!(err.to_string().contains("conv"), "names the node: {err}");
    }
    let err = import_edited(|g| {
        let w = g.initializer.iter_mut().find(|t| t.name == "conv.weight").unwrap();
        (w.dims, w.raw_data, w.int32_data) = (vec![6, 4, 0, 3], Vec::new(), Vec::new());
        g.node.iter_mut().for_each(|n| n.attribute.retain(|a| a.name != "kernel_shape"));
    })
    .unwrap_err();
    assert!(err.to_string().contains("zero stride, dilation or kernel extent"), "{err}");
}
