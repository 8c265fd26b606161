//! One output channel's requantization with its constants prepared once per channel (shifts,
//! rounding mask), for the kernels' inner loops: the same function as
//! [`ChannelQuant`]'s output stage (`multiply_by_quantized_multiplier`, output zero point, clamp),
//! term for term, with what depends only on the channel hoisted out, and its rounding a
//! constant (`SINGLE`: [`RequantRounding::SingleHalfToEven`]), chosen once per kernel call
//! ([`by_rounding`]): a `match` in the per-output loop made the VWW depthwise layers on the M4F 1.6x
//! slower.

use crate::quant::fixedpoint::{multiply_by_quantized_multiplier_half_even, saturating_rounding_doubling_high_mul};
use crate::quant::{ChannelQuant, QuantElem, RequantRounding};

/// The output stage of one channel, rounding once to even (`SINGLE`) or as TFLite does.
#[derive(Clone, Copy)]
pub(super) struct Channel<const SINGLE: bool> {
    multiplier: i32,
    shift: i32,
    /// `max(shift, 0)`: the left shift before the multiply.
    left: u32,
    /// `max(-shift, 0)`: the rounding right shift after it.
    right: u32,
    /// `2^right - 1`.
    mask: i32,
    zero_point: i32,
    min: i32,
    max: i32,
}

impl<const SINGLE: bool> Channel<SINGLE> {
    /// Channel `o` of `q` (whose rounding is `SINGLE`'s: [`by_rounding`]), with output zero point
    /// `zero_point` and clamp `[min, max]`.
    #[inline(always)]
    pub(super) fn new(q: &ChannelQuant, o: usize, zero_point: i32, (min, max): (i32, i32)) -> Self {
        let i = if q.multipliers.len() == 1 { 0 } else { o };
        let shift = q.shifts[i];
        let (left, right) = (shift.max(0) as u32, (-shift).max(0) as u32);
        let mask = ((1u32 << right) - 1) as i32;
        debug_assert_eq!(SINGLE, q.rounding == RequantRounding::SingleHalfToEven);
        Channel { multiplier: q.multipliers[i], shift, left, right, mask, zero_point, min, max }
    }

    /// The output for accumulator `acc`: `ChannelQuant::output`'s value.
    #[inline(always)]
    pub(super) fn output<T: QuantElem>(&self, acc: i32) -> T {
        let v = if SINGLE {
            multiply_by_quantized_multiplier_half_even(acc, self.multiplier, self.shift)
        } else {
            // multiply_by_quantized_multiplier: a wrapping left shift, the doubling high
            // multiply, rounding_divide_by_pot by `right` (ties away from zero).
            let high = saturating_rounding_doubling_high_mul(acc.wrapping_shl(self.left), self.multiplier);
            let threshold = (self.mask >> 1) + (high < 0) as i32;
            (high >> self.right) + ((high & self.mask) > threshold) as i32
        };
        T::saturate(v.wrapping_add(self.zero_point).max(self.min).min(self.max))
    }
}

/// `f::<T, SINGLE>(args..)` with `SINGLE` the constant for `rounding`: the kernel body
/// monomorphised for the call's rounding, chosen once per call.
macro_rules! by_rounding {
    ($rounding:expr, $f:ident::<$t:ty>($($arg:expr),* $(,)?)) => {
        match $rounding {
            $crate::quant::RequantRounding::Double => $f::<$t, false>($($arg),*),
            $crate::quant::RequantRounding::SingleHalfToEven => $f::<$t, true>($($arg),*),
        }
    };
}
pub(super) use by_rounding;
