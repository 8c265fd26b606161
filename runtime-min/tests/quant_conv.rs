//! Quantized convolution and depthwise convolution against a reference written from TFLite's
//! `reference_integer_ops::ConvPerChannel` / `DepthwiseConvPerChannel` (64-bit accumulation of
//! `(w - w_zp) * (x - x_zp)` over the window's inside positions, plus the bias, then TFLite's
//! requantization), on random shapes and parameters. The kernels run on weights packed and biases
//! folded by the build-time helpers from ONNX-layout weights, in NHWC and NCHW, int8 and uint8:
//! every output bit-exact.

mod common;
mod quant_common;

use common::Rng;
use quant_common::{clamp, elems, int, ref_output, requant, weights, zero_point};
use sramfit_runtime_min::quant::{
    conv2d, conv2d_acc, conv2d_scratch_len, depthwise_conv2d, fold_bias, fold_depthwise_bias, pack_conv_weights,
    pack_depthwise_weights, ChannelQuant, Conv2d, ImageStrides, QuantElem, Requant, RequantRounding,
};

/// One random convolution: parameters (strides still NHWC), ONNX-layout weights
/// `[out, in / groups, kh, kw]`, TFLite biases (maybe none), per-channel or per-tensor multipliers.
struct Case<T> {
    p: Conv2d,
    x_nchw: Vec<T>,
    w_oihw: Vec<i8>,
    bias: Vec<i32>,
    requants: Vec<Requant>,
}

/// Output extent along one axis.
fn out_len(input: usize, pads: usize, kernel: usize, dilation: usize, stride: usize) -> usize {
    (input + pads - (kernel - 1) * dilation - 1) / stride + 1
}

fn random_case<T: QuantElem>(rng: &mut Rng, depthwise: bool) -> Case<T> {
    let groups_and_channels = |rng: &mut Rng| {
        if depthwise {
            let c = 1 + rng.below(20);
            (c, c, c * (1 + rng.below(3)))
        } else {
            let g = if rng.below(3) == 0 { 1 + rng.below(3) } else { 1 };
            (g, g * (1 + rng.below(6)), g * (1 + rng.below(5)))
        }
    };
    let (groups, in_channels, out_channels) = groups_and_channels(rng);
    let one_d = rng.below(4) == 0;
    let (kernel_h, kernel_w) = if one_d { (1, 1 + rng.below(5)) } else { (1 + rng.below(3), 1 + rng.below(3)) };
    let (dilation_h, dilation_w) = (1 + rng.below(2), 1 + rng.below(2));
    let (stride_h, stride_w) = (1 + rng.below(2), 1 + rng.below(3));
    let pads = |rng: &mut Rng, one_d: bool| if one_d { (0, 0) } else { (rng.below(3), rng.below(3)) };
    let (pad_top, pad_bottom) = pads(rng, one_d);
    let (pad_left, pad_right) = pads(rng, false);
    let min_h = (kernel_h - 1) * dilation_h + 1;
    let min_w = (kernel_w - 1) * dilation_w + 1;
    let in_h = if one_d { 1 } else { min_h.saturating_sub(pad_top + pad_bottom).max(1) + rng.below(5) };
    let in_w = min_w.saturating_sub(pad_left + pad_right).max(1) + rng.below(6);
    let batch = 1 + rng.below(2);
    let (lo, hi) = clamp::<T>(rng);
    let p = Conv2d {
        batch,
        in_channels,
        in_h,
        in_w,
        out_channels,
        out_h: out_len(in_h, pad_top + pad_bottom, kernel_h, dilation_h, stride_h),
        out_w: out_len(in_w, pad_left + pad_right, kernel_w, dilation_w, stride_w),
        kernel_h,
        kernel_w,
        stride_h,
        stride_w,
        dilation_h,
        dilation_w,
        pad_top,
        pad_left,
        groups,
        x_strides: ImageStrides::nhwc(in_channels, in_h, in_w),
        y_strides: ImageStrides::nhwc(0, 0, 0), // set by the caller
        x_zero_point: zero_point::<T>(rng),
        w_zero_point: if rng.below(4) == 0 { int(rng, -128, 127) } else { 0 },
        y_zero_point: zero_point::<T>(rng),
        act_min: lo,
        act_max: hi,
    };
    let taps = kernel_h * kernel_w * in_channels / groups;
    let per_channel = rng.below(3) != 0;
    Case {
        x_nchw: elems(rng, batch * in_channels * in_h * in_w),
        w_oihw: weights(rng, out_channels * taps),
        bias: if rng.below(4) == 0 { vec![] } else { (0..out_channels).map(|_| int(rng, -30_000, 30_000)).collect() },
        requants: (0..if per_channel { out_channels } else { 1 }).map(|_| requant(rng, -14, 1)).collect(),
        p,
    }
}

