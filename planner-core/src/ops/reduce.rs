//! Reductions over some axes (ReduceSum/Mean/Max/Min/Prod/SumSquare, global pooling):
//! `runtime_min::reduce_*(&Reduce, x, y)`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::literal::slice_expr;
use sramfit_runtime_min as rt;

use super::{OpKind, Operands, Scratch, Step, Target};

/// Reductions over some axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reducer {
    /// Sum.
    Sum,
    /// Arithmetic mean.
    Mean,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
    /// Product.
    Prod,
    /// Sum of squares.
    SumSquare,
    /// Mean of squares (tract's `MeanOfSquares`).
    MeanSquare,
}

impl Reducer {
    fn kernel(self) -> &'static str {
        match self {
            Reducer::Sum => "reduce_sum",
            Reducer::Mean => "reduce_mean",
            Reducer::Max => "reduce_max",
            Reducer::Min => "reduce_min",
            Reducer::Prod => "reduce_prod",
            Reducer::SumSquare => "reduce_sum_square",
            Reducer::MeanSquare => "reduce_mean_square",
        }
    }
}

/// A reduction: the output index space is the output's shape, addressed in the input by
/// `out_in_strides`; the reduced block is `red_shape` with `red_strides`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReduceOp {
    /// The reducer.
    pub kind: Reducer,
    /// Input strides of each output axis.
    pub out_in_strides: Vec<usize>,
    /// Extents of the reduced axes.
    pub red_shape: Vec<usize>,
    /// Input strides of the reduced axes.
    pub red_strides: Vec<usize>,
}

impl OpKind for ReduceOp {
    fn kernel_name(&self) -> &'static str {
        "reduce"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let f = format_ident!("{}", self.kind.kernel());
        let (shape, os, rs, rst) = (
            slice_expr(&s.operands.output.shape),
            slice_expr(&self.out_in_strides),
            slice_expr(&self.red_shape),
            slice_expr(&self.red_strides),
        );
        let (x, y) = (&s.inputs[0], &s.output);
        quote!(::sramfit::kernels::#f(
            &::sramfit::kernels::Reduce { out_shape: #shape, out_in_strides: #os, red_shape: #rs, red_strides: #rst },
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

#[cfg(feature = "onnx")]
pub(crate) mod lower {
    use tract_onnx::tract_core::ops::nn::{Reduce, Reducer as TractReducer};

    use super::{ReduceOp, Reducer};
    use crate::ops::lowering::{Lowered, Lowerer, TractNode};
    use crate::ops::Op;
    use crate::tensor::strides_of;

    pub(crate) const LOWERINGS: &[Lowerer] =
        &[Lowerer { accepts: |n| n.op_is::<Reduce>(), min_inputs: 1, lower: reduce }];

    fn reduce(t: &TractNode<'_>) -> Result<Lowered, String> {
        let op = t.node.op_as::<Reduce>().ok_or("not a Reduce")?;
        let input = &t.in_shapes[0];
        let kind = match op.reducer {
            TractReducer::Sum => Reducer::Sum,
            TractReducer::Max => Reducer::Max,
            TractReducer::Min => Reducer::Min,
            TractReducer::Prod => Reducer::Prod,
            TractReducer::MeanOfSquares => Reducer::MeanSquare,
            r => return Err(format!("reducer {r:?}")),
        };
        let s = strides_of(input);
        let reduced = |i: &usize| op.axes.contains(i);
        let red: Vec<usize> = (0..input.len()).filter(reduced).collect();
        let op = ReduceOp {
            kind,
            out_in_strides: (0..input.len()).map(|i| if reduced(&i) { 0 } else { s[i] }).collect(),
            red_shape: red.iter().map(|&i| input[i]).collect(),
            red_strides: red.iter().map(|&i| s[i]).collect(),
        };
        Ok(Lowered::new(Op::Reduce(op), vec![0]))
    }
}
