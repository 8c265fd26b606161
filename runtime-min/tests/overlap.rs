//! The overlapped convolutions (`conv2d_overlapped`, f32 depthwise; `quant_depthwise_conv2d_overlapped`,
//! int8 / uint8 depthwise of NCHW planes; `quant_conv2d_rows_overlapped`, int8 / uint8 NHWC
//! convolutions of every kind, row by row): on every kernel path this CPU has, with the output
//! placed at the smallest displacement the plane-order contract allows, they give the same bits as
//! the kernels on separate buffers, and they refuse (panic) one element closer.
//!
//! Forcing a path is process-wide, so every test here holds [`PATHS`] while it runs.

mod common;
mod quant_common;

use common::*;
use sramfit_runtime_min::quant::{self, ChannelQuant, ImageStrides, QuantElem, RequantRounding};
use sramfit_runtime_min::*;
use std::sync::Mutex;

/// Held by every test of this file: the path in force is process-wide.
static PATHS: Mutex<()> = Mutex::new(());

/// Depthwise convolutions reaching every depthwise kernel: 3x3 on a small plane (x86-64's
/// padded-plane kernel) at stride 1 and 2, with dilation, on a large plane (row-wise kernel),
/// a 5x5 and a 1x1 one (direct convolution everywhere), a padding that makes the output larger
/// than the input, with and without an activation; and x86-64's channel-blocked kernel, which
/// computes a shared region in one call when a block's whole input fits its stage: blocks of 8
/// channels at stride 1 and 2, with channels left to the plane kernel and a band's outputs in
/// two passes through its output buffer, 5x5, and a layer too tall for the stage (then the
/// plane kernels take it); AVX-512's stride-2 kernel, which takes a shared region as it is, at any
/// height (rows of 24 and 32).
fn cases() -> Vec<Conv2d> {
    use Activation::{None as A0, Relu};
    vec![
        conv_params(1, 16, 16, (12, 12), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 16, Relu),
        conv_params(1, 20, 20, (12, 24), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 20, Relu),
        conv_params(1, 16, 16, (17, 15), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 16, A0),
        conv_params(1, 16, 16, (9, 11), (5, 5), (1, 1), (1, 1), (2, 2, 2, 2), 16, A0),
        conv_params(1, 8, 8, (100, 20), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 8, Relu),
        conv_params(1, 8, 8, (12, 12), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 8, Relu),
        conv_params(1, 6, 6, (17, 15), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 6, A0),
        conv_params(1, 5, 5, (14, 14), (3, 3), (1, 1), (2, 2), (2, 2, 2, 2), 5, A0),
        conv_params(1, 4, 4, (80, 70), (3, 3), (2, 1), (1, 2), (1, 2, 1, 2), 4, Relu),
        conv_params(1, 7, 7, (9, 11), (5, 5), (1, 1), (1, 1), (2, 2, 2, 2), 7, A0),
        conv_params(1, 3, 3, (6, 6), (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 3, A0),
        conv_params(1, 4, 4, (5, 5), (3, 3), (1, 1), (1, 1), (2, 2, 2, 2), 4, A0),
        conv_params(1, 16, 16, (48, 48), (3, 3), (2, 2), (1, 1), (0, 0, 1, 1), 16, Relu),
        conv_params(1, 8, 8, (33, 64), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 8, A0),
    ]
}

/// The smallest element offset of the input after the output's start that the contract allows:
/// output plane `q` ends at or before the first input plane it reads (`q * stride - before`, at
/// least 0) starts, for every `q` (derived here from the statement, not from the kernel).
fn min_input_offset(o: PlaneOrder) -> usize {
    let first_read = |q: usize| (q * o.stride).saturating_sub(o.before);
    (0..o.planes).map(|q| ((q + 1) * o.out_plane).saturating_sub(first_read(q) * o.in_plane)).max().unwrap_or(0)
}

/// Output bits of the overlapped call with the input `at` elements after the output's start.
fn overlapped(p: &Conv2d, x: &[f32], w: &[f32], b: &[f32], at: usize) -> Vec<u32> {
    let out_len = p.out_channels * p.out_h * p.out_w;
    // Bytes outside the input hold a pattern the result must not depend on.
    let mut region = vec![f32::from_bits(0x7fc0_dead); (at + x.len()).max(out_len)];
    region[at..at + x.len()].copy_from_slice(x);
    conv2d_overlapped(p, &mut region, at, 0, w, Some(b));
    region[..out_len].iter().map(|v| v.to_bits()).collect()
}

#[test]
fn overlapped_depthwise_matches_separate_buffers_on_every_path() {
    for (i, p) in cases().into_iter().enumerate() {
        let order = conv2d_plane_order(&p).expect("a depthwise convolution has a plane order");
        let mut rng = Rng::new(40 + i as u64);
        let x = rng.vec(p.in_channels * p.in_h * p.in_w);
        let w = rng.vec(p.out_channels * p.kernel_h * p.kernel_w);
        let b = rng.vec(p.out_channels);
        let at = min_input_offset(order);
        for (path, (separate, shared)) in common::on_each_path(&PATHS, || {
            let mut y = vec![0.0; p.out_channels * p.out_h * p.out_w];
            conv2d(&p, &x, &w, Some(&b), &mut y, &mut []);
            (y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), overlapped(&p, &x, &w, &b, at))
        }) {
            assert_eq!(separate, shared, "case {i} on {}", path.name());
        }
        // The pair takes fewer elements than two buffers.
        assert!(at + x.len() < x.len() + order.planes * order.out_plane, "case {i}");
    }
}

