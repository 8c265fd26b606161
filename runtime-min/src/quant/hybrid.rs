//! TensorFlow Lite's hybrid convolution (float activations, int8 weights): the float input is
//! quantized to int8 when the layer runs, the products accumulated in `i32`, and the sums brought
//! back to float by the input's and the weights' scales.
//!
//! The arithmetic of TensorFlow Lite's `conv.cc` `EvalHybrid` (per-tensor weights, one group),
//! which TFLite Micro does not have: `tensor_utils::SymmetricQuantizeFloats` over each batch
//! (`PortableSymmetricQuantizeFloats`, `kernels/internal/reference/portable_tensor_utils.cc`),
//! that scale times the weights' (`f32`), the `i32` dot products of `optimized_ops::HybridConv`
//! (padding contributes 0), each output `acc * scale + bias` in `f32`, then the fused
//! activation's clamp.

use super::conv::window_dot;
use super::Conv2d;

/// Parameters of [`hybrid_conv2d`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HybridConv2d {
    /// Geometry and strides (zero points and integer clamps unused: 0).
    pub conv: Conv2d,
    /// The weights' scale (per tensor).
    pub weight_scale: f32,
    /// Lower output clamp (fused activation; `f32::NEG_INFINITY` for none).
    pub act_min: f32,
    /// Upper output clamp (`f32::INFINITY` for none).
    pub act_max: f32,
}

/// TFLite's `SymmetricQuantizeFloats`: `values` to `[-127, 127]` by `127 / max |v|` (rounded half
/// away from zero), returning the scale `max |v| / 127` (1, and all zeros, when every value is
/// 0). Every operation in `f32`, in TFLite's order.
pub fn symmetric_quantize(values: &[f32], quantized: &mut [i8]) -> f32 {
    let (min, max) = values.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let range = libm::fabsf(min).max(libm::fabsf(max));
    if range == 0.0 || values.is_empty() {
        quantized.fill(0);
        return 1.0;
    }
    let inverse = 127.0 / range;
    for (q, &v) in quantized.iter_mut().zip(values) {
        *q = (libm::roundf(v * inverse) as i32).clamp(-127, 127) as i8;
    }
    range / 127.0
}

/// Scratch `i8` elements [`hybrid_conv2d`] needs: the quantized input (one batch).
pub const fn hybrid_conv2d_scratch_len(p: &HybridConv2d) -> usize {
    p.conv.x_strides.n
}

/// Hybrid convolution: for each batch, `x` quantized into `scratch` ([`symmetric_quantize`]),
/// then each output `(sum w * xq) * (input scale * weight_scale) + bias[o]`, clamped to `[act_min,
/// act_max]`. `x` and `y` are addressed by [`Conv2d`]'s strides (a batch of `x` contiguous: its
/// `x_strides.n` elements), `w` is OHWI (TFLite's layout), `bias` has `out_channels` values or
/// none; `scratch` has [`hybrid_conv2d_scratch_len`] elements.
pub fn hybrid_conv2d(p: &HybridConv2d, x: &[f32], w: &[i8], bias: &[f32], y: &mut [f32], scratch: &mut [i8]) {
    let c = &p.conv;
    assert!(bias.is_empty() || bias.len() == c.out_channels, "hybrid_conv2d: one bias per output channel");
    assert_eq!(w.len(), c.out_channels * c.taps(), "hybrid_conv2d: weight length");
    let n = c.x_strides.n;
    let quantized = &mut scratch[..n];
    let one = Conv2d { batch: 1, ..*c };
    let (ys, per_group) = (c.y_strides, c.out_channels / c.groups);
    for b in 0..c.batch {
        let scale = symmetric_quantize(&x[b * n..][..n], quantized) * p.weight_scale;
        for oy in 0..c.out_h {
            for ox in 0..c.out_w {
                for (oc, w_oc) in w.chunks_exact(c.taps()).enumerate() {
                    let acc = window_dot(&one, &*quantized, w_oc, (0, oc / per_group, oy, ox));
                    let v = acc as f32 * scale + bias.get(oc).copied().unwrap_or(0.0);
                    y[b * ys.n + oy * ys.h + ox * ys.w + oc * ys.c] = v.max(p.act_min).min(p.act_max);
                }
            }
        }
    }
}
