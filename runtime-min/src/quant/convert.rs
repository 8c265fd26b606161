//! Conversions: requantization between 8-bit quantizations (TFLite QUANTIZE int8 to int8/uint8,
//! concatenation inputs of another scale, ONNX DequantizeLinear -> QuantizeLinear pairs), and
//! quantization of `f32` / dequantization to `f32` at the graph's float ports (of the 8-bit types
//! and `i16`: [`ConvertElem`]).

use super::{QuantInt, Requant};

/// The integer types [`quantize`] and [`dequantize`] convert to and from: every [`QuantInt`]
/// (`i16`: ONNX QuantizeLinear / DequantizeLinear with int16, TFLite's 16x8 ports).
pub trait ConvertElem: QuantInt {
    /// The value as `i32`.
    fn to_int(self) -> i32;
    /// `v` clamped to the type's range.
    fn clamp_from(v: i32) -> Self;
}

impl<T: QuantInt> ConvertElem for T {
    #[inline(always)]
    fn to_int(self) -> i32 {
        self.to_i32()
    }
    #[inline(always)]
    fn clamp_from(v: i32) -> Self {
        T::saturate(v)
    }
}

/// Parameters of [`requantize`]: `y = clamp(requant.apply(x - x_zero_point) + y_zero_point)`
/// (TFLite `reference_ops::Requantize`; with a narrower clamp TFLite Micro's quantized RELU and
/// RELU6, `ReluQuantized` / `Relu6Quantized`) over `rows` rows of `cols` elements, row `r` of `x` at
/// `r * x_row_stride`, of `y` at `r * y_row_stride` (one row for a whole tensor; a concatenation
/// on an inner axis writes its input's rows into the output's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Requantize {
    /// Number of rows.
    pub rows: usize,
    /// Elements per row.
    pub cols: usize,
    /// Distance between rows of `x`.
    pub x_row_stride: usize,
    /// Distance between rows of `y`.
    pub y_row_stride: usize,
    /// Zero point of `x`.
    pub x_zero_point: i32,
    /// Zero point of `y`.
    pub y_zero_point: i32,
    /// `x_scale / y_scale`: [`rescale_requant`](super::rescale_requant).
    pub requant: Requant,
    /// Lower output clamp (`Y::MIN` for none; a fused activation's bound).
    pub act_min: i32,
    /// Upper output clamp (`Y::MAX` for none).
    pub act_max: i32,
}

/// Requantizes `x` into `y`'s scale, zero point and element type: see [`Requantize`].
pub fn requantize<X: QuantInt, Y: QuantInt>(p: &Requantize, x: &[X], y: &mut [Y]) {
    for r in 0..p.rows {
        let (xr, yr) = (&x[r * p.x_row_stride..][..p.cols], &mut y[r * p.y_row_stride..][..p.cols]);
        for (yv, &xv) in yr.iter_mut().zip(xr) {
            let v = p.requant.apply(xv.to_i32() - p.x_zero_point).wrapping_add(p.y_zero_point);
            *yv = Y::saturate(v.max(p.act_min).min(p.act_max));
        }
    }
}

/// How [`quantize_value`] rounds `x / scale` to an integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounding {
    /// To nearest, ties to even: ONNX QuantizeLinear (and onnxruntime).
    HalfToEven,
    /// To nearest, ties away from zero: TFLite QUANTIZE (`AffineQuantize`, `TfLiteRound`).
    HalfAwayFromZero,
}

/// `saturate(round(x / scale) + zero_point)`, the division in `f32`; NaN gives the zero point.
#[inline(always)]
pub fn quantize_value<T: ConvertElem>(x: f32, scale: f32, zero_point: i32, rounding: Rounding) -> T {
    let q = x / scale;
    let r = match rounding {
        Rounding::HalfToEven => libm::rintf(q),
        Rounding::HalfAwayFromZero => libm::roundf(q),
    };
    // `as` saturates (NaN to 0), so huge values clamp instead of wrapping.
    T::clamp_from((r as i32).saturating_add(zero_point))
}

/// `(x - zero_point) * scale` in `f32`: exact TFLite DEQUANTIZE (which multiplies in `f64`; the
/// product of a 9-bit integer and an `f32` is exact there, so one rounding to `f32` either way)
/// and ONNX DequantizeLinear.
#[inline(always)]
pub fn dequantize_value<T: ConvertElem>(x: T, scale: f32, zero_point: i32) -> f32 {
    (x.to_int() - zero_point) as f32 * scale
}

/// Parameters of [`quantize`] and [`dequantize`]: one scale and zero point per tensor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quantization {
    /// Real value of one step.
    pub scale: f32,
    /// Integer that represents 0.
    pub zero_point: i32,
}

/// Quantizes `f32` values: [`quantize_value`] elementwise.
pub fn quantize<T: ConvertElem>(p: &Quantization, rounding: Rounding, x: &[f32], y: &mut [T]) {
    if crate::arch::quant_quantize(p, rounding, x, y) {
        return;
    }
    for (yv, &xv) in y.iter_mut().zip(x) {
        *yv = quantize_value(xv, p.scale, p.zero_point, rounding);
    }
}

/// Dequantizes to `f32`: [`dequantize_value`] elementwise.
pub fn dequantize<T: ConvertElem>(p: &Quantization, x: &[T], y: &mut [f32]) {
    for (yv, &xv) in y.iter_mut().zip(x) {
        *yv = dequantize_value(xv, p.scale, p.zero_point);
    }
}
