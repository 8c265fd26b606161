//! Local response normalisation across channels: `runtime_min::lrn`.

use proc_macro2::TokenStream;
use quote::quote;

use super::literal::f32_expr;
use super::{OpKind, Operands, Scratch, Step, Target};

/// Local response normalisation across channels of a `[batch, channels, inner]` view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LrnOp {
    /// N.
    pub batch: usize,
    /// C.
    pub channels: usize,
    /// Product of the spatial axes.
    pub inner: usize,
    /// Number of channels summed.
    pub size: usize,
    /// Scale of the sum of squares.
    pub alpha: f32,
    /// Exponent.
    pub beta: f32,
    /// Added before the exponent.
    pub bias: f32,
}

impl OpKind for LrnOp {
    fn kernel_name(&self) -> &'static str {
        "lrn"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let LrnOp { batch, channels, inner, size, alpha, beta, bias } = *self;
        let (x, y) = (&s.inputs[0], &s.output);
        let (alpha, beta, bias) = (f32_expr(alpha), f32_expr(beta), f32_expr(bias));
        quote!(::sramfit::kernels::lrn(#x, #y, #batch, #channels, #inner, #size, #alpha, #beta, #bias);)
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

    use super::LrnOp;
    use crate::ops::lowering::{Lowered, Lowerer, TractNode};
    use crate::ops::Op;

    pub(crate) const LOWERINGS: &[Lowerer] =
        &[Lowerer { accepts: |n| n.op.name() == "Lrn", min_inputs: 1, lower: lrn }];

    /// tract-onnx-opl's `Lrn { alpha, beta, bias, size }`, read from its `Debug` form (the op type
    /// is not reachable through `tract_onnx`).
    fn lrn(t: &TractNode<'_>) -> Result<Lowered, String> {
        let debug = format!("{:?}", t.node.op);
        let input = &t.in_shapes[0];
        let field = |name: &str| -> Result<&str, String> {
            let start =
                debug.find(&format!("{name}: ")).ok_or(format!("Lrn without `{name}`: {debug}"))? + name.len() + 2;
            let rest = &debug[start..];
            Ok(rest[..rest.find([',', ' ', '}']).unwrap_or(rest.len())].trim())
        };
        let float = |name: &str| -> Result<f32, String> { field(name)?.parse().map_err(|e| format!("Lrn {name}: {e}")) };
        let size: usize = field("size")?.parse().map_err(|e| format!("Lrn size: {e}"))?;
        if input.len() < 2 {
            return Err("LRN on a tensor of rank < 2".into());
        }
        let op = LrnOp {
            batch: input[0],
            channels: input[1],
            inner: input[2..].iter().product(),
            size,
            alpha: float("alpha")?,
            beta: float("beta")?,
            bias: float("bias")?,
        };
        Ok(Lowered::new(Op::Lrn(op), vec![0]))
    }
}
