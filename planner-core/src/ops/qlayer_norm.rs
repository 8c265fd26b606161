//! Quantized layer normalization (a QDQ LayerNormalization group): `runtime_min::quant::layer_norm`.

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min::quant as rtq;

use super::qparams::QParams;
use super::{OpKind, Operands, Scratch, Step, Target};
use crate::tensor::Data;

/// An integer layer normalization of contiguous rows; inputs `[x, gains, offsets]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QLayerNorm(pub rtq::LayerNorm);

impl QLayerNorm {
    /// The normalization of `rows` rows of `len` elements from `x` into `y`, with the real
    /// per-element `scale` and `bias` (ONNX's, `len` each) and `epsilon`: the op and its
    /// constants `[gains, offsets]`: `scale / y.scale` and `bias / y.scale` in `i32` fixed point,
    /// with as many fractional bits as keep the largest of them below `2^30`.
    pub fn new(
        (rows, len): (usize, usize),
        (x, y): (QParams, QParams),
        (scale, bias): (&[f64], &[f64]),
        epsilon: f64,
    ) -> Result<(QLayerNorm, Vec<Data>), String> {
        if x.dtype != y.dtype {
            return Err("input and output of different integer types".into());
        }
        if len == 0 || scale.len() != len || bias.len() != len {
            return Err(format!("{} scales and {} biases for rows of {len}", scale.len(), bias.len()));
        }
        let ys = y.scale as f64;
        let largest = scale.iter().chain(bias).map(|v| (v / ys).abs()).fold(0.0f64, f64::max);
        if !largest.is_finite() || largest >= (1u64 << 30) as f64 {
            return Err(format!("a scale or bias of {largest:e} output steps"));
        }
        // The most fractional bits that keep every value below 2^30 in magnitude.
        let frac_bits = if largest == 0.0 { 30 } else { (30 - largest.log2().floor() as i32 - 1).clamp(0, 62) as u32 };
        let fixed = |v: &[f64]| Data::I32(v.iter().map(|&r| (r / ys * (1u64 << frac_bits) as f64).round() as i32).collect());
        let p = rtq::LayerNorm {
            rows,
            len,
            x_zero_point: x.zero_point,
            y_zero_point: y.zero_point,
            epsilon: rtq::layer_norm_epsilon(len, epsilon, x.scale as f64),
            frac_bits,
        };
        Ok((QLayerNorm(p), vec![fixed(scale), fixed(bias)]))
    }
}

impl OpKind for QLayerNorm {
    fn kernel_name(&self) -> &'static str {
        "quant::layer_norm"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let rtq::LayerNorm { rows, len, x_zero_point, y_zero_point, epsilon, frac_bits } = self.0;
        let [x, gains, offsets] = &s.inputs[..] else { unreachable!("three inputs") };
        let y = &s.output;
        quote!(::sramfit::kernels::quant::layer_norm(&::sramfit::kernels::quant::LayerNorm {
            rows: #rows, len: #len, x_zero_point: #x_zero_point, y_zero_point: #y_zero_point,
            epsilon: #epsilon, frac_bits: #frac_bits,
        }, #x, #gains, #offsets, #y);)
    }

    fn macs(&self, _: &Operands<'_>) -> u64 {
        0
    }

    fn scratch(&self) -> Scratch {
        Scratch::NONE
    }

    fn stack_bytes(&self, _: Target) -> u64 {
        // No local arrays.
        0
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