/// TFLite's convolution on logical coordinates; output NCHW.
fn reference<T: QuantElem>(c: &Case<T>) -> Vec<i32> {
    let p = &c.p;
    let (cpg, ocg) = (p.in_channels / p.groups, p.out_channels / p.groups);
    let x = |b: usize, ch: usize, y: usize, xx: usize| c.x_nchw[((b * p.in_channels + ch) * p.in_h + y) * p.in_w + xx];
    let mut out = Vec::new();
    for b in 0..p.batch {
        for o in 0..p.out_channels {
            let g = o / ocg;
            let r = c.requants[if c.requants.len() == 1 { 0 } else { o }];
            for oy in 0..p.out_h {
                for ox in 0..p.out_w {
                    let mut acc = c.bias.get(o).copied().unwrap_or(0) as i64;
                    for ci in 0..cpg {
                        for ky in 0..p.kernel_h {
                            for kx in 0..p.kernel_w {
                                let iy = (oy * p.stride_h + ky * p.dilation_h) as isize - p.pad_top as isize;
                                let ix = (ox * p.stride_w + kx * p.dilation_w) as isize - p.pad_left as isize;
                                if iy < 0 || ix < 0 || iy >= p.in_h as isize || ix >= p.in_w as isize {
                                    continue; // TFLite skips the padding: (zx - zx) * w = 0
                                }
                                let w = c.w_oihw[((o * cpg + ci) * p.kernel_h + ky) * p.kernel_w + kx] as i64;
                                let xv = x(b, g * cpg + ci, iy as usize, ix as usize).to_i32() as i64;
                                acc += (w - p.w_zero_point as i64) * (xv - p.x_zero_point as i64);
                            }
                        }
                    }
                    out.push(ref_output(acc, r, p.y_zero_point, p.act_min, p.act_max));
                }
            }
        }
    }
    out
}

/// `nchw` (logical NCHW values) laid out with strides `s`.
fn layout<T: Copy + Default>(nchw: &[T], (n, c, h, w): (usize, usize, usize, usize), s: ImageStrides) -> Vec<T> {
    let mut out = vec![T::default(); n * c * h * w];
    for (i, &v) in nchw.iter().enumerate() {
        let (b, ch, y, x) = (i / (c * h * w), i / (h * w) % c, i / w % h, i % w);
        out[b * s.n + ch * s.c + y * s.h + x * s.w] = v;
    }
    out
}

/// The strides of a contiguous layout, NHWC or NCHW.
fn strides(nhwc: bool, c: usize, h: usize, w: usize) -> ImageStrides {
    if nhwc {
        ImageStrides::nhwc(c, h, w)
    } else {
        ImageStrides::nchw(c, h, w)
    }
}

