//! A global pooling of channel-blocked activations into an NCHW output
//! (`runtime_min::global_pool_blocked`: each plane's sum or mean over whole blocks of 16 channels;
//! one value per channel is laid out the same blocked and NCHW), with the bits of
//! `runtime_min::avg_pool2d` or of `reduce_sum` / `reduce_mean` on the NCHW tensor: only
//! [`crate::optimize::blocked`] makes it, from a global average [`super::pool::Pool`] step or a
//! [`super::reduce::ReduceOp`] over a plane's few values (`runtime_min::GlobalPool`).

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min as rt;

use super::{OpKind, Operands, Scratch, Step, Target};

/// Global pooling `.0` of a channel-blocked input (its NCHW shape) into its NCHW output; input
/// `[x]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalPoolBlocked(pub rt::GlobalPool);

impl OpKind for GlobalPoolBlocked {
    fn kernel_name(&self) -> &'static str {
        "global_pool_blocked"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let (x, y) = (&s.inputs[0], &s.output);
        let rt::GlobalPool { batch, channels, plane, mean } = self.0;
        quote!(::sramfit::kernels::global_pool_blocked(
            &::sramfit::kernels::GlobalPool { batch: #batch, channels: #channels, plane: #plane, mean: #mean },
            #x, #y);)
    }

    fn macs(&self, _: &Operands<'_>) -> u64 {
        0
    }

    fn scratch(&self) -> Scratch {
        Scratch::NONE
    }

    fn stack_bytes(&self, target: Target) -> u64 {
        rt::global_pool_blocked_stack_bytes(target) as u64
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
