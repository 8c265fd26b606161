//! Quantized matrix product of two activations (QDQ MatMul, QLinearMatMul; MatMulInteger into
//! `i32`), batched with NumPy broadcasting over up to four batch axes: `runtime_min::quant::matmul`.

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min::quant as rtq;

use super::qparams::{requant_expr, Convention, QParams};
use super::{Target, OpKind, Operands, Scratch, Step};
use crate::tensor::{strides_of, DType};

/// A quantized batched matrix product; inputs `[a, b]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QMatMul(pub rtq::MatMul);

/// The most batch axes the kernel walks.
const BATCH_AXES: usize = 4;

impl QMatMul {
    /// ONNX MatMul of `a` (shape `a_shape`) by `b` (`b_shape`) into `y`: the op and the output
    /// shape. A 1-D `a` is a row, a 1-D `b` a column (their axis is dropped from the output);
    /// batch axes broadcast. The multiplier is rounded as `convention` does.
    pub fn new(
        (a_shape, b_shape): (&[usize], &[usize]),
        (a, b, y): (QParams, QParams, QParams),
        clamp: (f32, f32),
        convention: Convention,
    ) -> Result<(QMatMul, Vec<usize>), String> {
        if [a, b, y].iter().any(|q| q.dtype == DType::I16) {
            return Err("a matrix product of int16 tensors (TFLite's 16x8 mode is not supported there)".into());
        }
        let (a2, b2) = (as_matrix(a_shape, true)?, as_matrix(b_shape, false)?);
        let (m, k, n) = (a2[a2.len() - 2], a2[a2.len() - 1], b2[b2.len() - 1]);
        if b2[b2.len() - 2] != k {
            return Err(format!("MatMul of {a_shape:?} by {b_shape:?}: inner extents differ"));
        }
        let (ab, bb) = (&a2[..a2.len() - 2], &b2[..b2.len() - 2]);
        let rank = ab.len().max(bb.len());
        if rank > BATCH_AXES {
            return Err(format!("{rank} batch axes (at most {BATCH_AXES})"));
        }
        // Batch axes right-aligned, padded with 1 to four.
        let pad = |s: &[usize]| -> Vec<usize> { [vec![1; BATCH_AXES - s.len()], s.to_vec()].concat() };
        let (ap, bp) = (pad(ab), pad(bb));
        let mut batch = [1usize; BATCH_AXES];
        for i in 0..BATCH_AXES {
            batch[i] = match (ap[i], bp[i]) {
                (x, y) if x == y => x,
                (1, y) => y,
                (x, 1) => x,
                _ => return Err(format!("MatMul of {a_shape:?} by {b_shape:?}: batch axes do not broadcast")),
            };
        }
        let strides = |s: &[usize], matrix: usize| -> [usize; BATCH_AXES] {
            let st = strides_of(s);
            // An axis of extent 1 never moves the index (and repeats when broadcast).
            std::array::from_fn(|i| if s[i] == 1 { 0 } else { st[i] * matrix })
        };
        let (act_min, act_max) = y.clamp(clamp);
        let p = rtq::MatMul {
            batch,
            a_batch_strides: strides(&ap[..], m * k),
            b_batch_strides: strides(&bp[..], k * n),
            c_batch_strides: strides(&batch[..], m * n),
            m,
            n,
            k,
            a_row_stride: k,
            a_col_stride: 1,
            b_row_stride: n,
            b_col_stride: 1,
            c_row_stride: n,
            a_zero_point: a.zero_point,
            b_zero_point: b.zero_point,
            c_zero_point: y.zero_point,
            requant: convention.requant(a.scale as f64 * b.scale as f64 / y.scale as f64)?,
            act_min,
            act_max,
        };
        let mut out: Vec<usize> = batch[BATCH_AXES - rank..].to_vec();
        if a_shape.len() > 1 {
            out.push(m);
        }
        if b_shape.len() > 1 {
            out.push(n);
        }
        Ok((QMatMul(p), out))
    }

