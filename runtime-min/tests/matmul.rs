mod common;
use common::*;
use sramfit_runtime_min::*;

fn mm_ref(p: &MatMul, a: &[f32], b: &[f32], bias: Option<&[f32]>, c_len: usize) -> (Vec<f64>, Vec<f64>, Vec<bool>) {
    let mut c = vec![f64::NAN; c_len];
    let mut mag = vec![0.0; c_len];
    let mut written = vec![false; c_len];
    for b0 in 0..p.batch[0] {
        for b1 in 0..p.batch[1] {
            for b2 in 0..p.batch[2] {
                for b3 in 0..p.batch[3] {
                    let bi = [b0, b1, b2, b3];
                    let off = |s: [usize; 4]| (0..4).map(|t| bi[t] * s[t]).sum::<usize>();
                    let (ao, bo, co) = (off(p.a_batch_strides), off(p.b_batch_strides), off(p.c_batch_strides));
                    for i in 0..p.m {
                        for j in 0..p.n {
                            let mut s = 0.0f64;
                            let mut m = 0.0f64;
                            for k in 0..p.k {
                                let av = a[ao + i * p.a_row_stride + k * p.a_col_stride] as f64;
                                let bv = b[bo + k * p.b_row_stride + j * p.b_col_stride] as f64;
                                s += av * bv;
                                m += (av * bv).abs();
                            }
                            let bb = bias.map_or(0.0, |v| v[j] as f64);
                            let idx = co + i * p.c_row_stride + j;
                            c[idx] = act_ref(p.act, p.alpha as f64 * s + bb);
                            mag[idx] = (p.alpha as f64).abs() * m + bb.abs();
                            written[idx] = true;
                        }
                    }
                }
            }
        }
    }
    (c, mag, written)
}

#[derive(Clone, Copy)]
enum Layout {
    RowMajor,
    TransA,
    TransB,
    TransBoth,
}

#[allow(clippy::too_many_arguments)]
fn check(m: usize, n: usize, k: usize, layout: Layout, alpha: f32, act: Activation, with_bias: bool, seed: u64) {
    let (a_rs, a_cs) = match layout {
        Layout::RowMajor | Layout::TransB => (k, 1),
        _ => (1, m),
    };
    let (b_rs, b_cs) = match layout {
        Layout::RowMajor | Layout::TransA => (n, 1),
        _ => (1, k),
    };
    let p = MatMul {
        batch: [1, 1, 1, 1],
        a_batch_strides: [0; 4],
        b_batch_strides: [0; 4],
        c_batch_strides: [0; 4],
        m,
        n,
        k,
        a_row_stride: a_rs,
        a_col_stride: a_cs,
        b_row_stride: b_rs,
        b_col_stride: b_cs,
        c_row_stride: n,
        alpha,
        act,
    };
    run(&p, with_bias, seed, m * k, k * n, m * n);
}

fn run(p: &MatMul, with_bias: bool, seed: u64, a_len: usize, b_len: usize, c_len: usize) {
    let mut rng = Rng::new(seed);
    let a = rng.vec(a_len);
    let b = rng.vec(b_len);
    let bias_v = rng.vec(p.n);
    let bias = if with_bias { Some(&bias_v[..]) } else { None };
    let mut c = vec![-7.0f32; c_len];
    matmul(p, &a, &b, bias, &mut c);
    let (want, mag, written) = mm_ref(p, &a, &b, bias, c_len);
    for i in 0..c_len {
        if !written[i] {
            assert_eq!(c[i], -7.0, "element {i} outside C was modified");
        }
    }
    let want: Vec<f64> = want.iter().zip(&written).map(|(&w, &wr)| if wr { w } else { -7.0 }).collect();
    assert_close_mag(&c, &want, Some(&mag), &format!("{p:?}"));
}

const SIZES: [(usize, usize, usize); 12] = [
    (1, 1, 1),
    (5, 9, 3),
    (4, 8, 128),
    (17, 23, 130),
    (1, 37, 50),
    (33, 1, 20),
    (2, 3, 300),
    (8, 16, 7),
    (7, 15, 257),
    (3, 8, 1),
    (13, 5, 64),
    (6, 40, 129),
];

#[test]
fn row_major() {
    for (i, &(m, n, k)) in SIZES.iter().enumerate() {
        check(m, n, k, Layout::RowMajor, 1.0, Activation::None, i % 2 == 0, i as u64);
    }
}

#[test]
fn transposed_b() {
    for (i, &(m, n, k)) in SIZES.iter().enumerate() {
        check(m, n, k, Layout::TransB, 1.0, Activation::None, i % 2 == 1, 100 + i as u64);
    }
}

