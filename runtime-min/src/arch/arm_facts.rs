//! The sizes of the Arm DSP kernels' stack arrays (`arm/`), compiled on every host so that the
//! planner's facts ([`crate::facts`]) state them for the target being built for.

/// Most taps (`kernel_h * kernel_w * in_channels`) of a convolution window the DSP kernels take
/// (ResNet-8's 3x3x64); larger windows run the portable kernel.
pub(crate) const MAX_TAPS: usize = 576;

/// Words of a window of `taps` taps widened to 16-bit pairs: two per group of four taps.
pub(crate) const fn window_words(taps: usize) -> usize {
    taps.div_ceil(4) * 2
}

/// The windows the kernels keep on the stack: two of [`MAX_TAPS`] taps (a fully connected layer
/// uses both as one row of up to `2 * MAX_TAPS` features).
pub(crate) const WINDOW_WORDS: usize = 2 * window_words(MAX_TAPS);

/// Stack bytes of those windows.
pub(crate) const STACK_BYTES: usize = WINDOW_WORDS * 4;
