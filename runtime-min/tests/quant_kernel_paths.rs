//! The int8 / uint8 convolution, depthwise convolution and fully connected kernels give the
//! portable kernels' bits on every kernel path this CPU runs (on x86-64: the AVX2 kernels, and
//! the AVX-512 VNNI ones where the CPU has them): random shapes (odd channel counts, windows
//! whose taps are no multiple of four, padding, strides, dilation, groups, channel multipliers,
//! NCHW and NHWC), zero points at the ends of the types, shifts of -31, 0 and 31, the saturating
//! `i32::MIN * i32::MIN` product, and layers the SIMD kernels leave to the portable ones; and
//! the same-shape add / sub (in place too), max pooling (2x2 windows at stride 2, clamps past
//! the types' ends) and ONNX's quantization of floats (NaN, infinities, ties, huge values). Both requantization roundings (TFLite's double, onnxruntime's single).
//!
//! Forcing a path is process-wide, so every test here holds [`PATHS`] while it runs.

mod common;
mod quant_common;

use common::Rng;
use quant_common::{clamp, elems, int, weights, zero_point};
use sramfit_runtime_min::quant::*;
use sramfit_runtime_min::{quant_kernels, KernelPath};
use std::sync::Mutex;

/// Held by every test of this file: the path in force is process-wide.
static PATHS: Mutex<()> = Mutex::new(());

/// `f`'s result on every path this CPU supports, the portable one first, with the name of the
/// int8 kernels each path ran.
fn on_each_path<R>(f: impl Fn() -> R) -> Vec<(&'static str, R)> {
    common::on_each_path(&PATHS, || (quant_kernels(), f())).into_iter().map(|(_, r)| r).collect()
}

/// Checks that every path's result equals the portable one's.
fn check_paths<R: PartialEq + std::fmt::Debug>(ctx: &str, results: &[(&str, R)]) {
    let (_, portable) = &results[0];
    for (name, r) in &results[1..] {
        assert_eq!(r, portable, "{ctx}: {name} vs portable");
    }
}

/// Per-channel constants: biases (some at the ends of `i32`), multipliers (some `i32::MIN`) and
/// shifts (some -31, 0, 31), one or `channels` of the latter two.
fn channel_constants(rng: &mut Rng, channels: usize) -> (Vec<i32>, Vec<i32>, Vec<i32>) {
    let n = if rng.below(3) == 0 { 1 } else { channels };
    let bias = (0..channels)
        .map(|_| match rng.below(12) {
            0 => i32::MIN,
            1 => i32::MAX,
            _ => int(rng, -40_000, 40_000),
        })
        .collect();
    let multipliers = (0..n)
        .map(|_| match rng.below(10) {
            0 => i32::MIN,
            1 => i32::MAX,
            2 => -(1 << 30) - rng.below(1 << 30) as i32,
            _ => (1 << 30) + rng.below(1 << 30) as i32,
        })
        .collect();
    let shifts = (0..n)
        .map(|_| match rng.below(8) {
            0 => -31,
            1 => 0,
            2 => 31,
            3 => int(rng, 1, 4),
            _ => int(rng, -16, -1),
        })
        .collect();
    (bias, multipliers, shifts)
}

/// A zero point of `T`, at an end of its range one time in three.
fn edge_zero_point<T: QuantElem>(rng: &mut Rng) -> i32 {
    match rng.below(6) {
        0 => T::MIN,
        1 => T::MAX,
        _ => zero_point::<T>(rng),
    }
}

/// Output extent along one axis.
fn out_len(input: usize, pads: usize, kernel: usize, dilation: usize, stride: usize) -> usize {
    (input + pads - (kernel - 1) * dilation - 1) / stride + 1
}