#[test]
fn overlapped_depthwise_refuses_a_displacement_one_element_too_small() {
    let _guard = PATHS.lock().unwrap_or_else(|e| e.into_inner());
    for (i, p) in cases().into_iter().enumerate() {
        let at = min_input_offset(conv2d_plane_order(&p).unwrap());
        let (x, w, b) =
            (vec![1.0; p.in_channels * p.in_h * p.in_w], vec![1.0; p.out_channels * 25], vec![0.0; p.out_channels]);
        let result = std::panic::catch_unwind(|| overlapped(&p, &x, &w, &b, at - 1));
        assert!(result.is_err(), "case {i}: input at {} accepted", at - 1);
    }
}

#[test]
fn only_depthwise_nchw_batch_one_has_a_plane_order() {
    use Activation::None as A0;
    let depthwise = conv_params(1, 4, 4, (6, 6), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 4, A0);
    assert_eq!(conv2d_plane_order(&depthwise), Some(PlaneOrder::one_to_one(4, 36, 36)));
    let multiplier = conv_params(1, 4, 8, (6, 6), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 4, A0);
    let dense = conv_params(1, 4, 4, (6, 6), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, A0);
    let batch = conv_params(2, 4, 4, (6, 6), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 4, A0);
    let nhwc = Conv2d { input: ConvInput::Nhwc, ..depthwise };
    for p in [multiplier, dense, batch, nhwc] {
        assert_eq!(conv2d_plane_order(&p), None, "{p:?}");
    }
}

/// `(channels, (in_h, in_w), (kernel_h, kernel_w), stride, pad)`.
type QuantCase = (usize, (usize, usize), (usize, usize), usize, usize);

/// int8 depthwise convolutions of NCHW planes reaching every int8 depthwise kernel (x86-64: 16
/// channels per vector for rows up to 12 wide, the plane kernel for wider ones, the portable one
/// for 5x5), padding on all sides (an output larger than the input for the last).
const QUANT_CASES: [QuantCase; 7] = [
    (20, (12, 12), (3, 3), 1, 1),
    (6, (17, 15), (3, 3), 2, 1),
    (4, (40, 50), (3, 3), 1, 1),
    (7, (9, 11), (5, 5), 1, 2),
    (3, (6, 6), (1, 1), 1, 0),
    (33, (6, 6), (3, 3), 2, 1),
    (4, (5, 5), (3, 3), 1, 2),
];