/// Runs the kernel on `c` with the given layouts; returns the output as logical NCHW.
fn run<T: QuantElem>(c: &Case<T>, depthwise: bool, (x_nhwc, y_nhwc): (bool, bool), scratch: bool) -> Vec<i32> {
    let mut p = c.p;
    p.x_strides = strides(x_nhwc, p.in_channels, p.in_h, p.in_w);
    p.y_strides = strides(y_nhwc, p.out_channels, p.out_h, p.out_w);
    let x = layout(&c.x_nchw, (p.batch, p.in_channels, p.in_h, p.in_w), p.x_strides);
    let mut w = vec![0i8; c.w_oihw.len()];
    let mut bias = vec![0i32; p.out_channels];
    if depthwise {
        pack_depthwise_weights(&c.w_oihw, p.out_channels, p.kernel_h, p.kernel_w, &mut w);
        fold_depthwise_bias(&w, &c.bias, p.x_zero_point, p.w_zero_point, &mut bias);
    } else {
        pack_conv_weights(&c.w_oihw, p.out_channels, p.in_channels / p.groups, p.kernel_h, p.kernel_w, &mut w);
        fold_bias(&w, &c.bias, p.x_zero_point, p.w_zero_point, &mut bias);
    }
    let multipliers: Vec<i32> = c.requants.iter().map(|r| r.multiplier).collect();
    let shifts: Vec<i32> = c.requants.iter().map(|r| r.shift).collect();
    let q = ChannelQuant { bias: &bias, multipliers: &multipliers, shifts: &shifts, rounding: RequantRounding::Double };
    let mut y = vec![T::default(); p.batch * p.out_channels * p.out_h * p.out_w];
    if depthwise {
        depthwise_conv2d(&p, &x, &w, &q, &mut y);
    } else {
        let mut scratch = vec![T::default(); if scratch { conv2d_scratch_len(&p) } else { 0 }];
        conv2d(&p, &x, &w, &q, &mut y, &mut scratch);
    }
    let (oc, oh, ow) = (p.out_channels, p.out_h, p.out_w);
    (0..y.len())
        .map(|i| {
            let (b, ch, yy, xx) = (i / (oc * oh * ow), i / (oh * ow) % oc, i / ow % oh, i % ow);
            y[b * p.y_strides.n + ch * p.y_strides.c + yy * p.y_strides.h + xx * p.y_strides.w].to_i32()
        })
        .collect()
}

fn check<T: QuantElem>(seed: u64, cases: usize, depthwise: bool) {
    let mut rng = Rng::new(seed);
    for i in 0..cases {
        let c = random_case::<T>(&mut rng, depthwise);
        let want = reference(&c);
        for (x_nhwc, y_nhwc) in [(true, true), (false, false), (true, false)] {
            for scratch in [true, false] {
                let got = run(&c, depthwise, (x_nhwc, y_nhwc), scratch);
                assert_eq!(got, want, "case {i} (x NHWC {x_nhwc}, y NHWC {y_nhwc}, scratch {scratch}): {:?}", c.p);
            }
        }
    }
}

#[test]
fn conv2d_int8_matches_tflite_reference() {
    check::<i8>(1, 400, false);
}

#[test]
fn conv2d_uint8_matches_tflite_reference() {
    check::<u8>(2, 200, false);
}

#[test]
fn depthwise_int8_matches_tflite_reference() {
    check::<i8>(3, 400, true);
}

#[test]
fn depthwise_uint8_matches_tflite_reference() {
    check::<u8>(4, 200, true);
}

#[test]
fn pointwise_conv_reads_in_place_and_matches() {
    let mut rng = Rng::new(5);
    for i in 0..100 {
        let mut c = random_case::<i8>(&mut rng, false);
        let p = &mut c.p;
        (p.kernel_h, p.kernel_w, p.pad_top, p.pad_left) = (1, 1, 0, 0);
        p.out_h = out_len(p.in_h, 0, 1, 1, p.stride_h);
        p.out_w = out_len(p.in_w, 0, 1, 1, p.stride_w);
        let taps = p.in_channels / p.groups;
        c.w_oihw.truncate(p.out_channels * taps);
        assert_eq!(conv2d_scratch_len(p), 0, "pointwise needs no scratch in any layout");
        let want = reference(&c);
        assert_eq!(run(&c, false, (true, true), true), want, "case {i}");
        assert_eq!(run(&c, false, (false, true), true), want, "case {i} (NCHW input read strided)");
    }
}

