//! One output channel's requantization with its constants prepared once per channel (shifts,
//! rounding mask), for the kernels' inner loops: the same function as
//! [`ChannelQuant`]'s output stage (`multiply_by_quantized_multiplier`, output zero point, clamp),
//! term for term, with what depends only on the channel hoisted out.

use crate::quant::fixedpoint::{multiply_by_quantized_multiplier_half_even, saturating_rounding_doubling_high_mul};
use crate::quant::{ChannelQuant, QuantElem, RequantRounding};

/// The output stage of one channel.
#[derive(Clone, Copy)]
pub(super) struct Channel {
    rounding: RequantRounding,
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

impl Channel {
    /// Channel `o` of `q`, with output zero point `zero_point` and clamp `[min, max]`.
    #[inline(always)]
    pub(super) fn new(q: &ChannelQuant, o: usize, zero_point: i32, (min, max): (i32, i32)) -> Channel {
        let i = if q.multipliers.len() == 1 { 0 } else { o };
        let shift = q.shifts[i];
        let (left, right) = (shift.max(0) as u32, (-shift).max(0) as u32);
        let mask = ((1u32 << right) - 1) as i32;
        Channel { rounding: q.rounding, multiplier: q.multipliers[i], shift, left, right, mask, zero_point, min, max }
    }

    /// The output for accumulator `acc`: `ChannelQuant::output`'s value.
    #[inline(always)]
    pub(super) fn output<T: QuantElem>(&self, acc: i32) -> T {
        let v = match self.rounding {
            RequantRounding::Double => {
                // multiply_by_quantized_multiplier: a wrapping left shift, the doubling high
                // multiply, rounding_divide_by_pot by `right` (ties away from zero).
                let high = saturating_rounding_doubling_high_mul(acc.wrapping_shl(self.left), self.multiplier);
                let threshold = (self.mask >> 1) + (high < 0) as i32;
                (high >> self.right) + ((high & self.mask) > threshold) as i32
            }
            RequantRounding::SingleHalfToEven => {
                multiply_by_quantized_multiplier_half_even(acc, self.multiplier, self.shift)
            }
        };
        T::saturate(v.wrapping_add(self.zero_point).max(self.min).min(self.max))
    }
}