/// The int8 convolution of a [`QUANT_CASES`] entry, with zero points and a clamp of `T`.
fn quant_case<T: QuantElem>(rng: &mut Rng, (c, (h, w), (kh, kw), stride, pad): QuantCase) -> quant::Conv2d {
    let (act_min, act_max) = quant_common::clamp::<T>(rng);
    let (x_zero_point, y_zero_point) = (quant_common::zero_point::<T>(rng), quant_common::zero_point::<T>(rng));
    quant::Conv2d {
        x_zero_point,
        y_zero_point,
        act_min,
        act_max,
        ..quant_common::conv_nchw(c, (h, w), c, (kh, kw), stride, pad, c)
    }
}

/// One int8 layer's data: input, weights (1HWO for a depthwise layer, OHWI otherwise: the same
/// count), folded biases, multipliers and shifts (per tensor when `per_tensor`).
struct QuantData<T> {
    x: Vec<T>,
    w: Vec<i8>,
    bias: Vec<i32>,
    multipliers: Vec<i32>,
    shifts: Vec<i32>,
}

impl<T: QuantElem> QuantData<T> {
    fn new(rng: &mut Rng, p: &quant::Conv2d, per_tensor: bool) -> Self {
        let c = p.out_channels;
        let n = if per_tensor { 1 } else { c };
        let requants: Vec<_> = (0..n).map(|_| quant_common::requant(rng, -12, 0)).collect();
        QuantData {
            x: quant_common::elems(rng, p.in_channels * p.in_h * p.in_w),
            w: quant_common::weights(rng, c * p.kernel_h * p.kernel_w * (p.in_channels / p.groups)),
            bias: (0..c).map(|_| quant_common::int(rng, -3000, 3000)).collect(),
            multipliers: requants.iter().map(|r| r.multiplier).collect(),
            shifts: requants.iter().map(|r| r.shift).collect(),
        }
    }

    fn quant(&self, rounding: RequantRounding) -> ChannelQuant<'_> {
        ChannelQuant { bias: &self.bias, multipliers: &self.multipliers, shifts: &self.shifts, rounding }
    }
}

/// Output of the overlapped int8 call with the input `at` elements after the output's start
/// (the rest of the region a pattern the result must not depend on).
fn quant_overlapped<T: QuantElem>(p: &quant::Conv2d, d: &QuantData<T>, rounding: RequantRounding, at: usize) -> Vec<T> {
    let out_len = p.out_channels * p.out_h * p.out_w;
    let mut region = vec![T::saturate(T::MIN + 77); (at + d.x.len()).max(out_len)];
    region[at..at + d.x.len()].copy_from_slice(&d.x);
    quant_depthwise_conv2d_overlapped(p, &mut region, (at, 0), &d.w, &d.quant(rounding));
    region.truncate(out_len);
    region
}

fn check_quant_overlap<T: QuantElem + PartialEq + std::fmt::Debug>(seed: u64) {
    let mut rng = Rng::new(seed);
    for (i, case) in QUANT_CASES.into_iter().enumerate() {
        let p = quant_case::<T>(&mut rng, case);
        let order = quant_depthwise_plane_order(&p).expect("an NCHW depthwise convolution has a plane order");
        let d = QuantData::<T>::new(&mut rng, &p, i % 3 == 0);
        let rounding = if i % 2 == 0 { RequantRounding::Double } else { RequantRounding::SingleHalfToEven };
        let out_len = p.out_channels * p.out_h * p.out_w;
        // The smallest displacement, and the output wholly below the input (chunks of as many
        // planes as the gathered weights hold).
        for at in [min_input_offset(order), out_len] {
            for (path, (separate, shared)) in common::on_each_path(&PATHS, || {
                let mut y = vec![T::saturate(0); out_len];
                quant::depthwise_conv2d(&p, &d.x, &d.w, &d.quant(rounding), &mut y);
                (y, quant_overlapped(&p, &d, rounding, at))
            }) {
                assert_eq!(separate, shared, "case {i}, input at {at}, on {}", path.name());
            }
        }
        let at = min_input_offset(order);
        assert!(at + d.x.len() < d.x.len() + out_len, "case {i}");
        let _guard = PATHS.lock().unwrap_or_else(|e| e.into_inner());
        let closer =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| quant_overlapped(&p, &d, rounding, at - 1)));
        assert!(closer.is_err(), "case {i}: input at {} accepted", at - 1);
    }
}