    /// ONNX MatMulInteger of two activations: [`QMatMul::new`] into an `i32` output, which
    /// `quant::matmul` fills with the accumulators `sum (a - a.zero_point) * (b - b.zero_point)`
    /// (the scales are not read).
    pub fn accumulator(a_shape: &[usize], b_shape: &[usize], a: QParams, b: QParams) -> Result<(QMatMul, Vec<usize>), String> {
        let unit = |q: QParams| QParams { scale: 1.0, ..q };
        let y = QParams { scale: 1.0, zero_point: 0, dtype: a.dtype };
        QMatMul::new((a_shape, b_shape), (unit(a), unit(b), y), (f32::NEG_INFINITY, f32::INFINITY), Convention::Onnx)
    }
}

/// The shape as a batch of matrices: a 1-D `a` is one row, a 1-D `b` one column.
fn as_matrix(shape: &[usize], is_a: bool) -> Result<Vec<usize>, String> {
    match shape.len() {
        0 => Err("MatMul of a scalar".into()),
        1 if is_a => Ok(vec![1, shape[0]]),
        1 => Ok(vec![shape[0], 1]),
        _ => Ok(shape.to_vec()),
    }
}

impl OpKind for QMatMul {
    fn kernel_name(&self) -> &'static str {
        "quant::matmul"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let rtq::MatMul {
            batch,
            a_batch_strides,
            b_batch_strides,
            c_batch_strides,
            m,
            n,
            k,
            a_row_stride,
            a_col_stride,
            b_row_stride,
            b_col_stride,
            c_row_stride,
            a_zero_point,
            b_zero_point,
            c_zero_point,
            requant,
            act_min,
            act_max,
        } = self.0;
        let requant = requant_expr(requant);
        let p = quote!(::sramfit::kernels::quant::MatMul {
            batch: [#(#batch),*], a_batch_strides: [#(#a_batch_strides),*],
            b_batch_strides: [#(#b_batch_strides),*], c_batch_strides: [#(#c_batch_strides),*],
            m: #m, n: #n, k: #k, a_row_stride: #a_row_stride, a_col_stride: #a_col_stride,
            b_row_stride: #b_row_stride, b_col_stride: #b_col_stride, c_row_stride: #c_row_stride,
            a_zero_point: #a_zero_point, b_zero_point: #b_zero_point, c_zero_point: #c_zero_point,
            requant: #requant, act_min: #act_min, act_max: #act_max,
        });
        let (a, b, y) = (&s.inputs[0], &s.inputs[1], &s.output);
        quote!(::sramfit::kernels::quant::matmul(&#p, #a, #b, #y);)
    }

    fn macs(&self, _: &Operands<'_>) -> u64 {
        let p = &self.0;
        (p.batch.iter().product::<usize>() * p.m * p.n * p.k) as u64
    }

    fn scratch(&self) -> Scratch {
        Scratch::NONE
    }

    fn stack_bytes(&self, target: Target) -> u64 {
        sramfit_runtime_min::quant_matmul_stack_bytes(target) as u64
    }

    fn plane_order(&self) -> Option<crate::ops::PlaneOrder> {
        None
    }

    fn in_place_inputs(&self, _: &Operands<'_>) -> Vec<usize> {
        Vec::new()
    }
}

#[cfg(feature = "onnx")]
pub(crate) use super::lowering::from_protobuf as lower;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::DType;

    #[test]
    fn broadcasts_batch_axes() {
        let q = QParams { scale: 0.1, zero_point: 0, dtype: DType::I8 };
        let (op, out) = QMatMul::new((&[2, 1, 3, 4], &[5, 4, 6]), (q, q, q), (f32::NEG_INFINITY, f32::INFINITY), Convention::Onnx).unwrap();
        assert_eq!(out, vec![2, 5, 3, 6]);
        let p = op.0;
        assert_eq!(p.batch, [1, 1, 2, 5]);
        // `a` repeats along the axis of 5, `b` along the axis of 2.
        assert_eq!((p.a_batch_strides, p.b_batch_strides), ([0, 0, 12, 0], [0, 0, 0, 24]));
        assert_eq!(p.c_batch_strides, [0, 0, 90, 18]);
    }
}
