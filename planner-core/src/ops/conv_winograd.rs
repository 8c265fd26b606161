//! A 3x3 convolution by Winograd's F(2x2, 3x3) on channel-blocked activations
//! (`runtime_min::conv2d_winograd`): only [`crate::optimize::winograd`] makes it, from a
//! [`super::conv_blocked::ConvBlocked`] step, with its weights transformed at build time. Its
//! results round differently from the direct convolution's.

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min as rt;

use super::conv::params;
use super::{OpKind, Operands, Scratch, Step, Target};
use crate::tensor::DType;

/// Convolution `.0` ([`rt::winograd_applies`]) of a channel-blocked input into a channel-blocked
/// output; inputs `[x, transformed weights (rt::winograd_weight_index), bias?]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConvWinograd(pub rt::Conv2d);

impl OpKind for ConvWinograd {
    fn kernel_name(&self) -> &'static str {
        "conv2d_winograd"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let (x, w, y, bias, p) = (&s.inputs[0], &s.inputs[1], &s.output, s.optional(2), params(&self.0));
        let scratch = s.scratch_or_empty();
        quote!(::sramfit::kernels::conv2d_winograd(&#p, #x, #w, #bias, #y, #scratch);)
    }

    /// The direct convolution's: the work the layer stands for, so that reports and GFLOP/s
    /// figures compare with the other engines'.
    fn macs(&self, o: &Operands<'_>) -> u64 {
        self.0.macs(o)
    }

    /// One chunk's transformed tiles, all of it: the kernel has no variant with less.
    fn scratch(&self) -> Scratch {
        Scratch { dtype: DType::F32, preferred: rt::conv2d_winograd_scratch_len(&self.0), step: 0 }
    }

    fn stack_bytes(&self, target: Target) -> u64 {
        rt::conv2d_winograd_stack_bytes(target) as u64
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
