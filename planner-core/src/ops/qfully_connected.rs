//! Quantized fully connected layer (a constant weight matrix: QDQ Gemm / MatMul by a constant,
//! QGemm, QLinearMatMul by a constant, TFLite FULLY_CONNECTED): `runtime_min::quant::fully_connected`,
//! or `fully_connected_s16` on `i16` activations (TFLite's 16x8 mode, `i64` biases).

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min::quant as rtq;

use super::qconv::{s16_bias, s16_requant};
use super::qparams::{channel_quant_expr, channel_requant, Convention, QParams, QWeights};
use super::{Target, OpKind, Operands, Scratch, Step};
use crate::tensor::{DType, Data};

/// A quantized fully connected layer; inputs `[x, weights ([out, in]), folded bias, multipliers,
/// shifts]`, rounded as `rounding` says ([`channel_requant`]); for `i16` activations the bias is
/// `i64`, as word pairs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QFullyConnected {
    /// Geometry, zero points and clamp.
    pub params: rtq::FullyConnected,
    /// The activation type: `I8`, `U8`, or `I16` ([`QFullyConnected::new_s16`]).
    pub dtype: DType,
    /// How the 8-bit output stage rounds (not read for `I16`).
    pub rounding: rtq::RequantRounding,
}

impl QFullyConnected {
    /// `y[b] = w x[b] + bias` for the `batch`, `in_features` and `out_features` of `geometry`
    /// (its zero points and clamp are set here), weights `[out_features, in_features]` and `bias`
    /// in units of `x.scale * w.scale(o)` (or empty): the op and its constants `[weights, folded
    /// bias, multipliers, shifts]` (one multiplier per weight scale, see [`channel_requant`]).
    pub fn new(
        geometry: rtq::FullyConnected,
        (x, w, y): (QParams, &QWeights, QParams),
        bias: &[i32],
        clamp: (f32, f32),
        convention: Convention,
    ) -> Result<(QFullyConnected, Vec<Data>), String> {
        let rtq::FullyConnected { batch, in_features, out_features, .. } = geometry;
        if x.dtype != y.dtype || x.dtype == DType::I16 {
            return Err("input and output of different integer types, or int16 ones (QFullyConnected::new_s16)".into());
        }
        if w.values.len() != in_features * out_features {
            return Err(format!("{} weights for a {in_features} x {out_features} matrix", w.values.len()));
        }
        if !(w.scales.len() == 1 || w.scales.len() == out_features) || !(bias.is_empty() || bias.len() == out_features)
        {
            return Err("per-channel weight scales or biases do not match the output features".into());
        }
        let mut folded = vec![0i32; out_features];
        rtq::fold_bias(&w.values, bias, x.zero_point, w.zero_point, &mut folded);
        // The scales multiplied in f64: TensorFlow Lite Micro's outputs on the MLPerf Tiny AD
        // model agree with that, not with the f32 product of `GetQuantizedConvolutionMultipler`
        // (`rtq::fully_connected_requant`: one element in 12,800 differs).
        let reals = w.scales.iter().map(|&ws| x.scale as f64 * ws as f64 / y.scale as f64);
        let (multipliers, shifts, rounding) = channel_requant(convention, reals)?;
        let (act_min, act_max) = y.clamp(clamp);
        let p = rtq::FullyConnected {
            batch,
            in_features,
            out_features,
            w_zero_point: w.zero_point,
            y_zero_point: y.zero_point,
            act_min,
            act_max,
        };
        let op = QFullyConnected { params: p, dtype: x.dtype, rounding };
        Ok((op, vec![Data::I8(w.values.clone()), Data::I32(folded), multipliers, shifts]))
    }

    /// [`QFullyConnected::new`] on `i16` activations (TFLite's 16x8 mode: `x` and `y` symmetric,
    /// zero point 0, weights symmetric) with `i64` biases: the op and its constants `[weights,
    /// bias words, multipliers, shifts]`.
    pub fn new_s16(
        geometry: rtq::FullyConnected,
        (x, w, y): (QParams, &QWeights, QParams),
        bias: &[i64],
        clamp: (f32, f32),
    ) -> Result<(QFullyConnected, Vec<Data>), String> {
        let rtq::FullyConnected { batch, in_features, out_features, .. } = geometry;
        if w.values.len() != in_features * out_features || !(bias.is_empty() || bias.len() == out_features) {
            return Err(format!("{} weights and {} biases for a {in_features} x {out_features} matrix", w.values.len(), bias.len()));
        }
        let (multipliers, shifts) = s16_requant(x, w, y)?;
        let (act_min, act_max) = y.clamp(clamp);
        let params = rtq::FullyConnected { batch, in_features, out_features, w_zero_point: 0, y_zero_point: 0, act_min, act_max };
        let consts = vec![Data::I8(w.values.clone()), s16_bias(bias, out_features), multipliers, shifts];
        let op = QFullyConnected { params, dtype: DType::I16, rounding: rtq::RequantRounding::Double };
        Ok((op, consts))
    }
}

impl OpKind for QFullyConnected {
    fn kernel_name(&self) -> &'static str {
        match self.dtype {
            DType::I16 => "quant::fully_connected_s16",
            _ => "quant::fully_connected",
        }
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let rtq::FullyConnected { batch, in_features, out_features, w_zero_point, y_zero_point, act_min, act_max } =
            self.params;
        let p = quote!(::sramfit::kernels::quant::FullyConnected {
            batch: #batch, in_features: #in_features, out_features: #out_features,
            w_zero_point: #w_zero_point, y_zero_point: #y_zero_point, act_min: #act_min, act_max: #act_max,
        });
        let [x, w, bias, multipliers, shifts] = &s.inputs[..] else { unreachable!("five inputs") };
        let y = &s.output;
        if self.dtype == DType::I16 {
            return quote!(::sramfit::kernels::quant::fully_connected_s16(&#p, #x, #w,
                &::sramfit::kernels::quant::ChannelQuantS16 { bias: #bias, multipliers: #multipliers, shifts: #shifts }, #y););
        }
        let q = channel_quant_expr([bias, multipliers, shifts], self.rounding);
        quote!(::sramfit::kernels::quant::fully_connected(&#p, #x, #w, #q, #y);)
    }

    fn macs(&self, _: &Operands<'_>) -> u64 {
        (self.params.batch * self.params.in_features * self.params.out_features) as u64
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