#[test]
fn transposed_a() {
    for (i, &(m, n, k)) in SIZES.iter().enumerate() {
        check(m, n, k, Layout::TransA, 1.0, Activation::Relu, true, 200 + i as u64);
    }
    // A read in place and of at least 64K values, at most 4 columns: the x86-64 kernels go over
    // its depth in the outer loop, 16 deep at a time, the partial sums waiting in C.
    check(64, 4, 1100, Layout::TransA, 1.0, Activation::Relu, true, 250);
}

#[test]
fn transposed_both() {
    for (i, &(m, n, k)) in SIZES.iter().enumerate() {
        check(m, n, k, Layout::TransBoth, 0.5, Activation::None, true, 300 + i as u64);
    }
}

#[test]
fn alpha_bias_activations() {
    for (i, act) in ACTS.iter().enumerate() {
        check(9, 11, 13, Layout::RowMajor, -1.5, *act, true, 400 + i as u64);
        check(1, 11, 13, Layout::RowMajor, 2.0, *act, true, 410 + i as u64);
        check(5, 3, 13, Layout::TransB, 0.25, *act, true, 420 + i as u64);
    }
}

#[test]
fn zero_k_gives_bias() {
    check(3, 5, 0, Layout::RowMajor, 1.0, Activation::Relu, true, 500);
    check(3, 5, 0, Layout::TransB, 1.0, Activation::None, false, 501);
}

#[test]
fn empty_m_or_n() {
    check(0, 5, 3, Layout::RowMajor, 1.0, Activation::None, true, 510);
    check(4, 0, 3, Layout::RowMajor, 1.0, Activation::None, true, 511);
}

#[test]
fn batched_with_broadcast() {
    // a: [2, 3, m, k] ; b: [k, n] broadcast over both batch axes ; c: [2, 3, m, n]
    let (m, n, k) = (5, 10, 7);
    let p = MatMul {
        batch: [2, 3, 1, 1],
        a_batch_strides: [3 * m * k, m * k, 0, 0],
        b_batch_strides: [0, 0, 0, 0],
        c_batch_strides: [3 * m * n, m * n, 0, 0],
        ..MatMul::row_major(m, n, k)
    };
    run(&p, false, 600, 6 * m * k, k * n, 6 * m * n);
    // a broadcast along axis 0, b along axis 1, all four batch axes used,
    // b transposed.
    let p = MatMul {
        batch: [2, 2, 2, 3],
        a_batch_strides: [0, 6 * m * k, 3 * m * k, m * k],
        b_batch_strides: [k * n, 0, 0, 0],
        c_batch_strides: [12 * m * n, 6 * m * n, 3 * m * n, m * n],
        b_row_stride: 1,
        b_col_stride: k,
        act: Activation::Tanh,
        ..MatMul::row_major(m, n, k)
    };
    run(&p, true, 601, 12 * m * k, 2 * k * n, 24 * m * n);
}

#[test]
fn wide_c_row_stride() {
    // C is a column block of a wider [m, 3n] matrix (e.g. Concat fused into the output).
    let (m, n, k) = (6, 9, 11);
    let p = MatMul { c_row_stride: 3 * n, ..MatMul::row_major(m, n, k) };
    run(&p, true, 700, m * k, k * n, 3 * n * m);
    // Padded rows of A and B (row strides larger than the logical width).
    let p = MatMul { a_row_stride: k + 3, b_row_stride: n + 2, ..p };
    run(&p, true, 701, m * (k + 3), k * (n + 2), 3 * n * m);
}

/// A product of one column whose operands repeat along `k` (stride 0: a broadcast input): every
/// path, the one-column chain among them, reads them in place (the random rewrite graphs found a
/// one-column product with a zero stride that panicked).
#[test]
fn one_column_with_broadcast_operands() {
    let (m, k) = (5, 7);
    for (a_cs, b_rs, a_len, b_len) in [(1, 0, m * k, 1), (0, 1, m, k), (0, 0, m, 1)] {
        let p = MatMul {
            batch: [1, 1, 1, 1],
            a_batch_strides: [0; 4],
            b_batch_strides: [0; 4],
            c_batch_strides: [0; 4],
            m,
            n: 1,
            k,
            a_row_stride: if a_cs == 0 { 1 } else { k },
            a_col_stride: a_cs,
            b_row_stride: b_rs,
            b_col_stride: 1,
            c_row_stride: 1,
            alpha: 1.0,
            act: Activation::None,
        };
        run(&p, true, 5, a_len, b_len, m);
    }
}
