//! Channel-blocked activations (`conv2d_blocked`, `max_pool2d_blocked`, `global_pool_blocked`,
//! `to_blocked`, `from_blocked`): on every kernel path a blocked convolution gives the bits of
//! `conv2d` on the NCHW tensors on that path (with its weights k-major and, for one group, in
//! panels), and values close to an `f64` reference, a blocked max pooling the bits of `max_pool2d`,
//! a blocked global pooling those of `avg_pool2d`, `reduce_sum` and `reduce_mean`; the conversions
//! are each other's inverse and put channel `c` of position `q` where `blocked_index` says.
//!
//! Forcing a path is process-wide, so every test here holds [`PATHS`] while it runs.

mod common;

use common::*;
use sramfit_runtime_min::*;
use std::sync::Mutex;

/// Held by every test of this file: the path in force is process-wide.
static PATHS: Mutex<()> = Mutex::new(());

/// Pointwise, dense and 3x3 depthwise layers that reach every tile of the blocked kernels:
/// pointwise output channels in tiles of four, three, two and one AVX-512 vectors; planes in one
/// tile of all their positions (1, 4, 9 and 10), in a whole number of tiles, and with a last tile
/// overlapping the one before; two images; dense layers with ResNet-8's and MNIST's shapes (3x3,
/// stride 1 and 2, a strided 1x1 shortcut), without padding, with padding only after the last value
/// the windows read, and with padding they read (1 or 2 before, after, or both: whole kernel rows
/// and single taps skipped), rows of every tile width (16, 12, 8, 6, 4 and fewer than a tile) and
/// with a last tile overlapping the one before, first layers of 1 to 8 NCHW channels (ResNet-8's,
/// MNIST's, KWS's 10x4 at stride 2, pointwise ones), output channels in tiles of two and one
/// vectors, one band of rows and several (64 input channels of 40-wide rows; 48 of 64-wide rows, a
/// band of one output row), a 2x5 kernel with unequal strides and padding; depthwise rows of fewer
/// than 8 outputs and of more (on AVX-512, rows of 8 or more at stride 1 are read from the input
/// where it lies, with or without padding columns, and so are rows of 8 or more at stride 2, runs
/// reading padding on the left, the right or neither), stride 1 and 2, padding 0 to 2, rows as wide
/// as the stage takes; every activation, with and without a vector form.
fn cases() -> Vec<(Conv2d, bool)> {
    use Activation::{HardSwish, None as A0, Relu, Sigmoid, Tanh};
    let clip = Activation::Clip { min: -0.25, max: 0.5 };
    let leaky = Activation::LeakyRelu { alpha: 0.1 };
    let pw = |ic, oc, hw, batch, act| {
        let p = conv_params(batch, ic, oc, hw, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 1, act);
        Conv2d { weights: ConvWeights::KMajor, ..p }
    };
    let dense = |ic, oc, hw, kernel, stride, pad, batch, act| {
        let p = conv_params(batch, ic, oc, hw, kernel, stride, (1, 1), pad, 1, act);
        Conv2d { weights: ConvWeights::KMajor, ..p }
    };
    let dw = |c, hw, s, pad, act| conv_params(1, c, c, hw, (3, 3), (s, s), (1, 1), pad, c, act);
    let one = (1, 1, 1, 1);
    vec![
        (dense(16, 16, (32, 32), (3, 3), (1, 1), one, 1, Relu), true),
        (dense(16, 32, (32, 32), (3, 3), (2, 2), one, 1, A0), true),
        (dense(16, 32, (32, 32), (1, 1), (2, 2), (0, 0, 0, 0), 1, A0), false),
        (dense(32, 64, (16, 16), (3, 3), (2, 2), one, 1, Relu), true),
        (dense(64, 64, (8, 8), (3, 3), (1, 1), one, 2, Relu), true),
        (dense(32, 64, (26, 26), (3, 3), (1, 1), (0, 0, 0, 0), 1, Relu), true),
        (dense(16, 48, (13, 13), (3, 3), (1, 1), one, 1, clip), true),
        (dense(16, 16, (6, 6), (3, 3), (1, 1), one, 1, leaky), true),
        (dense(32, 16, (5, 9), (3, 3), (1, 2), (1, 0, 1, 2), 2, HardSwish), true),
        (dense(64, 16, (40, 40), (3, 3), (1, 1), one, 1, Sigmoid), true),
        (dense(16, 32, (10, 12), (2, 5), (2, 1), (1, 2, 0, 2), 1, Tanh), false),
        (dense(16, 16, (7, 7), (3, 3), (2, 2), (0, 0, 1, 1), 1, Relu), true),
        (dense(16, 16, (6, 6), (3, 3), (1, 1), (0, 0, 2, 2), 1, Relu), true),
        (dense(16, 32, (9, 9), (3, 3), (2, 2), (2, 2, 2, 2), 1, A0), true),
        (dense(48, 16, (6, 64), (3, 3), (1, 1), one, 1, Relu), true),
        (dense(3, 16, (32, 32), (3, 3), (1, 1), one, 1, Relu), true),
        (dense(1, 32, (28, 28), (3, 3), (1, 1), (0, 0, 0, 0), 1, Relu), true),
        (dense(1, 64, (49, 10), (10, 4), (2, 2), (4, 1, 5, 1), 1, Relu), true),
        (dense(3, 48, (20, 18), (3, 3), (2, 2), one, 2, A0), false),
        (dense(1, 16, (6, 5), (3, 3), (1, 1), one, 1, Relu), true),
        (dense(8, 16, (12, 12), (1, 1), (1, 1), (0, 0, 0, 0), 1, Relu), true),
        (dense(3, 32, (9, 7), (1, 1), (2, 2), (0, 0, 0, 0), 1, A0), false),
        (pw(64, 64, (25, 5), 1, Relu), true),
        (pw(16, 112, (7, 3), 1, A0), true),
        (pw(48, 48, (2, 2), 2, clip), false),
        (pw(32, 16, (6, 1), 1, leaky), true),
        (pw(16, 32, (1, 1), 1, HardSwish), true),
        (pw(80, 32, (9, 9), 1, Sigmoid), true),
        (pw(48, 64, (3, 3), 1, Relu), true),
        (pw(16, 48, (5, 2), 1, clip), true),
        (dw(64, (25, 5), 1, (1, 1, 1, 1), Relu), true),
        (dw(16, (12, 12), 2, (1, 1, 1, 1), A0), true),
        (dw(32, (7, 9), 2, (0, 0, 0, 0), clip), false),
        (dw(16, (11, 23), 1, (2, 2, 2, 2), leaky), true),
        (dw(48, (3, 3), 1, (1, 1, 1, 1), HardSwish), true),
        (dw(16, (1, 1), 1, (1, 1, 1, 1), Relu), true),
        (dw(16, (5, 7), 1, (1, 1, 1, 1), Tanh), true),
        (dw(32, (8, 8), 2, (0, 0, 1, 1), Relu), true),
        (dw(16, (4, 168), 1, (1, 1, 1, 1), Relu), true),
        (dw(16, (5, 166), 2, (1, 1, 1, 1), A0), true),
        (dw(32, (9, 12), 1, (0, 0, 0, 0), Relu), true),
        (dw(16, (5, 49), 2, (1, 1, 1, 1), Relu), false),
        (dw(32, (4, 34), 2, (0, 0, 1, 1), clip), true),
    ]
}

