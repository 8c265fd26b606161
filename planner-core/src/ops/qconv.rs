//! Quantized convolution (standard, grouped, pointwise, depthwise with a channel multiplier, 1-D as
//! `in_h = 1`) on NCHW (ONNX) or NHWC (TFLite) activations: `runtime_min::quant::conv2d` /
//! `depthwise_conv2d`, with the per-channel folded biases, multipliers and shifts in the weight
//! blob; or `conv2d_acc`, whose output is the `i32` accumulator (ONNX ConvInteger, MatMulInteger);
//! or, on `i16` activations (TFLite's 16x8 mode), `conv2d_s16` / `depthwise_conv2d_s16` with `i64`
//! biases.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use sramfit_runtime_min::quant as rtq;

use super::qparams::{channel_quant_expr, channel_requant, image_strides_expr, Convention, QParams, QWeights};
use super::{Target, OpKind, Operands, Scratch, Step};
use crate::tensor::{DType, Data};

/// A quantized convolution; inputs `[x, weights, folded bias, multipliers, shifts]` (weights OHWI,
/// or 1HWO for a depthwise one; see [`QConv::new`]).
#[derive(Clone, Debug, PartialEq)]
pub struct QConv {
    /// Geometry, layouts, zero points and output clamp.
    pub params: rtq::Conv2d,
    /// `depthwise_conv2d` (groups == input channels) rather than `conv2d`.
    pub depthwise: bool,
    /// The activation type (`I8` or `U8`; `I16`: the 16x8 kernels, [`QConv::new_s16`]).
    pub dtype: DType,
    /// `conv2d_acc`: the output is the `i32` accumulator itself (ONNX ConvInteger), and the
    /// inputs are `[x, weights, folded bias]` ([`QConv::accumulator`]).
    pub accumulate: bool,
    /// How the output stage rounds (that of the model's format: [`channel_requant`]).
    pub rounding: rtq::RequantRounding,
}

impl QConv {
    /// A convolution of geometry `geometry` (its layout, zero point and clamp fields are set here)
    /// from `x` to `y`, with weights `w` in the layout of `convention` (ONNX's OIHW, packed here;
    /// TFLite's OHWI, or 1HWO for a depthwise one, taken as they are) and `bias` (one value per
    /// output channel in units of `x.scale * w.scale(o)`, or empty): the op and its constants
    /// `[weights, folded bias, multipliers, shifts]`. `clamp` is the real range of a fused
    /// activation.
    pub fn new(
        geometry: rtq::Conv2d,
        (x, w, y): (QParams, &QWeights, QParams),
        bias: &[i32],
        clamp: (f32, f32),
        convention: Convention,
    ) -> Result<(QConv, Vec<Data>), String> {
        if x.dtype != y.dtype || x.dtype == DType::I16 {
            return Err("input and output of different integer types, or int16 ones (QConv::new_s16)".into());
        }
        let oc = geometry.out_channels;
        if !(w.scales.len() == 1 || w.scales.len() == oc) {
            return Err("per-channel weight scales do not match the output channels".into());
        }
        let depthwise = geometry.groups > 1 && geometry.groups == geometry.in_channels;
        let (mut p, packed, folded) = pack(geometry, x.zero_point, w, bias, (depthwise, convention))?;
        p.y_zero_point = y.zero_point;
        (p.act_min, p.act_max) = y.clamp(clamp);
        let reals = (0..w.scales.len()).map(|o| x.scale as f64 * w.scale(o) as f64 / y.scale as f64);
        let (multipliers, shifts, rounding) = channel_requant(convention, reals)?;
        let op = QConv { params: p, depthwise, dtype: x.dtype, accumulate: false, rounding };
        Ok((op, vec![Data::I8(packed), Data::I32(folded), multipliers, shifts]))
    }

    /// The convolution of [`QConv::new`] on `i16` activations (TFLite's 16x8 mode: `x` and `y`
    /// symmetric, zero point 0; TFLite's layouts) with `i64` biases: the op and its constants
    /// `[weights, bias words (rtq::bias_s16_words), multipliers, shifts]`, the multipliers
    /// TFLite's.
    pub fn new_s16(
        geometry: rtq::Conv2d,
        (x, w, y): (QParams, &QWeights, QParams),
        bias: &[i64],
        clamp: (f32, f32),
    ) -> Result<(QConv, Vec<Data>), String> {
        let (multipliers, shifts) = s16_requant(x, w, y)?;
        let depthwise = geometry.groups > 1 && geometry.groups == geometry.in_channels;
        let (mut p, packed, _) = pack(geometry, 0, w, &[], (depthwise, Convention::Tflite))?;
        if !(bias.is_empty() || bias.len() == p.out_channels) {
            return Err(format!("{} biases for {} output channels", bias.len(), p.out_channels));
        }
        (p.act_min, p.act_max) = y.clamp(clamp);
        // TFLite's double rounding, in the 64-bit form of `ChannelQuantS16` (the field is not read).
        let rounding = rtq::RequantRounding::Double;
        let op = QConv { params: p, depthwise, dtype: DType::I16, accumulate: false, rounding };
        Ok((op, vec![Data::I8(packed), s16_bias(bias, p.out_channels), multipliers, shifts]))
    }

