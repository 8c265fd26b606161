mod common;
use common::*;
use sramfit_runtime_min::*;

type BinFn = fn(&Broadcast, &[f32], &[f32], &mut [f32]);
type BinInPlace = fn(&Broadcast, &mut [f32], &[f32]);

#[allow(clippy::type_complexity)]
fn binops() -> Vec<(&'static str, BinFn, fn(f64, f64) -> f64, Option<BinInPlace>)> {
    vec![
        ("add", add, |a, b| a + b, Some(add_in_place)),
        ("sub", sub, |a, b| a - b, Some(sub_in_place)),
        ("mul", mul, |a, b| a * b, Some(mul_in_place)),
        ("div", div, |a, b| a / b, Some(div_in_place)),
        ("max", max, f64::max, Some(max_in_place)),
        ("min", min, f64::min, Some(min_in_place)),
        ("pow", pow, f64::powf, None),
        ("fmod", fmod, |a, b| a % b, None),
        ("prelu", prelu, |x, s| if x < 0.0 { s * x } else { x }, None),
    ]
}

/// Operand values: `a` positive (for pow), `b` away from zero (for div/fmod).
fn operands(rng: &mut Rng, na: usize, nb: usize) -> (Vec<f32>, Vec<f32>) {
    let a = rng.vec_in(na, 0.1, 3.0).into_iter().enumerate().map(|(i, v)| if i % 3 == 0 { -v } else { v });
    let a: Vec<f32> = a.collect();
    let b: Vec<f32> =
        rng.vec_in(nb, 0.5, 2.0).into_iter().enumerate().map(|(i, v)| if i % 4 == 1 { -v } else { v }).collect();
    (a, b)
}

/// Runs every binary op on operands of shapes `sa` and `sb` (right-aligned
/// NumPy broadcasting) against a reference.
fn check_broadcast(sa: &[usize], sb: &[usize], seed: u64) {
    let rank = sa.len().max(sb.len());
    let pad = |s: &[usize]| {
        let mut v = vec![1; rank - s.len()];
        v.extend_from_slice(s);
        v
    };
    let (pa, pb) = (pad(sa), pad(sb));
    let out: Vec<usize> = (0..rank).map(|d| if pa[d] == 1 { pb[d] } else { pa[d] }).collect();
    let bstr = |ps: &[usize]| {
        let s = strides_of(ps);
        (0..rank).map(|d| if ps[d] == 1 { 0 } else { s[d] }).collect::<Vec<_>>()
    };
    let (a_strides, b_strides) = (bstr(&pa), bstr(&pb));
    let p = Broadcast { out_shape: &out, a_strides: &a_strides, b_strides: &b_strides };
    let mut rng = Rng::new(seed);
    let (a, b) = operands(&mut rng, pa.iter().product(), pb.iter().product());
    let n: usize = out.iter().product();
    for (name, f, r, ip) in binops() {
        let want: Vec<f64> = indices(&out)
            .iter()
            .map(|idx| {
                let ia: usize = (0..rank).map(|d| idx[d] * a_strides[d]).sum();
                let ib: usize = (0..rank).map(|d| idx[d] * b_strides[d]).sum();
                r(a[ia] as f64, b[ib] as f64)
            })
            .collect();
        let mut y = vec![f32::NAN; n];
        f(&p, &a, &b, &mut y);
        let ctx = format!("{name} {sa:?} {sb:?}");
        assert_close(&y, &want, &ctx);
        if let Some(ip) = ip {
            // In place: acc starts as `a` expanded to the output shape.
            let mut acc: Vec<f32> =
                indices(&out).iter().map(|idx| a[(0..rank).map(|d| idx[d] * a_strides[d]).sum::<usize>()]).collect();
            ip(&p, &mut acc, &b);
            assert_close(&acc, &want, &format!("{ctx} in place"));
        }
    }
}

#[test]
fn broadcast_every_axis_pattern_rank3() {
    let full = [2usize, 3, 4];
    let mut seed = 0;
    for ma in 0..8 {
        for mb in 0..8 {
            let sa: Vec<usize> = (0..3).map(|d| if ma >> d & 1 == 1 { 1 } else { full[d] }).collect();
            let sb: Vec<usize> = (0..3).map(|d| if mb >> d & 1 == 1 { 1 } else { full[d] }).collect();
            check_broadcast(&sa, &sb, seed);
            seed += 1;
        }
    }
}