/// The operands of case `p`: input, OIHW weights, the weights `p` reads (k-major for a
/// pointwise or dense layer), bias.
fn operands(p: &Conv2d, seed: u64) -> (Vec<f32>, Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut rng = Rng::new(seed);
    let x = rng.vec(p.batch * p.in_channels * p.in_h * p.in_w);
    let oihw = rng.vec(p.out_channels * p.in_channels / p.groups * p.kernel_h * p.kernel_w);
    let w = match p.weights {
        ConvWeights::KMajor => k_major(p, &oihw, 0),
        ConvWeights::Oihw => oihw.clone(),
        ConvWeights::Panels => panels(p, &oihw),
    };
    (x, oihw, w, rng.vec(p.out_channels))
}

/// The bit patterns of `v`.
fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

/// The OIHW weights `oihw` of `p` (one group) in panels ([`ConvWeights::Panels`]): per panel of
/// up to [`PANEL`] output channels, ascending, each depth's channels of the panel.
fn panels(p: &Conv2d, oihw: &[f32]) -> Vec<f32> {
    let (m, kk) = (p.out_channels, p.in_channels * p.kernel_h * p.kernel_w);
    let mut packed = Vec::with_capacity(m * kk);
    for start in (0..m).step_by(PANEL) {
        for d in 0..kk {
            packed.extend((start..m.min(start + PANEL)).map(|oc| oihw[oc * kk + d]));
        }
    }
    packed
}

