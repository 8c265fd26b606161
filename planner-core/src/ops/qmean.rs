//! Quantized mean over adjacent axes with rescaling (QDQ / QLinear GlobalAveragePool, ReduceMean,
//! and average pools whose window is the whole input): `runtime_min::quant::mean`.

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min::quant as rtq;

use super::qparams::{requant_expr, Convention, QParams};
use super::{Target, OpKind, Operands, Scratch, Step};

/// A quantized mean along the middle axis of an `[outer, reduce, inner]` view; input `[x]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QMean(pub rtq::Mean);

impl QMean {
    /// The mean of `reduce` values (of the `[outer, reduce, inner]` view) from `x` into `y`: the
    /// rescaling and `1 / reduce` in one multiplier, rounded once for ONNX
    /// ([`requant`](super::qparams::requant)), folded in at run time's precision as TFLite does
    /// ([`rtq::mean_requant`]).
    pub fn new(
        (outer, reduce, inner): (usize, usize, usize),
        x: QParams,
        y: QParams,
        convention: Convention,
    ) -> Result<QMean, String> {
        if x.dtype != y.dtype {
            return Err("input and output of different integer types".into());
        }
        if reduce == 0 {
            return Err("a mean of no values".into());
        }
        let requant = match convention {
            Convention::Onnx => convention.requant(x.scale as f64 / (y.scale as f64 * reduce as f64))?,
            Convention::Tflite => rtq::mean_requant(Convention::Tflite.requant(x.scale as f64 / y.scale as f64)?, reduce),
        };
        Ok(QMean(rtq::Mean { outer, reduce, inner, x_zero_point: x.zero_point, y_zero_point: y.zero_point, requant }))
    }
}

impl OpKind for QMean {
    fn kernel_name(&self) -> &'static str {
        "quant::mean"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let rtq::Mean { outer, reduce, inner, x_zero_point, y_zero_point, requant } = self.0;
        let requant = requant_expr(requant);
        let (x, y) = (&s.inputs[0], &s.output);
        quote!(::sramfit::kernels::quant::mean(&::sramfit::kernels::quant::Mean {
            outer: #outer, reduce: #reduce, inner: #inner,
            x_zero_point: #x_zero_point, y_zero_point: #y_zero_point, requant: #requant,
        }, #x, #y);)
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
pub(crate) use super::lowering::from_protobuf as lower;
