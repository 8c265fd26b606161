//! Quantized mean over axes: TFLite MEAN (`reference_ops::QuantizedMeanOrSum` as TFLite Micro
//! calls it), ONNX ReduceMean / GlobalAveragePool on quantized tensors with rescaling.

use super::{QuantInt, Requant};

/// TFLite MEAN's multiplier for a mean of `count` values: the rescaling `r` (input scale / output
/// scale, [`rescale_requant`](super::rescale_requant)) with `1 / count` folded in as TFLite does it
/// at run time: `shift = min(floor(log2(count)), 32, 31 + r.shift)`, multiplier
/// `(r.multiplier << shift) / count`, shift `r.shift - shift`.
pub const fn mean_requant(r: Requant, count: usize) -> Requant {
    assert!(count > 0, "mean of no values");
    let mut shift = 63 - (count as u64).leading_zeros() as i32;
    if shift > 32 {
        shift = 32;
    }
    if shift > 31 + r.shift {
        shift = 31 + r.shift;
    }
    Requant { multiplier: (((r.multiplier as i64) << shift) / count as i64) as i32, shift: r.shift - shift }
}

/// Parameters of [`mean`]: the mean runs along the middle axis of the `[outer, reduce, inner]`
/// view of a contiguous input (axes to reduce must be adjacent; the output is `[outer, inner]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mean {
    /// Product of the axes before the reduced ones.
    pub outer: usize,
    /// Product of the reduced axes.
    pub reduce: usize,
    /// Product of the axes after them.
    pub inner: usize,
    /// Zero point of the input.
    pub x_zero_point: i32,
    /// Zero point of the output.
    pub y_zero_point: i32,
    /// [`mean_requant`] of the rescaling, for `reduce` values.
    pub requant: Requant,
}

/// Quantized mean: `y = saturate(requant.apply(sum(x) - x_zero_point * reduce) + y_zero_point)`
/// (TFLite MEAN, sums in `i32`).
pub fn mean<T: QuantInt>(p: &Mean, x: &[T], y: &mut [T]) {
    for o in 0..p.outer {
        for i in 0..p.inner {
            let sum = (0..p.reduce).fold(0i32, |s, r| s.wrapping_add(x[(o * p.reduce + r) * p.inner + i].to_i32()));
            let centered = sum.wrapping_sub(p.x_zero_point.wrapping_mul(p.reduce as i32));
            y[o * p.inner + i] = T::saturate(p.requant.apply(centered).wrapping_add(p.y_zero_point));
        }
    }
}
