//! Requantization of a whole integer tensor into another scale, zero point or type (a
//! DequantizeLinear -> QuantizeLinear pair with other parameters, a softmax's fixed output
//! quantization brought to the graph's, TFLite QUANTIZE between integer types), with an optional
//! narrower clamp (TFLite Micro's int16 RELU and RELU6): `runtime_min::quant::requantize`; or with
//! one multiplier per sign (TFLite Micro's int16 LEAKY_RELU): `leaky_relu_s16`.

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min::quant as rtq;

use super::qparams::{requant_expr, Convention, QParams};
use super::{Target, OpKind, Operands, Scratch, Step};

/// A requantization; input `[x]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requantize {
    /// One multiplier, then a clamp.
    Linear(rtq::Requantize),
    /// One multiplier for `x - x_zero_point >= 0`, `alpha` times it below (int16 only).
    LeakyReluS16(rtq::LeakyReluS16),
}

impl Requantize {
    /// `len` values from `x`'s quantization to `y`'s, the multiplier rounded as `convention` does
    /// (refused when the ratio of scales leaves the kernels' range).
    pub fn new(len: usize, x: QParams, y: QParams, convention: Convention) -> Result<Requantize, String> {
        Ok(Requantize::Linear(rows((1, len), (len, len), (x, y), convention)?))
    }

    /// `len` values from zero point `x_zero_point` to `y_zero_point`, multiplied by `requant` and
    /// clamped to `[act_min, act_max]` (TFLite Micro's quantized RELU, whose multiplier is the
    /// scales' ratio taken in `f32`, and RELU6, no rescaling at all).
    pub fn clamped(
        len: usize,
        (x_zero_point, y_zero_point): (i32, i32),
        requant: rtq::Requant,
        (act_min, act_max): (i32, i32),
    ) -> Requantize {
        Requantize::Linear(rtq::Requantize {
            rows: 1,
            cols: len,
            x_row_stride: len,
            y_row_stride: len,
            x_zero_point,
            y_zero_point,
            requant,
            act_min,
            act_max,
        })
    }

    /// TFLite Micro's int16 LEAKY_RELU from `x` to `y` with slope `alpha` below zero
    /// (`leaky_relu_common.cc`: both multipliers from ratios of scales taken in `f32`).
    pub fn leaky_relu_s16(x: QParams, y: QParams, alpha: f32) -> Result<Requantize, String> {
        let identity = Convention::Tflite.requant((x.scale / y.scale) as f64)?;
        let alpha = Convention::Tflite.requant((x.scale * alpha / y.scale) as f64)?;
        let p = rtq::LeakyReluS16 { x_zero_point: x.zero_point, y_zero_point: y.zero_point, identity, alpha };
        Ok(Requantize::LeakyReluS16(p))
    }
}

/// A [`rtq::Requantize`] of `rows` rows of `cols` values from `x` into `y` (rows `x_row_stride`
/// and `y_row_stride` elements apart).
pub fn rows(
    (rows, cols): (usize, usize),
    (x_row_stride, y_row_stride): (usize, usize),
    (x, y): (QParams, QParams),
    convention: Convention,
) -> Result<rtq::Requantize, String> {
    Ok(rtq::Requantize {
        rows,
        cols,
        x_row_stride,
        y_row_stride,
        x_zero_point: x.zero_point,
        y_zero_point: y.zero_point,
        requant: convention.requant(x.scale as f64 / y.scale as f64)?,
        act_min: y.range().0,
        act_max: y.range().1,
    })
}

/// A [`rtq::Requantize`] expression.
pub fn params(p: &rtq::Requantize) -> TokenStream {
    let rtq::Requantize { rows, cols, x_row_stride, y_row_stride, x_zero_point, y_zero_point, requant, act_min, act_max } =
        *p;
    let requant = requant_expr(requant);
    quote!(::sramfit::kernels::quant::Requantize {
        rows: #rows, cols: #cols, x_row_stride: #x_row_stride, y_row_stride: #y_row_stride,
        x_zero_point: #x_zero_point, y_zero_point: #y_zero_point, requant: #requant,
        act_min: #act_min, act_max: #act_max,
    })
}

impl OpKind for Requantize {
    fn kernel_name(&self) -> &'static str {
        match self {
            Requantize::Linear(_) => "quant::requantize",
            Requantize::LeakyReluS16(_) => "quant::leaky_relu_s16",
        }
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let (x, y) = (&s.inputs[0], &s.output);
        match self {
            Requantize::Linear(p) => {
                let p = params(p);
                quote!(::sramfit::kernels::quant::requantize(&#p, #x, #y);)
            }
            Requantize::LeakyReluS16(rtq::LeakyReluS16 { x_zero_point, y_zero_point, identity, alpha }) => {
                let (identity, alpha) = (requant_expr(*identity), requant_expr(*alpha));
                quote!(::sramfit::kernels::quant::leaky_relu_s16(&::sramfit::kernels::quant::LeakyReluS16 {
                    x_zero_point: #x_zero_point, y_zero_point: #y_zero_point, identity: #identity, alpha: #alpha,
                }, #x, #y);)
            }
        }
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
