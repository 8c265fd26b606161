//! Cumulative sum along one axis (ONNX CumSum): `runtime_min::cumsum`, or `cumsum_in_place` when
//! the output overwrites the input.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use sramfit_runtime_min as rt;

use super::{OpKind, Operands, Scratch, Step, Target};

impl OpKind for rt::CumSum {
    fn kernel_name(&self) -> &'static str {
        "cumsum"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let rt::CumSum { outer, len, inner, exclusive, reverse } = *self;
        let p = quote!(::sramfit::kernels::CumSum {
            outer: #outer, len: #len, inner: #inner, exclusive: #exclusive, reverse: #reverse,
        });
        let y = &s.output;
        match s.in_place {
            // The output's slice is the input's bytes (verified in-place step): one `&mut` slice.
            Some(_) => {
                let variant = rt::in_place_variant("cumsum").expect("in_place_inputs offers only kernels with a variant");
                let f = format_ident!("{variant}");
                quote!(::sramfit::kernels::#f(&#p, #y);)
            }
            None => {
                let x = &s.inputs[0];
                quote!(::sramfit::kernels::cumsum(&#p, #x, #y);)
            }
        }
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

    fn in_place_inputs(&self, o: &Operands<'_>) -> Vec<usize> {
        let x = o.inputs[0];
        match rt::in_place_variant("cumsum").is_some() && x.len() == o.output.len() && x.dtype == o.output.dtype {
            true => vec![0],
            false => Vec::new(),
        }
    }
}

#[cfg(feature = "onnx")]
pub(crate) mod lower {
    use tract_onnx::tract_core::ops::array::CumSum;

    use sramfit_runtime_min as rt;

    use crate::ops::lowering::{Lowered, Lowerer, TractNode};
    use crate::ops::Op;

    pub(crate) const LOWERINGS: &[Lowerer] =
        &[Lowerer { accepts: |n| n.op_is::<CumSum>(), min_inputs: 1, lower: cumsum }];

    fn cumsum(t: &TractNode<'_>) -> Result<Lowered, String> {
        let op = t.node.op_as::<CumSum>().ok_or("not a CumSum")?;
        let input = &t.in_shapes[0];
        if op.axis >= input.len() {
            return Err(format!("axis {} of a rank-{} tensor", op.axis, input.len()));
        }
        let p = rt::CumSum {
            outer: input[..op.axis].iter().product(),
            len: input[op.axis],
            inner: input[op.axis + 1..].iter().product(),
            exclusive: op.exclusive,
            reverse: op.reverse,
        };
        Ok(Lowered::new(Op::CumSum(p), vec![0]))
    }
}
