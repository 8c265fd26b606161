//! Conversions at a quantized model's float boundary: QuantizeLinear / QUANTIZE of a float tensor
//! (`runtime_min::quant::quantize`, ties to even as ONNX, away from zero as TFLite) and
//! DequantizeLinear / DEQUANTIZE to a float tensor (`dequantize`), per tensor or per axis.

use proc_macro2::TokenStream;
use quote::quote;

use super::literal::f32_expr;
use super::{Target, OpKind, Operands, Scratch, Step};

/// Which way a [`QConvert`] goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// `f32` to an 8-bit type, with ties to even (`true`: ONNX) or away from zero (TFLite).
    Quantize {
        /// Ties to even rather than away from zero.
        ties_to_even: bool,
    },
    /// An 8-bit type to `f32`.
    Dequantize,
}

/// A conversion between `f32` and an 8-bit type; input `[x]`. Element `i` uses
/// `params[(i / inner) % params.len()]`: one pair for the whole tensor, or one per index of the
/// quantized axis (`inner` the product of the axes after it).
#[derive(Clone, Debug, PartialEq)]
pub struct QConvert {
    /// Which way.
    pub direction: Direction,
    /// `(scale, zero_point)` for the tensor, or per index of the quantized axis.
    pub params: Vec<(f32, i32)>,
    /// Elements per index of the quantized axis (the whole tensor for one pair).
    pub inner: usize,
}

impl QConvert {
    fn kernel(&self) -> TokenStream {
        match self.direction {
            Direction::Quantize { ties_to_even } => {
                let rounding = match ties_to_even {
                    true => quote!(HalfToEven),
                    false => quote!(HalfAwayFromZero),
                };
                quote!(::sramfit::kernels::quant::quantize(__q, ::sramfit::kernels::quant::Rounding::#rounding, __x, __y))
            }
            Direction::Dequantize => quote!(::sramfit::kernels::quant::dequantize(__q, __x, __y)),
        }
    }
}

impl OpKind for QConvert {
    fn kernel_name(&self) -> &'static str {
        match self.direction {
            Direction::Quantize { .. } => "quant::quantize",
            Direction::Dequantize => "quant::dequantize",
        }
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let (x, y, call) = (&s.inputs[0], &s.output, self.kernel());
        let params: Vec<TokenStream> = (self.params.iter())
            .map(|&(scale, zero_point)| {
                let scale = f32_expr(scale);
                quote!(::sramfit::kernels::quant::Quantization { scale: #scale, zero_point: #zero_point })
            })
            .collect();
        if let [q] = &params[..] {
            return quote! {
                let (__q, __x, __y) = (&#q, #x, #y);
                #call;
            };
        }
        let inner = self.inner;
        quote! {
            const PARAMS: &[::sramfit::kernels::quant::Quantization] = &[#(#params),*];
            for (__i, (__x, __y)) in (#x).chunks_exact(#inner).zip((#y).chunks_exact_mut(#inner)).enumerate() {
                let __q = &PARAMS[__i % PARAMS.len()];
                #call;
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
