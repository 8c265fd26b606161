//! Quantized constants as the integer operators take them: 8-bit weights with one zero point and
//! per-tensor or per-output-channel scales, `int32` biases in accumulator units, and constant
//! operands of elementwise operators.

use sramfit_runtime_min::quant as rtq;

use super::onnx::elem;
use super::{Call, Operand, QConst, Walk};
use crate::ir::TensorId;
use crate::ops::qparams::{QParams, QWeights};
use crate::tensor::{DType, Data};

/// The weights of `q`, whose output channels (`channels` of them) run along `out_axis`: 8-bit, one
/// zero point (uint8 weights become int8 with the zero point moved by 128, exactly).
pub(super) fn qweights(q: &QConst, out_axis: usize, channels: usize) -> Result<QWeights, String> {
    let zero_point = q.zero_points[0];
    if q.zero_points.iter().any(|&z| z != zero_point) {
        return Err("weight zero points differ between channels (sramfit's kernels take one per tensor)".into());
    }
    if q.scales.len() > 1 && (q.axis != out_axis || q.scales.len() != channels) {
        return Err(format!(
            "{} weight scales along axis {} (one, or one per output channel along axis {out_axis}, are supported)",
            q.scales.len(),
            q.axis
        ));
    }
    let ints = q.values.ints()?;
    let (values, zero_point) = match q.values.elem {
        elem::INT8 => (ints.iter().map(|&v| v as i8).collect(), zero_point as i32),
        elem::UINT8 => {
            let u8s: Vec<u8> = ints.iter().map(|&v| v as u8).collect();
            let mut values = vec![0i8; u8s.len()];
            let zero_point = rtq::weights_u8_to_i8(&u8s, zero_point as i32, &mut values);
            (values, zero_point)
        }
        other => return Err(format!("{} weights (int8 and uint8 are supported)", super::onnx::elem_name(other))),
    };
    Ok(QWeights { values, scales: q.scales.clone(), zero_point })
}

/// The weights of ConvInteger / MatMulInteger, as [`qweights`] (scales not used), except that
/// zero points differing between output channels are subtracted from the weights here (zero
/// point 0), which works when every difference is an `int8`.
pub(super) fn integer_weights(q: &QConst, out_axis: usize, channels: usize) -> Result<QWeights, String> {
    if q.zero_points.iter().all(|&z| z == q.zero_points[0]) {
        return qweights(q, out_axis, channels);
    }
    if q.zero_points.len() != channels {
        return Err(format!("{} weight zero points for {channels} output channels", q.zero_points.len()));
    }
    let ints = q.values.ints()?;
    let inner: usize = q.values.shape.get(out_axis + 1..).map_or(1, |s| s.iter().product());
    let values = (ints.iter().enumerate())
        .map(|(i, &v)| {
            let d = v - q.zero_points[(i / inner.max(1)) % channels];
            i8::try_from(d).map_err(|_| {
                format!("weight {v} minus its channel's zero point is {d}, outside int8 (sramfit's kernels take one zero point per tensor)")
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(QWeights { values, scales: vec![1.0], zero_point: 0 })
}

/// The bias of an operator with `channels` outputs, in units of `x_scale * w.scale(o)` scaled by
/// `beta`: a QOperator `int32` bias is already in them; a quantized one whose scale is that product
/// is taken as it is; any other (float, or quantized with another scale) is rounded to them.
pub(super) fn bias(
    operand: Option<&Operand>,
    x_scale: f32,
    w: &QWeights,
    channels: usize,
    beta: f32,
) -> Result<Vec<i32>, String> {
    let reals: Vec<f32> = match operand {
        None | Some(Operand::Absent) => return Ok(Vec::new()),
        Some(Operand::Const(k)) if k.elem == elem::INT32 && beta == 1.0 => {
            return broadcast(k.ints()?.iter().map(|&v| v as i32).collect(), channels)
        }
        Some(Operand::Const(k)) => k.floats(),
        Some(Operand::Weights(q)) => {
            let units = |c: usize| x_scale * w.scale(c);
            let same_units = (0..q.scales.len()).all(|c| (q.scales[c] - units(c)).abs() <= 1e-6 * units(c).abs());
            if q.values.elem == elem::INT32 && beta == 1.0 && q.zero_points.iter().all(|&z| z == 0) && same_units {
                return broadcast(q.values.ints()?.iter().map(|&v| v as i32).collect(), channels);
            }
            q.dequantized()?
        }
        Some(Operand::Act(..)) => return Err("a bias computed at run time".into()),
    };
    let reals = broadcast(reals, channels)?;
    Ok((0..channels)
        .map(|c| {
            let v = (reals[c] as f64 * beta as f64 / (x_scale as f64 * w.scale(c) as f64)).round();
            v.clamp(i32::MIN as f64, i32::MAX as f64) as i32
        })
        .collect())
}

/// One value per channel (a single value repeated).
fn broadcast<T: Copy>(v: Vec<T>, channels: usize) -> Result<Vec<T>, String> {
    match v.len() {
        n if n == channels => Ok(v),
        1 => Ok(vec![v[0]; channels]),
        n => Err(format!("a bias of {n} values for {channels} channels")),
    }
}

impl Walk<'_> {
    /// Operand `i` of `call` as an 8-bit tensor: a quantized activation, or a quantized
    /// constant (per tensor) stored as one.
    pub(super) fn operand_tensor(&mut self, call: &Call<'_>, i: usize) -> Result<(TensorId, QParams), String> {
        match call.operands.get(i) {
            Some(Operand::Act(t, q)) => Ok((*t, *q)),
            Some(Operand::Weights(w)) => {
                let [scale] = w.scales[..] else { return Err(format!("input {i}: a constant quantized per axis")) };
                let (data, dtype) = match w.values.elem {
                    elem::INT8 => (Data::I8(w.values.ints()?.iter().map(|&v| v as i8).collect()), DType::I8),
                    elem::UINT8 => (Data::U8(w.values.ints()?.iter().map(|&v| v as u8).collect()), DType::U8),
                    other => return Err(format!("input {i}: a {} constant", super::onnx::elem_name(other))),
                };
                let q = QParams { scale, zero_point: w.zero_points[0] as i32, dtype };
                let t = self.constant_tensor(call.node, &format!("input{i}"), w.values.shape.clone(), data);
                self.graph.tensors[t].quant = Some(q.quant());
                Ok((t, q))
            }
            _ => Err(format!("input {i} is not a quantized tensor")),
        }
    }
}
