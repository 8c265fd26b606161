//! TFLite Micro's int16 LEAKY_RELU (`reference_ops::QuantizeLeakyRelu<int16_t>`, parameters of
//! `leaky_relu_common.cc`): non-negative inputs rescaled by one multiplier, negative ones by
//! `alpha` times it.

use crate::quant::Requant;

/// Parameters of [`leaky_relu_s16`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeakyReluS16 {
    /// Zero point of `x`.
    pub x_zero_point: i32,
    /// Zero point of `y`.
    pub y_zero_point: i32,
    /// `input_scale / output_scale` (divided in `f32`, as TFLite Micro).
    pub identity: Requant,
    /// `input_scale * alpha / output_scale` (in `f32`); negative for a negative `alpha`.
    pub alpha: Requant,
}

/// `y = y_zero_point + identity(x - x_zero_point)` where `x - x_zero_point >= 0`, else `+
/// alpha(x - x_zero_point)` (a negative `alpha` multiplier applied as its magnitude, the result
/// negated, as TFLite does), saturated to `i16`.
pub fn leaky_relu_s16(p: &LeakyReluS16, x: &[i16], y: &mut [i16]) {
    let magnitude = Requant { multiplier: p.alpha.multiplier.wrapping_abs(), ..p.alpha };
    for (yv, &xv) in y.iter_mut().zip(x) {
        let v = xv as i32 - p.x_zero_point;
        let scaled = match (v >= 0, p.alpha.multiplier < 0) {
            (true, _) => p.identity.apply(v),
            (false, false) => magnitude.apply(v),
            (false, true) => magnitude.apply(v).wrapping_neg(),
        };
        *yv = p.y_zero_point.wrapping_add(scaled).clamp(i16::MIN as i32, i16::MAX as i32) as i16;
    }
}
