//! Quantized softmax (TFLite's integer algorithm) over the middle axis of an `[outer, axis, inner]`
//! view: `runtime_min::quant::softmax`. Its output zero point is the type's minimum, its scale any
//! (TFLite's 1/256, ONNX QDQ's 1/255); another zero point is reached by a requantization after it.

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min::quant::{self as rtq, QuantElem};

use super::qparams::{on_dtype, Convention, QParams};
use super::{Target, OpKind, Operands, Scratch, Step};
use crate::tensor::DType;

/// A quantized softmax; input `[x]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QSoftmax(pub rtq::Softmax);

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
        QSoftmax(rtq::Softmax { outer, axis, inner, scaling, output })
    }

    /// The quantization the kernel writes in `dtype` at `scale`: zero point the type's minimum.
    pub fn output(dtype: DType, scale: f32) -> QParams {
        let zero_point = on_dtype!(dtype, T => <T as QuantElem>::MIN);
        QParams { scale, zero_point, dtype }
    }
}

impl OpKind for QSoftmax {
    fn kernel_name(&self) -> &'static str {
        "quant::softmax"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let rtq::Softmax { outer, axis, inner, scaling, output } = self.0;
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

    fn in_place_inputs(&self, _: &Operands<'_>) -> Vec<usize> {
        Vec::new()
    }
}

#[cfg(feature = "onnx")]
pub(crate) use super::lowering::from_protobuf as lower;
