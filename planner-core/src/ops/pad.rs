//! Padding (constant, reflect, edge, wrap; negative pads crop): `runtime_min::pad`.

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min as rt;

use super::literal::{f32_expr, slice_expr};
use super::{OpKind, Operands, Scratch, Step, Target};

/// Padding of input 0.
#[derive(Clone, Debug, PartialEq)]
pub struct PadOp {
    /// Leading pad per axis (negative crops).
    pub pads_begin: Vec<isize>,
    /// The padding mode.
    pub mode: rt::PadMode,
}

impl OpKind for PadOp {
    fn kernel_name(&self) -> &'static str {
        "pad"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let o = &s.operands;
        let (is, pb, os, mode) = (
            slice_expr(&o.inputs[0].shape),
            slice_expr(&self.pads_begin),
            slice_expr(&o.output.shape),
            mode_expr(self.mode),
        );
        let (x, y) = (&s.inputs[0], &s.output);
        quote!(::sramfit::kernels::pad(
            &::sramfit::kernels::Pad { in_shape: #is, pads_begin: #pb, out_shape: #os, mode: #mode },
            #x, #y);)
    }

    fn macs(&self, _: &Operands<'_>) -> u64 {
        0
    }

    fn scratch(&self) -> Scratch {
        Scratch::NONE
    }

    fn stack_bytes(&self, target: Target) -> u64 {
        rt::rank_generic_stack_bytes(target) as u64
    }

    fn plane_order(&self) -> Option<crate::ops::PlaneOrder> {
        None
    }

    fn in_place_inputs(&self, _: &Operands<'_>) -> Vec<usize> {
        Vec::new()
    }
}

/// A [`rt::PadMode`] expression.
fn mode_expr(m: rt::PadMode) -> TokenStream {
    match m {
        rt::PadMode::Constant(v) => {
            let v = f32_expr(v);
            quote!(::sramfit::kernels::PadMode::Constant(#v))
        }
        rt::PadMode::Reflect => quote!(::sramfit::kernels::PadMode::Reflect),
        rt::PadMode::Edge => quote!(::sramfit::kernels::PadMode::Edge),
        rt::PadMode::Wrap => quote!(::sramfit::kernels::PadMode::Wrap),
    }
}

#[cfg(feature = "onnx")]
pub(crate) mod lower {
    use tract_onnx::tract_core::ops::array::{Pad, PadMode};

    use sramfit_runtime_min as rt;

    use super::PadOp;
    use crate::ops::lowering::{scalar_f32, Lowered, Lowerer, TractNode};
    use crate::ops::Op;

    pub(crate) const LOWERINGS: &[Lowerer] = &[Lowerer { accepts: |n| n.op_is::<Pad>(), min_inputs: 1, lower: pad }];

    fn pad(t: &TractNode<'_>) -> Result<Lowered, String> {
        let op = t.node.op_as::<Pad>().ok_or("not a Pad")?;
        let mode = match &op.mode {
            PadMode::Constant(v) => rt::PadMode::Constant(scalar_f32(v)?),
            PadMode::Reflect => rt::PadMode::Reflect,
            PadMode::Edge => rt::PadMode::Edge,
        };
        let op = PadOp { pads_begin: op.pads.iter().map(|p| p.0 as isize).collect(), mode };
        Ok(Lowered::new(Op::Pad(op), vec![0]))
    }
}
