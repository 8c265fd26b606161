//! Conversions between NCHW and the channel-blocked layout (`runtime_min::to_blocked` /
//! `from_blocked`) at the ends of a chain of channel-blocked convolutions: only
//! [`crate::optimize::blocked`] makes them.

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min as rt;

use super::{OpKind, Operands, Scratch, Step, Target};

/// Which way a [`Reorder`] converts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// NCHW into channel-blocked.
    ToBlocked,
    /// Channel-blocked into NCHW.
    FromBlocked,
}

/// A conversion of `[batch, channels, h, w]` (`plane = h * w`; `channels` a multiple of
/// [`rt::CHANNEL_BLOCK`]) between NCHW and the channel-blocked layout; input `[x]`. The output
/// has the input's shape: the same values in another order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reorder {
    /// Which way.
    pub way: Way,
    /// Images.
    pub batch: usize,
    /// Channels (whole blocks).
    pub channels: usize,
    /// Positions per channel.
    pub plane: usize,
}

impl OpKind for Reorder {
    fn kernel_name(&self) -> &'static str {
        match self.way {
            Way::ToBlocked => "to_blocked",
            Way::FromBlocked => "from_blocked",
        }
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let (x, y) = (&s.inputs[0], &s.output);
        let Reorder { way, batch, channels, plane } = *self;
        let kernel = match way {
            Way::ToBlocked => quote!(to_blocked),
            Way::FromBlocked => quote!(from_blocked),
        };
        quote!(::sramfit::kernels::#kernel(#batch, #channels, #plane, #x, #y);)
    }

    fn macs(&self, _: &Operands<'_>) -> u64 {
        0
    }

    fn scratch(&self) -> Scratch {
        Scratch::NONE
    }

    fn stack_bytes(&self, target: Target) -> u64 {
        rt::reorder_blocked_stack_bytes(target) as u64
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
