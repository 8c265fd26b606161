//! Quantized elementwise kernels against references written from TFLite's definitions
//! (`AddFunc` / `SubElementwise` / `MulElementwise`, `Requantize`, `AffineQuantize`, `Dequantize`,
//! PAD), with broadcasting and in place, plus hand-computed cases.

mod common;
mod quant_common;

use common::Rng;
use quant_common::{clamp, elems, ref_output, ref_requant, requant, scale, zero_point};
use sramfit_runtime_min::quant::{
    add, add_in_place, add_scaling, dequantize, dequantize_value, lut, lut_in_place, mul, mul_in_place, mul_requant,
    pad, quantize, quantize_value, requantize, rescale_requant, sub, sub_in_place, sub_scaling, Add, Mul, Pad,
    QuantElem, Quantization, Requant, Requantize, Rounding,
};
use sramfit_runtime_min::Broadcast;

/// A random broadcast of rank <= 4: output shape and the (0 = broadcast) contiguous strides of `a`
/// and `b`.
fn random_broadcast(rng: &mut Rng) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
    let rank = rng.below(5);
    let out: Vec<usize> = (0..rank).map(|_| 1 + rng.below(5)).collect();
    let operand = |rng: &mut Rng| {
        let shape: Vec<usize> = out.iter().map(|&d| if rng.below(3) == 0 { 1 } else { d }).collect();
        let mut strides = vec![0; rank];
        let mut acc = 1;
        for d in (0..rank).rev() {
            strides[d] = if shape[d] == 1 { 0 } else { acc };
            acc *= shape[d];
        }
        strides
    };
    let (a, b) = (operand(rng), operand(rng));
    (out, a, b)
}

/// Offsets of `a` and `b` for each output position, in row-major order.
fn broadcast_offsets(out: &[usize], a: &[usize], b: &[usize]) -> Vec<(usize, usize)> {
    let total: usize = out.iter().product();
    (0..total)
        .map(|mut i| {
            let (mut ao, mut bo) = (0, 0);
            for d in (0..out.len()).rev() {
                let idx = i % out[d];
                i /= out[d];
                ao += idx * a[d];
                bo += idx * b[d];
            }
            (ao, bo)
        })
        .collect()
}

/// The length an operand with these strides needs.
fn operand_len(out: &[usize], strides: &[usize]) -> usize {
    1 + out.iter().zip(strides).map(|(&d, &s)| (d - 1) * s).sum::<usize>()
}

/// TFLite ADD (`subtract = false`) or SUB on one pair, from the definition.
fn ref_add(p: &Add, a: i32, b: i32, subtract: bool) -> i32 {
    let s = &p.scaling;
    let sa = ref_requant(((a - p.a_zero_point) as i64) << s.left_shift, s.a.multiplier, s.a.shift);
    let sb = ref_requant(((b - p.b_zero_point) as i64) << s.left_shift, s.b.multiplier, s.b.shift);
    ref_output(if subtract { sa - sb } else { sa + sb }, s.output, p.y_zero_point, p.act_min, p.act_max)
}

/// TFLite MUL on one pair, from the definition.
fn ref_mul(p: &Mul, a: i32, b: i32) -> i32 {
    ref_output(((a - p.a_zero_point) * (b - p.b_zero_point)) as i64, p.requant, p.y_zero_point, p.act_min, p.act_max)
}