/// A random convolution geometry (`depthwise`: one input channel per group, with a channel
/// multiplier), NCHW or NHWC.
fn geometry<T: QuantElem>(rng: &mut Rng, depthwise: bool) -> Conv2d {
    let (groups, in_channels, out_channels) = if depthwise {
        let c = 1 + rng.below(19);
        (c, c, c * (1 + rng.below(3)))
    } else {
        let g = if rng.below(4) == 0 { 1 + rng.below(3) } else { 1 };
        (g, g * (1 + rng.below(21)), g * (1 + rng.below(23)))
    };
    let (kernel_h, kernel_w) = (1 + rng.below(5), 1 + rng.below(5));
    let (dilation_h, dilation_w) = (1 + rng.below(2), 1 + rng.below(2));
    let (stride_h, stride_w) = (1 + rng.below(3), 1 + rng.below(3));
    let (pad_top, pad_bottom, pad_left, pad_right) = (rng.below(3), rng.below(3), rng.below(3), rng.below(3));
    let min_h = (kernel_h - 1) * dilation_h + 1;
    let min_w = (kernel_w - 1) * dilation_w + 1;
    let in_h = min_h.saturating_sub(pad_top + pad_bottom).max(1) + rng.below(12);
    let in_w = min_w.saturating_sub(pad_left + pad_right).max(1) + rng.below(30);
    let (out_h, out_w) = (
        out_len(in_h, pad_top + pad_bottom, kernel_h, dilation_h, stride_h),
        out_len(in_w, pad_left + pad_right, kernel_w, dilation_w, stride_w),
    );
    let layout = |nhwc: bool, c, h, w| if nhwc { ImageStrides::nhwc(c, h, w) } else { ImageStrides::nchw(c, h, w) };
    let (act_min, act_max) = clamp::<T>(rng);
    Conv2d {
        batch: 1 + rng.below(2),
        in_channels,
        in_h,
        in_w,
        out_channels,
        out_h,
        out_w,
        kernel_h,
        kernel_w,
        stride_h,
        stride_w,
        dilation_h,
        dilation_w,
        pad_top,
        pad_left,
        groups,
        x_strides: layout(rng.below(3) == 0, in_channels, in_h, in_w),
        y_strides: layout(rng.below(3) == 0, out_channels, out_h, out_w),
        x_zero_point: edge_zero_point::<T>(rng),
        w_zero_point: if rng.below(6) == 0 { int(rng, -128, 127) } else { 0 },
        y_zero_point: edge_zero_point::<T>(rng),
        act_min,
        act_max,
    }
}

/// Runs `p` (a depthwise convolution if `depthwise`) on random data on every path and compares.
fn check_conv<T: QuantElem>(rng: &mut Rng, p: Conv2d, depthwise: bool) {
    let x: Vec<T> = elems(rng, p.batch * p.in_channels * p.in_h * p.in_w);
    let w = weights(rng, p.out_channels * p.taps());
    let (bias, multipliers, shifts) = channel_constants(rng, p.out_channels);
    let rounding = if rng.below(3) == 0 { RequantRounding::SingleHalfToEven } else { RequantRounding::Double };
    let q = ChannelQuant { bias: &bias, multipliers: &multipliers, shifts: &shifts, rounding };
    let results = on_each_path(|| {
        let mut y = vec![T::default(); p.batch * p.out_channels * p.out_h * p.out_w];
        if depthwise {
            depthwise_conv2d(&p, &x, &w, &q, &mut y);
        } else {
            let mut scratch = vec![T::default(); conv2d_scratch_len(&p)];
            conv2d(&p, &x, &w, &q, &mut y, &mut scratch);
        }
        y
    });
    check_paths(&format!("{p:?}"), &results);
}

#[test]
fn int8_kernels_of_each_path_are_the_expected_ones() {
    let results = on_each_path(|| ());
    assert_eq!(results[0].0, "portable");
    #[cfg(target_arch = "x86_64")]
    for (p, (name, ())) in KernelPath::ALL.into_iter().filter(|p| p.is_supported()).zip(&results) {
        let vnni = is_x86_feature_detected!("avx512vnni")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512vl");
        let want = match p {
            KernelPath::Portable => "portable",
            KernelPath::Avx512 if vnni => "avx512-vnni",
            _ => "avx2",
        };
        assert_eq!(*name, want, "{}", p.name());
    }
}

