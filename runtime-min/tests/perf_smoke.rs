//! Rough throughput check (ignored by default):
//! `cargo test --release -p sramfit-runtime-min --test perf_smoke -- --ignored --nocapture`
mod common;
use common::*;
use sramfit_runtime_min::*;
use std::time::Instant;

fn time(name: &str, flops: f64, mut f: impl FnMut()) {
    f();
    let reps = 20;
    let t = Instant::now();
    for _ in 0..reps {
        f();
    }
    let s = t.elapsed().as_secs_f64() / reps as f64;
    println!("{name:40} {:8.3} ms {:6.2} GFLOP/s", s * 1e3, flops / s * 1e-9);
}

#[test]
#[ignore]
fn perf_smoke() {
    let mut rng = Rng::new(1);
    for &(m, n, k, tb) in
        &[(256, 256, 256, false), (256, 256, 256, true), (1, 1024, 1024, false), (1, 1024, 1024, true)]
    {
        let a = rng.vec(m * k);
        let b = rng.vec(k * n);
        let mut c = vec![0.0; m * n];
        let p = MatMul {
            b_row_stride: if tb { 1 } else { n },
            b_col_stride: if tb { k } else { 1 },
            ..MatMul::row_major(m, n, k)
        };
        time(&format!("matmul {m}x{n}x{k} transB={tb}"), 2.0 * (m * n * k) as f64, || matmul(&p, &a, &b, None, &mut c));
    }
    let shapes = [
        (32, 64, 56, 3, 1),
        (64, 64, 56, 1, 1),
        (64, 64, 56, 3, 64),
        // ResNet-18 64x64 stages and ResNet-8's first.
        (64, 64, 16, 3, 1),
        (128, 128, 8, 3, 1),
        (256, 256, 4, 3, 1),
        (512, 512, 2, 3, 1),
        (16, 16, 32, 3, 1),
    ];
    for &(ic, oc, hw, k, groups) in &shapes {
        let p = Conv2d {
            batch: 1,
            in_channels: ic,
            in_h: hw,
            in_w: hw,
            out_channels: oc,
            out_h: hw,
            out_w: hw,
            kernel_h: k,
            kernel_w: k,
            stride_h: 1,
            stride_w: 1,
            dilation_h: 1,
            dilation_w: 1,
            pad_top: k / 2,
            pad_left: k / 2,
            groups,
            act: Activation::Relu,
            weights: ConvWeights::KMajor,
        };
        let x = rng.vec(ic * hw * hw);
        // Weights as a model packs them: KMajor (any order of values does for timing) with room
        // for whole vectors past the last output channel (depthwise keeps OIHW: one channel per
        // group, the same layout).
        let w = rng.vec(oc * ic / groups * k * k + 32);
        let bias = rng.vec(oc);
        let mut y = vec![0.0; oc * hw * hw];
        let flops = 2.0 * (oc * hw * hw * ic / groups * k * k) as f64;
        for len in [conv2d_scratch_len(&p), 0] {
            let mut scratch = vec![0.0; len];
            time(&format!("conv {ic}->{oc} {hw}x{hw} k{k} g{groups} scratch {len}"), flops, || {
                conv2d(&p, &x, &w, Some(&bias), &mut y, &mut scratch)
            });
        }
    }
}