fn check_binary<T: QuantElem>(seed: u64) {
    let mut rng = Rng::new(seed);
    for case in 0..400 {
        let (out, sa, sb) = random_broadcast(&mut rng);
        let shape = Broadcast { out_shape: &out, a_strides: &sa, b_strides: &sb };
        let a: Vec<T> = elems(&mut rng, operand_len(&out, &sa));
        let b: Vec<T> = elems(&mut rng, operand_len(&out, &sb));
        let (s_a, s_b, s_y) = (scale(&mut rng, 1e-3, 1.0), scale(&mut rng, 1e-3, 1.0), scale(&mut rng, 1e-3, 1.0));
        let (lo, hi) = clamp::<T>(&mut rng);
        let (za, zb, zy) = (zero_point::<T>(&mut rng), zero_point::<T>(&mut rng), zero_point::<T>(&mut rng));
        let add_p = Add {
            a_zero_point: za,
            b_zero_point: zb,
            y_zero_point: zy,
            scaling: add_scaling(s_a, s_b, s_y),
            act_min: lo,
            act_max: hi,
        };
        let sub_p = Add { scaling: sub_scaling(s_a, s_b, s_y), ..add_p };
        let mul_p = Mul {
            a_zero_point: za,
            b_zero_point: zb,
            y_zero_point: zy,
            requant: mul_requant(s_a, s_b, s_y),
            act_min: lo,
            act_max: hi,
        };
        let offsets = broadcast_offsets(&out, &sa, &sb);
        let at = |(ao, bo): (usize, usize)| (a[ao].to_i32(), b[bo].to_i32());
        let want_add: Vec<i32> = offsets.iter().map(|&o| ref_add(&add_p, at(o).0, at(o).1, false)).collect();
        let want_sub: Vec<i32> = offsets.iter().map(|&o| ref_add(&sub_p, at(o).0, at(o).1, true)).collect();
        let want_mul: Vec<i32> = offsets.iter().map(|&o| ref_mul(&mul_p, at(o).0, at(o).1)).collect();
        let ints = |y: &[T]| y.iter().map(|v| v.to_i32()).collect::<Vec<_>>();
        let mut y = vec![T::default(); offsets.len()];
        add(&add_p, &shape, &a, &b, &mut y);
        assert_eq!(ints(&y), want_add, "add case {case}: {out:?} {sa:?} {sb:?}");
        sub(&sub_p, &shape, &a, &b, &mut y);
        assert_eq!(ints(&y), want_sub, "sub case {case}");
        mul(&mul_p, &shape, &a, &b, &mut y);
        assert_eq!(ints(&y), want_mul, "mul case {case}");
        // In place: `a` materialised at the output shape.
        let a_full: Vec<T> = offsets.iter().map(|&(ao, _)| a[ao]).collect();
        for (kernel, want) in [(0, &want_add), (1, &want_sub), (2, &want_mul)] {
            let mut acc = a_full.clone();
            match kernel {
                0 => add_in_place(&add_p, &shape, &mut acc, &b),
                1 => sub_in_place(&sub_p, &shape, &mut acc, &b),
                _ => mul_in_place(&mul_p, &shape, &mut acc, &b),
            }
            assert_eq!(&ints(&acc), want, "in place kernel {kernel}, case {case}");
        }
    }
}

#[test]
fn add_sub_mul_int8_match_tflite_reference() {
    check_binary::<i8>(31);
}

#[test]
fn add_sub_mul_uint8_match_tflite_reference() {
    check_binary::<u8>(32);
}

#[test]
fn add_hand_computed() {
    let one = Broadcast { out_shape: &[1], a_strides: &[1], b_strides: &[1] };
    // Scales 1, 1, 1, zero points 0: 3 + 4 = 7 (3 << 20 halved, 4 << 20 halved, sum * 2^-19).
    let p = Add {
        a_zero_point: 0,
        b_zero_point: 0,
        y_zero_point: 0,
        scaling: add_scaling(1.0, 1.0, 1.0),
        act_min: -128,
        act_max: 127,
    };
    let mut y = [0i8];
    add(&p, &one, &[3i8], &[4i8], &mut y);
    assert_eq!(y, [7]);
    // Scales 0.5 and 0.25 into 1.0: 3 * 0.5 + 1 * 0.25 = 1.75 -> 2.
    let p = Add { scaling: add_scaling(0.5, 0.25, 1.0), ..p };
    add(&p, &one, &[3i8], &[1i8], &mut y);
    assert_eq!(y, [2]);
    // 3 * 0.5 - 1 * 0.25 = 1.25 -> 1; with zero points 2, 1, -3: same reals, output -3 + 1 = -2.
    let p = Add { a_zero_point: 2, b_zero_point: 1, y_zero_point: -3, scaling: sub_scaling(0.5, 0.25, 1.0), ..p };
    sub(&p, &one, &[5i8], &[2i8], &mut y);
    assert_eq!(y, [-2]);
    // MUL: (6 - 2) * (-3 - 1) = -16, * 0.5 * 0.5 / 2 = -2; clamp at -1.
    let p = Mul {
        a_zero_point: 2,
        b_zero_point: 1,
        y_zero_point: 0,
        requant: mul_requant(0.5, 0.5, 2.0),
        act_min: -1,
        act_max: 127,
    };
    mul(&p, &one, &[6i8], &[-3i8], &mut y);
    assert_eq!(y, [-1]);
}