    /// The convolution of [`QConv::new`] without the output stage (ONNX ConvInteger; a
    /// MatMulInteger by a constant as a 1x1 convolution): an `i32` output holding `sum (w -
    /// w.zero_point) * (x - x_zero_point)` for an input of type `dtype` (`I8` or `U8`); the weight
    /// scales are not read. Returns the op and its constants `[weights, folded bias]`.
    pub fn accumulator(
        geometry: rtq::Conv2d,
        x_zero_point: i32,
        dtype: DType,
        w: &QWeights,
    ) -> Result<(QConv, Vec<Data>), String> {
        let (p, packed, folded) = pack(geometry, x_zero_point, w, &[], (false, Convention::Onnx))?;
        let rounding = rtq::RequantRounding::Double; // no output stage
        Ok((QConv { params: p, depthwise: false, dtype, accumulate: true, rounding }, vec![Data::I8(packed), Data::I32(folded)]))
    }

    /// Whether an overlapped run of this layer goes plane by plane, gathering each chunk's
    /// weights (`quant_depthwise_conv2d_overlapped`): an 8-bit depthwise convolution with a plane
    /// order of NCHW planes. Otherwise it goes row by row, if at all.
    fn gathers_planes(&self) -> bool {
        let eight_bit = matches!(self.dtype, DType::I8 | DType::U8);
        let planes = sramfit_runtime_min::quant_depthwise_plane_order(&self.params).is_some();
        self.depthwise && !self.accumulate && eight_bit && planes
    }
}

/// TFLite's per-channel multipliers of a 16x8 layer, `x.scale * w.scale(o) / y.scale` in `f64`
/// (the same as the 8-bit layers'): the `[multipliers, shifts]` constants. Refused unless `x` and
/// `y` are int16 and both they and the weights symmetric (TFLite's 16x8 spec).
pub(crate) fn s16_requant(x: QParams, w: &QWeights, y: QParams) -> Result<(Data, Data), String> {
    if x.dtype != DType::I16 || y.dtype != DType::I16 || x.zero_point != 0 || y.zero_point != 0 || w.zero_point != 0 {
        return Err("a 16x8 layer whose activations are not symmetric int16 or whose weights are not symmetric".into());
    }
    let reals = (0..w.scales.len()).map(|o| x.scale as f64 * w.scale(o) as f64 / y.scale as f64);
    let (multipliers, shifts, _) = channel_requant(Convention::Tflite, reals)?;
    Ok((multipliers, shifts))
}

/// The `i64` biases of a 16x8 layer (0 for each of `channels` when there are none) as the words
/// [`rtq::ChannelQuantS16`] reads.
pub(crate) fn s16_bias(bias: &[i64], channels: usize) -> Data {
    let bias = if bias.is_empty() { vec![0; channels] } else { bias.to_vec() };
    let mut words = vec![0i32; 2 * channels];
    rtq::bias_s16_words(&bias, &mut words);
    Data::I32(words)
}

