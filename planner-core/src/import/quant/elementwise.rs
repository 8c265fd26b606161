//! Elementwise operators: add, sub and mul with rescaling, and the arithmetic of raw integers;
//! every function of one input as a
//! 256-entry table (Relu, Clip, Sigmoid, Tanh, HardSwish, LeakyRelu, ...), and a batch
//! normalization as one table per channel; and the float elementwise functions allowed outside
//! the quantized part of a graph.

use tract_onnx::pb;

use super::onnx::Attrs;
use super::{Call, Value, Walk};
use crate::ir::{Op, TensorId, TensorKind};
use crate::ops::binary::{Binary, BinaryOp};
use crate::ops::lowering::broadcast_strides;
use crate::ops::lut::Lut;
use crate::ops::qbinary::{Arith, QBinary};
use crate::ops::qparams::Convention;
use crate::ops::unary::Unary;

/// Add, Sub, Mul (and QLinearAdd, QLinearMul) with NumPy broadcasting.
pub(super) fn binary(w: &mut Walk<'_>, c: &Call<'_>) -> Result<Vec<TensorId>, String> {
    let ((a, aq), (b, bq)) = (w.operand_tensor(c, 0)?, w.operand_tensor(c, 1)?);
    let out_shape = broadcast_shape(&w.shape(a), &w.shape(b))?;
    let arith = match c.op {
        "Add" => Arith::Add,
        "Sub" => Arith::Sub,
        _ => Arith::Mul,
    };
    let out = c.out();
    let (sa, sb) = (broadcast_strides(&w.shape(a), &out_shape), broadcast_strides(&w.shape(b), &out_shape));
    let op = QBinary::new(arith, (aq, bq, out.q), out.clamp, (sa, sb), Convention::Onnx)?;
    let y = w.output(c, 0, out_shape);
    w.push(c.node, Op::QBinary(op), vec![a, b], y);
    Ok(vec![y])
}

/// Add, Sub, Mul, Div, Max or Min of raw integers (tensors no quantized operator describes, and
/// integer constants): ONNX's integer arithmetic (wrapping; Div truncates), with the kernels of
/// the `f32` [`BinaryOp`] on the integer type.
pub(super) fn raw_binary(
    w: &mut Walk<'_>,
    node: &pb::NodeProto,
    op: &str,
    inputs: &[Option<Value>],
) -> Result<(), String> {
    let kind = match op {
        "Add" => Binary::Add,
        "Sub" => Binary::Sub,
        "Mul" => Binary::Mul,
        "Div" => Binary::Div,
        "Max" => Binary::Max,
        "Min" => Binary::Min,
        _ => return Err(format!("{op} of raw integers")),
    };
    let [Some(a), Some(b)] = inputs else {
        return Err(format!("{op} of {} inputs on raw integers (two are supported)", inputs.len()));
    };
    let dtype = [a, b].iter().find_map(|v| match v {
        Value::Int(t) => Some(w.graph.tensors[*t].dtype),
        _ => None,
    });
    let dtype = dtype.ok_or("no integer tensor operand")?;
    let mut tensor = |v: &Value| match v {
        Value::Int(t) if w.graph.tensors[*t].dtype == dtype => Ok(*t),
        Value::Int(_) => Err("operands of different integer types".to_string()),
        Value::Const(k) => {
            let data = k.data()?;
            if data.dtype() != dtype {
                return Err(format!("a {} constant with {} tensors", data.dtype().rust_name(), dtype.rust_name()));
            }
            Ok(w.constant_tensor(node, "constant", k.shape.clone(), data))
        }
        _ => Err("mixes raw integers with float or quantized tensors".to_string()),
    };
    let (a, b) = (tensor(a)?, tensor(b)?);
    let out_shape = broadcast_shape(&w.shape(a), &w.shape(b))?;
    let (a_strides, b_strides) =
        (broadcast_strides(&w.shape(a), &out_shape), broadcast_strides(&w.shape(b), &out_shape));
    let name = node.output.first().cloned().unwrap_or_default();
    let y = w.graph.add_tensor(name, out_shape, dtype, TensorKind::Activation);
    w.push(node, Op::Binary(BinaryOp::new(kind, a_strides, b_strides)), vec![a, b], y);
    w.set(node, 0, Value::Int(y));
    Ok(())
}

/// The NumPy broadcast of two shapes.
pub(in crate::import) fn broadcast_shape(a: &[usize], b: &[usize]) -> Result<Vec<usize>, String> {
    let rank = a.len().max(b.len());
    let at = |s: &[usize], i: usize| if i + s.len() >= rank { s[i + s.len() - rank] } else { 1 };
    (0..rank)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y => Ok(x),
            (1, y) => Ok(y),
            (x, 1) => Ok(x),
            _ => Err(format!("shapes {a:?} and {b:?} do not broadcast")),
        })
        .collect()
}

/// A function of one input, as a table of its 256 values (a fused Relu / Clip clamps them).
pub(super) fn table(w: &mut Walk<'_>, c: &Call<'_>) -> Result<Vec<TensorId>, String> {
    let f = real_function(w, c.op, c.node)?;
    let (x, xq) = c.act(0)?;
    let out = c.out();
    let (lo, hi) = out.clamp;
    let (op, table) = Lut::new(xq, out.q, |v| f(v).max(lo).min(hi))?;
    let table = w.constant_tensor(c.node, "table", vec![256], table);
    let shape = w.shape(x);
    Ok(vec![w.step(c, Op::Lut(op), vec![x, table], shape)])
}

