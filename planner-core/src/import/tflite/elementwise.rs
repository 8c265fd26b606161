//! ADD, SUB, MUL with TFLite's rescaling; LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU, RELU and RELU6
//! as 256-entry tables of TFLite Micro's integer algorithms (on int16: RELU, RELU6 and LEAKY_RELU
//! computed elementwise, the others refused); QUANTIZE and DEQUANTIZE.

use sramfit_runtime_min::quant::{self as rtq, QuantInt};

use super::{fused, OpCall, Walk};
use crate::import::quant::broadcast_shape;
use crate::ir::{Op, TensorId};
use crate::ops::lowering::broadcast_strides;
use crate::ops::lut::Lut;
use crate::ops::qbinary::{Arith, QBinary};
use crate::ops::qconvert::{Direction, QConvert};
use crate::ops::qparams::{on_dtype, Convention, QParams};
use crate::ops::requantize::Requantize;
use crate::tensor::DType;

/// ADD, SUB, MUL with broadcasting; a constant operand becomes a quantized constant tensor.
pub(super) fn binary(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let ((a, aq), (b, bq)) = (w.operand(c, 0)?, w.operand(c, 1)?);
    let (sa, sb) = (w.graph.tensors[a].shape.clone(), w.graph.tensors[b].shape.clone());
    let out_shape = broadcast_shape(&sa, &sb)?;
    let (arith, activation) = match c.op {
        "ADD" => (Arith::Add, c.table.builtin_options_as_add_options().map(|o| o.fused_activation_function())),
        "SUB" => (Arith::Sub, c.table.builtin_options_as_sub_options().map(|o| o.fused_activation_function())),
        _ => (Arith::Mul, c.table.builtin_options_as_mul_options().map(|o| o.fused_activation_function())),
    };
    let clamp = activation.map(fused).transpose()?.unwrap_or((f32::NEG_INFINITY, f32::INFINITY));
    let yq = w.out_q(c, 0)?;
    let strides = (broadcast_strides(&sa, &out_shape), broadcast_strides(&sb, &out_shape));
    let op = QBinary::new(arith, (aq, bq, yq), clamp, strides, Convention::Tflite)?;
    let y = w.output(c, 0, out_shape, Some(yq))?;
    w.push(c, Op::QBinary(op), vec![a, b], y);
    Ok(())
}

/// A function of one 8-bit input as its table over every input value.
pub(super) fn table(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let x = w.act(c, 0)?;
    let xq = QParams::of(&w.graph.tensors[x])?;
    let yq = w.out_q(c, 0)?;
    if xq.dtype != yq.dtype {
        return Err("input and output of different integer types".into());
    }
    if xq.dtype == DType::I16 {
        return activation_s16(w, c, x, (xq, yq));
    }
    let fixed = |scale: f32, zero_point: i32| -> Result<(), String> {
        match yq.scale == scale && yq.zero_point == zero_point {
            true => Ok(()),
            false => Err(format!(
                "an output quantized with scale {} and zero point {} (TFLite's is {scale}, {zero_point})",
                yq.scale, yq.zero_point
            )),
        }
    };
    let entries: Vec<i32> = on_dtype!(xq.dtype, T => {
        let table: [T; 256] = match c.op {
            "LOGISTIC" => {
                fixed(1.0 / 256.0, <T as QuantInt>::MIN)?;
                rtq::logistic_table(xq.scale, xq.zero_point)
            }
            "TANH" => {
                fixed(1.0 / 128.0, (<T as QuantInt>::MIN + <T as QuantInt>::MAX + 1) / 2)?;
                rtq::tanh_table(xq.scale, xq.zero_point)
            }
            "HARD_SWISH" => rtq::hard_swish_table(xq.scale, xq.zero_point, yq.scale, yq.zero_point)
                .ok_or("an output scale below input scale / 128 (TFLite rejects it)")?,
            "LEAKY_RELU" => {
                let alpha = c.table.builtin_options_as_leaky_relu_options().map_or(0.2, |o| o.alpha());
                rtq::leaky_relu_table(xq.scale, xq.zero_point, alpha, yq.scale, yq.zero_point)
            }
            "RELU" => rtq::relu_table(xq.scale, xq.zero_point, yq.scale, yq.zero_point),
            "RELU6" => rtq::relu6_table(xq.scale, xq.zero_point),
            other => return Err(format!("{other} on integers is not supported")),
        };
        table.iter().map(|v| v.to_i32()).collect()
    });
    let data = crate::ops::qparams::int_data(yq.dtype, entries.into_iter());
    let table = w.graph.add_const(format!("{}.table", c.name), vec![256], data);
    let shape = w.graph.tensors[x].shape.clone();
    let y = w.output(c, 0, shape, Some(yq))?;
    w.push(c, Op::Lut(Lut { channels: 1, inner: 1 }), vec![x, table], y);
    Ok(())
}