#[test]
fn overlapped_int8_depthwise_matches_separate_buffers_and_refuses_a_closer_input() {
    check_quant_overlap::<i8>(7);
    check_quant_overlap::<u8>(8);
}

#[test]
fn only_int8_depthwise_nchw_planes_have_a_plane_order() {
    let mut rng = Rng::new(9);
    let p = quant_case::<i8>(&mut rng, (4, (6, 6), (3, 3), 1, 1));
    assert_eq!(quant_depthwise_plane_order(&p), Some(PlaneOrder::one_to_one(4, 36, 36)));
    let nhwc = quant::Conv2d { x_strides: ImageStrides::nhwc(4, 6, 6), y_strides: ImageStrides::nhwc(4, 6, 6), ..p };
    let multiplier = quant::Conv2d { out_channels: 8, y_strides: ImageStrides::nchw(8, 6, 6), ..p };
    let batch = quant::Conv2d { batch: 2, ..p };
    // A channel slice of a larger tensor (planes not consecutive from the start of the view).
    let view = quant::Conv2d { x_strides: ImageStrides { c: 40, ..p.x_strides }, ..p };
    let big = quant::Conv2d { kernel_h: 17, kernel_w: 17, pad_top: 8, pad_left: 8, ..p };
    for q in [nhwc, multiplier, batch, view, big] {
        assert_eq!(quant_depthwise_plane_order(&q), None, "{q:?}");
    }
}

/// `(in_channels, (in_h, in_w), out_channels, (kernel_h, kernel_w), stride, pad, groups,
/// dilation)`.
type RowCase = (usize, (usize, usize), usize, (usize, usize), usize, usize, usize, usize);

/// int8 convolutions of NHWC images (the `.tflite` layout) of every kind: 3x3 over 16 channels
/// (x86-64: staged by 16x16 transposes), a 3-channel stride-2 first layer, pointwise layers read
/// in place (output rows wider and narrower than the input's), depthwise ones at stride 1 and 2
/// and with a channel multiplier, a grouped 5x5, a dilated 3x3, and a padding that makes the
/// output larger than the input.
const ROW_CASES: [RowCase; 10] = [
    (16, (12, 12), 16, (3, 3), 1, 1, 1, 1),
    (3, (17, 15), 8, (3, 3), 2, 1, 1, 1),
    (32, (9, 7), 64, (1, 1), 1, 0, 1, 1),
    (48, (6, 6), 8, (1, 1), 1, 0, 1, 1),
    (20, (12, 12), 20, (3, 3), 1, 1, 20, 1),
    (6, (17, 15), 6, (3, 3), 2, 1, 6, 1),
    (4, (10, 10), 8, (3, 3), 1, 1, 4, 1),
    (8, (9, 11), 8, (5, 5), 1, 2, 2, 1),
    (5, (11, 9), 7, (3, 3), 1, 2, 1, 2),
    (4, (5, 5), 4, (3, 3), 1, 2, 4, 1),
];

