//! RMS normalisation over one axis: `runtime_min::rms_norm` on an `[outer, axis, inner]` view.

use proc_macro2::TokenStream;
use quote::quote;

use super::literal::f32_expr;
use super::{OpKind, Operands, Scratch, Step, Target};

/// `x / sqrt(mean(x^2) + eps)` over the middle axis of an `[outer, axis, inner]` view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RmsNormOp {
    /// Product of the axes before the normalised axis.
    pub outer: usize,
    /// Extent of the normalised axis.
    pub axis_len: usize,
    /// Product of the axes after it.
    pub inner: usize,
    /// Added to the mean of squares.
    pub eps: f32,
}

impl OpKind for RmsNormOp {
    fn kernel_name(&self) -> &'static str {
        "rms_norm"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let RmsNormOp { outer, axis_len, inner, eps } = *self;
        let (x, y, eps) = (&s.inputs[0], &s.output, f32_expr(eps));
        quote!(::sramfit::kernels::rms_norm(#x, #y, #outer, #axis_len, #inner, #eps);)
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
pub(crate) mod lower {
    use tract_onnx::tract_core::ops::nn::RmsNorm;

    use super::RmsNormOp;
    use crate::ops::lowering::{scalar_f32, Lowered, Lowerer, TractNode};
    use crate::ops::Op;

    pub(crate) const LOWERINGS: &[Lowerer] =
        &[Lowerer { accepts: |n| n.op_is::<RmsNorm>(), min_inputs: 1, lower: rms_norm }];

    fn rms_norm(t: &TractNode<'_>) -> Result<Lowered, String> {
        let op = t.node.op_as::<RmsNorm>().ok_or("not an RmsNorm")?;
        let input = &t.in_shapes[0];
        if op.axis >= input.len() {
            return Err(format!("axis {} of a rank-{} tensor", op.axis, input.len()));
        }
        let op = RmsNormOp {
            outer: input[..op.axis].iter().product(),
            axis_len: input[op.axis],
            inner: input[op.axis + 1..].iter().product(),
            eps: scalar_f32(&op.eps)?,
        };
        Ok(Lowered::new(Op::RmsNorm(op), vec![0]))
    }
}
