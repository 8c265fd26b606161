//! Quantized pooling and mean against references written from TFLite's `AveragePool` / `MaxPool`
//! (and ONNX's `count_include_pad`; onnxruntime's average rounded to even) and `QuantizedMeanOrSum`, on random shapes and layouts;
//! quantized softmax against hand-computed rows and `f64` softmax (its exact bits are checked
//! against CMSIS-NN's `arm_softmax_s8` / `arm_softmax_u8` in `cmsis-oracle`).

mod common;
mod quant_common;

use common::Rng;
use quant_common::{clamp, elems, ref_requant, requant, scale, zero_point};
use sramfit_runtime_min::quant::{
    avg_pool2d, avg_pool2d_half_even, max_pool2d, mean, mean_requant, softmax, softmax_output, softmax_scaling,
    ImageStrides, Mean, Pool2d, QuantElem, Softmax,
};

fn random_pool<T: QuantElem>(rng: &mut Rng) -> Pool2d {
    let (kernel_h, kernel_w) = (1 + rng.below(4), 1 + rng.below(4));
    let (dilation_h, dilation_w) = if rng.below(4) == 0 { (2, 1 + rng.below(2)) } else { (1, 1) };
    let (stride_h, stride_w) = (1 + rng.below(3), 1 + rng.below(3));
    let pads: [usize; 4] = core::array::from_fn(|_| rng.below(kernel_h.min(kernel_w)));
    let (in_h, in_w) = (1 + rng.below(7), 1 + rng.below(7));
    let extent = |len: usize, before: usize, after: usize, k: usize, d: usize, s: usize| {
        ((len + before + after).saturating_sub((k - 1) * d + 1)) / s + 1
    };
    let (channels, batch) = (1 + rng.below(5), 1 + rng.below(2));
    let (lo, hi) = clamp::<T>(rng);
    Pool2d {
        batch,
        channels,
        in_h,
        in_w,
        out_h: extent(in_h, pads[0], pads[2], kernel_h, dilation_h, stride_h),
        out_w: extent(in_w, pads[1], pads[3], kernel_w, dilation_w, stride_w),
        kernel_h,
        kernel_w,
        stride_h,
        stride_w,
        dilation_h,
        dilation_w,
        pad_top: pads[0],
        pad_left: pads[1],
        pad_bottom: pads[2],
        pad_right: pads[3],
        count_include_pad: rng.below(2) == 0,
        x_strides: ImageStrides::nhwc(channels, in_h, in_w),
        y_strides: ImageStrides::nchw(channels, 0, 0),
        zero_point: zero_point::<T>(rng),
        act_min: lo,
        act_max: hi,
    }
}

/// Which pooling a reference computes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Pooling {
    Max,
    /// TFLite's average: the raw sum rounded half away from zero.
    Average,
    /// onnxruntime's: the zero point plus the exact centered mean rounded to even (in `f64`).
    AverageHalfEven,
}

/// TFLite's pooling (average with rounding half away from zero, max) or onnxruntime's average,
/// ONNX's padding count; NCHW output.
fn reference_pool<T: QuantElem>(p: &Pool2d, x_nchw: &[T], pooling: Pooling) -> Vec<i32> {
    let mut out = Vec::new();
    for b in 0..p.batch {
        for c in 0..p.channels {
            for oy in 0..p.out_h {
                for ox in 0..p.out_w {
                    let (mut sum, mut count, mut max) = (0i64, 0i64, None::<i32>);
                    for ky in 0..p.kernel_h {
                        for kx in 0..p.kernel_w {
                            let y = (oy * p.stride_h + ky * p.dilation_h) as isize - p.pad_top as isize;
                            let x = (ox * p.stride_w + kx * p.dilation_w) as isize - p.pad_left as isize;
                            let inside_y = (0..p.in_h as isize).contains(&y);
                            let inside_x = (0..p.in_w as isize).contains(&x);
                            if inside_y && inside_x {
                                let v =
                                    x_nchw[((b * p.channels + c) * p.in_h + y as usize) * p.in_w + x as usize].to_i32();
                                sum += v as i64;
                                count += 1;
                                max = Some(max.map_or(v, |m| m.max(v)));
                            } else if p.count_include_pad
                                && y < (p.in_h + p.pad_bottom) as isize
                                && x < (p.in_w + p.pad_right) as isize
                            {
                                sum += p.zero_point as i64;
                                count += 1;
                            }
                        }
                    }
                    let zp = p.zero_point as i64;
                    let v = match (pooling, count) {
                        (Pooling::Max, _) => max.unwrap_or(p.zero_point) as i64,
                        (_, 0) => zp,
                        (Pooling::Average, n) if sum > 0 => (sum + n / 2) / n,
                        (Pooling::Average, n) => (sum - n / 2) / n,
                        (Pooling::AverageHalfEven, n) => {
                            zp + ((sum - n * zp) as f64 / n as f64).round_ties_even() as i64
                        }
                    };
                    out.push(v.max(p.act_min as i64).min(p.act_max as i64) as i32);
                }
            }
        }
    }
    out
}

