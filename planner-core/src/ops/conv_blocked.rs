//! A convolution on channel-blocked activations (`runtime_min::conv2d_blocked`: pointwise and
//! 3x3 depthwise layers between whole blocks of 16 channels), with the bits of
//! `runtime_min::conv2d` on the NCHW tensors: only [`crate::optimize::blocked`] makes it, from a
//! [`rt::Conv2d`] step.

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min as rt;

use super::conv::params;
use super::{OpKind, Operands, Scratch, Step, Target};

/// Convolution `.0` of a channel-blocked input into a channel-blocked output (both keep their
/// NCHW shapes); inputs `[x, weights, bias?]`, the weights as [`rt::conv2d`] takes them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConvBlocked(pub rt::Conv2d);

impl OpKind for ConvBlocked {
    fn kernel_name(&self) -> &'static str {
        "conv2d_blocked"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let (x, w, y, bias, p) = (&s.inputs[0], &s.inputs[1], &s.output, s.optional(2), params(&self.0));
        quote!(::sramfit::kernels::conv2d_blocked(&#p, #x, #w, #bias, #y);)
    }

    fn macs(&self, o: &Operands<'_>) -> u64 {
        self.0.macs(o)
    }

    fn scratch(&self) -> Scratch {
        Scratch::NONE
    }

    fn stack_bytes(&self, target: Target) -> u64 {
        rt::conv2d_blocked_stack_bytes(target) as u64
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
