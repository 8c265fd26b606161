//! `conv2d_winograd` (F(2x2, 3x3) on channel-blocked tensors): on every kernel path its outputs
//! are close to an `f64` reference of the direct convolution, within the tolerance the other
//! convolutions meet; the two FMA paths give the same bits; `winograd_kernel` is `G g G^T`; and
//! `winograd_applies` takes exactly the layers the kernel computes.
//!
//! Forcing a path is process-wide, so every test here holds [`PATHS`] while it runs.

mod common;

use common::*;
use sramfit_runtime_min::*;
use std::sync::Mutex;

/// Held by every test of this file: the path in force is process-wide.
static PATHS: Mutex<()> = Mutex::new(());

/// 3x3 layers with MNIST's, ResNet-8's and ResNet-18's shapes (with and without padding, several
/// chunks of tiles, and a last chunk shorter than the others), outputs of odd height and width
/// (the last tiles half outside), padding only before or only after, two images, 48 output
/// channels (three blocks), and activations with and without a vector form.
fn cases() -> Vec<(Conv2d, bool)> {
    use Activation::{None as A0, Relu};
    let clip = Activation::Clip { min: -0.25, max: 0.5 };
    let c = |ic, oc, hw, pad, batch, act| {
        let p = conv_params(batch, ic, oc, hw, (3, 3), (1, 1), (1, 1), pad, 1, act);
        Conv2d { weights: ConvWeights::KMajor, ..p }
    };
    let one = (1, 1, 1, 1);
    vec![
        (c(32, 64, (26, 26), (0, 0, 0, 0), 1, Relu), true),
        (c(32, 32, (16, 16), one, 1, Relu), true),
        (c(64, 64, (8, 8), one, 2, A0), true),
        (c(128, 32, (8, 8), one, 1, Relu), false),
        (c(32, 48, (7, 9), one, 1, clip), true),
        (c(48, 16, (11, 10), (0, 0, 0, 0), 1, Relu), true),
        (c(32, 16, (9, 9), (1, 1, 0, 0), 1, A0), true),
        (c(32, 32, (8, 9), (0, 0, 1, 1), 2, Relu), true),
    ]
}

/// The OIHW weights of `p` transformed for `conv2d_winograd`, by the layout
/// `winograd_weight_index` states.
fn transformed(p: &Conv2d, oihw: &[f32]) -> Vec<f32> {
    let mut u = vec![f32::NAN; winograd_weights_len(p)];
    for oc in 0..p.out_channels {
        for ic in 0..p.in_channels {
            let g: [f32; 9] = oihw[(oc * p.in_channels + ic) * 9..][..9].try_into().unwrap();
            for (xi, v) in winograd_kernel(&g).into_iter().enumerate() {
                u[winograd_weight_index(p, xi, ic, oc)] = v;
            }
        }
    }
    u
}

#[test]
fn winograd_convolutions_are_close_to_the_reference_on_every_path() {
    for (i, (p, with_bias)) in cases().into_iter().enumerate() {
        assert!(winograd_applies(&p), "{p:?}");
        let mut rng = Rng::new(i as u64 + 3);
        let (in_plane, out_plane) = (p.in_h * p.in_w, p.out_h * p.out_w);
        let x = rng.vec(p.batch * p.in_channels * in_plane);
        let oihw = rng.vec(p.out_channels * p.in_channels * 9);
        let b = rng.vec(p.out_channels);
        let bias = with_bias.then_some(b.as_slice());
        let u = transformed(&p, &oihw);
        let mut xb = vec![0.0; x.len()];
        to_blocked(p.batch, p.in_channels, in_plane, &x, &mut xb);
        let results = on_each_path(&PATHS, || {
            let len = p.batch * p.out_channels * out_plane;
            let (mut yb, mut y) = (vec![f32::NAN; len], vec![f32::NAN; len]);
            let mut scratch = vec![f32::NAN; conv2d_winograd_scratch_len(&p)];
            conv2d_winograd(&p, &xb, &u, bias, &mut yb, &mut scratch);
            from_blocked(p.batch, p.out_channels, out_plane, &yb, &mut y);
            y
        });
        let (want, mag) = conv_ref(&p, &x, &oihw, bias);
        for (path, y) in &results {
            assert_close_mag(y, &want, Some(&mag), &format!("{p:?} on {}", path.name()));
        }
        let fma: Vec<_> = results.iter().filter(|(path, _)| *path != KernelPath::Portable).collect();
        for pair in fma.windows(2) {
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&pair[0].1), bits(&pair[1].1), "{p:?}: {} and {}", pair[0].0.name(), pair[1].0.name());
        }
    }
}

/// `winograd_kernel(g)` is `G g G^T` with Lavin and Gray's `G`, element by element (a kernel with
/// one 1 at each tap picks out products of `G`'s columns, so each tap's place is checked).
#[test]
fn the_kernel_transform_is_g_g_gt() {
    let g = [[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0f32]];
    for tap in 0..9 {
        let mut k = [0.0f32; 9];
        k[tap] = 1.0;
        let u = winograd_kernel(&k);
        for a in 0..4 {
            for b in 0..4 {
                assert_eq!(u[4 * a + b], g[a][tap / 3] * g[b][tap % 3], "tap {tap}, element ({a}, {b})");
            }
        }
    }
}

/// What the kernel takes and what it refuses: stride 2, a 1x1 or 5x5 kernel, dilation, groups,
/// 16 input channels, a partial block of output channels, padding 2, fewer than 16 tiles (6x8
/// outputs).
#[test]
fn winograd_applies_to_3x3_stride_1_layers_of_whole_blocks() {
    let c = |ic, oc, stride, dilation, pad, groups, k| {
        let p = conv_params(
            1,
            ic,
            oc,
            (12, 12),
            (k, k),
            (stride, stride),
            (dilation, dilation),
            pad,
            groups,
            Activation::None,
        );
        Conv2d { weights: ConvWeights::KMajor, ..p }
    };
    let one = (1, 1, 1, 1);
    assert!(winograd_applies(&c(32, 32, 1, 1, one, 1, 3)));
    assert!(winograd_applies(&c(32, 32, 1, 1, (0, 0, 0, 0), 1, 3)));
    assert!(!winograd_applies(&c(32, 32, 2, 1, one, 1, 3)));
    assert!(!winograd_applies(&c(32, 32, 1, 1, (0, 0, 0, 0), 1, 1)));
    assert!(!winograd_applies(&c(32, 32, 1, 1, (2, 2, 2, 2), 1, 5)));
    assert!(!winograd_applies(&c(32, 32, 1, 2, one, 1, 3)));
    assert!(!winograd_applies(&c(32, 32, 1, 1, one, 2, 3)));
    assert!(!winograd_applies(&c(16, 32, 1, 1, one, 1, 3)));
    assert!(!winograd_applies(&c(32, 24, 1, 1, one, 1, 3)));
    assert!(!winograd_applies(&c(32, 32, 1, 1, (2, 2, 2, 2), 1, 3)));
    assert!(winograd_applies(&c(32, 32, 1, 1, (0, 0, 0, 0), 1, 3).with_input(10, 10)));
    assert!(!winograd_applies(&c(32, 32, 1, 1, (0, 0, 0, 0), 1, 3).with_input(8, 10)));
}

/// A layer's shape with another input size (and the output size it gives without padding).
trait WithInput {
    fn with_input(self, h: usize, w: usize) -> Self;
}

impl WithInput for Conv2d {
    fn with_input(self, h: usize, w: usize) -> Self {
        Conv2d { in_h: h, in_w: w, out_h: h - 2, out_w: w - 2, ..self }
    }
}
