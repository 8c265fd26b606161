//! The output stage of the 16x8 convolutions and fully connected layers: an `i64` accumulator
//! plus an `i64` bias, requantized per channel.

/// TFLite's `MultiplyByQuantizedMultiplier(int64_t x, int32_t quantized_multiplier, int shift)`
/// (`kernels/internal/common.cc`, the double-rounding build TFLite Micro uses): the multiplier
/// is first reduced to 16 bits (`(multiplier + 2^15) >> 16`, saturated at `0x7FFF`), then
/// `(x * reduced + 2^(14 - shift)) >> (15 - shift)`, an arithmetic shift, truncated to `i32`.
/// `multiplier` is non-negative and `shift` in `-31..8`, as TFLite requires.
#[inline(always)]
pub const fn multiply_by_quantized_multiplier_i64(x: i64, multiplier: i32, shift: i32) -> i32 {
    let reduced = if multiplier < 0x7FFF_0000 { (multiplier + (1 << 15)) >> 16 } else { 0x7FFF };
    let total_shift = 15 - shift;
    let rounded = x.wrapping_mul(reduced as i64).wrapping_add(1i64 << (total_shift - 1));
    (rounded >> total_shift) as i32
}

/// Per-output-channel constants of a 16x8 convolution or fully connected layer, read from the
/// weight blob: the `i64` bias of channel `o` as two `i32` words, `bias[2 * o]` its low half and
/// `bias[2 * o + 1]` its high half ([`bias_s16_words`]; the blob's elements stop at `i32`), and
/// TFLite's multiplier and shift (1 each, or one per output channel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelQuantS16<'a> {
    /// `2 * channels` words: the `i64` biases, low word first.
    pub bias: &'a [i32],
    /// Q0.31 multipliers ([`Requant::multiplier`](crate::quant::Requant)).
    pub multipliers: &'a [i32],
    /// Shifts, as many as `multipliers`.
    pub shifts: &'a [i32],
}

/// The `i64` biases as the word pairs [`ChannelQuantS16::bias`] reads (a build-time helper).
pub fn bias_s16_words(bias: &[i64], out: &mut [i32]) {
    assert_eq!(out.len(), 2 * bias.len(), "two words per bias");
    for (b, w) in bias.iter().zip(out.chunks_exact_mut(2)) {
        w[0] = *b as i32;
        w[1] = (*b >> 32) as i32;
    }
}

impl ChannelQuantS16<'_> {
    /// Panics unless the slices fit `channels` output channels.
    pub(crate) fn check(&self, channels: usize) {
        assert_eq!(self.bias.len(), 2 * channels, "two bias words per output channel");
        assert_eq!(self.multipliers.len(), self.shifts.len(), "as many shifts as multipliers");
        assert!(
            self.multipliers.len() == 1 || self.multipliers.len() == channels,
            "one multiplier per tensor or per output channel"
        );
    }

    /// The bias of channel `o`.
    #[inline(always)]
    pub(crate) fn bias(&self, o: usize) -> i64 {
        ((self.bias[2 * o + 1] as i64) << 32) | (self.bias[2 * o] as u32 as i64)
    }

    /// TFLite's output stage for channel `o`: `acc + bias` requantized, plus `y_zero_point`,
    /// clamped to `[act_min, act_max]` (max first, then min) and to `i16`.
    #[inline(always)]
    pub(crate) fn output(&self, o: usize, acc: i64, y_zero_point: i32, act_min: i32, act_max: i32) -> i16 {
        let i = if self.multipliers.len() == 1 { 0 } else { o };
        let v =
            multiply_by_quantized_multiplier_i64(acc.wrapping_add(self.bias(o)), self.multipliers[i], self.shifts[i]);
        v.wrapping_add(y_zero_point).max(act_min).min(act_max).clamp(i16::MIN as i32, i16::MAX as i32) as i16
    }
}
