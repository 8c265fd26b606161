//! Elementwise functions of one tensor: `runtime_min::NAME(x, y)`, or `NAME_in_place(xy)` when
//! the output overwrites the input.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use sramfit_runtime_min as rt;

use super::literal::f32_expr;
use super::{OpKind, Operands, Scratch, Step, Target};

/// Elementwise functions of one tensor (kernel `name(x, y)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unary {
    /// `max(x, 0)`.
    Relu,
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// Hyperbolic tangent.
    Tanh,
    /// `e^x`.
    Exp,
    /// Natural logarithm.
    Ln,
    /// Square root.
    Sqrt,
    /// `1 / sqrt(x)`.
    Rsqrt,
    /// `1 / x`.
    Reciprocal,
    /// Absolute value.
    Abs,
    /// Negation.
    Neg,
    /// `x * x`.
    Square,
    /// Error function.
    Erf,
    /// Round down.
    Floor,
    /// Round up.
    Ceil,
    /// Round half to even.
    Round,
    /// Sine.
    Sin,
    /// Cosine.
    Cos,
    /// `ln(1 + e^x)`.
    Softplus,
    /// `x / (1 + |x|)`.
    Softsign,
    /// `x * relu6(x + 3) / 6`.
    HardSwish,
    /// `x * sigmoid(x)`.
    Silu,
    /// `0.5 x (1 + erf(x / sqrt 2))`.
    Gelu,
    /// `min(max(x, min), max)`.
    Clip {
        /// Lower bound.
        min: f32,
        /// Upper bound.
        max: f32,
    },
    /// `x` if positive, else `alpha * x`.
    LeakyRelu {
        /// Negative slope.
        alpha: f32,
    },
    /// `x^e` for a constant exponent.
    PowScalar {
        /// The exponent.
        exponent: f32,
    },
}

impl Unary {
    /// The kernel's name and its constant arguments after the slices.
    fn kernel(self) -> (&'static str, Vec<TokenStream>) {
        let name = match self {
            Unary::Relu => "relu",
            Unary::Sigmoid => "sigmoid",
            Unary::Tanh => "tanh",
            Unary::Exp => "exp",
            Unary::Ln => "ln",
            Unary::Sqrt => "sqrt",
            Unary::Rsqrt => "rsqrt",
            Unary::Reciprocal => "reciprocal",
            Unary::Abs => "abs",
            Unary::Neg => "neg",
            Unary::Square => "square",
            Unary::Erf => "erf",
            Unary::Floor => "floor",
            Unary::Ceil => "ceil",
            Unary::Round => "round",
            Unary::Sin => "sin",
            Unary::Cos => "cos",
            Unary::Softplus => "softplus",
            Unary::Softsign => "softsign",
            Unary::HardSwish => "hard_swish",
            Unary::Silu => "silu",
            Unary::Gelu => "gelu",
            Unary::Clip { min, max } => return ("clip", vec![f32_expr(min), f32_expr(max)]),
            Unary::LeakyRelu { alpha } => return ("leaky_relu", vec![f32_expr(alpha)]),
            Unary::PowScalar { exponent } => return ("pow_scalar", vec![f32_expr(exponent)]),
        };
        (name, Vec::new())
    }
}

impl OpKind for Unary {
    fn kernel_name(&self) -> &'static str {
        "unary"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let (name, args) = self.kernel();
        let y = &s.output;
        match s.in_place {
            // The output's slice is the input's bytes (verified in-place step): one `&mut` slice.
            Some(_) => {
                let variant = rt::in_place_variant(name).expect("in_place_inputs offers only kernels with a variant");
                let f = format_ident!("{variant}");
                quote!(::sramfit::kernels::#f(#y #(, #args)*);)
            }
            None => {
                let (f, x) = (format_ident!("{name}"), &s.inputs[0]);
                quote!(::sramfit::kernels::#f(#x, #y #(, #args)*);)
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
        if rt::in_place_variant(self.kernel().0).is_some() && x.len() == o.output.len() && x.dtype == o.output.dtype {
            vec![0]
        } else {
            Vec::new()
        }
    }
}

#[cfg(feature = "onnx")]
pub(crate) mod lower {
    use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;

    use super::Unary;
    use crate::ops::lowering::{Lowered, Lowerer, TractNode};
    use crate::ops::Op;

    pub(crate) const LOWERINGS: &[Lowerer] =
        &[Lowerer { accepts: |n| n.op_is::<ElementWiseOp>(), min_inputs: 1, lower: elementwise }];

    fn elementwise(t: &TractNode<'_>) -> Result<Lowered, String> {
        let op = t.node.op_as::<ElementWiseOp>().ok_or("not an elementwise op")?;
        Ok(Lowered::new(Op::Unary(unary(op)?), vec![0]))
    }

    fn unary(op: &ElementWiseOp) -> Result<Unary, String> {
        use tract_onnx::tract_core::ops::nn::LeakyRelu;
        let mini = &op.0;
        if let Some(l) = mini.downcast_ref::<LeakyRelu>() {
            return Ok(Unary::LeakyRelu { alpha: l.alpha });
        }
        if let Some(p) = mini.downcast_ref::<tract_onnx::tract_core::ops::math::PowConst>() {
            return Ok(Unary::PowScalar { exponent: p.exponent });
        }
        Ok(match mini.name().as_str() {
            "Sigmoid" => Unary::Sigmoid,
            "Tanh" => Unary::Tanh,
            "Exp" => Unary::Exp,
            "Ln" => Unary::Ln,
            "Sqrt" => Unary::Sqrt,
            "Rsqrt" => Unary::Rsqrt,
            "Recip" => Unary::Reciprocal,
            "Abs" => Unary::Abs,
            "Neg" => Unary::Neg,
            "Square" => Unary::Square,
            "Erf" => Unary::Erf,
            "Floor" => Unary::Floor,
            "Ceil" => Unary::Ceil,
            "RoundHalfToEven" => Unary::Round,
            "Sin" => Unary::Sin,
            "Cos" => Unary::Cos,
            "HardSwish" => Unary::HardSwish,
            "Silu" => Unary::Silu,
            "GeluExact" => Unary::Gelu,
            other => return Err(format!("elementwise {other}")),
        })
    }
}
