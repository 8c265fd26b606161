//! Quantized softmax (TFLite's integer algorithm) over the middle axis of an `[outer, axis, inner]`
//! view: `runtime_min::quant::softmax`. Its output zero point is the type's minimum, its scale any
//! (TFLite's 1/256, ONNX QDQ's 1/255); another zero point is reached by a requantization after it.
//! On `i16` (TFLite's 16x8 mode) it is TFLite's table-driven algorithm along the last axis,
//! `runtime_min::quant::softmax_s16`, into scale 1/32768, zero point 0.

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min::quant::{self as rtq, QuantInt};

use super::qparams::{on_dtype, Convention, QParams};
use super::{Target, OpKind, Operands, Scratch, Step};
use crate::tensor::{DType, Data};

/// A quantized softmax; input `[x]`, and for `i16` its tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QSoftmax {
    /// 8-bit: TFLite's fixed-point algorithm.
    S8(rtq::Softmax),
    /// `i16`: TFLite's int16 algorithm; inputs `[x, tables]` (`rtq::softmax_s16_tables`).
    S16(rtq::SoftmaxS16),
}

impl QSoftmax {
    /// The softmax of `x` (scaled by `beta`) along the middle axis of `[outer, axis, inner]`, into
    /// `y` (whose zero point is [`QSoftmax::output`]'s), its probabilities brought to `y`'s scale
    /// as the `convention`'s runtime does it.
    ///
    /// TFLite multiplies them by `1 / y.scale`; onnxruntime's QLinearSoftmax (which runs every
    /// QDQ softmax) by `floor(1 / y.scale)` computed in `f32`: 254 for the 1/255 of ORT's QDQ
    /// files, whose `f32` reciprocal is 254.99998. Scaled by 255, the transformer layer's attention
    /// was 4 steps from onnxruntime's output (63.6% equal), the same as onnxruntime's own exact
    /// float softmax in its place (measured by swapping it in).
    pub fn new(
        (outer, axis, inner): (usize, usize, usize),
        beta: f32,
        (x, y): (QParams, QParams),
        convention: Convention,
    ) -> QSoftmax {
        let scaling = rtq::softmax_scaling(beta, x.scale);
        let output = match convention {
            Convention::Tflite => rtq::softmax_output(y.scale),
            Convention::Onnx => rtq::quantize_multiplier((1.0f32 / y.scale).floor() as f64 / 256.0),
        };
        QSoftmax::S8(rtq::Softmax { outer, axis, inner, scaling, output })
    }

    /// The softmax of the `i16` `x` (zero point 0, scaled by `beta`) along rows of `len`, into
    /// scale 1/32768: the op and its tables (TFLite Micro's `CalculateSoftmaxParams` and
    /// `InitializeLutForInt16`; `exp` is the build machine's `f32::exp`, the C library's `expf`
    /// as TFLite's `std::exp`: glibc's on Linux, as for TFLite Micro's Python interpreter).
    pub fn new_s16(rows: usize, len: usize, beta: f32, x: QParams) -> Result<(QSoftmax, Data), String> {
        if x.dtype != DType::I16 || x.zero_point != 0 {
            return Err("an int16 softmax of an input that is not symmetric int16".into());
        }
        let input = Convention::Tflite.requant(x.scale as f64 * beta as f64 / (10.0 / 65535.0))?;
        let tables = rtq::softmax_s16_tables(f32::exp);
        Ok((QSoftmax::S16(rtq::SoftmaxS16 { rows, len, input }), Data::I16(tables.to_vec())))
    }

    /// The quantization the kernel writes in `dtype` at `scale`: zero point the type's minimum
    /// (0 for `i16`, TFLite's rule).
    pub fn output(dtype: DType, scale: f32) -> QParams {
        let zero_point = match dtype {
            DType::I16 => 0,
            _ => on_dtype!(dtype, T => <T as QuantInt>::MIN),
        };
        QParams { scale, zero_point, dtype }
    }
}

impl OpKind for QSoftmax {
    fn kernel_name(&self) -> &'static str {
        match self {
            QSoftmax::S8(_) => "quant::softmax",
            QSoftmax::S16(_) => "quant::softmax_s16",
        }
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let p = match *self {
            QSoftmax::S8(p) => p,
            QSoftmax::S16(rtq::SoftmaxS16 { rows, len, input: rtq::Requant { multiplier, shift } }) => {
                let (x, tables, y) = (&s.inputs[0], &s.inputs[1], &s.output);
                return quote!(::sramfit::kernels::quant::softmax_s16(&::sramfit::kernels::quant::SoftmaxS16 {
                    rows: #rows, len: #len,
                    input: ::sramfit::kernels::quant::Requant { multiplier: #multiplier, shift: #shift },
                }, #x, #tables, #y););
            }
        };
        let rtq::Softmax { outer, axis, inner, scaling, output } = p;
        let rtq::SoftmaxScaling { input_multiplier, input_left_shift, diff_min } = scaling;
        let rtq::Requant { multiplier, shift } = output;
        let (x, y) = (&s.inputs[0], &s.output);
        quote!(::sramfit::kernels::quant::softmax(&::sramfit::kernels::quant::Softmax {
            outer: #outer, axis: #axis, inner: #inner,
            scaling: ::sramfit::kernels::quant::SoftmaxScaling {
                input_multiplier: #input_multiplier, input_left_shift: #input_left_shift, diff_min: #diff_min,
            },
            output: ::sramfit::kernels::quant::Requant { multiplier: #multiplier, shift: #shift },
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
