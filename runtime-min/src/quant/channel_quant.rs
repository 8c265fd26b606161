//! The per-output-channel epilogue of convolutions and fully connected layers.

use super::fixedpoint::RequantRounding;
use super::QuantElem;

/// Per-output-channel constants of a convolution, depthwise convolution or fully connected
/// layer, read from the weight blob: the accumulator starts at `bias[o]`, and the result is
/// requantized with `multipliers[o]`, `shifts[o]` (TFLite's per-channel quantization; slices of
/// length 1 for per-tensor quantization).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelQuant<'a> {
    /// Folded bias per output channel ([`fold_bias`](super::fold_bias),
    /// [`fold_depthwise_bias`](super::fold_depthwise_bias)): TFLite's bias minus the input zero
    /// point's share of the sum.
    pub bias: &'a [i32],
    /// Q0.31 multipliers ([`Requant::multiplier`](super::Requant)), 1 or one per output channel.
    pub multipliers: &'a [i32],
    /// Shifts ([`Requant::shift`](super::Requant)), as many as `multipliers`.
    pub shifts: &'a [i32],
    /// How the product of accumulator and multiplier is rounded: TFLite's double rounding, or
    /// onnxruntime's single rounding to even.
    pub rounding: RequantRounding,
}

impl ChannelQuant<'_> {
    /// Panics unless the slices fit `channels` output channels.
    pub(crate) fn check(&self, channels: usize) {
        assert_eq!(self.bias.len(), channels, "one folded bias per output channel");
        assert_eq!(self.multipliers.len(), self.shifts.len(), "as many shifts as multipliers");
        assert!(
            self.multipliers.len() == 1 || self.multipliers.len() == channels,
            "one multiplier per tensor or per output channel"
        );
    }

    /// TFLite's output stage for channel `o`: requantize `acc` (rounded as `rounding` says), add
    /// the output zero point, clamp to `[act_min, act_max]` (max first, then min, as TFLite) and
    /// to `T`.
    #[inline(always)]
    pub(crate) fn output<T: QuantElem>(&self, o: usize, acc: i32, y_zero_point: i32, act_min: i32, act_max: i32) -> T {
        let i = if self.multipliers.len() == 1 { 0 } else { o };
        let v = self.rounding.apply(acc, self.multipliers[i], self.shifts[i]).wrapping_add(y_zero_point);
        T::saturate(v.max(act_min).min(act_max))
    }
}
