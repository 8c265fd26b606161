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
    // The last two: MobileNetV2-0.35's largest pointwise layers as the einsums tract makes of them
    // (`conv_last` 112 -> 1280 channels at 3x3, `b2_expand` 8 -> 48 at 48x48).
    for &(m, n, k, tb) in &[
        (256, 256, 256, false),
        (256, 256, 256, true),
        (1, 1024, 1024, false),
        (1, 1024, 1024, true),
        (1280, 9, 112, false),
        (48, 2304, 8, false),
    ] {
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
    // (in channels, out channels, input height x width, kernel, groups, stride), "same" padding.
    let shapes = [
        (32, 64, (56, 56), 3, 1, 1),
        (64, 64, (56, 56), 1, 1, 1),
        (64, 64, (56, 56), 3, 64, 1),
        // ResNet-18 64x64 stages and ResNet-8's first.
        (64, 64, (16, 16), 3, 1, 1),
        (128, 128, (8, 8), 3, 1, 1),
        (256, 256, (4, 4), 3, 1, 1),
        (512, 512, (2, 2), 3, 1, 1),
        (16, 16, (32, 32), 3, 1, 1),
        // MobileNetV2-0.35 96x96's first convolution (its largest convolution node).
        (3, 16, (96, 96), 3, 1, 2),
        // Depthwise: KWS's 25x5 planes, MobileNet planes at strides 1 and 2, a plane too large
        // for the padded-plane kernel.
        (64, 64, (25, 5), 3, 64, 1),
        (48, 48, (48, 48), 3, 48, 2),
        (48, 48, (24, 24), 3, 48, 1),
        (96, 96, (12, 12), 3, 96, 2),
        (96, 96, (6, 6), 3, 96, 1),
        (8, 8, (96, 96), 3, 8, 1),
    ];
    for &(ic, oc, (h, w), k, groups, s) in &shapes {
        let (out_h, out_w) = (usize::div_ceil(h, s), usize::div_ceil(w, s));
        let p = Conv2d {
            batch: 1,
            in_channels: ic,
            in_h: h,
            in_w: w,
            out_channels: oc,
            out_h,
            out_w,
            kernel_h: k,
            kernel_w: k,
            stride_h: s,
            stride_w: s,
            dilation_h: 1,
            dilation_w: 1,
            pad_top: k / 2,
            pad_left: k / 2,
            groups,
            act: Activation::Relu,
            weights: ConvWeights::KMajor,
            input: ConvInput::Nchw,
        };
        let x = rng.vec(ic * h * w);
        // Weights as a model packs them: KMajor (any order of values does for timing) with room
        // for whole vectors past the last output channel (depthwise keeps OIHW: one channel per
        // group, the same layout).
        let wt = rng.vec(oc * ic / groups * k * k + 32);
        let bias = rng.vec(oc);
        let mut y = vec![0.0; oc * out_h * out_w];
        let flops = 2.0 * (oc * out_h * out_w * ic / groups * k * k) as f64;
        for len in [conv2d_scratch_len(&p), 0] {
            let mut scratch = vec![0.0; len];
            time(&format!("conv {ic}->{oc} {h}x{w} k{k} s{s} g{groups} scratch {len}"), flops, || {
                conv2d(&p, &x, &wt, Some(&bias), &mut y, &mut scratch)
            });
        }
    }
    // Pooling: MNIST's 2x2 stride-2 max pool, a 3x3 stride-1 max pool with padding (the
    // row-wise driver), and global average pools (KWS's 25x5 and ResNet-8's 8x8 planes).
    let pools = [
        (64, (24, 24), (2, 2), 2, 0),
        (64, (24, 24), (3, 3), 1, 1),
        (64, (25, 5), (25, 5), 1, 0),
        (64, (8, 8), (8, 8), 1, 0),
    ];
    for &(channels, (in_h, in_w), (kh, kw), s, pad) in &pools {
        let pads = (pad, pad, pad, pad);
        let p = pool_params((1, channels), (in_h, in_w), (kh, kw), (s, s), (1, 1), pads, false, false);
        let (out_h, out_w) = (p.out_h, p.out_w);
        let x = rng.vec(channels * in_h * in_w);
        let mut y = vec![0.0; channels * out_h * out_w];
        let flops = (channels * out_h * out_w * kh * kw) as f64;
        let name = format!("{channels}x{in_h}x{in_w} k{kh}x{kw} s{s} p{pad}");
        time(&format!("max pool {name}"), flops, || max_pool2d(&p, &x, &mut y));
        time(&format!("avg pool {name}"), flops, || avg_pool2d(&p, &x, &mut y));
    }
}