/// Batch normalization `y = (x - mean) / sqrt(var + eps) * scale + bias` over axis 1, between a
/// DequantizeLinear and a QuantizeLinear (onnxruntime runs it in float there): one table per
/// channel, the exact result of each of the 256 inputs rounded once. A depthwise convolution with
/// `±127` weights would need a bias rounded to `|factor| / 127` input steps, off by up to
/// 1/254 of an output step, enough to move one value in a few hundred across a rounding boundary.
pub(super) fn batch_norm(w: &mut Walk<'_>, c: &Call<'_>) -> Result<Vec<TensorId>, String> {
    let (x, xq) = c.act(0)?;
    let xs = w.shape(x);
    if xs.len() < 2 {
        return Err(format!("a batch normalization of {xs:?}"));
    }
    let channels = xs[1];
    let reals = |i: usize| c.reals(i, channels);
    let (scale, bias, mean, var) = (reals(1)?, reals(2)?, reals(3)?, reals(4)?);
    let eps = c.attrs().float("epsilon", 1e-5) as f64;
    let factor: Vec<f64> = (0..channels).map(|k| scale[k] / (var[k] + eps).sqrt()).collect();
    let out = c.out();
    let (lo, hi) = (out.clamp.0 as f64, out.clamp.1 as f64);
    let inner = xs[2..].iter().product();
    let f = |k: usize, v: f32| ((v as f64 - mean[k]) * factor[k] + bias[k]).max(lo).min(hi) as f32;
    let (op, tables) = Lut::per_channel(xq, out.q, channels, inner, f)?;
    let tables = w.constant_tensor(c.node, "tables", vec![channels, 256], tables);
    Ok(vec![w.step(c, Op::Lut(op), vec![x, tables], xs)])
}

/// The real function an elementwise operator computes, with its attributes.
fn real_function(w: &Walk<'_>, op: &str, node: &pb::NodeProto) -> Result<Box<dyn Fn(f32) -> f32>, String> {
    let a = Attrs(&node.attribute);
    let alpha = |default: f32| a.float("alpha", default);
    Ok(match op {
        "Relu" => Box::new(|x: f32| x.max(0.0)),
        "Clip" => {
            let (lo, hi) = w.clip_range(node)?;
            Box::new(move |x: f32| x.max(lo).min(hi))
        }
        "Sigmoid" => Box::new(|x: f32| 1.0 / (1.0 + (-x).exp())),
        "Tanh" => Box::new(f32::tanh),
        "HardSwish" => Box::new(|x: f32| x * (x + 3.0).clamp(0.0, 6.0) / 6.0),
        "HardSigmoid" => {
            let (alpha, beta) = (alpha(0.2), a.float("beta", 0.5));
            Box::new(move |x: f32| (alpha * x + beta).clamp(0.0, 1.0))
        }
        "LeakyRelu" => {
            let alpha = alpha(0.01);
            Box::new(move |x: f32| if x < 0.0 { alpha * x } else { x })
        }
        "Elu" => {
            let alpha = alpha(1.0);
            Box::new(move |x: f32| if x < 0.0 { alpha * (x.exp() - 1.0) } else { x })
        }
        "Selu" => {
            let (alpha, gamma) = (alpha(1.673_263_2), a.float("gamma", 1.050_701));
            Box::new(move |x: f32| gamma * if x <= 0.0 { alpha * (x.exp() - 1.0) } else { x })
        }
        "Exp" => Box::new(f32::exp),
        "Softplus" => Box::new(|x: f32| x.exp().ln_1p()),
        "Softsign" => Box::new(|x: f32| x / (1.0 + x.abs())),
        "Neg" => Box::new(|x: f32| -x),
        "Abs" => Box::new(f32::abs),
        other => return Err(format!("no lookup table for {other}")),
    })
}

/// The float kernel of an elementwise operator run outside the quantized part of a graph.
pub(super) fn float_unary(w: &Walk<'_>, node: &pb::NodeProto) -> Option<Unary> {
    let a = Attrs(&node.attribute);
    Some(match node.op_type.as_str() {
        "Relu" => Unary::Relu,
        "Sigmoid" => Unary::Sigmoid,
        "Tanh" => Unary::Tanh,
        "Exp" => Unary::Exp,
        "Log" => Unary::Ln,
        "Sqrt" => Unary::Sqrt,
        "Reciprocal" => Unary::Reciprocal,
        "Abs" => Unary::Abs,
        "Neg" => Unary::Neg,
        "Erf" => Unary::Erf,
        "Floor" => Unary::Floor,
        "Ceil" => Unary::Ceil,
        "Round" => Unary::Round,
        "Sin" => Unary::Sin,
        "Cos" => Unary::Cos,
        "Softplus" => Unary::Softplus,
        "Softsign" => Unary::Softsign,
        "HardSwish" => Unary::HardSwish,
        "LeakyRelu" => Unary::LeakyRelu { alpha: a.float("alpha", 0.01) },
        "Clip" => {
            let (min, max) = w.clip_range(node).ok()?;
            Unary::Clip { min, max }
        }
        _ => return None,
    })
}