/// Checks `geometry` against the weights and bias, sets its strides (the layout of `convention`)
/// and input and weight zero points, and packs the weights (ONNX's OIHW; TFLite's are stored as
/// the kernels read them) and folds the bias for `conv2d` (or `depthwise_conv2d`).
fn pack(
    geometry: rtq::Conv2d,
    x_zero_point: i32,
    w: &QWeights,
    bias: &[i32],
    (depthwise, convention): (bool, Convention),
) -> Result<(rtq::Conv2d, Vec<i8>, Vec<i32>), String> {
    let mut p = geometry;
    if p.groups == 0 || !p.in_channels.is_multiple_of(p.groups) || !p.out_channels.is_multiple_of(p.groups) {
        return Err(format!("{} groups for {} -> {} channels", p.groups, p.in_channels, p.out_channels));
    }
    let oc = p.out_channels;
    if w.values.len() != oc * p.taps() {
        return Err(format!("{} weights for {oc} output channels of {} taps", w.values.len(), p.taps()));
    }
    if !(bias.is_empty() || bias.len() == oc) {
        return Err(format!("{} biases for {oc} output channels", bias.len()));
    }
    p.x_strides = convention.image_strides(p.in_channels, p.in_h, p.in_w);
    p.y_strides = convention.image_strides(oc, p.out_h, p.out_w);
    p.x_zero_point = x_zero_point;
    p.w_zero_point = w.zero_point;
    let mut packed = w.values.clone();
    let mut folded = vec![0i32; oc];
    match (depthwise, convention) {
        (true, Convention::Onnx) => rtq::pack_depthwise_weights(&w.values, oc, p.kernel_h, p.kernel_w, &mut packed),
        (false, Convention::Onnx) => {
            rtq::pack_conv_weights(&w.values, oc, p.group_in_channels(), p.kernel_h, p.kernel_w, &mut packed)
        }
        (_, Convention::Tflite) => {}
    }
    if depthwise {
        rtq::fold_depthwise_bias(&packed, bias, x_zero_point, w.zero_point, &mut folded);
    } else {
        rtq::fold_bias(&packed, bias, x_zero_point, w.zero_point, &mut folded);
    }
    Ok((p, packed, folded))
}

