//! QOperator nodes (QLinearConv, QLinearMatMul and onnxruntime's `com.microsoft` QGemm,
//! QLinearAdd, ...): their quantization parameters are inputs of the node, read here into the
//! same integer operator call a QDQ region makes.

use std::rc::Rc;

use tract_onnx::pb;

use super::onnx::{dtype_of, elem, elem_name, scales, Attrs};
use super::{Call, Operand, Out, QConst, Value, Walk, UNBOUNDED};
use crate::ops::qparams::QParams;
use crate::tensor::{DType, Quant};

/// The float operator each QOperator node computes.
const OPERATORS: &[(&str, &str)] = &[
    ("QLinearConv", "Conv"),
    ("QLinearMatMul", "MatMul"),
    ("QGemm", "Gemm"),
    ("QLinearAdd", "Add"),
    ("QLinearMul", "Mul"),
    ("QLinearAveragePool", "AveragePool"),
    ("QLinearGlobalAveragePool", "GlobalAveragePool"),
    ("QLinearConcat", "Concat"),
    ("QLinearSigmoid", "Sigmoid"),
    ("QLinearLeakyRelu", "LeakyRelu"),
    ("QLinearSoftmax", "Softmax"),
    ("ConvInteger", "Conv"),
    ("MatMulInteger", "MatMul"),
];

/// Whether `node` is a QOperator node.
pub(super) fn handles(node: &pb::NodeProto) -> bool {
    OPERATORS.iter().any(|(q, _)| *q == node.op_type)
}

/// Lowers a QOperator node: operands `(x, x_scale, x_zero_point)` triples, the output's
/// `(scale, zero_point)` pair.
pub(super) fn lower(w: &mut Walk<'_>, node: &pb::NodeProto) -> Result<(), String> {
    let op = OPERATORS.iter().find(|(q, _)| *q == node.op_type).map(|(_, f)| *f).expect("checked by handles");
    let (operands, out) = match node.op_type.as_str() {
        "ConvInteger" | "MatMulInteger" => {
            let b = match (node.op_type.as_str(), w.input(node, 1)) {
                ("ConvInteger", _) => integer_weights(w, node, 0)?,
                (_, Some(Value::Const(_))) => integer_weights(w, node, w.value_rank(node, 1)?.saturating_sub(1))?,
                _ => integer_act(w, node, 1)?,
            };
            (vec![integer_act(w, node, 0)?, b], None)
        }
        "QLinearConv" => (vec![act(w, node, 0)?, weights(w, node, 3, 0)?, raw(w, node, 8)], Some(out(w, node, 6)?)),
        "QLinearMatMul" => {
            let b_rank = w.value_rank(node, 3)?;
            let operands = vec![act_or_weights(w, node, 0, 0)?, act_or_weights(w, node, 3, b_rank.saturating_sub(1))?];
            (operands, Some(out(w, node, 6)?))
        }
        "QGemm" => {
            if node.input.get(7).is_none_or(|s| s.is_empty()) {
                return Err("QGemm with a float output (no y_scale) is not supported".into());
            }
            let trans_b = Attrs(&node.attribute).int("transB", 0) != 0;
            let b = weights(w, node, 3, usize::from(!trans_b))?;
            (vec![act(w, node, 0)?, b, raw(w, node, 6)], Some(out(w, node, 7)?))
        }
        "QLinearAdd" | "QLinearMul" => {
            (vec![act_or_weights(w, node, 0, 0)?, act_or_weights(w, node, 3, 0)?], Some(out(w, node, 6)?))
        }
        "QLinearConcat" => {
            let inputs =
                (2..node.input.len()).step_by(3).map(|i| act_or_weights(w, node, i, 0)).collect::<Result<_, _>>()?;
            (inputs, Some(out(w, node, 0)?))
        }
        _ => (vec![act(w, node, 0)?], Some(out(w, node, 3)?)),
    };
    // ConvInteger and MatMulInteger have no output quantization: their output is `int32`.
    let tensors = w.integer(Call { op, node, operands, outs: out.into_iter().collect() })?;
    w.set(node, 0, Value::Int(tensors[0]));
    Ok(())
}

/// Input `i` (0 or 1) of ConvInteger / MatMulInteger as a tensor: integers with the zero point of
/// input `i + 2` (0 without).
fn integer_act(w: &Walk<'_>, node: &pb::NodeProto, i: usize) -> Result<Operand, String> {
    let Some(Value::Int(t)) = w.input(node, i).cloned() else {
        return Err(format!("input {i} is not an integer tensor"));
    };
    let dtype = w.graph.tensors[t].dtype;
    if !matches!(dtype, DType::I8 | DType::U8) {
        return Err(format!("input {i} is {} (int8 and uint8 are supported)", dtype.rust_name()));
    }
    let zero_point = match node.input.get(i + 2).filter(|s| !s.is_empty()) {
        None => 0,
        Some(_) => match w.konst(node, i + 2)?.ints()?[..] {
            [z] => z as i32,
            ref z => return Err(format!("{} zero points of input {i} (one per tensor is supported)", z.len())),
        },
    };
    Ok(Operand::Act(t, QParams { scale: 1.0, zero_point, dtype }))
}

