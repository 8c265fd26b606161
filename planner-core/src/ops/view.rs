//! Views: the output is the input's bytes under another shape (Reshape, Flatten, Squeeze,
//! Unsqueeze, Identity, a Cast to the same type, an axis move that only moves extent-1 axes). No
//! code and no memory: liveness gives the output its input's storage.

use proc_macro2::TokenStream;

use super::{OpKind, Operands, Scratch, Step, Target};

/// The payload of [`super::Op::View`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct View;

impl OpKind for View {
    fn kernel_name(&self) -> &'static str {
        "view"
    }

    fn emit(&self, _: &Step<'_>) -> TokenStream {
        TokenStream::new()
    }

    fn macs(&self, _: &Operands<'_>) -> u64 {
        0
    }

    fn scratch(&self) -> Scratch {
        Scratch::NONE
    }

    fn stack_bytes(&self, _: Target) -> u64 {
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
    use tract_onnx::tract_core::ops::cast::Cast;
    use tract_onnx::tract_core::ops::change_axes::AxisOp;
    use tract_onnx::tract_core::ops::identity::Identity;

    use super::View;
    use crate::ops::copy::transpose;
    use crate::ops::lowering::{Lowered, Lowerer, TractNode};
    use crate::ops::Op;

    pub(crate) const LOWERINGS: &[Lowerer] = &[
        Lowerer { accepts: |n| n.op_is::<AxisOp>(), min_inputs: 1, lower: axis_op },
        Lowerer { accepts: |n| n.op_is::<Cast>(), min_inputs: 1, lower: cast },
        // tract can leave one where two transposes cancel (a random graph, seed 291 of 300).
        Lowerer { accepts: |n| n.op_is::<Identity>(), min_inputs: 1, lower: |_| Ok(Lowered::new(Op::View(View), vec![0])) },
    ];

    fn axis_op(t: &TractNode<'_>) -> Result<Lowered, String> {
        let op = t.node.op_as::<AxisOp>().ok_or("not an AxisOp")?;
        let input = &t.in_shapes[0];
        if let AxisOp::Move(from, to) = op {
            // A move is a view when only extent-1 axes change relative order.
            let mut perm: Vec<usize> = (0..input.len()).collect();
            let a = perm.remove(*from);
            perm.insert(*to, a);
            let non_unit: Vec<usize> = perm.iter().copied().filter(|&i| input[i] != 1).collect();
            if !non_unit.windows(2).all(|w| w[0] < w[1]) {
                return Ok(Lowered::new(Op::Copy(transpose(&perm, input, &t.out_shape)), vec![0]));
            }
        }
        Ok(Lowered::new(Op::View(View), vec![0]))
    }

    fn cast(t: &TractNode<'_>) -> Result<Lowered, String> {
        let op = t.node.op_as::<Cast>().ok_or("not a Cast")?;
        let from = t.model.outlet_fact(t.node.inputs[0]).map_err(|e| e.to_string())?.datum_type;
        if op.to == from {
            Ok(Lowered::new(Op::View(View), vec![0]))
        } else {
            Err(format!("Cast from {from:?} to {:?}", op.to))
        }
    }
}