impl OpKind for QConv {
    fn kernel_name(&self) -> &'static str {
        match (self.accumulate, self.depthwise, self.dtype) {
            (true, _, _) => "quant::conv2d_acc",
            (false, true, DType::I16) => "quant::depthwise_conv2d_s16",
            (false, false, DType::I16) => "quant::conv2d_s16",
            (false, true, _) => "quant::depthwise_conv2d",
            (false, false, _) => "quant::conv2d",
        }
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let p = params(&self.params);
        let y = &s.output;
        if self.accumulate {
            let [x, w, bias] = &s.inputs[..] else { unreachable!("three inputs") };
            let scratch = s.scratch_or_empty();
            return quote!(::sramfit::kernels::quant::conv2d_acc(&#p, #x, #w, #bias, #y, #scratch););
        }
        let [x, w, bias, multipliers, shifts] = &s.inputs[..] else { unreachable!("five inputs") };
        if self.dtype == DType::I16 {
            let kernel = format_ident!("{}", self.kernel_name().trim_start_matches("quant::"));
            let q = quote!(&::sramfit::kernels::quant::ChannelQuantS16 { bias: #bias, multipliers: #multipliers, shifts: #shifts });
            return quote!(::sramfit::kernels::quant::#kernel(&#p, #x, #w, #q, #y););
        }
        let q = channel_quant_expr([bias, multipliers, shifts], self.rounding);
        if let Some(o) = &s.overlap {
            // A verified overlapped step: input and output in one `&mut` slice, split by the
            // kernel at NCHW planes or NHWC rows (whichever order `plane_order` stated).
            let (region, x_at, y_at) = (&o.region, o.input_at, o.output_at);
            if self.gathers_planes() {
                quote!(::sramfit::kernels::quant_depthwise_conv2d_overlapped(&#p, #region, (#x_at, #y_at), #w, #q);)
            } else {
                let scratch = s.scratch_or_empty();
                quote!(::sramfit::kernels::quant_conv2d_rows_overlapped(&#p, #region, (#x_at, #y_at), #w, #q, #scratch);)
            }
        } else if self.depthwise {
            quote!(::sramfit::kernels::quant::depthwise_conv2d(&#p, #x, #w, #q, #y);)
        } else {
            let scratch = s.scratch_or_empty();
            quote!(::sramfit::kernels::quant::conv2d(&#p, #x, #w, #q, #y, #scratch);)
        }
    }

    fn macs(&self, o: &Operands<'_>) -> u64 {
        o.output.len() as u64 * self.params.taps() as u64
    }

    fn scratch(&self) -> Scratch {
        match self.depthwise || self.dtype == DType::I16 {
            true => Scratch::NONE,
            // A window or nothing: `fit_scratch` gives none where a window would raise the peak.
            false => Scratch { dtype: self.dtype, preferred: rtq::conv2d_scratch_len(&self.params), step: self.params.taps() },
        }
    }

    fn stack_bytes(&self, target: Target) -> u64 {
        if self.dtype == DType::I16 {
            // The 16x8 kernels have no local arrays.
            return 0;
        }
        // A layer that may be overlapped plane by plane may gather a chunk's weights (counted
        // whether or not the plan overlaps it: the fact is the operator's).
        let gathered = if self.gathers_planes() { sramfit_runtime_min::QUANT_OVERLAP_WEIGHTS } else { 0 };
        gathered as u64
            + match self.depthwise {
                true => sramfit_runtime_min::quant_depthwise_stack_bytes(target) as u64,
                false => sramfit_runtime_min::quant_conv2d_stack_bytes(target) as u64,
            }
    }

    /// An int8 / uint8 depthwise convolution of whole NCHW planes (the ONNX files') has one
    /// (`runtime_min::quant_depthwise_plane_order`), and so has any int8 / uint8 convolution of
    /// NHWC images (the `.tflite` files'), row by row (`runtime_min::quant_conv2d_row_order`);
    /// the 16x8 and accumulator forms have none.
    fn plane_order(&self) -> Option<crate::ops::PlaneOrder> {
        let eight_bit = matches!(self.dtype, DType::I8 | DType::U8);
        if self.accumulate || !eight_bit {
            return None;
        }
        match self.gathers_planes() {
            true => sramfit_runtime_min::quant_depthwise_plane_order(&self.params),
            false => sramfit_runtime_min::quant_conv2d_row_order(&self.params),
        }
    }

    fn in_place_inputs(&self, _: &Operands<'_>) -> Vec<usize> {
        Vec::new()
    }
}

/// A [`rtq::Conv2d`] expression.
pub(crate) fn params(p: &rtq::Conv2d) -> TokenStream {
    let rtq::Conv2d {
        batch,
        in_channels,
        in_h,
        in_w,
        out_channels,
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
        groups,
        x_strides,
        y_strides,
        x_zero_point,
        w_zero_point,
        y_zero_point,
        act_min,
        act_max,
    } = *p;
    let (xs, ys) = (image_strides_expr(x_strides), image_strides_expr(y_strides));
    quote!(::sramfit::kernels::quant::Conv2d {
        batch: #batch, in_channels: #in_channels, in_h: #in_h, in_w: #in_w,
        out_channels: #out_channels, out_h: #out_h, out_w: #out_w,
        kernel_h: #kernel_h, kernel_w: #kernel_w, stride_h: #stride_h, stride_w: #stride_w,
        dilation_h: #dilation_h, dilation_w: #dilation_w, pad_top: #pad_top, pad_left: #pad_left,
        groups: #groups, x_strides: #xs, y_strides: #ys,
        x_zero_point: #x_zero_point, w_zero_point: #w_zero_point, y_zero_point: #y_zero_point,
        act_min: #act_min, act_max: #act_max,
    })
}

#[cfg(feature = "onnx")]
pub(crate) use super::lowering::from_protobuf as lower;

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry() -> rtq::Conv2d {
        let s = rtq::ImageStrides { n: 0, c: 0, h: 0, w: 0 };
        rtq::Conv2d {
            batch: 1,
            in_channels: 2,
            in_h: 1,
            in_w: 1,
            out_channels: 2,
            out_h: 1,
            out_w: 1,
            kernel_h: 1,
            kernel_w: 1,
            stride_h: 1,
            stride_w: 1,
            dilation_h: 1,
            dilation_w: 1,
            pad_top: 0,
            pad_left: 0,
            groups: 1,
            x_strides: s,
            y_strides: s,
            x_zero_point: 0,
            w_zero_point: 0,
            y_zero_point: 0,
            act_min: 0,
            act_max: 0,
        }
    }

    #[test]
    fn folds_the_input_zero_point_and_requantizes_per_channel() {
        let x = QParams { scale: 0.5, zero_point: 3, dtype: DType::I8 };
        let y = QParams { scale: 0.25, zero_point: -1, dtype: DType::I8 };
        let w = QWeights { values: vec![1, 2, -1, 4], scales: vec![1.0, 0.5], zero_point: 0 };
        let (op, consts) = QConv::new(geometry(), (x, &w, y), &[10, 20], (0.0, f32::INFINITY), Convention::Onnx).unwrap();
        // bias - x_zp * sum(w): 10 - 3 * 3 = 1, 20 - 3 * 3 = 11.
        assert_eq!(consts[1], Data::I32(vec![1, 11]));
        // 0.5 * 1 / 0.25 = 2 = 2^30 * 2^(2 - 31); 0.5 * 0.5 / 0.25 = 1.
        assert_eq!(consts[2], Data::I32(vec![1 << 30, 1 << 30]));
        assert_eq!(consts[3], Data::I32(vec![2, 1]));
        // Relu on an output of zero point -1: the clamp starts at -1.
        assert_eq!((op.params.act_min, op.params.act_max), (-1, 127));
        assert!(!op.depthwise);
    }
}
