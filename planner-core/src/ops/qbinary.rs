//! Quantized add, sub and mul with rescaling and NumPy broadcasting (QDQ Add / Sub / Mul,
//! QLinearAdd, QLinearMul): `runtime_min::quant::add` / `sub` / `mul`, or their `_in_place`
//! variants when the output overwrites an operand.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use sramfit_runtime_min::quant::{self as rtq, AddScaling};

use super::literal::slice_expr;
use super::qparams::{in_place_if, requant_expr, Convention, QParams};
use super::{Target, OpKind, Operands, Scratch, Step};
use crate::tensor::{is_row_major, DType};

/// The function and its TFLite parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QBinaryKind {
    /// `a + b` (TFLite ADD).
    Add(rtq::Add),
    /// `a - b` (TFLite SUB).
    Sub(rtq::Add),
    /// `a * b` (TFLite MUL).
    Mul(rtq::Mul),
}

/// A quantized broadcast binary function; inputs `[a, b]`, each addressed in the output's index
/// space by its strides (0 on broadcast axes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QBinary {
    /// The function.
    pub kind: QBinaryKind,
    /// Strides of `a` over the output shape.
    pub a_strides: Vec<usize>,
    /// Strides of `b` over the output shape.
    pub b_strides: Vec<usize>,
}

/// Which function a [`QBinary`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arith {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
}

impl QBinary {
    /// `y = a op b` with TFLite's rescaling of ADD and SUB (through a common scale; on int16 with
    /// TFLite's left shift of 15) and one multiplier for MUL (rounded as `convention` does), `clamp` the real range of a fused
    /// activation.
    pub fn new(
        arith: Arith,
        (a, b, y): (QParams, QParams, QParams),
        clamp: (f32, f32),
        (a_strides, b_strides): (Vec<usize>, Vec<usize>),
        convention: Convention,
    ) -> Result<QBinary, String> {
        if a.dtype != y.dtype || b.dtype != y.dtype {
            return Err("operands and output of different integer types".into());
        }
        let (act_min, act_max) = y.clamp(clamp);
        let add = |scaling| rtq::Add {
            a_zero_point: a.zero_point,
            b_zero_point: b.zero_point,
            y_zero_point: y.zero_point,
            scaling,
            act_min,
            act_max,
        };
        let kind = match arith {
            Arith::Add if y.dtype == DType::I16 => QBinaryKind::Add(add(rtq::add_scaling_s16(a.scale, b.scale, y.scale))),
            Arith::Add => QBinaryKind::Add(add(rtq::add_scaling(a.scale, b.scale, y.scale))),
            Arith::Sub if y.dtype == DType::I16 => QBinaryKind::Sub(add(rtq::sub_scaling_s16(a.scale, b.scale, y.scale))),
            Arith::Sub => QBinaryKind::Sub(add(rtq::sub_scaling(a.scale, b.scale, y.scale))),
            Arith::Mul => QBinaryKind::Mul(rtq::Mul {
                a_zero_point: a.zero_point,
                b_zero_point: b.zero_point,
                y_zero_point: y.zero_point,
                requant: convention.requant(a.scale as f64 * b.scale as f64 / y.scale as f64)?,
                act_min,
                act_max,
            }),
        };
        Ok(QBinary { kind, a_strides, b_strides })
    }

    /// The kernel's name and its parameters, with the operands swapped when `swap` (an in-place
    /// step that overwrites `b`: the kernel's accumulator is its first operand).
    fn kernel(&self, swap: bool) -> (&'static str, TokenStream) {
        match self.kind {
            QBinaryKind::Add(p) => ("add", add_params(p, swap)),
            QBinaryKind::Sub(p) => ("sub", add_params(p, swap)),
            QBinaryKind::Mul(p) => {
                let rtq::Mul { a_zero_point, b_zero_point, y_zero_point, requant, act_min, act_max } = p;
                let (a_zero_point, b_zero_point) =
                    if swap { (b_zero_point, a_zero_point) } else { (a_zero_point, b_zero_point) };
                let requant = requant_expr(requant);
                let p = quote!(::sramfit::kernels::quant::Mul {
                    a_zero_point: #a_zero_point, b_zero_point: #b_zero_point, y_zero_point: #y_zero_point,
                    requant: #requant, act_min: #act_min, act_max: #act_max,
                });
                ("mul", p)
            }
        }
    }
}

/// A [`rtq::Add`] expression, `a` and `b` swapped when `swap`.
fn add_params(p: rtq::Add, swap: bool) -> TokenStream {
    let rtq::Add { a_zero_point, b_zero_point, y_zero_point, scaling, act_min, act_max } = p;
    let AddScaling { left_shift, a, b, output } = scaling;
    let ((a_zero_point, a), (b_zero_point, b)) =
        if swap { ((b_zero_point, b), (a_zero_point, a)) } else { ((a_zero_point, a), (b_zero_point, b)) };
    let (a, b, output) = (requant_expr(a), requant_expr(b), requant_expr(output));
    quote!(::sramfit::kernels::quant::Add {
        a_zero_point: #a_zero_point, b_zero_point: #b_zero_point, y_zero_point: #y_zero_point,
        scaling: ::sramfit::kernels::quant::AddScaling { left_shift: #left_shift, a: #a, b: #b, output: #output },
        act_min: #act_min, act_max: #act_max,
    })
}

impl OpKind for QBinary {
    fn kernel_name(&self) -> &'static str {
        "quant::binary"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let shape = slice_expr(&s.operands.output.shape);
        let y = &s.output;
        match s.in_place {
            // The overwritten operand is the output's slice; the other is read through its strides
            // (the in-place kernels ignore the accumulator's).
            Some(k) => {
                let (name, p) = self.kernel(k == 1);
                let f = format_ident!("{name}_in_place");
                let (other, strides) = if k == 0 { (&s.inputs[1], &self.b_strides) } else { (&s.inputs[0], &self.a_strides) };
                let (sa, so) = (slice_expr(&self.a_strides), slice_expr(strides));
                quote!(::sramfit::kernels::quant::#f(&#p,
                    &::sramfit::kernels::Broadcast { out_shape: #shape, a_strides: #sa, b_strides: #so },
                    #y, #other);)
            }
            None => {
                let (name, p) = self.kernel(false);
                let f = format_ident!("{name}");
                let (sa, sb) = (slice_expr(&self.a_strides), slice_expr(&self.b_strides));
                let (a, b) = (&s.inputs[0], &s.inputs[1]);
                quote!(::sramfit::kernels::quant::#f(&#p,
                    &::sramfit::kernels::Broadcast { out_shape: #shape, a_strides: #sa, b_strides: #sb },
                    #a, #b, #y);)
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
        sramfit_runtime_min::rank_generic_stack_bytes(target) as u64
    }

    fn plane_order(&self) -> Option<crate::ops::PlaneOrder> {
        None
    }

    fn in_place_inputs(&self, o: &Operands<'_>) -> Vec<usize> {
        let out = &o.output.shape;
        let commutative = !matches!(self.kind, QBinaryKind::Sub(_));
        let mut v = Vec::new();
        if in_place_if(o, 0, is_row_major(out, &self.a_strides)) {
            v.push(0);
        }
        if commutative && in_place_if(o, 1, is_row_major(out, &self.b_strides)) {
            v.push(1);
        }
        v
    }
}

#[cfg(feature = "onnx")]
pub(crate) use super::lowering::from_protobuf as lower;
