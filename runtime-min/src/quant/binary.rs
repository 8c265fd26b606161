//! Quantized elementwise add, sub and mul with rescaling and broadcasting: TFLite ADD, SUB, MUL
//! (`reference_integer_ops::AddFunc`, `reference_ops::SubElementwise`, `MulElementwise`), ONNX QLinearAdd,
//! QLinearMul and QDQ Add / Sub / Mul.

use super::{quantize_multiplier, QuantInt, Requant};
use crate::util::{contiguous_strides, Layout};
use crate::Broadcast;

/// TFLite's rescaling of ADD and SUB: both inputs are shifted left by `left_shift` (20 for 8-bit
/// types, 15 for `i16`) and brought to a common scale (twice the larger input scale) by `a` and `b`, the sum or
/// difference is brought to the output scale by `output`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddScaling {
    /// Left shift applied to both inputs first (20; 15 for `i16`).
    pub left_shift: i32,
    /// Multiplier of `a - a_zero_point` (after the shift).
    pub a: Requant,
    /// Multiplier of `b - b_zero_point` (after the shift).
    pub b: Requant,
    /// Multiplier of the sum.
    pub output: Requant,
}

/// Parameters of [`add`] and [`sub`]: `y = clamp(output(a' ± b') + y_zero_point)` with
/// `a' = scaling.a.apply((a - a_zero_point) << left_shift)`, `b'` likewise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Add {
    /// Zero point of `a`.
    pub a_zero_point: i32,
    /// Zero point of `b`.
    pub b_zero_point: i32,
    /// Zero point of `y`.
    pub y_zero_point: i32,
    /// The multipliers: [`add_scaling`] or [`sub_scaling`].
    pub scaling: AddScaling,
    /// Lower output clamp.
    pub act_min: i32,
    /// Upper output clamp.
    pub act_max: i32,
}

/// Parameters of [`mul`]: `y = clamp(requant.apply((a - a_zero_point) * (b - b_zero_point)) +
/// y_zero_point)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mul {
    /// Zero point of `a`.
    pub a_zero_point: i32,
    /// Zero point of `b`.
    pub b_zero_point: i32,
    /// Zero point of `y`.
    pub y_zero_point: i32,
    /// `a_scale * b_scale / y_scale`: [`mul_requant`].
    pub requant: Requant,
    /// Lower output clamp.
    pub act_min: i32,
    /// Upper output clamp.
    pub act_max: i32,
}

/// TFLite ADD's left shift for 8-bit inputs.
const ADD_LEFT_SHIFT: i32 = 20;

/// TFLite ADD's left shift for `i16` inputs (TFLite's 16x8 mode).
const ADD_LEFT_SHIFT_S16: i32 = 15;

/// [`AddScaling`] of TFLite Micro's ADD (`add_common.cc`): twice the larger input scale and
/// every ratio in `f64`.
pub const fn add_scaling(a_scale: f32, b_scale: f32, y_scale: f32) -> AddScaling {
    add_scaling_shifted(ADD_LEFT_SHIFT, a_scale, b_scale, y_scale)
}

/// [`add_scaling`] for `i16` operands (TFLite Micro's `add_common.cc`: the left shift is 15, not
/// 20, so that a shifted `i16` still fits in `i32`); the same kernels.
pub const fn add_scaling_s16(a_scale: f32, b_scale: f32, y_scale: f32) -> AddScaling {
    add_scaling_shifted(ADD_LEFT_SHIFT_S16, a_scale, b_scale, y_scale)
}

/// [`AddScaling`] of TFLite Micro's ADD with inputs shifted left by `left_shift`.
const fn add_scaling_shifted(left_shift: i32, a_scale: f32, b_scale: f32, y_scale: f32) -> AddScaling {
    let twice_max = 2.0 * (if a_scale > b_scale { a_scale } else { b_scale }) as f64;
    AddScaling {
        left_shift,
        a: quantize_multiplier(a_scale as f64 / twice_max),
        b: quantize_multiplier(b_scale as f64 / twice_max),
        output: quantize_multiplier(twice_max / ((1i64 << left_shift) as f64 * y_scale as f64)),
    }
}

/// [`AddScaling`] of TFLite Micro's SUB (`sub_common.cc`): the same ratios as [`add_scaling`] but
/// computed in `f32` (so a multiplier can differ from ADD's in the last bit).
pub const fn sub_scaling(a_scale: f32, b_scale: f32, y_scale: f32) -> AddScaling {
    sub_scaling_shifted(ADD_LEFT_SHIFT, a_scale, b_scale, y_scale)
}

/// [`sub_scaling`] for `i16` operands (left shift 15, as [`add_scaling_s16`]).
pub const fn sub_scaling_s16(a_scale: f32, b_scale: f32, y_scale: f32) -> AddScaling {
    sub_scaling_shifted(ADD_LEFT_SHIFT_S16, a_scale, b_scale, y_scale)
}

/// [`AddScaling`] of TFLite Micro's SUB with inputs shifted left by `left_shift`.
const fn sub_scaling_shifted(left_shift: i32, a_scale: f32, b_scale: f32, y_scale: f32) -> AddScaling {
    let twice_max = 2.0 * if a_scale > b_scale { a_scale } else { b_scale };
    AddScaling {
        left_shift,
        a: quantize_multiplier((a_scale / twice_max) as f64),
        b: quantize_multiplier((b_scale / twice_max) as f64),
        output: quantize_multiplier((twice_max / ((1i64 << left_shift) as f32 * y_scale)) as f64),
    }
}