/// The NHWC convolution of a [`ROW_CASES`] entry, with zero points and a clamp of `T`.
fn row_case<T: QuantElem>(rng: &mut Rng, (cin, (h, w), cout, (kh, kw), s, pad, groups, dil): RowCase) -> quant::Conv2d {
    let (act_min, act_max) = quant_common::clamp::<T>(rng);
    let (x_zero_point, y_zero_point) = (quant_common::zero_point::<T>(rng), quant_common::zero_point::<T>(rng));
    let (eh, ew) = ((kh - 1) * dil + 1, (kw - 1) * dil + 1);
    let (oh, ow) = ((h + 2 * pad - eh) / s + 1, (w + 2 * pad - ew) / s + 1);
    quant::Conv2d {
        out_h: oh,
        out_w: ow,
        dilation_h: dil,
        dilation_w: dil,
        x_strides: ImageStrides::nhwc(cin, h, w),
        y_strides: ImageStrides::nhwc(cout, oh, ow),
        x_zero_point,
        y_zero_point,
        act_min,
        act_max,
        ..quant_common::conv_nchw(cin, (h, w), cout, (kh, kw), s, pad, groups)
    }
}

/// The layer on separate buffers.
fn rows_separate<T: QuantElem>(p: &quant::Conv2d, d: &QuantData<T>, rounding: RequantRounding) -> Vec<T> {
    let mut y = vec![T::saturate(0); p.out_channels * p.out_h * p.out_w];
    match p.groups > 1 && p.groups == p.in_channels {
        true => quant::depthwise_conv2d(p, &d.x, &d.w, &d.quant(rounding), &mut y),
        false => quant::conv2d(p, &d.x, &d.w, &d.quant(rounding), &mut y, &mut []),
    }
    y
}

/// Output of the overlapped row-by-row call with the input `at` elements after the output's
/// start (the rest of the region a pattern the result must not depend on).
fn rows_overlapped<T: QuantElem>(p: &quant::Conv2d, d: &QuantData<T>, rounding: RequantRounding, at: usize) -> Vec<T> {
    let out_len = p.out_channels * p.out_h * p.out_w;
    let mut region = vec![T::saturate(T::MIN + 77); (at + d.x.len()).max(out_len)];
    region[at..at + d.x.len()].copy_from_slice(&d.x);
    quant_conv2d_rows_overlapped(p, &mut region, (at, 0), &d.w, &d.quant(rounding), &mut []);
    region.truncate(out_len);
    region
}

fn check_rows_overlap<T: QuantElem + PartialEq + std::fmt::Debug>(seed: u64) {
    let mut rng = Rng::new(seed);
    for (i, case) in ROW_CASES.into_iter().enumerate() {
        let p = row_case::<T>(&mut rng, case);
        let order = quant_conv2d_row_order(&p).expect("an NHWC convolution has a row order");
        let d = QuantData::<T>::new(&mut rng, &p, i % 3 == 0);
        let rounding = if i % 2 == 0 { RequantRounding::Double } else { RequantRounding::SingleHalfToEven };
        let out_len = p.out_channels * p.out_h * p.out_w;
        // The smallest displacement, and the output wholly below the input (one chunk).
        for at in [min_input_offset(order), out_len] {
            for (path, (separate, shared)) in common::on_each_path(&PATHS, || {
                (rows_separate(&p, &d, rounding), rows_overlapped(&p, &d, rounding, at))
            }) {
                assert_eq!(separate, shared, "case {i}, input at {at}, on {}", path.name());
            }
        }
        let at = min_input_offset(order);
        assert!(at < out_len, "case {i}: the pair takes no fewer elements than two buffers");
        let _guard = PATHS.lock().unwrap_or_else(|e| e.into_inner());
        let closer =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rows_overlapped(&p, &d, rounding, at - 1)));
        assert!(closer.is_err(), "case {i}: input at {} accepted", at - 1);
    }
}

#[test]
fn overlapped_int8_nhwc_rows_match_separate_buffers_and_refuse_a_closer_input() {
    check_rows_overlap::<i8>(17);
    check_rows_overlap::<u8>(18);
}

