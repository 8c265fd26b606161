//! Quantized fully connected layer (a constant weight matrix: QDQ Gemm / MatMul by a constant,
//! QGemm, QLinearMatMul by a constant): `runtime_min::quant::fully_connected`.

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min::quant as rtq;

use super::qparams::{channel_quant_expr, channel_requant, Convention, QParams, QWeights};
use super::{Target, OpKind, Operands, Scratch, Step};
use crate::tensor::Data;

/// A quantized fully connected layer; inputs `[x, weights ([out, in]), folded bias, multipliers,
/// shifts]`, rounded as the second field says ([`channel_requant`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QFullyConnected(pub rtq::FullyConnected, pub rtq::RequantRounding);

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
        if x.dtype != y.dtype {
            return Err("input and output of different integer types".into());
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
        Ok((QFullyConnected(p, rounding), vec![Data::I8(w.values.clone()), Data::I32(folded), multipliers, shifts]))
    }
}

impl OpKind for QFullyConnected {
    fn kernel_name(&self) -> &'static str {
        "quant::fully_connected"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let rtq::FullyConnected { batch, in_features, out_features, w_zero_point, y_zero_point, act_min, act_max } =
            self.0;
        let p = quote!(::sramfit::kernels::quant::FullyConnected {
            batch: #batch, in_features: #in_features, out_features: #out_features,
            w_zero_point: #w_zero_point, y_zero_point: #y_zero_point, act_min: #act_min, act_max: #act_max,
        });
        let [x, w, bias, multipliers, shifts] = &s.inputs[..] else { unreachable!("five inputs") };
        let y = &s.output;
        let q = channel_quant_expr([bias, multipliers, shifts], self.1);
        quote!(::sramfit::kernels::quant::fully_connected(&#p, #x, #w, #q, #y);)
    }

    fn macs(&self, _: &Operands<'_>) -> u64 {
        (self.0.batch * self.0.in_features * self.0.out_features) as u64
    }

    fn scratch(&self) -> Scratch {
        Scratch::NONE
    }

    fn stack_bytes(&self, _: Target) -> u64 {
        // No local arrays.
        0
    }

    fn in_place_inputs(&self, _: &Operands<'_>) -> Vec<usize> {
        Vec::new()
    }
}

#[cfg(feature = "onnx")]
pub(crate) use super::lowering::from_protobuf as lower;