#[test]
fn conv2d_hand_computed() {
    // 1x1 input channel, 3x3 input, 2x2 kernel, stride 1, padding 1 on top/left only, input zero
    // point 3, multiplier 0.5 (2^30, shift 0), output zero point -1.
    let x: [i8; 9] = [4, 5, 6, 7, 8, 9, 10, 11, 12];
    let w_oihw: [i8; 4] = [1, 2, 3, 4];
    let p = Conv2d {
        batch: 1,
        in_channels: 1,
        in_h: 3,
        in_w: 3,
        out_channels: 1,
        out_h: 3,
        out_w: 3,
        kernel_h: 2,
        kernel_w: 2,
        stride_h: 1,
        stride_w: 1,
        dilation_h: 1,
        dilation_w: 1,
        pad_top: 1,
        pad_left: 1,
        groups: 1,
        x_strides: ImageStrides::nhwc(1, 3, 3),
        y_strides: ImageStrides::nhwc(1, 3, 3),
        x_zero_point: 3,
        w_zero_point: 0,
        y_zero_point: -1,
        act_min: -128,
        act_max: 127,
    };
    let mut w = [0i8; 4];
    pack_conv_weights(&w_oihw, 1, 1, 2, 2, &mut w);
    let mut bias = [0i32];
    fold_bias(&w, &[10], 3, 0, &mut bias);
    // 10 - 3 * (1 + 2 + 3 + 4) = -20.
    assert_eq!(bias, [-20]);
    let q = ChannelQuant { bias: &bias, multipliers: &[1 << 30], shifts: &[0], rounding: RequantRounding::Double };
    let mut y = [0i8; 9];
    let mut scratch = [0i8; 4];
    conv2d(&p, &x, &w, &q, &mut y, &mut scratch);
    // x - zx = [1 2 3; 4 5 6; 7 8 9]. Output (0,0) sees only x(0,0) under weight 4: 10 + 4 = 14,
    // * 0.5 = 7, - 1 = 6. Output (1,1): 1*1 + 2*2 + 3*4 + 4*5 = 37, + 10 = 47, * 0.5 = 23.5 -> 24
    // (ties up), - 1 = 23. Output (2,2): 1*5 + 2*6 + 3*8 + 4*9 = 77, + 10 = 87 -> 43.5 -> 44, 43.
    assert_eq!((y[0], y[4], y[8]), (6, 23, 43));
}

#[test]
fn conv2d_acc_writes_the_accumulators() {
    // ONNX ConvInteger: x (uint8, zero point 1) [[2 3 4] [5 6 7] [8 9 10]], two 2x2 kernels of
    // ones, the second with weight zero point 1 (folded: all zeros), pads 1 all round (4x4 out).
    let x: [u8; 9] = [2, 3, 4, 5, 6, 7, 8, 9, 10];
    let w = [1i8, 1, 1, 1, 0, 0, 0, 0];
    let p = Conv2d {
        batch: 1,
        in_channels: 1,
        in_h: 3,
        in_w: 3,
        out_channels: 2,
        out_h: 4,
        out_w: 4,
        kernel_h: 2,
        kernel_w: 2,
        stride_h: 1,
        stride_w: 1,
        dilation_h: 1,
        dilation_w: 1,
        pad_top: 1,
        pad_left: 1,
        groups: 1,
        x_strides: ImageStrides::nchw(1, 3, 3),
        y_strides: ImageStrides::nchw(2, 4, 4),
        x_zero_point: 1,
        w_zero_point: 0,
        y_zero_point: 0,
        act_min: 0,
        act_max: 0,
    };
    let mut bias = [0i32; 2];
    fold_bias(&w, &[], 1, 0, &mut bias);
    assert_eq!(bias, [-4, 0]);
    let (mut y, mut scratch) = ([0i32; 32], [0u8; 4]);
    conv2d_acc(&p, &x, &w, &bias, &mut y, &mut scratch);
    // x - 1 = [[1 2 3] [4 5 6] [7 8 9]], padded with 0: the sums of each 2x2 window (onnx's
    // test_convinteger_with_padding).
    #[rustfmt::skip]
    let want = [1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9,
                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(y, want);
}