fn check_pool<T: QuantElem>(seed: u64) {
    let mut rng = Rng::new(seed);
    for case in 0..500 {
        let mut p = random_pool::<T>(&mut rng);
        let pooling = [Pooling::Max, Pooling::Average, Pooling::AverageHalfEven][rng.below(3)];
        if pooling == Pooling::Max {
            p.count_include_pad = false;
        }
        if rng.below(2) == 0 {
            p.x_strides = ImageStrides::nchw(p.channels, p.in_h, p.in_w);
        }
        p.y_strides = ImageStrides::nchw(p.channels, p.out_h, p.out_w);
        let x_nchw: Vec<T> = elems(&mut rng, p.batch * p.channels * p.in_h * p.in_w);
        let mut x = vec![T::default(); x_nchw.len()];
        for (i, &v) in x_nchw.iter().enumerate() {
            let (b, c, yy, xx) = (
                i / (p.channels * p.in_h * p.in_w),
                i / (p.in_h * p.in_w) % p.channels,
                i / p.in_w % p.in_h,
                i % p.in_w,
            );
            x[b * p.x_strides.n + c * p.x_strides.c + yy * p.x_strides.h + xx * p.x_strides.w] = v;
        }
        let mut y = vec![T::default(); p.batch * p.channels * p.out_h * p.out_w];
        match pooling {
            Pooling::Max => max_pool2d(&p, &x, &mut y),
            Pooling::Average => avg_pool2d(&p, &x, &mut y),
            Pooling::AverageHalfEven => avg_pool2d_half_even(&p, &x, &mut y),
        }
        let got: Vec<i32> = y.iter().map(|v| v.to_i32()).collect();
        assert_eq!(got, reference_pool(&p, &x_nchw, pooling), "case {case} ({pooling:?}): {p:?}");
    }
}

#[test]
fn pools_int8_match_tflite_reference() {
    check_pool::<i8>(41);
}

#[test]
fn pools_uint8_match_tflite_reference() {
    check_pool::<u8>(42);
}

#[test]
fn average_pool_rounds_half_away_from_zero() {
    // A global 2x1 window: (-3 + -2) / 2 = -2.5 -> -3; (3 + 2) / 2 = 2.5 -> 3; (1 + 2) / 2 -> 2.
    let p = Pool2d {
        batch: 1,
        channels: 3,
        in_h: 2,
        in_w: 1,
        out_h: 1,
        out_w: 1,
        kernel_h: 2,
        kernel_w: 1,
        stride_h: 1,
        stride_w: 1,
        dilation_h: 1,
        dilation_w: 1,
        pad_top: 0,
        pad_left: 0,
        pad_bottom: 0,
        pad_right: 0,
        count_include_pad: false,
        x_strides: ImageStrides::nhwc(3, 2, 1),
        y_strides: ImageStrides::nhwc(3, 1, 1),
        zero_point: 0,
        act_min: -128,
        act_max: 127,
    };
    let x: [i8; 6] = [-3, 3, 1, -2, 2, 2];
    let mut y = [0i8; 3];
    avg_pool2d(&p, &x, &mut y);
    assert_eq!(y, [-3, 3, 2]);
    // onnxruntime: the centered mean rounded to nearest, ties to even: -2.5 -> -2, 2.5 -> 2,
    // 1.5 -> 2; with zero point 1 the centered values are -4, 2, 0 and -3, 1, 1: -3.5 -> -4,
    // 1.5 -> 2, 0.5 -> 0, each plus 1.
    avg_pool2d_half_even(&p, &x, &mut y);
    assert_eq!(y, [-2, 2, 2]);
    let p = Pool2d { zero_point: 1, ..p };
    avg_pool2d_half_even(&p, &x, &mut y);
    assert_eq!(y, [-3, 3, 1]);
}

#[test]
fn mean_matches_tflite_reference() {
    let mut rng = Rng::new(43);
    for case in 0..300 {
        let (outer, reduce, inner) = (1 + rng.below(3), 1 + rng.below(50), 1 + rng.below(6));
        let r = mean_requant(requant(&mut rng, -3, 1), reduce);
        let p = Mean {
            outer,
            reduce,
            inner,
            x_zero_point: zero_point::<i8>(&mut rng),
            y_zero_point: zero_point::<i8>(&mut rng),
            requant: r,
        };
        let x: Vec<i8> = elems(&mut rng, outer * reduce * inner);
        let mut y = vec![0i8; outer * inner];
        mean(&p, &x, &mut y);
        for o in 0..outer {
            for i in 0..inner {
                let sum: i64 = (0..reduce).map(|t| x[(o * reduce + t) * inner + i] as i64).sum();
                let v = ref_requant(sum - p.x_zero_point as i64 * reduce as i64, r.multiplier, r.shift)
                    + p.y_zero_point as i64;
                assert_eq!(y[o * inner + i] as i64, v.clamp(-128, 127), "case {case}");
            }
        }
    }
}