#[test]
fn broadcast_ranks_and_edges() {
    check_broadcast(&[], &[], 1); // rank 0
    check_broadcast(&[7], &[], 2); // scalar b
    check_broadcast(&[], &[7], 3); // scalar a
    check_broadcast(&[7], &[7], 4);
    check_broadcast(&[7], &[1], 5);
    check_broadcast(&[2, 3, 4], &[4], 6); // lower-rank operand
    check_broadcast(&[5, 1], &[1, 6], 7); // outer product
    check_broadcast(&[2, 8, 5, 5], &[8, 1, 1], 8); // per-channel bias
    check_broadcast(&[2, 1, 2, 1, 2, 1, 2, 3], &[1, 2, 1, 2, 1, 2, 1, 3], 9); // rank 8
    check_broadcast(&[3, 0, 2], &[1, 1, 2], 10); // zero-length
    check_broadcast(&[0], &[], 11);
    check_broadcast(&[1, 1, 1], &[1, 1, 1], 12);
    check_broadcast(&[33, 65], &[33, 65], 13);
}

#[test]
fn general_strides() {
    // `a` is a transposed view ([4, 3] stored as [3, 4]); b contiguous.
    let out = [4usize, 3];
    let a_strides = [1usize, 4];
    let b_strides = [3usize, 1];
    let mut rng = Rng::new(20);
    let (a, b) = operands(&mut rng, 12, 12);
    let p = Broadcast { out_shape: &out, a_strides: &a_strides, b_strides: &b_strides };
    let mut y = vec![f32::NAN; 12];
    sub(&p, &a, &b, &mut y);
    let want: Vec<f64> = indices(&out).iter().map(|i| a[i[0] + 4 * i[1]] as f64 - b[i[0] * 3 + i[1]] as f64).collect();
    assert_close(&y, &want, "sub transposed a");
    let mut acc = y.clone();
    let bt_strides = [1usize, 4];
    let p = Broadcast { out_shape: &out, a_strides: &b_strides, b_strides: &bt_strides };
    add_in_place(&p, &mut acc, &a);
    let want: Vec<f64> = indices(&out)
        .iter()
        .map(|i| b[i[0] * 3 + i[1]] as f64 * 0.0 + y[i[0] * 3 + i[1]] as f64 + a[i[0] + 4 * i[1]] as f64)
        .collect();
    assert_close(&acc, &want, "add_in_place transposed b");
}

// -------------------------------------------------------------------- unary

fn erf64(x: f64) -> f64 {
    libm::erf(x)
}

fn round_half_even(x: f64) -> f64 {
    let r = x.round();
    if (x - x.trunc()).abs() == 0.5 {
        2.0 * (x / 2.0).round()
    } else {
        r
    }
}

type UnFn = fn(&[f32], &mut [f32]);
type UnIp = fn(&mut [f32]);

#[allow(clippy::type_complexity)]
fn unops() -> Vec<(&'static str, UnFn, UnIp, fn(f64) -> f64, (f32, f32))> {
    vec![
        ("relu", relu, relu_in_place, |v| v.max(0.0), (-5.0, 5.0)),
        ("sigmoid", sigmoid, sigmoid_in_place, |v| 1.0 / (1.0 + (-v).exp()), (-30.0, 30.0)),
        ("tanh", tanh, tanh_in_place, f64::tanh, (-10.0, 10.0)),
        ("exp", exp, exp_in_place, f64::exp, (-20.0, 20.0)),
        ("ln", ln, ln_in_place, f64::ln, (1e-3, 100.0)),
        ("sqrt", sqrt, sqrt_in_place, f64::sqrt, (0.0, 100.0)),
        ("rsqrt", rsqrt, rsqrt_in_place, |v| 1.0 / v.sqrt(), (1e-3, 100.0)),
        ("reciprocal", reciprocal, reciprocal_in_place, |v| 1.0 / v, (0.1, 10.0)),
        ("abs", abs, abs_in_place, f64::abs, (-5.0, 5.0)),
        ("neg", neg, neg_in_place, |v| -v, (-5.0, 5.0)),
        ("square", square, square_in_place, |v| v * v, (-5.0, 5.0)),
        ("erf", erf, erf_in_place, erf64, (-4.0, 4.0)),
        ("floor", floor, floor_in_place, f64::floor, (-5.0, 5.0)),
        ("ceil", ceil, ceil_in_place, f64::ceil, (-5.0, 5.0)),
        ("round", round, round_in_place, round_half_even, (-5.0, 5.0)),
        ("sin", sin, sin_in_place, f64::sin, (-10.0, 10.0)),
        ("cos", cos, cos_in_place, f64::cos, (-10.0, 10.0)),
        ("softplus", softplus, softplus_in_place, |v| if v > 30.0 { v } else { v.exp().ln_1p() }, (-40.0, 40.0)),
        ("softsign", softsign, softsign_in_place, |v| v / (1.0 + v.abs()), (-5.0, 5.0)),
        ("hard_swish", hard_swish, hard_swish_in_place, |v| v * (v / 6.0 + 0.5).clamp(0.0, 1.0), (-5.0, 5.0)),
        ("gelu", gelu, gelu_in_place, |v| 0.5 * v * (1.0 + erf64(v / 2f64.sqrt())), (-6.0, 6.0)),
    ]
}