#[test]
fn only_int8_nhwc_batch_one_images_have_a_row_order() {
    let mut rng = Rng::new(19);
    let p = row_case::<i8>(&mut rng, (4, (6, 5), 8, (3, 3), 2, 1, 1, 2));
    let expected =
        PlaneOrder { planes: 2, in_plane: 20, out_plane: 16, in_planes: 6, stride: 2, before: 1, reach: 4, rows: true };
    assert_eq!(quant_conv2d_row_order(&p), Some(expected));
    let nchw = quant::Conv2d { x_strides: ImageStrides::nchw(4, 6, 5), y_strides: ImageStrides::nchw(8, 2, 2), ..p };
    let batch = quant::Conv2d { batch: 2, ..p };
    // A channel slice of a larger tensor (a row is not one run).
    let view = quant::Conv2d { x_strides: ImageStrides { h: 40, ..p.x_strides }, ..p };
    for q in [nchw, batch, view] {
        assert_eq!(quant_conv2d_row_order(&q), None, "{q:?}");
    }
}

/// An f32 pooling kernel.
type PoolKernel = fn(&Pool2d, &[f32], &mut [f32]);

/// f32 poolings of one image reaching each pooling path: 2x2 stride-2 max (the non-overlapping
/// fast path), global average, 3x3 stride-1 average with padding counted and not (output as large
/// as the input), ceil mode, dilation, a 3-D window.
fn pool_cases() -> Vec<(Pool2d, PoolKernel)> {
    let (max, avg): (PoolKernel, PoolKernel) = (max_pool2d, avg_pool2d);
    let plain = |c, hw, k, s, pads, ceil, cip| pool_params((1, c), hw, k, s, (1, 1), pads, ceil, cip);
    let dilated = pool_params((1, 5), (11, 9), (3, 2), (2, 1), (2, 2), (1, 0, 1, 1), false, false);
    let deep = Pool2d {
        in_d: 4,
        out_d: 2,
        kernel_d: 2,
        stride_d: 2,
        ..plain(3, (6, 6), (2, 2), (2, 2), (0, 0, 0, 0), false, false)
    };
    vec![
        (plain(6, (12, 10), (2, 2), (2, 2), (0, 0, 0, 0), false, false), max),
        (plain(9, (7, 5), (7, 5), (1, 1), (0, 0, 0, 0), false, false), avg),
        (plain(4, (9, 9), (3, 3), (1, 1), (1, 1, 1, 1), false, true), avg),
        (plain(4, (9, 9), (3, 3), (1, 1), (1, 1, 1, 1), false, false), avg),
        (plain(5, (10, 7), (3, 3), (2, 2), (0, 0, 0, 0), true, false), max),
        (dilated, max),
        (deep, avg),
    ]
}

/// Output bits of the overlapped pooling with the input `at` elements after the output's start.
fn pool_overlapped(p: &Pool2d, kernel: PoolKernel, x: &[f32], at: usize) -> Vec<u32> {
    let out_len = p.channels * p.out_d * p.out_h * p.out_w;
    let mut region = vec![f32::from_bits(0x7fc0_dead); (at + x.len()).max(out_len)];
    region[at..at + x.len()].copy_from_slice(x);
    pool2d_overlapped(p, kernel, &mut region, (at, 0));
    region[..out_len].iter().map(|v| v.to_bits()).collect()
}

#[test]
fn overlapped_pooling_matches_separate_buffers_and_refuses_a_closer_input() {
    for (i, (p, kernel)) in pool_cases().into_iter().enumerate() {
        let order = pool2d_plane_order(&p).expect("pooling one image has a plane order");
        let x = Rng::new(60 + i as u64).vec(p.channels * p.in_d * p.in_h * p.in_w);
        let out_len = p.channels * p.out_d * p.out_h * p.out_w;
        let at = min_input_offset(order);
        for (path, (separate, shared)) in common::on_each_path(&PATHS, || {
            let mut y = vec![0.0; out_len];
            kernel(&p, &x, &mut y);
            (y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), pool_overlapped(&p, kernel, &x, at))
        }) {
            assert_eq!(separate, shared, "case {i} on {}", path.name());
        }
        assert!(at < out_len, "case {i}: the pair takes no fewer elements than two buffers");
        let _guard = PATHS.lock().unwrap_or_else(|e| e.into_inner());
        let closer = std::panic::catch_unwind(|| pool_overlapped(&p, kernel, &x, at - 1));
        assert!(closer.is_err(), "case {i}: input at {} accepted", at - 1);
    }
    let batch = pool_params((2, 3), (4, 4), (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), false, false);
    assert_eq!(pool2d_plane_order(&batch), None);
}

