//! TFLite's 16x8 kernels and the hybrid convolution on hand-computed cases: the 64-bit
//! requantization's rounding, `i64` biases through their word pairs, the interpolated int16 table
//! lookup, and the dynamic quantization of a hybrid layer's input.

use sramfit_runtime_min::quant::{
    bias_s16_words, conv2d_s16, fully_connected_s16, hybrid_conv2d, lut_s16_lookup,
    multiply_by_quantized_multiplier_i64, symmetric_quantize, ChannelQuantS16, Conv2d, FullyConnected, HybridConv2d,
    ImageStrides,
};

#[test]
fn multiplier_is_reduced_to_16_bits_and_rounds_half_up() {
    // 2^30 (one half) reduces to (2^30 + 2^15) >> 16 = 16384; (1000 * 16384 + 2^14) >> 15 = 500.5
    // rounded down by the shift: 500. -1001 gives exactly -500 (-500.5 rounded up).
    assert_eq!(multiply_by_quantized_multiplier_i64(1000, 1 << 30, 0), 500);
    assert_eq!(multiply_by_quantized_multiplier_i64(-1001, 1 << 30, 0), -500);
    // A shift of -20 on 2^40: 2^40 * 16384 / 2^35 = 2^19.
    assert_eq!(multiply_by_quantized_multiplier_i64(1 << 40, 1 << 30, -20), 1 << 19);
    // Multipliers at 0x7FFF0000 or above saturate at 0x7FFF: 32767 * 2^15 / 2^15.
    assert_eq!(multiply_by_quantized_multiplier_i64(1 << 15, i32::MAX, 0), 32767);
}

#[test]
fn int64_biases_reach_the_accumulator_whole() {
    // One input feature, two outputs: 3 * 100 + bias, times one half with shift -16 (2^-17).
    let biases = [(1i64 << 33) - 300, -(1i64 << 33) - 300];
    let mut words = [0i32; 4];
    bias_s16_words(&biases, &mut words);
    // 2^33 - 300 = 1 * 2^32 + (2^32 - 300); -2^33 - 300 = -3 * 2^32 + (2^32 - 300).
    assert_eq!(words, [-300, 1, -300, -3]);
    let q = ChannelQuantS16 { bias: &words, multipliers: &[1 << 30], shifts: &[-16] };
    let p = FullyConnected {
        batch: 1,
        in_features: 1,
        out_features: 2,
        w_zero_point: 0,
        y_zero_point: 0,
        act_min: i16::MIN as i32,
        act_max: i16::MAX as i32,
    };
    let mut y = [0i16; 2];
    fully_connected_s16(&p, &[100], &[3, 3], &q, &mut y);
    // +-2^33 * 2^-17 = +-65536, clamped to the int16 range.
    assert_eq!(y, [32767, -32768]);
    let q = ChannelQuantS16 { bias: &[0, 0], multipliers: &[1 << 30], shifts: &[-16] };
    let p1 = FullyConnected { out_features: 1, ..p };
    fully_connected_s16(&p1, &[20000], &[100], &q, &mut y[..1]);
    // 2,000,000 * 2^-17 = 15.26: 15.
    assert_eq!(y[0], 15);
}

/// A one-row convolution of `in_channels` x `in_w` inputs into one output channel, `kernel_w`
/// wide with `pad_left` columns of padding, stride 1, in the layout `strides` gives (`(channels,
/// h, w)` to strides).
fn row_conv(
    in_channels: usize,
    in_w: usize,
    kernel_w: usize,
    pad_left: usize,
    strides: fn(usize, usize, usize) -> ImageStrides,
) -> Conv2d {
    let out_w = in_w + 2 * pad_left + 1 - kernel_w;
    Conv2d {
        batch: 1,
        in_channels,
        in_h: 1,
        in_w,
        out_channels: 1,
        out_h: 1,
        out_w,
        kernel_h: 1,
        kernel_w,
        stride_h: 1,
        stride_w: 1,
        dilation_h: 1,
        dilation_w: 1,
        pad_top: 0,
        pad_left,
        groups: 1,
        x_strides: strides(in_channels, 1, in_w),
        y_strides: strides(1, 1, out_w),
        x_zero_point: 0,
        w_zero_point: 0,
        y_zero_point: 0,
        act_min: 0,
        act_max: i16::MAX as i32,
    }
}

#[test]
fn convolution_padding_contributes_nothing() {
    // A 3-tap 1-D convolution of [10, 20] (width 2, same padding): outputs (0 + 10 * 2 + 20 * 3)
    // and (10 * 1 + 20 * 2 + 0), each times one half (shift 0).
    let p = row_conv(1, 2, 3, 1, ImageStrides::nhwc);
    let q = ChannelQuantS16 { bias: &[0, 0], multipliers: &[1 << 30], shifts: &[0] };
    let mut y = [0i16; 2];
    conv2d_s16(&p, &[10, 20], &[1, 2, 3], &q, &mut y);
    assert_eq!(y, [40, 25]);
}

#[test]
fn table_lookup_interpolates_by_the_low_seven_bits() {
    let lut: Vec<i16> = (0..513).map(|i| (i * 100 - 25600) as i16).collect();
    // 0: segment 256, offset 0.
    assert_eq!(lut_s16_lookup(0, &lut), 0);
    // 64: half a segment of slope 100, (100 * 64 + 64) >> 7 = 50.
    assert_eq!(lut_s16_lookup(64, &lut), 50);
    // -1: segment 255 (-100), offset 127: -100 + (12700 + 64) >> 7 = -1.
    assert_eq!(lut_s16_lookup(-1, &lut), -1);
}

#[test]
fn hybrid_input_is_quantized_symmetrically_per_batch() {
    let mut q = [0i8; 3];
    // Range 1: 127 / 1 per unit, 63.5 rounds away from zero.
    let scale = symmetric_quantize(&[0.5, -1.0, 0.25], &mut q);
    assert_eq!((q, scale), ([64, -127, 32], 1.0 / 127.0));
    assert_eq!(symmetric_quantize(&[0.0, 0.0], &mut q[..2]), 1.0);
    assert_eq!(&q[..2], &[0, 0]);

    // A 1x1 convolution of two channels: [1.0, -0.5] quantizes to [127, -64] (-63.5 away from
    // zero), the dot product with [1, 2] is -1, times (1/127) * 0.5, plus the bias 0.25.
    let conv = row_conv(2, 1, 1, 0, ImageStrides::nchw);
    let p = HybridConv2d { conv, weight_scale: 0.5, act_min: f32::NEG_INFINITY, act_max: f32::INFINITY };
    let (mut y, mut scratch) = ([0f32; 1], [0i8; 2]);
    hybrid_conv2d(&p, &[1.0, -0.5], &[1, 2], &[0.25], &mut y, &mut scratch);
    assert_eq!(scratch, [127, -64]);
    assert!((y[0] - (0.25 - 0.5 / 127.0)).abs() < 1e-7, "{}", y[0]);
    // With a ReLU clamp at 0 and no bias the negative sum is clamped.
    let relu = HybridConv2d { act_min: 0.0, ..p };
    hybrid_conv2d(&relu, &[1.0, -0.5], &[1, 2], &[], &mut y, &mut scratch);
    assert_eq!(y[0], 0.0);
}