fn check_unary(name: &str, f: UnFn, ip: UnIp, r: fn(f64) -> f64, x: &[f32]) {
    let want: Vec<f64> = x.iter().map(|&v| r(v as f64)).collect();
    let mut y = vec![f32::NAN; x.len()];
    f(x, &mut y);
    assert_close(&y, &want, name);
    let mut xy = x.to_vec();
    ip(&mut xy);
    assert_eq!(
        xy.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        "{name} in place"
    );
}

#[test]
fn unary_against_reference() {
    let mut rng = Rng::new(42);
    for (name, f, ip, r, (lo, hi)) in unops() {
        for n in [0usize, 1, 7, 100] {
            let x = rng.vec_in(n, lo, hi);
            check_unary(name, f, ip, r, &x);
        }
    }
}

#[test]
fn unary_special_values() {
    let halves = [0.5f32, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 3.0, -0.0];
    let want: Vec<f64> = halves.iter().map(|&v| round_half_even(v as f64)).collect();
    let mut y = vec![0.0; halves.len()];
    round(&halves, &mut y);
    assert_close(&y, &want, "round halves");
    assert_eq!(y, [0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 0.0, 3.0, -0.0]);
    let mut y = [0.0f32; 4];
    sigmoid(&[-200.0, 200.0, 0.0, f32::NEG_INFINITY], &mut y);
    assert_eq!(y, [0.0, 1.0, 0.5, 0.0]);
    softplus(&[-200.0, 200.0, 0.0, 1e-3], &mut y);
    assert_close(&y, &[0.0, 200.0, 2f64.ln(), (1e-3f32 as f64).exp().ln_1p()], "softplus extremes");
    relu(&[f32::NAN, -1.0, 1.0, -0.0], &mut y);
    assert!(y[0].is_nan());
    let mut y = [0.0f32; 3];
    gelu(&[-8.0, -5.0, 8.0], &mut y);
    let g = |v: f64| 0.5 * v * libm::erfc(-v / 2f64.sqrt());
    assert_close(&y, &[g(-8.0), g(-5.0), g(8.0)], "gelu tails");
}

