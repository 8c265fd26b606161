//! Quantized softmax (TFLite's integer algorithm) over the middle axis of an `[outer, axis, inner]`
//! view: `runtime_min::quant::softmax`. Its output quantization is fixed (scale 1/256, zero point
//! the type's minimum); another one is reached by a requantization after it.

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min::quant::{self as rtq, QuantElem};

use super::qparams::{on_dtype, QParams};
use super::{Target, OpKind, Operands, Scratch, Step};
use crate::tensor::DType;

/// A quantized softmax; input `[x]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QSoftmax(pub rtq::Softmax);

impl QSoftmax {
    /// The softmax of `x` (scaled by `beta`) along the middle axis of `[outer, axis, inner]`.
    pub fn new(outer: usize, axis: usize, inner: usize, beta: f32, x: QParams) -> QSoftmax {
        QSoftmax(rtq::Softmax { outer, axis, inner, scaling: rtq::softmax_scaling(beta, x.scale) })
    }

    /// The quantization the kernel writes in `dtype`: scale 1/256, zero point the type's minimum.
    pub fn output(dtype: DType) -> QParams {
        let zero_point = on_dtype!(dtype, T => <T as QuantElem>::MIN);
        QParams { scale: 1.0 / 256.0, zero_point, dtype }
    }
}

impl OpKind for QSoftmax {
    fn kernel_name(&self) -> &'static str {
        "quant::softmax"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let rtq::Softmax { outer, axis, inner, scaling } = self.0;
        let rtq::SoftmaxScaling { input_multiplier, input_left_shift, diff_min } = scaling;
        let (x, y) = (&s.inputs[0], &s.output);
        quote!(::sramfit::kernels::quant::softmax(&::sramfit::kernels::quant::Softmax {
            outer: #outer, axis: #axis, inner: #inner,
            scaling: ::sramfit::kernels::quant::SoftmaxScaling {
                input_multiplier: #input_multiplier, input_left_shift: #input_left_shift, diff_min: #diff_min,
            },
        }, #x, #y);)
    }

    fn macs(&self, _: &Operands<'_>) -> u64 {
        0
    }

    fn scratch(&self) -> Scratch {
        Scratch::NONE
    }

    fn stack_bytes(&self, _: Target) -> u64 {
        64
    }

    fn in_place_inputs(&self, _: &Operands<'_>) -> Vec<usize> {
        Vec::new()
    }
}

#[cfg(feature = "onnx")]
pub(crate) use super::lowering::from_protobuf as lower;