#[test]
fn convolutions_and_depthwise_convolutions_match_the_portable_kernels_on_every_path() {
    let mut rng = Rng::new(0x1a7);
    for depthwise in [false, true] {
        for _ in 0..150 {
            let p = geometry::<i8>(&mut rng, depthwise);
            check_conv::<i8>(&mut rng, p, depthwise);
            let p = geometry::<u8>(&mut rng, depthwise);
            check_conv::<u8>(&mut rng, p, depthwise);
        }
    }
}

#[test]
fn model_shaped_and_oversized_layers_match_on_every_path() {
    let mut rng = Rng::new(77);
    let base = quant_common::conv_nchw;
    let nhwc = |p: Conv2d| Conv2d {
        x_strides: ImageStrides::nhwc(p.in_channels, p.in_h, p.in_w),
        y_strides: ImageStrides::nhwc(p.out_channels, p.out_h, p.out_w),
        ..p
    };
    // ResNet-8's 3x3 convolution, pointwise ones (one wider than a tile), MobileNet's first layer,
    // 1152 taps (over the panel: portable), a row too wide to stage (portable); MobileNetV2's
    // depthwise layers on small planes and a 24x24 one in two bands (16 channels per vector),
    // NCHW and NHWC.
    for (p, depthwise) in [
        (base(336, (3, 3), 336, (3, 3), 1, 1, 336), true),
        (nhwc(base(336, (3, 3), 336, (3, 3), 1, 1, 336)), true),
        (base(144, (6, 6), 144, (3, 3), 1, 1, 144), true),
        (base(64, (24, 24), 64, (3, 3), 1, 1, 64), true),
        (base(96, (12, 12), 96, (3, 3), 2, 1, 96), true),
        (nhwc(base(96, (12, 12), 96, (3, 3), 2, 1, 96)), true),
        (base(24, (10, 10), 72, (5, 5), 1, 2, 24), true),
        (base(16, (32, 32), 16, (3, 3), 1, 1, 1), false),
        (base(112, (3, 3), 300, (1, 1), 1, 0, 1), false),
        // Pointwise layers read in place, NCHW then NHWC: a projection, images ending mid-block
        // (the last block's loads past the input's end), groups, an image of one position;
        // NHWC: channels no multiple of 4 or 16, a partial tile of channels.
        (base(48, (24, 24), 8, (1, 1), 1, 0, 1), false),
        (base(8, (7, 13), 20, (1, 1), 1, 0, 1), false),
        (base(24, (5, 5), 24, (1, 1), 1, 0, 4), false),
        (base(3, (1, 1), 5, (1, 1), 1, 0, 1), false),
        (nhwc(base(48, (24, 24), 8, (1, 1), 1, 0, 1)), false),
        (nhwc(base(37, (5, 7), 22, (1, 1), 1, 0, 1)), false),
        (nhwc(base(8, (7, 13), 20, (1, 1), 1, 0, 1)), false),
        (nhwc(base(24, (5, 5), 24, (1, 1), 1, 0, 4)), false),
        (nhwc(base(3, (1, 1), 5, (1, 1), 1, 0, 1)), false),
        // NHWC rows staged 16 channels per transpose (the rest one by one), columns left over.
        (nhwc(base(16, (32, 32), 16, (3, 3), 1, 1, 1)), false),
        (nhwc(base(40, (6, 21), 12, (3, 3), 1, 1, 1)), false),
        (nhwc(base(32, (5, 5), 8, (5, 5), 1, 2, 2)), false),
        (base(3, (96, 96), 16, (3, 3), 2, 1, 1), false),
        (base(128, (4, 4), 8, (3, 3), 1, 1, 1), false),
        (base(2, (2, 9000), 4, (1, 3), 1, 1, 1), false),
        (base(48, (24, 24), 48, (3, 3), 2, 1, 48), true),
        (base(2, (2, 20000), 2, (3, 3), 1, 1, 2), true),
        (base(2, (12, 12), 2, (9, 9), 1, 4, 2), true),
    ] {
        check_conv::<i8>(&mut rng, p, depthwise);
        check_conv::<u8>(
            &mut rng,
            Conv2d { x_zero_point: 131, y_zero_point: 120, act_min: 0, act_max: 255, ..p },
            depthwise,
        );
    }
}