#[test]
fn parameterised_unary() {
    let mut rng = Rng::new(7);
    let x = rng.vec_in(53, -6.0, 6.0);
    let xp = rng.vec_in(53, 0.0, 4.0);
    #[allow(clippy::type_complexity)]
    let cases: Vec<(
        &str,
        Box<dyn Fn(&[f32], &mut [f32])>,
        Box<dyn Fn(&mut [f32])>,
        Box<dyn Fn(f64) -> f64>,
        &[f32],
    )> = vec![
        (
            "clip",
            Box::new(|x, y| clip(x, y, -1.0, 2.5)),
            Box::new(|xy| clip_in_place(xy, -1.0, 2.5)),
            Box::new(|v| v.clamp(-1.0, 2.5)),
            &x,
        ),
        (
            "leaky_relu",
            Box::new(|x, y| leaky_relu(x, y, 0.01)),
            Box::new(|xy| leaky_relu_in_place(xy, 0.01)),
            Box::new(|v| if v < 0.0 { 0.01f32 as f64 * v } else { v }),
            &x,
        ),
        (
            "elu",
            Box::new(|x, y| elu(x, y, 0.7)),
            Box::new(|xy| elu_in_place(xy, 0.7)),
            Box::new(|v| if v < 0.0 { 0.7f32 as f64 * (v.exp() - 1.0) } else { v }),
            &x,
        ),
        (
            "selu",
            Box::new(|x, y| selu(x, y, 1.6732632, 1.050701)),
            Box::new(|xy| selu_in_place(xy, 1.6732632, 1.050701)),
            Box::new(|v| {
                let (a, g) = (1.6732632f32 as f64, 1.050701f32 as f64);
                if v > 0.0 {
                    g * v
                } else {
                    g * (a * v.exp() - a)
                }
            }),
            &x,
        ),
        (
            "hard_sigmoid",
            Box::new(|x, y| hard_sigmoid(x, y, 0.2, 0.5)),
            Box::new(|xy| hard_sigmoid_in_place(xy, 0.2, 0.5)),
            Box::new(|v| (0.2f32 as f64 * v + 0.5).clamp(0.0, 1.0)),
            &x,
        ),
        (
            "celu",
            Box::new(|x, y| celu(x, y, 1.3)),
            Box::new(|xy| celu_in_place(xy, 1.3)),
            Box::new(|v| {
                let a = 1.3f32 as f64;
                v.max(0.0) + (a * ((v / a).exp() - 1.0)).min(0.0)
            }),
            &x,
        ),
        (
            "pow_scalar 2",
            Box::new(|x, y| pow_scalar(x, y, 2.0)),
            Box::new(|xy| pow_scalar_in_place(xy, 2.0)),
            Box::new(|v| v * v),
            &x,
        ),
        (
            "pow_scalar 0.5",
            Box::new(|x, y| pow_scalar(x, y, 0.5)),
            Box::new(|xy| pow_scalar_in_place(xy, 0.5)),
            Box::new(f64::sqrt),
            &xp,
        ),
        (
            "pow_scalar 1",
            Box::new(|x, y| pow_scalar(x, y, 1.0)),
            Box::new(|xy| pow_scalar_in_place(xy, 1.0)),
            Box::new(|v| v),
            &x,
        ),
        (
            "pow_scalar 3",
            Box::new(|x, y| pow_scalar(x, y, 3.0)),
            Box::new(|xy| pow_scalar_in_place(xy, 3.0)),
            Box::new(|v| v.powi(3)),
            &x,
        ),
        (
            "pow_scalar -1.7",
            Box::new(|x, y| pow_scalar(x, y, -1.7)),
            Box::new(|xy| pow_scalar_in_place(xy, -1.7)),
            Box::new(|v| v.powf(-1.7f32 as f64)),
            &xp,
        ),
        ("copy", Box::new(copy), Box::new(|_| {}), Box::new(|v| v), &x),
    ];
    for (name, f, ip, r, input) in cases {
        let want: Vec<f64> = input.iter().map(|&v| r(v as f64)).collect();
        let mut y = vec![f32::NAN; input.len()];
        f(input, &mut y);
        assert_close(&y, &want, name);
        let mut xy = input.to_vec();
        ip(&mut xy);
        assert_eq!(xy, y, "{name} in place");
    }
    let mut y = vec![0.0; 9];
    fill(&mut y, 2.5);
    assert!(y.iter().all(|&v| v == 2.5));
    let mut y = vec![0.0f32; 3];
    clip(&[f32::NAN, -3.0, 3.0], &mut y, -1.0, 1.0);
    assert!(y[0].is_nan() && y[1] == -1.0 && y[2] == 1.0);
}

// ------------------------------------------------------------------ select

#[test]
fn select_cmp_broadcast() {
    // a [3,1,5], b scalar-like [1,1,1], t [1,4,5], f [3,4,1], out [3,4,5], every comparison.
    let out = [3usize, 4, 5];
    let shapes: [[usize; 3]; 4] = [[3, 1, 5], [1, 1, 1], [1, 4, 5], [3, 4, 1]];
    let strides: Vec<Vec<usize>> = shapes
        .iter()
        .map(|s| {
            let st = strides_of(s);
            (0..3).map(|d| if s[d] == 1 { 0 } else { st[d] }).collect()
        })
        .collect();
    let mut rng = Rng::new(77);
    let mut vals: Vec<Vec<f32>> = shapes.iter().map(|s| rng.vec(s.iter().product())).collect();
    vals[0][2] = 0.0; // ties with b
    vals[1][0] = 0.0;
    vals[0][3] = f32::NAN;
    type CmpRef = fn(f32, f32) -> bool;
    let cmps: [(Cmp, CmpRef); 6] = [
        (Cmp::Lt, |a, b| a < b),
        (Cmp::Le, |a, b| a <= b),
        (Cmp::Gt, |a, b| a > b),
        (Cmp::Ge, |a, b| a >= b),
        (Cmp::Eq, |a, b| a == b),
        (Cmp::Ne, |a, b| a != b),
    ];
    for (cmp, r) in cmps {
        let p = Select {
            cmp,
            out_shape: &out,
            a_strides: &strides[0],
            b_strides: &strides[1],
            t_strides: &strides[2],
            f_strides: &strides[3],
        };
        let mut y = vec![f32::NAN; 60];
        select_cmp(&p, &vals[0], &vals[1], &vals[2], &vals[3], &mut y);
        let at = |k: usize, idx: &[usize]| vals[k][(0..3).map(|d| idx[d] * strides[k][d]).sum::<usize>()];
        let want: Vec<f64> = indices(&out)
            .iter()
            .map(|idx| if r(at(0, idx), at(1, idx)) { at(2, idx) } else { at(3, idx) } as f64)
            .collect();
        assert_close(&y, &want, &format!("{cmp:?}"));
    }
}