/// `(channels, (in_h, in_w), kernel, stride, pad, count_include_pad, pad_bottom)`.
type PoolCase = (usize, (usize, usize), usize, usize, usize, bool, usize);

/// int8 poolings: 2x2 stride 2 (x86-64's max-pooling lanes), 3x3 stride 1 with padding counted
/// and not, 3x3 stride 2, and one whose bottom padding (2) differs from its top padding, which
/// counted-padding averages divide by: NCHW planes one by one and NHWC images row by row.
const QUANT_POOL_CASES: [PoolCase; 5] = [
    (6, (12, 10), 2, 2, 0, false, 0),
    (4, (9, 9), 3, 1, 1, true, 1),
    (3, (9, 9), 3, 1, 1, false, 1),
    (5, (7, 7), 3, 2, 1, false, 1),
    (16, (8, 6), 3, 1, 1, true, 2),
];

#[test]
fn overlapped_int8_pooling_matches_separate_buffers_and_refuses_a_closer_input() {
    type Kernel = fn(&quant::Pool2d, &[i8], &mut [i8]);
    let kernels: [Kernel; 3] = [quant::max_pool2d, quant::avg_pool2d, quant::avg_pool2d_half_even];
    let mut rng = Rng::new(70);
    for (i, (c, (h, w), k, s, pad, cip, pad_bottom)) in QUANT_POOL_CASES.into_iter().enumerate() {
        let (act_min, act_max) = quant_common::clamp::<i8>(&mut rng);
        let zero_point = quant_common::zero_point::<i8>(&mut rng);
        let square = quant_common::pool_nchw(c, (h, w), k, s, pad);
        let oh = (h + pad + pad_bottom - k) / s + 1;
        let nchw = quant::Pool2d {
            out_h: oh,
            pad_bottom,
            count_include_pad: cip,
            zero_point,
            act_min,
            act_max,
            y_strides: ImageStrides::nchw(c, oh, square.out_w),
            ..square
        };
        let nhwc = quant::Pool2d {
            x_strides: ImageStrides::nhwc(c, h, w),
            y_strides: ImageStrides::nhwc(c, oh, nchw.out_w),
            ..nchw
        };
        let x: Vec<i8> = quant_common::elems(&mut rng, c * h * w);
        let out_len = c * oh * nchw.out_w;
        for p in [nchw, nhwc] {
            let order = quant_pool2d_plane_order(&p).expect("one image's planes or rows have an order");
            let at = min_input_offset(order);
            let run = |kernel: Kernel, at: usize| {
                let mut region = vec![77i8; (at + x.len()).max(out_len)];
                region[at..at + x.len()].copy_from_slice(&x);
                quant_pool2d_overlapped(&p, kernel, &mut region, (at, 0));
                region.truncate(out_len);
                region
            };
            for kernel in kernels {
                for (path, (separate, shared)) in common::on_each_path(&PATHS, || {
                    let mut y = vec![0i8; out_len];
                    kernel(&p, &x, &mut y);
                    (y, run(kernel, at))
                }) {
                    assert_eq!(separate, shared, "case {i} ({:?}) on {}", p.x_strides, path.name());
                }
                let _guard = PATHS.lock().unwrap_or_else(|e| e.into_inner());
                let closer = std::panic::catch_unwind(|| run(kernel, at - 1));
                assert!(closer.is_err(), "case {i} ({:?}): input at {} accepted", p.x_strides, at - 1);
            }
        }
        assert_eq!(quant_pool2d_plane_order(&quant::Pool2d { batch: 2, ..nhwc }), None);
    }
}