/// Runs a fully connected layer on random data on every path and compares.
fn check_fully_connected<T: QuantElem>(rng: &mut Rng, (batch, k, n): (usize, usize, usize), w_zero_point: i32) {
    let x: Vec<T> = elems(rng, batch * k);
    let w = weights(rng, n * k);
    let (bias, multipliers, shifts) = channel_constants(rng, n);
    let rounding = if rng.below(3) == 0 { RequantRounding::SingleHalfToEven } else { RequantRounding::Double };
    let q = ChannelQuant { bias: &bias, multipliers: &multipliers, shifts: &shifts, rounding };
    let (act_min, act_max) = clamp::<T>(rng);
    let p = FullyConnected {
        batch,
        in_features: k,
        out_features: n,
        w_zero_point,
        y_zero_point: edge_zero_point::<T>(rng),
        act_min,
        act_max,
    };
    let results = on_each_path(|| {
        let mut y = vec![T::default(); batch * n];
        fully_connected(&p, &x, &w, &q, &mut y);
        y
    });
    check_paths(&format!("{p:?}"), &results);
}

#[test]
fn fully_connected_layers_match_the_portable_kernel_on_every_path() {
    let mut rng = Rng::new(0xfc);
    for &k in &[1, 31, 32, 33, 64, 100, 640, 9216] {
        for &n in &[1, 3, 4, 10, 13] {
            let batch = 1 + rng.below(3);
            let w_zero_point = if rng.below(5) == 0 { 7 } else { 0 };
            check_fully_connected::<i8>(&mut rng, (batch, k, n), w_zero_point);
            check_fully_connected::<u8>(&mut rng, (batch, k, n), w_zero_point);
        }
    }
}

/// Runs add, sub and their in-place variants of random inputs of `len` elements (same shape, and
/// once broadcast: portable) on every path and compares.
fn check_add_sub<T: QuantElem>(rng: &mut Rng, len: usize) {
    let (a, b): (Vec<T>, Vec<T>) = (elems(rng, len), elems(rng, len));
    let scales = [
        quant_common::scale(rng, 0.001, 1.0),
        quant_common::scale(rng, 0.001, 1.0),
        quant_common::scale(rng, 0.001, 1.0),
    ];
    let (act_min, act_max) = clamp::<T>(rng);
    for scaling in [add_scaling(scales[0], scales[1], scales[2]), sub_scaling(scales[0], scales[1], scales[2])] {
        let p = Add {
            a_zero_point: edge_zero_point::<T>(rng),
            b_zero_point: edge_zero_point::<T>(rng),
            y_zero_point: edge_zero_point::<T>(rng),
            scaling,
            act_min,
            act_max,
        };
        let shape = [1, len];
        let (strides, broadcast) = ([len, 1], [0, 0]);
        for b_strides in [&strides, &broadcast] {
            let s = sramfit_runtime_min::Broadcast { out_shape: &shape, a_strides: &strides, b_strides };
            let results = on_each_path(|| {
                let (mut y, mut z) = (vec![T::default(); len], vec![T::default(); len]);
                add(&p, &s, &a, &b, &mut y);
                sub(&p, &s, &a, &b, &mut z);
                let (mut ya, mut za) = (a.clone(), a.clone());
                add_in_place(&p, &s, &mut ya, &b);
                sub_in_place(&p, &s, &mut za, &b);
                [y, z, ya, za]
            });
            check_paths(&format!("{len} elements, {p:?}"), &results);
        }
    }
}

