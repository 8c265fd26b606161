//! Softmax and log-softmax over contiguous axes: `runtime_min::softmax` / `log_softmax` over the
//! middle axis of an `[outer, axis, inner]` view.

use proc_macro2::TokenStream;
use quote::quote;

use sramfit_runtime_min as rt;

use super::{OpKind, Operands, Scratch, Step, Target};

/// Softmax (or log-softmax) over the middle axis of an `[outer, axis, inner]` view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoftmaxOp {
    /// Log-softmax instead of softmax.
    pub log: bool,
    /// Product of the axes before the softmax axis.
    pub outer: usize,
    /// Extent of the softmax axis.
    pub axis_len: usize,
    /// Product of the axes after it.
    pub inner: usize,
}

impl OpKind for SoftmaxOp {
    fn kernel_name(&self) -> &'static str {
        if self.log {
            "log_softmax"
        } else {
            "softmax"
        }
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let f = if self.log { quote!(log_softmax) } else { quote!(softmax) };
        let SoftmaxOp { outer, axis_len, inner, .. } = *self;
        let (x, y) = (&s.inputs[0], &s.output);
        quote!(::sramfit::kernels::#f(#x, #y, #outer, #axis_len, #inner);)
    }

    fn macs(&self, _: &Operands<'_>) -> u64 {
        0
    }

    fn scratch(&self) -> Scratch {
        Scratch::NONE
    }

    fn stack_bytes(&self, target: Target) -> u64 {
        rt::softmax_stack_bytes(target) as u64
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
    use tract_onnx::tract_core::ops::nn::{Softmax, SoftmaxKind};

    use super::SoftmaxOp;
    use crate::ops::lowering::{Lowered, Lowerer, TractNode};
    use crate::ops::Op;

    pub(crate) const LOWERINGS: &[Lowerer] =
        &[Lowerer { accepts: |n| n.op_is::<Softmax>(), min_inputs: 1, lower: softmax }];

    fn softmax(t: &TractNode<'_>) -> Result<Lowered, String> {
        let op = t.node.op_as::<Softmax>().ok_or("not a Softmax")?;
        let input = &t.in_shapes[0];
        if op.quant_output_dt.is_some() {
            return Err("quantized softmax".into());
        }
        let mut axes = op.axes.to_vec();
        axes.sort_unstable();
        if axes.is_empty() || axes.windows(2).any(|w| w[1] != w[0] + 1) {
            return Err("softmax over non-contiguous axes".into());
        }
        let (first, last) = (axes[0], axes[axes.len() - 1]);
        let op = SoftmaxOp {
            log: op.kind == SoftmaxKind::LogSoftmax,
            outer: input[..first].iter().product(),
            axis_len: input[first..=last].iter().product(),
            inner: input[last + 1..].iter().product(),
        };
        Ok(Lowered::new(Op::Softmax(op), vec![0]))
    }
}