#[test]
fn integer_binary_ops_are_onnx_integer_arithmetic() {
    // A [2, 3] tensor and a broadcast row: wrapping add / sub / mul, division truncating toward
    // zero (0 for a division by zero), integer max / min.
    let p = Broadcast { out_shape: &[2, 3], a_strides: &[3, 1], b_strides: &[0, 1] };
    let a: [i8; 6] = [100, -7, 7, -128, 5, 0];
    let b: [i8; 3] = [100, 2, 0];
    let run = |f: fn(&Broadcast, &[i8], &[i8], &mut [i8])| {
        let mut y = [0i8; 6];
        f(&p, &a, &b, &mut y);
        y
    };
    assert_eq!(run(add), [-56, -5, 7, -28, 7, 0]);
    assert_eq!(run(sub), [0, -9, 7, 28, 3, 0]);
    assert_eq!(run(mul), [16, -14, 0, 0, 10, 0]);
    assert_eq!(run(div), [1, -3, 0, -1, 2, 0]);
    assert_eq!(run(max), [100, 2, 7, 100, 5, 0]);
    assert_eq!(run(min), [100, -7, 0, -128, 2, 0]);
    let mut acc: [i32; 3] = [i32::MAX, -9, 9];
    div_in_place(&Broadcast { out_shape: &[3], a_strides: &[1], b_strides: &[1] }, &mut acc, &[-1, 2, -2]);
    assert_eq!(acc, [-i32::MAX, -4, -4]);
    let mut y = [0u8; 2];
    add(&Broadcast { out_shape: &[2], a_strides: &[1], b_strides: &[0] }, &[250u8, 3], &[10], &mut y);
    assert_eq!(y, [4, 13]);
}

#[test]
fn pad_on_integers_copies_exactly() {
    // Edge, reflect and wrap on int32 values no f32 holds exactly.
    let x: [i32; 3] = [16_777_217, -2, 3];
    let mut y = [0i32; 7];
    for (mode, want) in [
        (PadMode::Edge, [16_777_217, 16_777_217, 16_777_217, -2, 3, 3, 3]),
        (PadMode::Reflect, [3, -2, 16_777_217, -2, 3, -2, 16_777_217]),
        (PadMode::Wrap, [-2, 3, 16_777_217, -2, 3, 16_777_217, -2]),
        (PadMode::Constant(7.0), [7, 7, 16_777_217, -2, 3, 7, 7]),
    ] {
        pad(&Pad { in_shape: &[3], pads_begin: &[2], out_shape: &[7], mode }, &x, &mut y);
        assert_eq!(y, want, "{mode:?}");
    }
}

#[test]
fn add_activated_gives_the_bits_of_add_then_the_activation() {
    // Same shapes (a residual sum), a broadcast row, a scalar; ReLU and Clip fused into the sum,
    // the others applied after it; NaN and signed zeros among the values.
    let acts = [
        Activation::Relu,
        Activation::Clip { min: -0.5, max: 0.75 },
        Activation::LeakyRelu { alpha: 0.1 },
        Activation::Sigmoid,
        Activation::None,
    ];
    let cases: [(&[usize], &[usize], &[usize]); 3] =
        [(&[2, 3, 37], &[111, 37, 1], &[111, 37, 1]), (&[4, 19], &[19, 1], &[0, 1]), (&[5, 7], &[7, 1], &[0, 0])];
    for (i, (out, a_strides, b_strides)) in cases.into_iter().enumerate() {
        let n: usize = out.iter().product();
        let p = Broadcast { out_shape: out, a_strides, b_strides };
        let mut rng = Rng::new(70 + i as u64);
        let mut a = rng.vec(n);
        let b = rng.vec(n);
        (a[0], a[1], a[2]) = (f32::NAN, -0.0, 0.0);
        for act in acts {
            let mut want = vec![0.0; n];
            add(&p, &a, &b, &mut want);
            act.apply_in_place(&mut want);
            let mut y = vec![f32::NAN; n];
            add_activated(&p, act, &a, &b, &mut y);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&y), bits(&want), "{act:?} {out:?}");
            let mut acc = a.clone();
            add_activated_in_place(&p, act, &mut acc, &b);
            assert_eq!(bits(&acc), bits(&want), "{act:?} {out:?} in place");
        }
    }
}