/// `conv2d` on the NCHW tensors, and `conv2d_blocked` on their blocked forms (an input it reads
/// as NCHW as it is) converted back: with the weights `w` that `p` reads and, for one group, with
/// `oihw` in panels.
fn both(p: &Conv2d, x: &[f32], (w, oihw): (&[f32], &[f32]), bias: Option<&[f32]>) -> (Vec<f32>, Vec<Vec<f32>>) {
    let (in_plane, out_plane) = (p.in_h * p.in_w, p.out_h * p.out_w);
    let len = p.batch * p.out_channels * out_plane;
    let mut nchw = vec![f32::NAN; len];
    conv2d(p, x, w, bias, &mut nchw, &mut vec![0.0; conv2d_scratch_len(p)]);
    let mut xb = x.to_vec();
    if !reads_nchw(p) {
        to_blocked(p.batch, p.in_channels, in_plane, x, &mut xb);
    }
    let in_panels = (p.groups == 1).then(|| (Conv2d { weights: ConvWeights::Panels, ..*p }, panels(p, oihw)));
    let runs = std::iter::once((*p, w.to_vec())).chain(in_panels);
    let blocked = runs.map(|(p, w)| {
        let mut yb = vec![f32::NAN; len];
        conv2d_blocked(&p, &xb, &w, bias, &mut yb);
        let mut blocked = vec![f32::NAN; len];
        from_blocked(p.batch, p.out_channels, out_plane, &yb, &mut blocked);
        blocked
    });
    (nchw, blocked.collect())
}

#[test]
fn blocked_convolutions_give_the_bits_of_nchw_ones_on_every_path() {
    for (i, (p, with_bias)) in cases().into_iter().enumerate() {
        assert!(conv2d_blocked_applies(&p), "{p:?}");
        let (x, oihw, w, b) = operands(&p, i as u64 + 7);
        let bias = with_bias.then_some(b.as_slice());
        let results = on_each_path(&PATHS, || both(&p, &x, (&w, &oihw), bias));
        let (want, mag) = conv_ref(&p, &x, &oihw, bias);
        for (path, (nchw, runs)) in &results {
            assert_eq!(runs.len(), if p.groups == 1 { 2 } else { 1 });
            for (blocked, weights) in runs.iter().zip(["as p reads them", "in panels"]) {
                let case = format!("{p:?} on {}, weights {weights}", path.name());
                assert_eq!(bits(blocked), bits(nchw), "{case}");
                assert_close_mag(blocked, &want, Some(&mag), &case);
            }
        }
    }
}