/// TFLite `Requantize` from the definition.
fn ref_requantize(x: i32, p: &Requantize, lo: i32, hi: i32) -> i32 {
    (ref_requant((x - p.x_zero_point) as i64, p.requant.multiplier, p.requant.shift) + p.y_zero_point as i64)
        .clamp(lo as i64, hi as i64) as i32
}

fn check_requantize<X: QuantElem, Y: QuantElem>(seed: u64) {
    let mut rng = Rng::new(seed);
    for case in 0..200 {
        let (rows, cols) = (1 + rng.below(5), 1 + rng.below(20));
        let (x_row_stride, y_row_stride) = (cols + rng.below(3), cols + rng.below(4));
        let p = Requantize {
            rows,
            cols,
            x_row_stride,
            y_row_stride,
            x_zero_point: zero_point::<X>(&mut rng),
            y_zero_point: zero_point::<Y>(&mut rng),
            requant: requant(&mut rng, -8, 3),
            act_min: Y::MIN,
            act_max: Y::MAX,
        };
        let x: Vec<X> = elems(&mut rng, rows * x_row_stride);
        let mut y = vec![Y::default(); rows * y_row_stride];
        requantize(&p, &x, &mut y);
        for r in 0..rows {
            for c in 0..cols {
                let want = ref_requantize(x[r * x_row_stride + c].to_i32(), &p, Y::MIN, Y::MAX);
                assert_eq!(y[r * y_row_stride + c].to_i32(), want, "case {case} ({r}, {c})");
            }
            assert!(
                y[r * y_row_stride + cols..(r + 1) * y_row_stride].iter().all(|v| *v == Y::default()),
                "gap written"
            );
        }
    }
}

#[test]
fn requantize_matches_tflite_reference() {
    check_requantize::<i8, i8>(33);
    check_requantize::<i8, u8>(34);
    check_requantize::<u8, i8>(35);
}

#[test]
fn requantize_same_scale_int8_to_uint8_flips_the_sign_bit() {
    // TFLite's fast path: equal scales, zero points differing by 128: y = x ^ 0x80.
    let r = rescale_requant(0.0173, 0.0173);
    assert_eq!(r, Requant { multiplier: 1 << 30, shift: 1 });
    let x: Vec<i8> = (-128..=127).collect();
    let mut y = vec![0u8; 256];
    requantize(
        &Requantize {
            rows: 1,
            cols: 256,
            x_row_stride: 256,
            y_row_stride: 256,
            x_zero_point: -5,
            y_zero_point: 123,
            requant: r,
            act_min: 0,
            act_max: 255,
        },
        &x,
        &mut y,
    );
    for (&a, &b) in x.iter().zip(&y) {
        assert_eq!(b, a as u8 ^ 0x80);
    }
}

