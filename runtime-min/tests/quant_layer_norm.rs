//! The integer layer normalization against the same function in `f64` (population variance,
//! epsilon inside the root, per-element scale and bias): equal on every element whose real value
//! is not within 1e-6 steps of a rounding tie.

mod common;

use common::Rng;
use sramfit_runtime_min::quant::{layer_norm, layer_norm_epsilon, LayerNorm, QuantElem};

fn check<T: QuantElem>(rng: &mut Rng, rows: usize, len: usize, constant_row: bool) {
    let (xs, ys, eps) = (0.02 + rng.below(100) as f64 * 1e-3, 0.01 + rng.below(50) as f64 * 1e-3, 1e-5);
    let (xz, yz) = (T::MIN + 100 + rng.below(50) as i32, T::MIN + 60 + rng.below(100) as i32);
    let scale: Vec<f64> = (0..len).map(|_| 0.5 + rng.below(1000) as f64 * 1e-3).collect();
    let bias: Vec<f64> = (0..len).map(|_| rng.below(1000) as f64 * 1e-3 - 0.5).collect();
    let frac_bits = 24;
    let fixed = |v: &[f64]| v.iter().map(|&r| (r / ys * (1u64 << frac_bits) as f64).round() as i32).collect::<Vec<_>>();
    let (gains, offsets) = (fixed(&scale), fixed(&bias));
    let x: Vec<T> = (0..rows * len)
        .map(|i| T::saturate(if constant_row && i < len { xz + 7 } else { T::MIN + rng.below(256) as i32 }))
        .collect();
    let p = LayerNorm {
        rows,
        len,
        x_zero_point: xz,
        y_zero_point: yz,
        epsilon: layer_norm_epsilon(len, eps, xs),
        frac_bits,
    };
    let mut y = vec![T::default(); rows * len];
    layer_norm(&p, &x, &gains, &offsets, &mut y);
    for r in 0..rows {
        let row: Vec<f64> = x[r * len..(r + 1) * len].iter().map(|v| (v.to_i32() - xz) as f64 * xs).collect();
        let mean = row.iter().sum::<f64>() / len as f64;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / len as f64;
        for i in 0..len {
            let g = gains[i] as f64 / (1u64 << frac_bits) as f64;
            let o = offsets[i] as f64 / (1u64 << frac_bits) as f64;
            let real = (row[i] - mean) / (var + eps).sqrt() * g + o;
            if (real - real.floor() - 0.5).abs() < 1e-6 {
                continue; // a tie: either side is the f64 evaluation's rounding
            }
            let want = (real.round() as i32 + yz).clamp(T::MIN, T::MAX);
            assert_eq!(y[r * len + i].to_i32(), want, "row {r} element {i}: real {real}");
        }
    }
}

#[test]
fn integer_layer_norm_matches_the_real_function() {
    let mut rng = Rng::new(11);
    for case in 0..200 {
        let (rows, len) = (1 + rng.below(4), 1 + rng.below(130));
        if case % 2 == 0 {
            check::<i8>(&mut rng, rows, len, case % 10 == 0);
        } else {
            check::<u8>(&mut rng, rows, len, case % 10 == 1);
        }
    }
}
