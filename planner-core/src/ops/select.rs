//! `where(cmp(a, b), t, f)` with broadcasting (Elu, Selu, PRelu as tract expands them):
//! `runtime_min::select_cmp`. The comparison has no tensor of its own: it is evaluated inside the
//! select.

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min as rt;

use super::literal::slice_expr;
use super::{OpKind, Operands, Scratch, Step, Target};

/// `where(cmp(in0, in1), in2, in3)`; strides address each input in the output's index space (0 on
/// broadcast axes), in input order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectOp {
    /// The comparison.
    pub cmp: rt::Cmp,
    /// Strides of the four inputs over the output shape.
    pub strides: [Vec<usize>; 4],
}

impl OpKind for SelectOp {
    fn kernel_name(&self) -> &'static str {
        "select_cmp"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let cmp = cmp_expr(self.cmp);
        let shape = slice_expr(&s.operands.output.shape);
        let [sa, sb, st, sf] = self.strides.each_ref().map(|s| slice_expr(s));
        let (a, b, t, f, y) = (&s.inputs[0], &s.inputs[1], &s.inputs[2], &s.inputs[3], &s.output);
        quote!(::sramfit::kernels::select_cmp(
            &::sramfit::kernels::Select { cmp: #cmp, out_shape: #shape, a_strides: #sa, b_strides: #sb, t_strides: #st, f_strides: #sf },
            #a, #b, #t, #f, #y);)
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

/// A [`rt::Cmp`] expression.
fn cmp_expr(c: rt::Cmp) -> TokenStream {
    match c {
        rt::Cmp::Lt => quote!(::sramfit::kernels::Cmp::Lt),
        rt::Cmp::Le => quote!(::sramfit::kernels::Cmp::Le),
        rt::Cmp::Gt => quote!(::sramfit::kernels::Cmp::Gt),
        rt::Cmp::Ge => quote!(::sramfit::kernels::Cmp::Ge),
        rt::Cmp::Eq => quote!(::sramfit::kernels::Cmp::Eq),
        rt::Cmp::Ne => quote!(::sramfit::kernels::Cmp::Ne),
    }
}

#[cfg(feature = "onnx")]
pub(crate) mod lower {
    use tract_onnx::prelude::*;
    use tract_onnx::tract_core::ops::binary::TypedBinOp;
    use tract_onnx::tract_core::ops::logic::Iff;

    use sramfit_runtime_min as rt;

    use super::SelectOp;
    use crate::ops::lowering::{broadcast_strides, Lowered, Lowerer, Src, TractNode};
    use crate::ops::Op;

    pub(crate) const LOWERINGS: &[Lowerer] = &[Lowerer { accepts: |n| n.op_is::<Iff>(), min_inputs: 3, lower: select }];

    /// The comparison a `TypedBinOp` computes, if it is one.
    fn comparison(node: &TypedNode) -> Option<rt::Cmp> {
        let op = node.op_as::<TypedBinOp>()?;
        Some(match op.0.name() {
            "LT" => rt::Cmp::Lt,
            "LTE" => rt::Cmp::Le,
            "GT" => rt::Cmp::Gt,
            "GTE" => rt::Cmp::Ge,
            "Eq" => rt::Cmp::Eq,
            "NE" => rt::Cmp::Ne,
            _ => return None,
        })
    }

    /// Whether `node` is a comparison of two `f32` tensors whose bool result only feeds the
    /// condition of `Iff` nodes: it then has no tensor of its own, [`select`] evaluates it in place.
    pub fn is_fused_comparison(model: &TypedModel, node: &TypedNode) -> bool {
        let f32_operands = node.inputs.len() == 2
            && node.inputs.iter().all(|&i| model.outlet_fact(i).is_ok_and(|f| f.datum_type == f32::datum_type()));
        let is_output = model.output_outlets().map_or(true, |o| o.iter().any(|o| o.node == node.id));
        let successors = node.outputs.first().map(|o| o.successors.as_slice()).unwrap_or(&[]);
        comparison(node).is_some()
            && f32_operands
            && !is_output
            && !successors.is_empty()
            && successors.iter().all(|s| {
                s.slot == 0 && model.nodes.get(s.node).is_some_and(|n| n.op_is::<Iff>() && n.inputs.len() == 3)
            })
    }

    /// `Iff(cond, t, f)` whose condition is a fused comparison `cmp(a, b)`: one `select_cmp` over
    /// the four `f32` operands.
    fn select(t: &TractNode<'_>) -> Result<Lowered, String> {
        let (node, out) = (t.node, &t.out_shape);
        let cond = node.inputs[0];
        let producer = t.model.nodes.get(cond.node).ok_or("a condition without a producer")?;
        let cmp = match comparison(producer) {
            Some(c) if is_fused_comparison(t.model, producer) => c,
            _ => return Err("Iff with a condition that is not a comparison of float tensors".into()),
        };
        let operands = [producer.inputs[0], producer.inputs[1], node.inputs[1], node.inputs[2]];
        let mut strides: [Vec<usize>; 4] = Default::default();
        for (s, &o) in strides.iter_mut().zip(&operands) {
            let shape = t.shape(o)?;
            if shape.len() > out.len() || shape.iter().rev().zip(out.iter().rev()).any(|(&a, &b)| a != b && a != 1) {
                return Err(format!("operand of shape {shape:?} does not broadcast to {out:?}"));
            }
            *s = broadcast_strides(&shape, out);
        }
        Ok(Lowered { op: Op::Select(SelectOp { cmp, strides }), inputs: operands.map(Src::Outlet).into(), output_perm: None })
    }
}
