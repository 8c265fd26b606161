mod common;
use common::*;
use sramfit_runtime_min::*;

type RedFn = fn(&Reduce, &[f32], &mut [f32]);

fn lse(v: &[f64]) -> f64 {
    let m = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if m.is_infinite() {
        return m;
    }
    m + v.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

#[allow(clippy::type_complexity)]
fn ops() -> Vec<(&'static str, RedFn, fn(&[f64]) -> f64)> {
    vec![
        ("sum", reduce_sum, |v| v.iter().sum()),
        ("mean", reduce_mean, |v| v.iter().sum::<f64>() / v.len() as f64),
        ("max", reduce_max, |v| v.iter().cloned().fold(f64::NEG_INFINITY, f64::max)),
        ("min", reduce_min, |v| v.iter().cloned().fold(f64::INFINITY, f64::min)),
        ("prod", reduce_prod, |v| v.iter().product()),
        ("sum_square", reduce_sum_square, |v| v.iter().map(|x| x * x).sum()),
        ("mean_square", reduce_mean_square, |v| v.iter().map(|x| x * x).sum::<f64>() / v.len() as f64),
        ("l1", reduce_l1, |v| v.iter().map(|x| x.abs()).sum()),
        ("l2", reduce_l2, |v| v.iter().map(|x| x * x).sum::<f64>().sqrt()),
        ("log_sum_exp", reduce_log_sum_exp, lse),
    ]
}

/// Reduces the axes in `axes` (in the given order) of a contiguous tensor
/// of shape `shape`.
fn check(shape: &[usize], axes: &[usize], offset_values: f32, seed: u64) {
    let st = strides_of(shape);
    let keep: Vec<usize> = (0..shape.len()).filter(|d| !axes.contains(d)).collect();
    let out_shape: Vec<usize> = keep.iter().map(|&d| shape[d]).collect();
    let out_in_strides: Vec<usize> = keep.iter().map(|&d| st[d]).collect();
    let red_shape: Vec<usize> = axes.iter().map(|&d| shape[d]).collect();
    let red_strides: Vec<usize> = axes.iter().map(|&d| st[d]).collect();
    let p = Reduce {
        out_shape: &out_shape,
        out_in_strides: &out_in_strides,
        red_shape: &red_shape,
        red_strides: &red_strides,
    };
    let mut rng = Rng::new(seed);
    let n: usize = shape.iter().product();
    // Values near +-1 keep products well conditioned.
    let x: Vec<f32> =
        (0..n).map(|_| rng.uniform(0.8, 1.25) * if rng.f() < 0.0 { -1.0 } else { 1.0 } + offset_values).collect();
    let n_out: usize = out_shape.iter().product();
    for (name, f, r) in ops() {
        let mut want = vec![];
        let mut mag = vec![];
        for o in indices(&out_shape) {
            let base: usize = o.iter().zip(&out_in_strides).map(|(i, s)| i * s).sum();
            let vals: Vec<f64> = indices(&red_shape)
                .iter()
                .map(|ri| x[base + ri.iter().zip(&red_strides).map(|(i, s)| i * s).sum::<usize>()] as f64)
                .collect();
            want.push(r(&vals));
            let abs: Vec<f64> = vals.iter().map(|v| v.abs()).collect();
            let m = match name {
                "sum" | "l1" => abs.iter().sum::<f64>(),
                "mean" => abs.iter().sum::<f64>() / abs.len() as f64,
                _ => 0.0,
            };
            mag.push(m);
        }
        let mut y = vec![f32::NAN; n_out];
        f(&p, &x, &mut y);
        assert_close_mag(&y, &want, Some(&mag), &format!("{name} {shape:?} axes {axes:?}"));
    }
}

#[test]
fn every_axis_subset_rank3() {
    let shape = [3usize, 4, 5];
    for mask in 0..8u32 {
        let axes: Vec<usize> = (0..3).filter(|d| mask >> d & 1 == 1).collect();
        check(&shape, &axes, 0.0, mask as u64);
    }
    // Unsorted reduced axes.
    check(&shape, &[2, 0], 0.0, 9);
}

#[test]
fn rank4_and_global_pool() {
    let shape = [2usize, 3, 4, 5];
    for axes in [&[2usize, 3][..], &[1], &[0, 2], &[1, 3], &[0, 1, 2, 3], &[3]] {
        check(&shape, axes, 0.0, axes.len() as u64 * 7);
    }
    // Long contiguous and long strided runs.
    check(&[3, 70], &[1], 0.0, 30);
    check(&[70, 3], &[0], 0.0, 31);
    check(&[5, 33, 9], &[1], 0.0, 32);
}

#[test]
fn rank0_rank1_and_empty() {
    check(&[], &[], 0.0, 40); // scalar, nothing reduced
    check(&[7], &[0], 0.0, 41); // rank 1 full reduction
    check(&[7], &[], 0.0, 42); // rank 1, nothing reduced
    check(&[4, 1, 3], &[1], 0.0, 43); // size-1 reduced axis
    check(&[3, 0], &[0], 0.0, 44); // zero-length output axis
}

#[test]
fn empty_reduction_identities() {
    let out = [3usize];
    let p = Reduce { out_shape: &out, out_in_strides: &[0], red_shape: &[0], red_strides: &[1] };
    let x: [f32; 0] = [];
    let mut y = [9.0f32; 3];
    reduce_sum(&p, &x, &mut y);
    assert_eq!(y, [0.0; 3]);
    reduce_prod(&p, &x, &mut y);
    assert_eq!(y, [1.0; 3]);
    reduce_max(&p, &x, &mut y);
    assert_eq!(y, [f32::NEG_INFINITY; 3]);
    reduce_min(&p, &x, &mut y);
    assert_eq!(y, [f32::INFINITY; 3]);
    reduce_log_sum_exp(&p, &x, &mut y);
    assert_eq!(y, [f32::NEG_INFINITY; 3]);
    reduce_mean(&p, &x, &mut y);
    assert!(y.iter().all(|v| v.is_nan()));
}

#[test]
fn log_sum_exp_is_stable() {
    check(&[4, 6], &[1], 100.0, 50);
    check(&[6, 4], &[0], -100.0, 51);
    let p = Reduce { out_shape: &[], out_in_strides: &[], red_shape: &[3], red_strides: &[1] };
    let mut y = [0.0f32];
    reduce_log_sum_exp(&p, &[f32::NEG_INFINITY; 3], &mut y);
    assert_eq!(y[0], f32::NEG_INFINITY);
    reduce_log_sum_exp(&p, &[1.0, f32::INFINITY, 2.0], &mut y);
    assert_eq!(y[0], f32::INFINITY);
}

#[test]
fn nan_propagates_through_max_min() {
    let p = Reduce { out_shape: &[], out_in_strides: &[], red_shape: &[20], red_strides: &[1] };
    let mut x = [1.0f32; 20];
    x[13] = f32::NAN;
    let mut y = [0.0f32];
    reduce_max(&p, &x, &mut y);
    assert!(y[0].is_nan());
    reduce_min(&p, &x, &mut y);
    assert!(y[0].is_nan());
}

/// Outputs that each reduce one short contiguous run (a global pooling of a 3x3 or 2x2 map) are
/// folded several at a time: the same values, bit for bit, as reducing each output alone, and
/// within the reference's tolerance. 21 outputs leave a partial group.
#[test]
fn few_values_per_output_fold_several_outputs_at_once() {
    for (shape, axes) in
        [(&[2usize, 21, 9][..], &[2usize][..]), (&[1, 12, 3, 3], &[2, 3]), (&[19, 4], &[1]), (&[9, 15], &[1])]
    {
        check(shape, axes, 0.0, 60 + shape.len() as u64);
    }
    let (outputs, run) = (21, 9);
    let mut rng = Rng::new(61);
    let mut x: Vec<f32> = (0..outputs * run).map(|_| rng.uniform(-2.0, 2.0)).collect();
    x[3 * run + 4] = f32::NAN;
    for (name, f, _) in ops() {
        let all = Reduce { out_shape: &[outputs], out_in_strides: &[run], red_shape: &[run], red_strides: &[1] };
        let mut y = vec![0.0f32; outputs];
        f(&all, &x, &mut y);
        for (o, &got) in y.iter().enumerate() {
            let one = Reduce { out_shape: &[], out_in_strides: &[], red_shape: &[run], red_strides: &[1] };
            let mut alone = [0.0f32];
            f(&one, &x[o * run..][..run], &mut alone);
            assert_eq!(got.to_bits(), alone[0].to_bits(), "{name}: output {o}");
        }
    }
}