/// RELU and RELU6 on int16 (TFLite Micro's `ReluQuantized`: the input rescaled by the ratio of
/// scales taken in `f32`, clamped at the output's zero; `Relu6Quantized`: the input clamped to
/// `[zero point, 6]` in its own quantization, not rescaled) as a clamped requantization, and
/// LEAKY_RELU; the other table functions have no int16 form in sramfit.
fn activation_s16(w: &mut Walk<'_>, c: &OpCall<'_>, x: TensorId, (xq, yq): (QParams, QParams)) -> Result<(), String> {
    let len = w.graph.tensors[x].len();
    let op = match c.op {
        "RELU" => {
            let requant = Convention::Tflite.requant((xq.scale / yq.scale) as f64)?;
            Op::Requantize(Requantize::clamped(
                len,
                (xq.zero_point, yq.zero_point),
                requant,
                yq.clamp((0.0, f32::INFINITY)),
            ))
        }
        "RELU6" => {
            // TFLite Micro's `FloatToQuantizedType<int16_t>(6.0f, ..)`, kept inside int16.
            let six = ((6.0 / xq.scale).round() as i64 + xq.zero_point as i64).clamp(i16::MIN.into(), i16::MAX.into());
            let identity = rtq::quantize_multiplier(1.0);
            Op::Requantize(Requantize::clamped(
                len,
                (xq.zero_point, xq.zero_point),
                identity,
                (xq.zero_point, six as i32),
            ))
        }
        "LEAKY_RELU" => {
            let alpha = c.table.builtin_options_as_leaky_relu_options().map_or(0.2, |o| o.alpha());
            Op::Requantize(Requantize::leaky_relu_s16(xq, yq, alpha)?)
        }
        _ => return Err(super::not_in_16x8(c)),
    };
    let shape = w.graph.tensors[x].shape.clone();
    let y = w.output(c, 0, shape, Some(yq))?;
    w.push(c, op, vec![x], y);
    Ok(())
}

/// QUANTIZE (float to 8-bit, ties away from zero; or an 8-bit requantization) and DEQUANTIZE.
pub(super) fn convert(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let x = w.act(c, 0)?;
    let (shape, dtype) = (w.graph.tensors[x].shape.clone(), w.graph.tensors[x].dtype);
    let len = w.graph.tensors[x].len();
    match (c.op, dtype) {
        ("QUANTIZE", DType::F32) => {
            let yq = w.out_q(c, 0)?;
            let op = QConvert {
                direction: Direction::Quantize { ties_to_even: false },
                params: vec![(yq.scale, yq.zero_point)],
                inner: len,
            };
            let y = w.output(c, 0, shape, Some(yq))?;
            w.push(c, Op::QConvert(op), vec![x], y);
        }
        ("QUANTIZE", _) => {
            let (xq, yq) = (QParams::of(&w.graph.tensors[x])?, w.out_q(c, 0)?);
            let y = w.output(c, 0, shape, Some(yq))?;
            w.push(c, Op::Requantize(Requantize::new(len, xq, yq, Convention::Tflite)?), vec![x], y);
        }
        ("DEQUANTIZE", DType::I8 | DType::U8 | DType::I16) => {
            let xq = QParams::of(&w.graph.tensors[x])?;
            let op = QConvert { direction: Direction::Dequantize, params: vec![(xq.scale, xq.zero_point)], inner: len };
            let y = w.output(c, 0, shape, None)?;
            w.push(c, Op::QConvert(op), vec![x], y);
        }
        (_, other) => return Err(format!("{} of {}", c.op, other.rust_name())),
    }
    Ok(())
}
