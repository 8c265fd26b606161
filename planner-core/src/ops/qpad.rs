//! Constant padding (and cropping) of an 8-bit tensor, the pad value usually the zero point (the
//! quantized 0): `runtime_min::quant::pad`.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::literal::slice_expr;
use super::{Target, OpKind, Operands, Scratch, Step};
use crate::tensor::DType;

/// A constant padding; input `[x]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QPad {
    /// Shape of the input.
    pub in_shape: Vec<usize>,
    /// Elements added before each axis (negative: cropped).
    pub pads_begin: Vec<isize>,
    /// Shape of the output.
    pub out_shape: Vec<usize>,
    /// The value of the added elements, in the element type's range.
    pub value: i32,
    /// The element type (`I8`, `U8` or `I16`).
    pub dtype: DType,
}

impl OpKind for QPad {
    fn kernel_name(&self) -> &'static str {
        "quant::pad"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let (ins, begin, outs) = (slice_expr(&self.in_shape), slice_expr(&self.pads_begin), slice_expr(&self.out_shape));
        let value = match self.dtype {
            DType::U8 => Literal::u8_suffixed(self.value as u8),
            DType::I16 => Literal::i16_suffixed(self.value as i16),
            _ => Literal::i8_suffixed(self.value as i8),
        };
        let (x, y) = (&s.inputs[0], &s.output);
        quote!(::sramfit::kernels::quant::pad(
            &::sramfit::kernels::quant::Pad { in_shape: #ins, pads_begin: #begin, out_shape: #outs },
            #x, #y, #value);)
    }

    fn macs(&self, _: &Operands<'_>) -> u64 {
        0
    }

    fn scratch(&self) -> Scratch {
        Scratch::NONE
    }

    fn stack_bytes(&self, target: Target) -> u64 {
        sramfit_runtime_min::rank_generic_stack_bytes(target) as u64
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
