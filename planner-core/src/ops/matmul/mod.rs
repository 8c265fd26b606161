//! Batched strided matrix products (ONNX MatMul, Gemm, and the einsums tract makes of them and of
//! pointwise convolutions): `runtime_min::matmul`, with alpha, bias and a fused activation.

pub mod einsum;

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min as rt;

use super::literal::{activation, f32_expr};
use super::{OpKind, Operands, Scratch, Step, Target};

impl OpKind for rt::MatMul {
    fn kernel_name(&self) -> &'static str {
        "matmul"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let (a, b, y) = (&s.inputs[0], &s.inputs[1], &s.output);
        let (bias, p) = (s.optional(2), params(self));
        quote!(::sramfit::kernels::matmul(&#p, #a, #b, #bias, #y);)
    }

    fn macs(&self, _: &Operands<'_>) -> u64 {
        self.batch.iter().map(|&b| b as u64).product::<u64>() * (self.m * self.n * self.k) as u64
    }

    fn scratch(&self) -> Scratch {
        Scratch::NONE
    }

    fn stack_bytes(&self, target: Target) -> u64 {
        rt::matmul_stack_bytes(self, target) as u64
    }

    fn plane_order(&self) -> Option<crate::ops::PlaneOrder> {
        None
    }

    fn in_place_inputs(&self, _: &Operands<'_>) -> Vec<usize> {
        Vec::new()
    }
}

/// A [`rt::MatMul`] expression.
fn params(p: &rt::MatMul) -> TokenStream {
    let rt::MatMul {
        batch,
        a_batch_strides,
        b_batch_strides,
        c_batch_strides,
        m,
        n,
        k,
        a_row_stride,
        a_col_stride,
        b_row_stride,
        b_col_stride,
        c_row_stride,
        alpha,
        act,
    } = *p;
    let (alpha, act) = (f32_expr(alpha), activation(act));
    quote!(::sramfit::kernels::MatMul {
        batch: [#(#batch),*], a_batch_strides: [#(#a_batch_strides),*],
        b_batch_strides: [#(#b_batch_strides),*], c_batch_strides: [#(#c_batch_strides),*],
        m: #m, n: #n, k: #k, a_row_stride: #a_row_stride, a_col_stride: #a_col_stride,
        b_row_stride: #b_row_stride, b_col_stride: #b_col_stride, c_row_stride: #c_row_stride,
        alpha: #alpha, act: #act,
    })
}

#[cfg(feature = "onnx")]
pub(crate) mod lower {
    use tract_onnx::prelude::*;
    use tract_onnx::tract_core::ops::einsum::EinSum;

    use super::einsum;
    use crate::ops::lowering::{Lowered, Lowerer, Src, TractNode};
    use crate::ops::Op;

    pub(crate) const LOWERINGS: &[Lowerer] =
        &[Lowerer { accepts: |n| n.op_is::<EinSum>(), min_inputs: 2, lower: einsum_op }];

    fn einsum_op(t: &TractNode<'_>) -> Result<Lowered, String> {
        let op = t.node.op_as::<EinSum>().ok_or("not an EinSum")?;
        let (in_shapes, out_shape) = (&t.in_shapes, &t.out_shape);
        if op.q_params.is_some() || op.operating_dt != f32::datum_type() || in_shapes.len() != 2 {
            return Err("quantized or non-float32 einsum".into());
        }
        let mut positions = Vec::new();
        for axis in op.axes.iter_all_axes() {
            let one = |v: &[usize]| -> Result<Option<usize>, String> {
                match v {
                    [] => Ok(None),
                    [p] => Ok(Some(*p)),
                    _ => Err("an axis repeated within one tensor (diagonal)".into()),
                }
            };
            positions.push((one(&axis.inputs[0])?, one(&axis.inputs[1])?, one(&axis.outputs[0])?));
        }
        let axes = einsum::axes_from_positions(&positions, &in_shapes[0], &in_shapes[1], out_shape);
        if let Ok((p, swapped)) = einsum::lower(&axes) {
            return Ok(Lowered::new(Op::MatMul(p), if swapped { vec![1, 0] } else { vec![0, 1] }));
        }
        // The operands' layouts do not let the axes of one class merge: copy both operands into the
        // canonical layouts A[batch.., m.., k..] and B[batch.., k.., n..] first.
        let (perm_a, perm_b) = einsum::canonical_permutations(&positions, in_shapes[0].len(), in_shapes[1].len());
        let permute = |shape: &[usize], perm: &[usize]| perm.iter().map(|&p| shape[p]).collect::<Vec<_>>();
        let inverse = |perm: &[usize], pos: Option<usize>| pos.map(|p| perm.iter().position(|&q| q == p).unwrap_or(p));
        let canonical: Vec<_> =
            positions.iter().map(|&(a, b, c)| (inverse(&perm_a, a), inverse(&perm_b, b), c)).collect();
        let axes = einsum::axes_from_positions(
            &canonical,
            &permute(&in_shapes[0], &perm_a),
            &permute(&in_shapes[1], &perm_b),
            out_shape,
        );
        let (p, swapped) = einsum::lower(&axes)?;
        let (a, b) = (Src::Permuted { input: 0, perm: perm_a }, Src::Permuted { input: 1, perm: perm_b });
        Ok(Lowered { op: Op::MatMul(p), inputs: if swapped { vec![b, a] } else { vec![a, b] }, output_perm: None })
    }
}