#[test]
fn mean_hand_computed() {
    // Mean of [1, 2, 4] with equal scales and zero points 0: 7 / 3 = 2.33 -> 2 (the multiplier
    // 1.0 over 3 is 2^31 / 3 with shift 1 - 1).
    let r = mean_requant(sramfit_runtime_min::quant::rescale_requant(0.1, 0.1), 3);
    let mut y = [0i8];
    mean(&Mean { outer: 1, reduce: 3, inner: 1, x_zero_point: 0, y_zero_point: 0, requant: r }, &[1, 2, 4], &mut y);
    assert_eq!(y, [2]);
    // With input zero point 1: (0 + 1 + 3) / 3 = 1.33 -> 1, output zero point 5 -> 6.
    mean(&Mean { outer: 1, reduce: 3, inner: 1, x_zero_point: 1, y_zero_point: 5, requant: r }, &[1, 2, 4], &mut y);
    assert_eq!(y, [6]);
}

/// TFLite's output scale, 1/256.
const TFLITE: sramfit_runtime_min::quant::Requant = softmax_output(1.0 / 256.0);

#[test]
fn softmax_hand_computed() {
    let p = |axis| Softmax { outer: 1, axis, inner: 1, scaling: softmax_scaling(1.0, 0.1), output: TFLITE };
    // Four equal values: 0.25 each = 64 / 256, output zero point -128.
    let mut y = [0i8; 4];
    softmax(&p(4), &[7i8; 4], &mut y);
    assert_eq!(y, [-64; 4]);
    // One value: 1.0 = 256 / 256 saturates to 127.
    let mut y = [0i8; 1];
    softmax(&p(1), &[-100i8], &mut y);
    assert_eq!(y, [127]);
    // uint8: zero point 0, so 0.25 is 64.
    let mut y = [0u8; 4];
    softmax(&p(4), &[200u8; 4], &mut y);
    assert_eq!(y, [64; 4]);
    // A difference below diff_min gives the minimum: scale 1, beta 1 allow differences down to -15.
    let q = Softmax { outer: 1, axis: 2, inner: 1, scaling: softmax_scaling(1.0, 1.0), output: TFLITE };
    let mut y = [0i8; 2];
    softmax(&q, &[100i8, 84], &mut y);
    assert_eq!(y, [127, -128]);
}

fn check_softmax<X: QuantElem, Y: QuantElem>(seed: u64, output_scale: f32) {
    let mut rng = Rng::new(seed);
    let mut worst = 0f64;
    for _ in 0..300 {
        let (outer, axis, inner) = (1 + rng.below(3), 1 + rng.below(40), 1 + rng.below(3));
        let (beta, input_scale) = (scale(&mut rng, 0.5, 2.0), scale(&mut rng, 0.01, 0.3));
        let output = softmax_output(output_scale);
        let p = Softmax { outer, axis, inner, scaling: softmax_scaling(beta, input_scale), output };
        let x: Vec<X> = elems(&mut rng, outer * axis * inner);
        let mut y = vec![Y::default(); x.len()];
        softmax(&p, &x, &mut y);
        for o in 0..outer {
            for i in 0..inner {
                let at = |c: usize| (o * axis + c) * inner + i;
                let max = (0..axis).map(|c| x[at(c)].to_i32()).max().unwrap();
                let exps: Vec<f64> =
                    (0..axis).map(|c| ((x[at(c)].to_i32() - max) as f64 * (beta * input_scale) as f64).exp()).collect();
                let total: f64 = exps.iter().sum();
                for c in 0..axis {
                    let want =
                        (exps[c] / total / output_scale as f64 + Y::MIN as f64).clamp(Y::MIN as f64, Y::MAX as f64);
                    let err = (y[at(c)].to_i32() as f64 - want).abs();
                    worst = worst.max(err);
                    assert!(err <= 1.0, "softmax off by {err}: got {}, want {want}", y[at(c)].to_i32());
                }
            }
        }
    }
    eprintln!("softmax {}: largest difference to f64 softmax {worst:.3} steps", core::any::type_name::<X>());
}

#[test]
fn softmax_is_within_one_step_of_f64() {
    check_softmax::<i8, i8>(44, 1.0 / 256.0);
    check_softmax::<u8, u8>(45, 1.0 / 256.0);
    // ONNX QDQ files' 1/255, and an arbitrary scale.
    check_softmax::<i8, i8>(46, 1.0 / 255.0);
    check_softmax::<u8, u8>(47, 1.0 / 255.0);
    check_softmax::<i8, i8>(48, 0.0042);
}
