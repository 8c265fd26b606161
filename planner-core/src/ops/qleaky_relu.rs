//! TFLite Micro's int16 LEAKY_RELU (16x8 mode; 8-bit ones are tables, [`super::lut`]):
//! `runtime_min::quant::leaky_relu_s16`.

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min::quant as rtq;

use super::qparams::{requant_expr, Convention, QParams};
use super::{OpKind, Operands, Scratch, Step, Target};

/// An int16 leaky ReLU; input `[x]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QLeakyRelu(pub rtq::LeakyReluS16);

impl QLeakyRelu {
    /// `x` to `y` with slope `alpha` below zero: TFLite Micro's multipliers, the ratios of scales
    /// taken in `f32` (`leaky_relu_common.cc`).
    pub fn new(x: QParams, y: QParams, alpha: f32) -> Result<QLeakyRelu, String> {
        let identity = Convention::Tflite.requant((x.scale / y.scale) as f64)?;
        let alpha = Convention::Tflite.requant((x.scale * alpha / y.scale) as f64)?;
        Ok(QLeakyRelu(rtq::LeakyReluS16 { x_zero_point: x.zero_point, y_zero_point: y.zero_point, identity, alpha }))
    }
}

impl OpKind for QLeakyRelu {
    fn kernel_name(&self) -> &'static str {
        "quant::leaky_relu_s16"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let rtq::LeakyReluS16 { x_zero_point, y_zero_point, identity, alpha } = self.0;
        let (identity, alpha) = (requant_expr(identity), requant_expr(alpha));
        let (x, y) = (&s.inputs[0], &s.output);
        quote!(::sramfit::kernels::quant::leaky_relu_s16(&::sramfit::kernels::quant::LeakyReluS16 {
            x_zero_point: #x_zero_point, y_zero_point: #y_zero_point, identity: #identity, alpha: #alpha,
        }, #x, #y);)
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

    fn in_place_inputs(&self, _: &Operands<'_>) -> Vec<usize> {
        Vec::new()
    }
}

#[cfg(feature = "onnx")]
pub(crate) use super::lowering::from_protobuf as lower;
