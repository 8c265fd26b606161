//! A max pooling on channel-blocked activations (`runtime_min::max_pool2d_blocked`, 2-D windows
//! over whole blocks of 16 channels), with the bits of `runtime_min::max_pool2d` on the NCHW
//! tensors: only [`crate::optimize::blocked`] makes it, from a max [`super::pool::Pool`] step.

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min as rt;

use super::pool::params;
use super::{OpKind, Operands, Scratch, Step, Target};

/// Max pooling `.0` of a channel-blocked input into a channel-blocked output (both keep their
/// NCHW shapes); input `[x]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoolBlocked(pub rt::Pool2d);

impl OpKind for PoolBlocked {
    fn kernel_name(&self) -> &'static str {
        "max_pool2d_blocked"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let (x, y, p) = (&s.inputs[0], &s.output, params(&self.0));
        quote!(::sramfit::kernels::max_pool2d_blocked(&#p, #x, #y);)
    }

    fn macs(&self, _: &Operands<'_>) -> u64 {
        0
    }

    fn scratch(&self) -> Scratch {
        Scratch::NONE
    }

    fn stack_bytes(&self, target: Target) -> u64 {
        rt::max_pool2d_blocked_stack_bytes(target) as u64
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
