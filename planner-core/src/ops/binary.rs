//! Broadcast elementwise functions of two tensors: `runtime_min::NAME(&Broadcast, a, b, y)`, or
//! `NAME_in_place(&Broadcast, acc, other)` when the output overwrites an operand.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use sramfit_runtime_min::{self as rt, Activation};

use super::literal::{activation, slice_expr};

use super::{OpKind, Operands, Scratch, Step, Target};
use crate::tensor::is_row_major;

/// Elementwise functions of two broadcast tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binary {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a / b`.
    Div,
    /// `max(a, b)`.
    Max,
    /// `min(a, b)`.
    Min,
    /// `a ^ b`.
    Pow,
}

impl Binary {
    fn kernel(self) -> &'static str {
        match self {
            Binary::Add => "add",
            Binary::Sub => "sub",
            Binary::Mul => "mul",
            Binary::Div => "div",
            Binary::Max => "max",
            Binary::Min => "min",
            Binary::Pow => "pow",
        }
    }

    /// Whether `a op b == b op a`, so the second operand may be the overwritten one.
    fn commutative(self) -> bool {
        matches!(self, Binary::Add | Binary::Mul)
    }
}

/// A broadcast binary function; strides address each input in the output's index space (0 on
/// broadcast axes).
#[derive(Clone, Debug, PartialEq)]
pub struct BinaryOp {
    /// The function.
    pub kind: Binary,
    /// Strides of input 0 over the output shape.
    pub a_strides: Vec<usize>,
    /// Strides of input 1 over the output shape.
    pub b_strides: Vec<usize>,
    /// The activation applied to each result (only an `f32` Add has one: fused by
    /// [`crate::optimize::fuse`], `runtime_min::add_activated`).
    pub act: Activation,
}

impl BinaryOp {
    /// `kind` of inputs read through `a_strides` and `b_strides`, no activation.
    pub fn new(kind: Binary, a_strides: Vec<usize>, b_strides: Vec<usize>) -> BinaryOp {
        BinaryOp { kind, a_strides, b_strides, act: Activation::None }
    }
}

impl OpKind for BinaryOp {
    fn kernel_name(&self) -> &'static str {
        "binary"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        // An Add with an activation is `add_activated`, the activation its second argument.
        let (name, act) = match self.act {
            Activation::None => (self.kind.kernel(), None),
            act => ("add_activated", Some(activation(act))),
        };
        let act = act.map(|a| quote!(#a,));
        let shape = slice_expr(&s.operands.output.shape);
        let y = &s.output;
        match s.in_place {
            // `acc` is the overwritten input (the output's slice), the other operand is read
            // through its own strides (the in-place kernels ignore `a_strides`).
            Some(k) => {
                let variant = rt::in_place_variant(name).expect("in_place_inputs offers only kernels with a variant");
                let f = format_ident!("{variant}");
                let (other, strides) = if k == 0 { (&s.inputs[1], &self.b_strides) } else { (&s.inputs[0], &self.a_strides) };
                let (sa, so) = (slice_expr(&self.a_strides), slice_expr(strides));
                quote!(::sramfit::kernels::#f(
                    &::sramfit::kernels::Broadcast { out_shape: #shape, a_strides: #sa, b_strides: #so },
                    #act #y, #other);)
            }
            None => {
                let f = format_ident!("{name}");
                let (sa, sb) = (slice_expr(&self.a_strides), slice_expr(&self.b_strides));
                let (a, b) = (&s.inputs[0], &s.inputs[1]);
                quote!(::sramfit::kernels::#f(
                    &::sramfit::kernels::Broadcast { out_shape: #shape, a_strides: #sa, b_strides: #sb },
                    #act #a, #b, #y);)
            }
        }
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

    fn in_place_inputs(&self, o: &Operands<'_>) -> Vec<usize> {
        let out = o.output;
        let dense = |k: usize, s: &[usize]| {
            o.inputs.get(k).is_some_and(|t| t.len() == out.len() && t.dtype == out.dtype)
                && is_row_major(&out.shape, s)
        };
        let mut v = Vec::new();
        if rt::in_place_variant(self.kind.kernel()).is_some() && dense(0, &self.a_strides) {
            v.push(0);
        }
        if self.kind.commutative() && dense(1, &self.b_strides) {
            v.push(1);
        }
        v
    }
}

#[cfg(feature = "onnx")]
pub(crate) mod lower {
    use tract_onnx::prelude::*;
    use tract_onnx::tract_core::ops::binary::TypedBinOp;

    use super::{Binary, BinaryOp};
    use crate::ops::lowering::{broadcast_strides, scalar_f32, Lowered, Lowerer, TractNode};
    use crate::ops::unary::Unary;
    use crate::ops::Op;

    pub(crate) const LOWERINGS: &[Lowerer] =
        &[Lowerer { accepts: |n| n.op_is::<TypedBinOp>(), min_inputs: 2, lower: binary }];

    fn binary(t: &TractNode<'_>) -> Result<Lowered, String> {
        let op = t.node.op_as::<TypedBinOp>().ok_or("not a binary op")?;
        let (in_shapes, out) = (&t.in_shapes, &t.out_shape);
        let kind = match op.0.name() {
            "Add" => Binary::Add,
            "Sub" => Binary::Sub,
            "Mul" => Binary::Mul,
            "Div" => Binary::Div,
            "Max" => Binary::Max,
            "Min" => Binary::Min,
            "Pow" => Binary::Pow,
            other => return Err(format!("binary operator {other}")),
        };
        // Max/Min/Pow against a scalar constant are unary kernels (Relu, Clip, x^e).
        if let Some(k) = t.input_konst(1).filter(|k| k.len() == 1 && k.datum_type() == f32::datum_type()) {
            let c = scalar_f32(&k)?;
            if &in_shapes[0] == out {
                let unary = match kind {
                    Binary::Max if c == 0.0 => Some(Unary::Relu),
                    Binary::Max => Some(Unary::Clip { min: c, max: f32::INFINITY }),
                    Binary::Min => Some(Unary::Clip { min: f32::NEG_INFINITY, max: c }),
                    Binary::Pow => Some(Unary::PowScalar { exponent: c }),
                    _ => None,
                };
                if let Some(u) = unary {
                    return Ok(Lowered::new(Op::Unary(u), vec![0]));
                }
            }
        }
        let (a_strides, b_strides) = (broadcast_strides(&in_shapes[0], out), broadcast_strides(&in_shapes[1], out));
        Ok(Lowered::new(Op::Binary(BinaryOp::new(kind, a_strides, b_strides)), vec![0, 1]))
    }
}