/// Max pooling on blocked tensors gives `max_pool2d`'s bits on the NCHW ones, on every path:
/// MNIST's 2x2 stride-2 window, ResNet-18's 3x3 stride-2 one with padding 1 (two images), windows
/// reaching past the input's end (ceil mode) with unequal kernels and strides, dilation 2, a
/// window larger than the input; 16 to 64 channels. The values are drawn from a few, NaN, both
/// zeros and the infinities among them, so that windows tie and the fold's order decides.
#[test]
fn blocked_max_pooling_gives_the_bits_of_nchw_max_pooling_on_every_path() {
    let cases = [
        pool_params((1, 64), (24, 24), (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), false, false),
        pool_params((2, 16), (15, 17), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), false, false),
        pool_params((1, 48), (9, 10), (3, 2), (2, 3), (1, 1), (0, 0, 0, 0), true, false),
        pool_params((1, 16), (11, 11), (3, 3), (1, 1), (2, 2), (2, 1, 2, 1), false, false),
        pool_params((1, 32), (4, 4), (5, 5), (1, 1), (1, 1), (2, 2, 2, 2), false, false),
    ];
    let values = [f32::NAN, 0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, -1.0, 0.5, -0.5];
    for (i, p) in cases.iter().enumerate() {
        assert!(max_pool2d_blocked_applies(p), "{p:?}");
        let (in_plane, out_plane) = (p.in_h * p.in_w, p.out_h * p.out_w);
        let mut rng = Rng::new(i as u64 + 11);
        let x: Vec<f32> = (0..p.batch * p.channels * in_plane).map(|_| values[rng.below(values.len())]).collect();
        let results = on_each_path(&PATHS, || {
            let len = p.batch * p.channels * out_plane;
            let mut nchw = vec![1.0; len];
            max_pool2d(p, &x, &mut nchw);
            let mut xb = vec![0.0; x.len()];
            to_blocked(p.batch, p.channels, in_plane, &x, &mut xb);
            let mut yb = vec![1.0; len];
            max_pool2d_blocked(p, &xb, &mut yb);
            let mut blocked = vec![1.0; len];
            from_blocked(p.batch, p.channels, out_plane, &yb, &mut blocked);
            (nchw, blocked)
        });
        for (path, (nchw, blocked)) in &results {
            assert_eq!(bits(blocked), bits(nchw), "{p:?} on {}", path.name());
        }
    }
}

#[test]
fn blocked_max_pooling_takes_2d_windows_of_whole_blocks_only() {
    let ok = pool_params((1, 32), (8, 8), (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), false, false);
    assert!(max_pool2d_blocked_applies(&ok));
    let not = [
        Pool2d { channels: 24, ..ok },
        Pool2d { in_d: 3, out_d: 3, ..ok },
        Pool2d { in_d: 3, kernel_d: 3, ..ok },
        Pool2d { pad_front: 1, out_d: 2, ..ok },
    ];
    for p in not {
        assert!(!max_pool2d_blocked_applies(&p), "{p:?}");
    }
}

/// Values whose sums depend on the order they are added in (`1e8 + 1 - 1e8` is 0, `1 + 1e8 - 1e8`
/// is 0, `1e8 - 1e8 + 1` is 1), with signed zeros and non-finite values in some planes.
fn order_sensitive(rng: &mut Rng, n: usize, special: bool) -> Vec<f32> {
    let values = [1e8, -1e8, 1.0, -1.0, 0.375, -0.0, 3e7];
    let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY];
    let pick = |rng: &mut Rng| match special && rng.below(40) == 0 {
        true => specials[rng.below(specials.len())],
        false => values[rng.below(values.len())] * (1.0 + rng.f() / 8.0),
    };
    (0..n).map(|_| pick(rng)).collect()
}