/// Input 1 of ConvInteger / MatMulInteger: constant integers with the zero points of input 3
/// (per tensor, or per output channel along `axis`; 0 without).
fn integer_weights(w: &Walk<'_>, node: &pb::NodeProto, axis: usize) -> Result<Operand, String> {
    let values = (*w.konst(node, 1)?).clone();
    let zero_points = match node.input.get(3).filter(|s| !s.is_empty()) {
        None => vec![0],
        Some(_) => w.konst(node, 3)?.ints()?.to_vec(),
    };
    if zero_points.is_empty() {
        return Err("an empty weight zero point".into());
    }
    Ok(Operand::Weights(Rc::new(QConst { values, scales: vec![1.0], zero_points, axis })))
}

/// The `(scale, zero_point)` inputs at `i`, `i + 1` (a missing zero point is 0 of `default_elem`).
fn params(
    w: &Walk<'_>,
    node: &pb::NodeProto,
    i: usize,
    default_elem: i32,
) -> Result<(Vec<f32>, Vec<i64>, i32), String> {
    let scales = scales(&*w.konst(node, i)?).map_err(|e| format!("input {i}: {e}"))?;
    let (zero_points, elem) = match node.input.get(i + 1).filter(|s| !s.is_empty()) {
        None => (vec![0; scales.len()], default_elem),
        Some(_) => {
            let z = w.konst(node, i + 1)?;
            (z.ints()?.to_vec(), z.elem)
        }
    };
    if zero_points.len() != scales.len() {
        return Err(format!("input {}: {} zero points for {} scales", i + 1, zero_points.len(), scales.len()));
    }
    Ok((scales, zero_points, elem))
}

/// The quantized activation at input `i` with its parameters at `i + 1`, `i + 2`.
fn act(w: &mut Walk<'_>, node: &pb::NodeProto, i: usize) -> Result<Operand, String> {
    let Some(Value::Int(t)) = w.input(node, i).cloned() else {
        return Err(format!("input {i} is not an integer tensor"));
    };
    let dtype = w.graph.tensors[t].dtype;
    let (scales, zero_points, _) = params(w, node, i + 1, elem::UINT8)?;
    let ([scale], [zero_point]) = (&scales[..], &zero_points[..]) else {
        return Err(format!("input {i} is quantized per axis"));
    };
    let q = QParams { scale: *scale, zero_point: *zero_point as i32, dtype };
    // An integer graph input learns its quantization from the operator reading it.
    w.graph.tensors[t].quant.get_or_insert(Quant::PerTensor { scale: q.scale, zero_point: q.zero_point });
    super::eight_bit(&w.graph.tensors[t])?;
    Ok(Operand::Act(t, q))
}

/// The quantized constant at input `i` with its parameters at `i + 1`, `i + 2`, per-axis along `axis`.
fn weights(w: &Walk<'_>, node: &pb::NodeProto, i: usize, axis: usize) -> Result<Operand, String> {
    let values = (*w.konst(node, i)?).clone();
    let (scales, zero_points, _) = params(w, node, i + 1, values.elem)?;
    Ok(Operand::Weights(Rc::new(QConst { values, scales, zero_points, axis })))
}

/// Input `i` as an activation, or as quantized constants when it is an initializer.
fn act_or_weights(w: &mut Walk<'_>, node: &pb::NodeProto, i: usize, axis: usize) -> Result<Operand, String> {
    match w.input(node, i) {
        Some(Value::Const(_)) => weights(w, node, i, axis),
        _ => act(w, node, i),
    }
}

/// Optional input `i` as it is (a QOperator bias: `int32` in accumulator units).
fn raw(w: &Walk<'_>, node: &pb::NodeProto, i: usize) -> Operand {
    match w.input(node, i) {
        Some(Value::Const(k)) => Operand::Const(k.clone()),
        _ => Operand::Absent,
    }
}

/// The output's quantization from its `(scale, zero_point)` inputs at `i`.
fn out(w: &Walk<'_>, node: &pb::NodeProto, i: usize) -> Result<Out, String> {
    let (scales, zero_points, el) = params(w, node, i, elem::UINT8)?;
    let ([scale], [zero_point]) = (&scales[..], &zero_points[..]) else {
        return Err("an output quantized per axis".into());
    };
    let dtype = dtype_of(el).filter(|d| matches!(d, DType::I8 | DType::U8));
    let dtype = dtype.ok_or_else(|| format!("an output of {}", elem_name(el)))?;
    Ok(Out { q: QParams { scale: *scale, zero_point: *zero_point as i32, dtype }, clamp: UNBOUNDED })
}
