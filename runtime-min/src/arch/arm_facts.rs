//! The sizes of the Arm DSP kernels' stack arrays (`arm/`), compiled on every host so that the
//! planner's facts ([`crate::facts`]) state them for the target being built for.

/// Most taps (`kernel_h * kernel_w * in_channels`) of a convolution window the DSP kernels take
/// (ResNet-8's 3x3x64); larger windows run the portable kernel.
pub(crate) const MAX_TAPS: usize = 576;

/// Words of a window of `taps` taps widened to 16-bit pairs: two per group of four taps.
pub(crate) const fn window_words(taps: usize) -> usize {
    taps.div_ceil(4) * 2
}

/// The windows the convolution keeps on the stack: two of [`MAX_TAPS`] taps.
pub(crate) const WINDOW_WORDS: usize = 2 * window_words(MAX_TAPS);

/// Stack bytes of those windows.
pub(crate) const STACK_BYTES: usize = WINDOW_WORDS * 4;

/// Most kernel rows and columns of a depthwise convolution the DSP kernel takes.
pub(crate) const DEPTHWISE_MAX_KERNEL: usize = 4;

/// Most words of one widened input row of the depthwise kernel: `(out_w - 1) * stride_w` plus the
/// kernel width rounded up to even (a 48-pixel row of MobileNetV1-0.25 on 96x96 images, padded).
pub(crate) const DEPTHWISE_ROW_WORDS: usize = 64;

/// Stack bytes of the depthwise kernel's widened input rows (one per kernel row).
pub(crate) const DEPTHWISE_STACK_BYTES: usize = DEPTHWISE_MAX_KERNEL * DEPTHWISE_ROW_WORDS * 4;
