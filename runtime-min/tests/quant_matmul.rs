//! Quantized fully connected layers and batched matrix products against references written from
//! TFLite's `reference_integer_ops::FullyConnected` / `reference_ops::BatchMatMul` (64-bit sums of
//! `(w - w_zp) * (x - x_zp)`, bias, requantization), on random shapes, strides, zero points and
//! element types: bit-exact.

mod common;
mod quant_common;

use common::Rng;
use quant_common::{clamp, elems, int, ref_output, requant, weights, zero_point};
use sramfit_runtime_min::quant::{
    fold_bias, fully_connected, matmul, pack_fully_connected_weights, weights_u8_to_i8, ChannelQuant, FullyConnected,
    MatMul, QuantElem, Requant, RequantRounding,
};

fn check_fully_connected<T: QuantElem>(seed: u64) {
    let mut rng = Rng::new(seed);
    for case in 0..300 {
        let (batch, k, n) = (1 + rng.below(4), 1 + rng.below(70), 1 + rng.below(20));
        let (zx, zy) = (zero_point::<T>(&mut rng), zero_point::<T>(&mut rng));
        let zw = if rng.below(3) == 0 { int(&mut rng, -128, 127) } else { 0 };
        let (lo, hi) = clamp::<T>(&mut rng);
        let x: Vec<T> = elems(&mut rng, batch * k);
        let w_kn = weights(&mut rng, k * n); // ONNX MatMul's B: [k, n]
        let bias: Vec<i32> =
            if rng.below(4) == 0 { vec![] } else { (0..n).map(|_| int(&mut rng, -50_000, 50_000)).collect() };
        let requants: Vec<Requant> =
            (0..if rng.below(2) == 0 { 1 } else { n }).map(|_| requant(&mut rng, -16, 0)).collect();

        let mut want = Vec::new();
        for b in 0..batch {
            for o in 0..n {
                let mut acc = bias.get(o).copied().unwrap_or(0) as i64;
                for t in 0..k {
                    acc += (w_kn[t * n + o] as i64 - zw as i64) * (x[b * k + t].to_i32() as i64 - zx as i64);
                }
                want.push(ref_output(acc, requants[if requants.len() == 1 { 0 } else { o }], zy, lo, hi));
            }
        }

        let mut w = vec![0i8; k * n];
        pack_fully_connected_weights(&w_kn, k, n, &mut w);
        let mut folded = vec![0i32; n];
        fold_bias(&w, &bias, zx, zw, &mut folded);
        let multipliers: Vec<i32> = requants.iter().map(|r| r.multiplier).collect();
        let shifts: Vec<i32> = requants.iter().map(|r| r.shift).collect();
        let p = FullyConnected {
            batch,
            in_features: k,
            out_features: n,
            w_zero_point: zw,
            y_zero_point: zy,
            act_min: lo,
            act_max: hi,
        };
        let mut y = vec![T::default(); batch * n];
        fully_connected(
            &p,
            &x,
            &w,
            &ChannelQuant {
                bias: &folded,
                multipliers: &multipliers,
                shifts: &shifts,
                rounding: RequantRounding::Double,
            },
            &mut y,
        );
        let got: Vec<i32> = y.iter().map(|v| v.to_i32()).collect();
        assert_eq!(got, want, "case {case}: {p:?}");
    }
}

#[test]
fn fully_connected_int8_matches_tflite_reference() {
    check_fully_connected::<i8>(21);
}

#[test]
fn fully_connected_uint8_matches_tflite_reference() {
    check_fully_connected::<u8>(22);
}

#[test]
fn uint8_weights_convert_exactly() {
    let mut rng = Rng::new(23);
    let w: Vec<u8> = elems(&mut rng, 256);
    let zp = 131;
    let mut out = vec![0i8; w.len()];
    let zp8 = weights_u8_to_i8(&w, zp, &mut out);
    assert_eq!(zp8, 3);
    for (&u, &s) in w.iter().zip(&out) {
        assert_eq!(u as i32 - zp, s as i32 - zp8);
    }
}

/// Random batched product with random transposes and broadcast batch axes.
fn check_matmul<A: QuantElem, B: QuantElem, C: QuantElem>(seed: u64) {
    let mut rng = Rng::new(seed);
    for case in 0..300 {
        let (m, n, k) = (1 + rng.below(6), 1 + rng.below(7), 1 + rng.below(40));
        let batch = [1 + rng.below(2), 1, 1 + rng.below(3), 1];
        let (a_bcast, b_bcast) = (rng.below(3) == 0, rng.below(3) == 0);
        let (a_t, b_t) = (rng.below(2) == 0, rng.below(2) == 0);
        // A: [batch0, batch2, m, k] (or [m, k] broadcast), stored transposed if a_t; likewise B.
        let mat = |rows: usize, cols: usize, t: bool| if t { (1, rows) } else { (cols, 1) };
        let (a_rs, a_cs) = mat(m, k, a_t);
        let (b_rs, b_cs) = mat(k, n, b_t);
        let a_len = if a_bcast { m * k } else { batch[0] * batch[2] * m * k };
        let b_len = if b_bcast { k * n } else { batch[0] * batch[2] * k * n };
        let a_batch = if a_bcast { [0; 4] } else { [batch[2] * m * k, 0, m * k, 0] };
        let b_batch = if b_bcast { [0; 4] } else { [batch[2] * k * n, 0, k * n, 0] };
        let a: Vec<A> = elems(&mut rng, a_len);
        let b: Vec<B> = elems(&mut rng, b_len);
        let (lo, hi) = clamp::<C>(&mut rng);
        let p = MatMul {
            batch,
            a_batch_strides: a_batch,
            b_batch_strides: b_batch,
            c_batch_strides: [batch[2] * m * n, 0, m * n, 0],
            m,
            n,
            k,
            a_row_stride: a_rs,
            a_col_stride: a_cs,
            b_row_stride: b_rs,
            b_col_stride: b_cs,
            c_row_stride: n,
            a_zero_point: zero_point::<A>(&mut rng),
            b_zero_point: zero_point::<B>(&mut rng),
            c_zero_point: zero_point::<C>(&mut rng),
            requant: requant(&mut rng, -18, 0),
            act_min: lo,
            act_max: hi,
        };
        let mut want = Vec::new();
        for b0 in 0..batch[0] {
            for b2 in 0..batch[2] {
                let (ao, bo) = (b0 * a_batch[0] + b2 * a_batch[2], b0 * b_batch[0] + b2 * b_batch[2]);
                for i in 0..m {
                    for j in 0..n {
                        let acc: i64 = (0..k)
                            .map(|t| {
                                let av = a[ao + i * a_rs + t * a_cs].to_i32() - p.a_zero_point;
                                let bv = b[bo + t * b_rs + j * b_cs].to_i32() - p.b_zero_point;
                                av as i64 * bv as i64
                            })
                            .sum();
                        want.push(ref_output(acc, p.requant, p.c_zero_point, lo, hi));
                    }
                }
            }
        }
        let mut c = vec![C::default(); batch[0] * batch[2] * m * n];
        matmul(&p, &a, &b, &mut c);
        let got: Vec<i32> = c.iter().map(|v| v.to_i32()).collect();
        assert_eq!(got, want, "case {case}: {p:?}");
    }
}

#[test]
fn matmul_int8_matches_tflite_reference() {
    check_matmul::<i8, i8, i8>(24);
}

#[test]
fn matmul_mixed_types_match_reference() {
    check_matmul::<u8, i8, u8>(25);
    check_matmul::<u8, u8, i8>(26);
}
