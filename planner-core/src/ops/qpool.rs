//! Quantized max and average pooling on NCHW (or NHWC) activations, input and output sharing one
//! quantization: `runtime_min::quant::max_pool2d` / `avg_pool2d` (TFLite's rounding) /
//! `avg_pool2d_half_even` (onnxruntime's).

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min::quant as rtq;

use super::pool::PoolKind;
use super::qparams::{image_strides_expr, Convention, QParams};
use super::{Target, OpKind, Operands, Scratch, Step};

/// A quantized pooling step; input `[x]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QPool {
    /// Max or average.
    pub kind: PoolKind,
    /// Geometry, layouts, zero point and clamp.
    pub params: rtq::Pool2d,
    /// Average pooling rounds the exact mean to nearest, ties to even (`avg_pool2d_half_even`,
    /// onnxruntime's result) rather than as TFLite (`avg_pool2d`, the default of [`QPool::new`]).
    pub half_even: bool,
}

impl QPool {
    /// Pooling of geometry `geometry` (its layout, zero point and clamp fields are set here, the
    /// layout `convention`'s) over an input and output quantized by `q`, `clamp` the real range
    /// of a fused activation.
    pub fn new(kind: PoolKind, geometry: rtq::Pool2d, q: QParams, clamp: (f32, f32), convention: Convention) -> QPool {
        let mut p = geometry;
        p.x_strides = convention.image_strides(p.channels, p.in_h, p.in_w);
        p.y_strides = convention.image_strides(p.channels, p.out_h, p.out_w);
        p.zero_point = q.zero_point;
        (p.act_min, p.act_max) = q.clamp(clamp);
        QPool { kind, params: p, half_even: false }
    }

    /// This pooling with onnxruntime's rounding of averages (ONNX models; see
    /// [`QPool::half_even`]).
    pub fn with_half_even_rounding(self) -> QPool {
        QPool { half_even: true, ..self }
    }
}

impl OpKind for QPool {
    fn kernel_name(&self) -> &'static str {
        match (self.kind, self.half_even) {
            (PoolKind::Max, _) => "quant::max_pool2d",
            (PoolKind::Avg, false) => "quant::avg_pool2d",
            (PoolKind::Avg, true) => "quant::avg_pool2d_half_even",
        }
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let rtq::Pool2d {
            batch,
            channels,
            in_h,
            in_w,
            out_h,
            out_w,
            kernel_h,
            kernel_w,
            stride_h,
            stride_w,
            dilation_h,
            dilation_w,
            pad_top,
            pad_left,
            pad_bottom,
            pad_right,
            count_include_pad,
            x_strides,
            y_strides,
            zero_point,
            act_min,
            act_max,
        } = self.params;
        let (xs, ys) = (image_strides_expr(x_strides), image_strides_expr(y_strides));
        let p = quote!(::sramfit::kernels::quant::Pool2d {
            batch: #batch, channels: #channels, in_h: #in_h, in_w: #in_w, out_h: #out_h, out_w: #out_w,
            kernel_h: #kernel_h, kernel_w: #kernel_w, stride_h: #stride_h, stride_w: #stride_w,
            dilation_h: #dilation_h, dilation_w: #dilation_w, pad_top: #pad_top, pad_left: #pad_left,
            pad_bottom: #pad_bottom, pad_right: #pad_right, count_include_pad: #count_include_pad,
            x_strides: #xs, y_strides: #ys, zero_point: #zero_point, act_min: #act_min, act_max: #act_max,
        });
        let (x, y) = (&s.inputs[0], &s.output);
        let kernel = match (self.kind, self.half_even) {
            (PoolKind::Max, _) => quote!(::sramfit::kernels::quant::max_pool2d),
            (PoolKind::Avg, false) => quote!(::sramfit::kernels::quant::avg_pool2d),
            (PoolKind::Avg, true) => quote!(::sramfit::kernels::quant::avg_pool2d_half_even),
        };
        match &s.overlap {
            // A verified overlapped step: input and output in one `&mut` slice, split by planes
            // (NCHW) or rows (NHWC).
            Some(o) => {
                let (region, x_at, y_at) = (&o.region, o.input_at, o.output_at);
                quote!(::sramfit::kernels::quant_pool2d_overlapped(&#p, #kernel, #region, (#x_at, #y_at));)
            }
            None => quote!(#kernel(&#p, #x, #y);),
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

    /// Pooling one image has one (`runtime_min::quant_pool2d_plane_order`): whole NCHW planes
    /// (the ONNX files'), or NHWC rows (the `.tflite` files').
    fn plane_order(&self) -> Option<crate::ops::PlaneOrder> {
        sramfit_runtime_min::quant_pool2d_plane_order(&self.params)
    }

    fn in_place_inputs(&self, _: &Operands<'_>) -> Vec<usize> {
        Vec::new()
    }
}

#[cfg(feature = "onnx")]
pub(crate) use super::lowering::from_protobuf as lower;