#[test]
fn add_and_sub_match_the_portable_kernels_on_every_path() {
    let mut rng = Rng::new(0xadd);
    for len in [1, 7, 8, 9, 100, 1000] {
        check_add_sub::<i8>(&mut rng, len);
        check_add_sub::<u8>(&mut rng, len);
    }
}

#[test]
fn quantize_matches_the_portable_kernel_on_every_path() {
    let mut rng = Rng::new(0x9);
    // Ties (scale 0.5 makes k.25 a tie), NaN, infinities, huge values, negative zero: first (in
    // the vector kernel's 32-value steps) and last (in its 8-value tail).
    let special = [0.25, -0.25, 0.75, -0.75, 1.25, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 3e9, -3e9, -0.0, 1e-30];
    let mut x = special.to_vec();
    x.extend((0..1000).map(|_| rng.uniform(-300.0, 300.0)));
    x.extend(special);
    for (scale, zero_point) in [(0.5, 0), (1.3, -128), (0.02, 255), (0.7, 127), (2.0, 40000)] {
        let p = Quantization { scale, zero_point };
        for rounding in [Rounding::HalfToEven, Rounding::HalfAwayFromZero] {
            let results = on_each_path(|| {
                let (mut a, mut b, mut c) = (vec![0i8; x.len()], vec![0u8; x.len()], vec![0i16; x.len()]);
                quantize(&p, rounding, &x, &mut a);
                quantize(&p, rounding, &x, &mut b);
                quantize(&p, rounding, &x, &mut c);
                (a, b, c)
            });
            check_paths(&format!("{p:?} {rounding:?}"), &results);
        }
    }
}

/// Runs a max pooling of random data on every path and compares.
fn check_max_pool<T: QuantElem>(rng: &mut Rng, p: Pool2d) {
    let x: Vec<T> = elems(rng, p.batch * p.channels * p.in_h * p.in_w);
    let results = on_each_path(|| {
        let mut y = vec![T::default(); p.batch * p.channels * p.out_h * p.out_w];
        max_pool2d(&p, &x, &mut y);
        y
    });
    check_paths(&format!("{p:?}"), &results);
}

#[test]
fn max_pooling_matches_the_portable_kernel_on_every_path() {
    let mut rng = Rng::new(31);
    for case in 0..200 {
        // 2x2 windows at stride 2 (the SIMD kernel's), odd sizes (a row or column left over),
        // rows of 16 outputs and more with tails, NCHW and NHWC, clamps at and past the ends;
        // every fifth case a 3x3 window with padding (portable on every path).
        let (channels, in_h, in_w) = (1 + rng.below(5), 2 + rng.below(9), 2 + rng.below(80));
        let (kernel, stride, pad) = if case % 5 == 4 { (3, 2, 1) } else { (2, 2, 0) };
        let (nhwc, batch) = (rng.below(4) == 0, 1 + rng.below(2));
        let layout = |c, h, w| if nhwc { ImageStrides::nhwc(c, h, w) } else { ImageStrides::nchw(c, h, w) };
        let geometry = quant_common::pool_nchw(channels, (in_h, in_w), kernel, stride, pad);
        let (out_h, out_w) = (geometry.out_h, geometry.out_w);
        let p = |(act_min, act_max): (i32, i32)| Pool2d {
            batch,
            x_strides: layout(channels, in_h, in_w),
            y_strides: layout(channels, out_h, out_w),
            act_min,
            act_max,
            ..geometry
        };
        let wide = if case % 7 == 0 { (-300, 300) } else { (-128, 255) };
        let signed = p(if case % 2 == 0 { clamp::<i8>(&mut rng) } else { wide });
        check_max_pool::<i8>(&mut rng, signed);
        let unsigned = p(if case % 2 == 0 { clamp::<u8>(&mut rng) } else { wide });
        check_max_pool::<u8>(&mut rng, unsigned);
    }
}
