//! TensorFlow Lite's hybrid convolution: float activations, int8 weights (per tensor), the input
//! quantized to int8 when the layer runs (`runtime_min::quant::hybrid_conv2d`, scratch: the
//! quantized input).

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min::quant as rtq;

use super::literal::f32_expr;
use super::{OpKind, Operands, Scratch, Step, Target};
use crate::tensor::DType;

/// A hybrid convolution; inputs `[x (f32), weights (i8, OHWI), bias (f32)]` (the bias may be
/// left out).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QHybridConv(pub rtq::HybridConv2d);

impl OpKind for QHybridConv {
    fn kernel_name(&self) -> &'static str {
        "quant::hybrid_conv2d"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let rtq::HybridConv2d { conv, weight_scale, act_min, act_max } = self.0;
        let conv = super::qconv::params(&conv);
        let (weight_scale, act_min, act_max) = (f32_expr(weight_scale), f32_expr(act_min), f32_expr(act_max));
        let (x, w, y) = (&s.inputs[0], &s.inputs[1], &s.output);
        let bias = s.inputs.get(2).map_or(quote!(&[]), |b| quote!(#b));
        let scratch = s.scratch_or_empty();
        quote!(::sramfit::kernels::quant::hybrid_conv2d(&::sramfit::kernels::quant::HybridConv2d {
            conv: #conv, weight_scale: #weight_scale, act_min: #act_min, act_max: #act_max,
        }, #x, #w, #bias, #y, #scratch);)
    }

    fn macs(&self, o: &Operands<'_>) -> u64 {
        o.output.len() as u64 * self.0.conv.taps() as u64
    }

    fn scratch(&self) -> Scratch {
        // The quantized input, all of it or nothing.
        Scratch { dtype: DType::I8, preferred: rtq::hybrid_conv2d_scratch_len(&self.0), step: 0 }
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