#[test]
fn quantize_rounding_modes() {
    let q = |x: f32, r| quantize_value::<i8>(x, 1.0, 0, r);
    use Rounding::{HalfAwayFromZero as Away, HalfToEven as Even};
    assert_eq!((q(2.5, Even), q(2.5, Away)), (2, 3));
    assert_eq!((q(-2.5, Even), q(-2.5, Away)), (-2, -3));
    assert_eq!((q(0.5, Even), q(0.5, Away)), (0, 1));
    assert_eq!((q(3.5, Even), q(3.5, Away)), (4, 4));
    assert_eq!((q(1000.0, Even), q(-1e30, Away), q(f32::NAN, Even)), (127, -128, 0));
    assert_eq!(quantize_value::<u8>(-5.0, 0.5, 10, Even), 0); // -10 + 10
    assert_eq!(quantize_value::<u8>(-4.75, 0.5, 10, Even), 0); // -9.5 -> -10 (even), + 10
    assert_eq!(quantize_value::<u8>(-4.75, 0.5, 10, Away), 0);
    assert_eq!(quantize_value::<u8>(-4.25, 0.5, 10, Even), 2); // -8.5 -> -8, + 10
    assert_eq!(quantize_value::<u8>(-4.25, 0.5, 10, Away), 1); // -8.5 -> -9, + 10
    assert_eq!(quantize_value::<u8>(200.0, 0.5, 10, Away), 255);
    // int16 (ONNX QuantizeLinear's test_quantizelinear_int16 values): scale 2, zero point 256.
    assert_eq!(quantize_value::<i16>(-514.0, 2.0, 256, Even), -1);
    assert_eq!(quantize_value::<i16>(2.9, 2.0, 256, Even), 257);
    assert_eq!(quantize_value::<i16>(-3.0, 2.0, 256, Even), 254); // -1.5 -> -2
    assert_eq!(quantize_value::<i16>(70000.0, 2.0, 256, Even), i16::MAX);
    assert_eq!(quantize_value::<i16>(-70000.0, 2.0, 256, Even), i16::MIN);
    assert_eq!(dequantize_value::<i16>(i16::MIN, 0.5, 256), -16512.0);
}

#[test]
fn quantize_and_dequantize_slices() {
    let mut rng = Rng::new(36);
    let p = Quantization { scale: 0.037, zero_point: -7 };
    let x: Vec<f32> = (0..1000).map(|_| rng.uniform(-6.0, 6.0)).collect();
    let mut q = vec![0i8; x.len()];
    quantize(&p, Rounding::HalfToEven, &x, &mut q);
    let mut back = vec![0f32; x.len()];
    dequantize(&p, &q, &mut back);
    for i in 0..x.len() {
        // TFLite multiplies in f64 and rounds once: the f32 product must equal that.
        assert_eq!(back[i], ((q[i] as i32 + 7) as f64 * 0.037f32 as f64) as f32);
        assert_eq!(back[i], dequantize_value(q[i], p.scale, p.zero_point));
        let inside = (-128.0..=127.0).contains(&(x[i] / 0.037 - 7.0));
        if inside {
            assert!((back[i] - x[i]).abs() <= 0.037 / 2.0 + 1e-6, "{} -> {} -> {}", x[i], q[i], back[i]);
        }
    }
}

#[test]
fn pad_with_zero_point_and_crop() {
    // [2, 3] input, pads begin [1, -1] (crop the first column), output [4, 3].
    let x: [i8; 6] = [1, 2, 3, 4, 5, 6];
    let mut y = [0i8; 12];
    pad(&Pad { in_shape: &[2, 3], pads_begin: &[1, -1], out_shape: &[4, 3] }, &x, &mut y, -9);
    assert_eq!(y, [-9, -9, -9, 2, 3, -9, 5, 6, -9, -9, -9, -9]);
    // Rank 3, NHWC spatial padding of a [1, 2, 2, 1]-like [2, 2, 1] image by one on each side.
    let mut y = [0u8; 16];
    pad(&Pad { in_shape: &[2, 2, 1], pads_begin: &[1, 1, 0], out_shape: &[4, 4, 1] }, &[10, 20, 30, 40], &mut y, 128);
    let q = 128;
    assert_eq!(y, [q, q, q, q, q, 10, 20, q, q, 30, 40, q, q, q, q, q]);
}

#[test]
fn lut_looks_up_by_raw_byte() {
    // Table entry i holds 255 - i (as i8 bits): input v maps to table[v as u8].
    let table: Vec<i8> = (0..256).map(|i| (255 - i) as u8 as i8).collect();
    let x: Vec<i8> = vec![0, 1, 127, -128, -1];
    let mut y = vec![0i8; 5];
    lut(&table, &x, &mut y);
    assert_eq!(y, [-1, -2, -128, 127, 0]);
    let mut xy = x.clone();
    lut_in_place(&table, &mut xy);
    assert_eq!(xy, y);
}