#[test]
fn blocked_global_pooling_gives_the_bits_of_average_pooling_and_small_reductions_on_every_path() {
    // KWS's 64 planes of 25x5 (one group of four blocks), ResNet-8's 64 of 8x8 in two images,
    // five blocks (a group and one block left), planes of one position.
    let pools = [
        pool_params((1, 64), (25, 5), (25, 5), (1, 1), (1, 1), (0, 0, 0, 0), false, false),
        pool_params((2, 64), (8, 8), (8, 8), (1, 1), (1, 1), (0, 0, 0, 0), false, true),
        pool_params((1, 80), (3, 7), (3, 7), (2, 2), (1, 1), (0, 0, 0, 0), false, false),
        pool_params((1, 16), (1, 1), (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), false, false),
    ];
    for (i, p) in pools.iter().enumerate() {
        let global = GlobalPool::of_avg_pool2d(p).expect("a global average pooling");
        let plane = p.in_h * p.in_w;
        let x = order_sensitive(&mut Rng::new(i as u64 + 31), p.batch * p.channels * plane, i == 0);
        let results = on_each_path(&PATHS, || {
            let mut nchw = vec![1.0; p.batch * p.channels];
            avg_pool2d(p, &x, &mut nchw);
            (nchw, blocked_global(&global, &x))
        });
        for (path, (nchw, blocked)) in &results {
            assert_eq!(sum_bits(blocked), sum_bits(nchw), "{p:?} on {}", path.name());
        }
    }
    // VWW's 256 planes of 3x3 and MobileNetV2's 1280, ReduceSum and ReduceMean; planes of 1, 8
    // and 15 positions (the longest that `reduce_sum` adds in order).
    for (i, (batch, channels, (h, w))) in
        [(1, 256, (3, 3)), (1, 1280, (3, 3)), (2, 48, (1, 1)), (1, 32, (2, 4)), (1, 96, (3, 5))].into_iter().enumerate()
    {
        let plane = h * w;
        let x = order_sensitive(&mut Rng::new(i as u64 + 41), batch * channels * plane, i == 0);
        let (out_shape, out_in_strides) = ([batch, channels], [channels * plane, plane]);
        let p =
            Reduce { out_shape: &out_shape, out_in_strides: &out_in_strides, red_shape: &[h, w], red_strides: &[w, 1] };
        for mean in [false, true] {
            let global = GlobalPool::of_reduce(batch, channels, plane, mean).expect("a reduction in order");
            let results = on_each_path(&PATHS, || {
                let mut nchw = vec![1.0; batch * channels];
                match mean {
                    true => reduce_mean(&p, &x, &mut nchw),
                    false => reduce_sum(&p, &x, &mut nchw),
                }
                (nchw, blocked_global(&global, &x))
            });
            for (path, (nchw, blocked)) in &results {
                assert_eq!(sum_bits(blocked), sum_bits(nchw), "{global:?} on {}", path.name());
            }
        }
    }
}

/// The bit patterns of the sums `v`, every NaN as `f32::NAN`'s: which of two NaNs an addition
/// returns is the compiler's choice (it may swap the operands), not the order of the additions.
fn sum_bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| if f.is_nan() { f32::NAN } else { *f }.to_bits()).collect()
}

/// `global_pool_blocked` of the NCHW `x`, converted to blocked first.
fn blocked_global(p: &GlobalPool, x: &[f32]) -> Vec<f32> {
    let mut xb = vec![0.0; x.len()];
    to_blocked(p.batch, p.channels, p.plane, x, &mut xb);
    let mut y = vec![1.0; p.batch * p.channels];
    global_pool_blocked(p, &xb, &mut y);
    y
}

#[test]
fn blocked_global_pooling_takes_whole_planes_of_whole_blocks_only() {
    let ok = pool_params((1, 32), (5, 5), (5, 5), (1, 1), (1, 1), (0, 0, 0, 0), false, false);
    assert!(GlobalPool::of_avg_pool2d(&ok).is_some());
    let not = [
        Pool2d { channels: 24, ..ok },
        Pool2d { kernel_h: 4, out_h: 2, ..ok },
        pool_params((1, 32), (5, 5), (5, 5), (1, 1), (1, 1), (1, 1, 1, 1), false, true),
        Pool2d { in_d: 3, kernel_d: 3, ..ok },
    ];
    for p in not {
        assert!(GlobalPool::of_avg_pool2d(&p).is_none(), "{p:?}");
    }
    assert!(GlobalPool::of_reduce(1, 32, 15, false).is_some());
    // `reduce_sum` adds 16 values or more in interleaved chains, not in order.
    assert!(GlobalPool::of_reduce(1, 32, 16, false).is_none());
    assert!(GlobalPool::of_reduce(1, 40, 9, true).is_none());
    assert!(GlobalPool::of_reduce(1, 32, 0, false).is_none());
}