/// The multiplier of TFLite Micro's MUL (`mul_common.cc`): `a_scale * b_scale / y_scale` in `f64`.
pub const fn mul_requant(a_scale: f32, b_scale: f32, y_scale: f32) -> Requant {
    quantize_multiplier(a_scale as f64 * b_scale as f64 / y_scale as f64)
}

impl Add {
    /// The input `v` of zero point `zero_point`, shifted and rescaled by `r`.
    #[inline(always)]
    fn scaled(&self, v: i32, zero_point: i32, r: Requant) -> i32 {
        r.apply((v - zero_point).wrapping_mul(1 << self.scaling.left_shift))
    }

    /// TFLite `AddFunc` (SUB: `SubElementwise`) on one pair.
    #[inline(always)]
    fn combine<T: QuantInt>(&self, a: T, b: T, subtract: bool) -> T {
        let sa = self.scaled(a.to_i32(), self.a_zero_point, self.scaling.a);
        let sb = self.scaled(b.to_i32(), self.b_zero_point, self.scaling.b);
        let raw = if subtract { sa.wrapping_sub(sb) } else { sa.wrapping_add(sb) };
        let v = self.scaling.output.apply(raw).wrapping_add(self.y_zero_point);
        T::saturate(v.max(self.act_min).min(self.act_max))
    }
}

impl Mul {
    /// TFLite `MulElementwise` on one pair.
    #[inline(always)]
    fn combine<T: QuantInt>(&self, a: T, b: T) -> T {
        let product = (a.to_i32() - self.a_zero_point) * (b.to_i32() - self.b_zero_point);
        let v = self.requant.apply(product).wrapping_add(self.y_zero_point);
        T::saturate(v.max(self.act_min).min(self.act_max))
    }
}

/// `y = f(a, b)` under broadcasting (`y` contiguous), innermost coalesced axis in one loop.
#[inline(always)]
fn broadcast<T: QuantInt>(shape: &Broadcast, a: &[T], b: &[T], y: &mut [T], f: impl Fn(T, T) -> T) {
    let ys = contiguous_strides(shape.out_shape);
    let Some(l) = Layout::<3>::new(shape.out_shape, |s, d| match s {
        0 => ys[d],
        1 => shape.a_strides[d] as isize,
        _ => shape.b_strides[d] as isize,
    }) else {
        return;
    };
    let (n, [_, sa, sb]) = l.inner();
    let (sa, sb) = (sa as usize, sb as usize);
    l.for_each_outer([0; 3], |[yo, ao, bo]| {
        let (ao, bo) = (ao as usize, bo as usize);
        for (t, yv) in y[yo as usize..][..n].iter_mut().enumerate() {
            *yv = f(a[ao + t * sa], b[bo + t * sb]);
        }
    });
}

/// `acc = f(acc, b)`: [`broadcast`] with `a` the output itself.
#[inline(always)]
fn broadcast_in_place<T: QuantInt>(shape: &Broadcast, acc: &mut [T], b: &[T], f: impl Fn(T, T) -> T) {
    let ys = contiguous_strides(shape.out_shape);
    let Some(l) = Layout::<2>::new(shape.out_shape, |s, d| if s == 0 { ys[d] } else { shape.b_strides[d] as isize })
    else {
        return;
    };
    let (n, [_, sb]) = l.inner();
    l.for_each_outer([0; 2], |[yo, bo]| {
        for (t, v) in acc[yo as usize..][..n].iter_mut().enumerate() {
            *v = f(*v, b[bo as usize + t * sb as usize]);
        }
    });
}

/// Quantized `y = a + b` with broadcasting ([`Broadcast`], as the `f32` kernels).
pub fn add<T: QuantInt>(p: &Add, shape: &Broadcast, a: &[T], b: &[T], y: &mut [T]) {
    if crate::arch::quant_add_sub((p, shape), (a, b), y, false) {
        return;
    }
    broadcast(shape, a, b, y, |a, b| p.combine(a, b, false));
}

/// Quantized `y = a - b` with broadcasting.
pub fn sub<T: QuantInt>(p: &Add, shape: &Broadcast, a: &[T], b: &[T], y: &mut [T]) {
    if crate::arch::quant_add_sub((p, shape), (a, b), y, true) {
        return;
    }
    broadcast(shape, a, b, y, |a, b| p.combine(a, b, true));
}

/// Quantized `y = a * b` with broadcasting.
pub fn mul<T: QuantInt>(p: &Mul, shape: &Broadcast, a: &[T], b: &[T], y: &mut [T]) {
    broadcast(shape, a, b, y, |a, b| p.combine(a, b));
}

/// In place [`add`]: `acc` is `a` and `y` (contiguous with `shape.out_shape`), `b` is broadcast
/// through `shape.b_strides`; `shape.a_strides` is ignored.
pub fn add_in_place<T: QuantInt>(p: &Add, shape: &Broadcast, acc: &mut [T], b: &[T]) {
    if crate::arch::quant_add_sub_in_place((p, shape), acc, b, false) {
        return;
    }
    broadcast_in_place(shape, acc, b, |a, b| p.combine(a, b, false));
}

/// In place [`sub`] (`acc = acc - b`), as [`add_in_place`].
pub fn sub_in_place<T: QuantInt>(p: &Add, shape: &Broadcast, acc: &mut [T], b: &[T]) {
    if crate::arch::quant_add_sub_in_place((p, shape), acc, b, true) {
        return;
    }
    broadcast_in_place(shape, acc, b, |a, b| p.combine(a, b, true));
}

/// In place [`mul`], as [`add_in_place`].
pub fn mul_in_place<T: QuantInt>(p: &Mul, shape: &Broadcast, acc: &mut [T], b: &[T]) {
    broadcast_in_place(shape, acc, b, |a, b| p.combine(a, b));
}