/// Planes of fewer positions than an AVX2 or AVX-512 vector has lanes (converted value by
/// value), of exactly a vector, of whole vectors, and with a last tile overlapping the one
/// before, on every path; one and two images.
#[test]
fn conversions_place_each_channel_where_blocked_index_says() {
    for (batch, channels, plane) in [(2, 48, 7), (1, 16, 8), (1, 32, 16), (2, 16, 125), (1, 64, 25), (1, 16, 1)] {
        let len = batch * channels * plane;
        let x: Vec<f32> = (0..len).map(|i| i as f32).collect();
        let results = on_each_path(&PATHS, || {
            // One value past the tensor in each output, which no conversion may write.
            let (mut xb, mut back) = (vec![f32::NAN; len + 1], vec![f32::NAN; len + 1]);
            to_blocked(batch, channels, plane, &x, &mut xb);
            from_blocked(batch, channels, plane, &xb, &mut back);
            (xb, back)
        });
        for (path, (xb, back)) in &results {
            let case = format!("{batch}x{channels}x{plane} on {}", path.name());
            for n in 0..batch {
                for c in 0..channels {
                    for q in 0..plane {
                        let at =
                            ((n * channels / CHANNEL_BLOCK + c / CHANNEL_BLOCK) * plane + q) * CHANNEL_BLOCK + c % 16;
                        assert_eq!(blocked_index(channels, plane, n, c, q), at, "{case}");
                        assert_eq!(xb[at], x[(n * channels + c) * plane + q], "{case}");
                    }
                }
            }
            assert_eq!(back[..len], x[..], "{case}");
            assert!(xb[len].is_nan() && back[len].is_nan(), "{case}: a value written past the tensor");
        }
    }
}

/// The first depthwise case.
fn depthwise() -> Conv2d {
    cases().into_iter().map(|(p, _)| p).find(|p| p.groups > 1).unwrap()
}

/// The first pointwise case.
fn pointwise() -> Conv2d {
    cases().into_iter().map(|(p, _)| p).find(|p| p.kernel_h == 1 && p.stride_h == 1).unwrap()
}

#[test]
fn only_whole_blocks_of_pointwise_dense_and_3x3_depthwise_layers_apply() {
    let ok = pointwise();
    let dense = cases()[0].0;
    let dw = depthwise();
    let not = [
        Conv2d { in_channels: 24, ..ok },
        Conv2d { out_channels: 40, ..ok },
        Conv2d { weights: ConvWeights::Oihw, ..ok },
        Conv2d { stride_h: 3, stride_w: 3, ..ok },
        Conv2d { input: ConvInput::Nhwc, ..ok },
        Conv2d { in_channels: 24, ..dense },
        // Fewer than 16 input channels, at 16 output positions: `conv2d` sums the one channel
        // from the bias on the x86-64 FMA paths too.
        Conv2d { in_channels: 1, in_h: 4, in_w: 4, out_h: 4, out_w: 4, ..dense },
        Conv2d { in_channels: 3, out_channels: 24, ..dense },
        Conv2d { weights: ConvWeights::Oihw, ..dense },
        Conv2d { stride_w: 3, ..dense },
        Conv2d { dilation_w: 2, ..dense },
        Conv2d { groups: 2, ..dense },
        Conv2d { kernel_h: 5, kernel_w: 5, ..dw },
        Conv2d { stride_h: 3, stride_w: 3, ..dw },
        Conv2d { stride_h: 1, stride_w: 2, ..dw },
        Conv2d { dilation_h: 2, ..dw },
        Conv2d { pad_top: 3, ..dw },
        Conv2d { groups: 16, ..dw },
        Conv2d { in_w: 171, out_w: 171, ..dw },
    ];
    for p in not {
        assert!(!conv2d_blocked_applies(&p), "{p:?}");
    }
}

#[test]
#[should_panic(expected = "not a convolution conv2d_blocked computes")]
fn a_convolution_it_does_not_compute_is_refused() {
    let p = Conv2d { kernel_h: 5, kernel_w: 5, ..depthwise() };
    conv2d_blocked(&p, &[0.0; 8000], &[0.0; 1600], None, &mut [0.0; 8000]);
}
