mod common;
use common::*;
use sramfit_runtime_min::*;

// ------------------------------------------------------------------ softmax

fn softmax_ref(x: &[f32], outer: usize, axis: usize, inner: usize, log: bool) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    for o in 0..outer {
        for i in 0..inner {
            let at = |a: usize| (o * axis + a) * inner + i;
            let m = (0..axis).map(|a| x[at(a)] as f64).fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = (0..axis).map(|a| (x[at(a)] as f64 - m).exp()).sum();
            for a in 0..axis {
                let v = x[at(a)] as f64;
                y[at(a)] = if log { v - m - s.ln() } else { (v - m).exp() / s };
            }
        }
    }
    y
}

#[test]
fn softmax_shapes() {
    let mut rng = Rng::new(1);
    for &(outer, axis, inner) in
        &[(1, 1, 1), (3, 10, 1), (2, 5, 3), (2, 4, 70), (1, 130, 1), (4, 1, 7), (0, 3, 2), (2, 0, 3), (5, 9, 64)]
    {
        for scale in [1.0f32, 50.0] {
            let x: Vec<f32> = rng.vec(outer * axis * inner).iter().map(|v| v * scale + 80.0).collect();
            let mut y = vec![f32::NAN; x.len()];
            softmax(&x, &mut y, outer, axis, inner);
            assert_close(&y, &softmax_ref(&x, outer, axis, inner, false), &format!("softmax {outer} {axis} {inner}"));
            log_softmax(&x, &mut y, outer, axis, inner);
            let want = softmax_ref(&x, outer, axis, inner, true);
            // log-softmax: absolute error scales with |x| (terms x - m - ln s).
            let mag: Vec<f64> = want.iter().map(|_| 1.0).collect();
            assert_close_mag(&y, &want, Some(&mag), &format!("log_softmax {outer} {axis} {inner}"));
        }
    }
}

// ------------------------------------------------------------ normalisation

#[test]
fn channel_affine_matches() {
    let mut rng = Rng::new(2);
    for &(outer, c, inner) in &[(2, 3, 5), (1, 1, 1), (3, 4, 1), (0, 2, 2), (1, 16, 49)] {
        let x = rng.vec(outer * c * inner);
        let s = rng.vec(c);
        let t = rng.vec(c);
        let want: Vec<f64> =
            (0..x.len()).map(|i| x[i] as f64 * s[(i / inner) % c] as f64 + t[(i / inner) % c] as f64).collect();
        let mut y = vec![f32::NAN; x.len()];
        channel_affine(&x, &mut y, &s, &t, outer, c, inner);
        assert_close(&y, &want, "channel_affine");
        let mut xy = x.clone();
        channel_affine_in_place(&mut xy, &s, &t, outer, c, inner);
        assert_eq!(xy, y);
    }
}

fn norm_ref(xs: &[f32], eps: f32) -> Vec<f64> {
    let n = xs.len() as f64;
    let mean = xs.iter().map(|&v| v as f64).sum::<f64>() / n;
    let var = xs.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
    xs.iter().map(|&v| (v as f64 - mean) / (var + eps as f64).sqrt()).collect()
}

#[test]
fn instance_norm_matches() {
    let mut rng = Rng::new(3);
    for &(b, c, inner) in &[(2, 3, 10), (1, 1, 1), (1, 4, 67), (0, 2, 3)] {
        let x: Vec<f32> = rng.vec(b * c * inner).iter().map(|v| v * 3.0 + 5.0).collect();
        let s = rng.vec(c);
        let t = rng.vec(c);
        let mut want = vec![];
        for (r, run) in x.chunks(inner).enumerate() {
            let ch = r % c;
            want.extend(norm_ref(run, 1e-5).iter().map(|v| v * s[ch] as f64 + t[ch] as f64));
        }
        let mut y = vec![f32::NAN; x.len()];
        instance_norm(&x, &mut y, &s, &t, b, c, inner, 1e-5);
        let mag = vec![1.0; y.len()];
        assert_close_mag(&y, &want, Some(&mag), "instance_norm");
    }
}

#[test]
fn layer_norm_matches() {
    let mut rng = Rng::new(4);
    for &(outer, inner) in &[(3, 16), (1, 1), (4, 33), (0, 5), (2, 100)] {
        let x: Vec<f32> = rng.vec(outer * inner).iter().map(|v| v * 2.0 - 1.0).collect();
        let g = rng.vec(inner);
        let b = rng.vec(inner);
        for (gamma, beta) in [(Some(&g[..]), Some(&b[..])), (Some(&g[..]), None), (None, Some(&b[..])), (None, None)] {
            let mut want = vec![];
            for run in x.chunks(inner) {
                want.extend(
                    norm_ref(run, 1e-3)
                        .iter()
                        .enumerate()
                        .map(|(i, v)| v * gamma.map_or(1.0, |g| g[i] as f64) + beta.map_or(0.0, |b| b[i] as f64)),
                );
            }
            let mut y = vec![f32::NAN; x.len()];
            layer_norm(&x, &mut y, gamma, beta, outer, inner, 1e-3);
            let mag = vec![1.0; y.len()];
            assert_close_mag(&y, &want, Some(&mag), "layer_norm");
        }
    }
}

#[test]
fn lrn_matches() {
    let mut rng = Rng::new(5);
    for &(b, c, inner) in &[(2, 4, 6), (1, 7, 3), (1, 1, 5)] {
        for size in [1usize, 2, 3, 5] {
            let x = rng.vec(b * c * inner);
            let (alpha, beta, bias) = (1e-2f32, 0.75f32, 2.0f32);
            let mut want = vec![];
            for n in 0..b {
                for ch in 0..c {
                    for i in 0..inner {
                        let lo = ch.saturating_sub((size - 1) / 2);
                        let hi = (ch + (size - 1).div_ceil(2)).min(c - 1);
                        let sq: f64 = (lo..=hi).map(|k| (x[(n * c + k) * inner + i] as f64).powi(2)).sum();
                        let v = x[(n * c + ch) * inner + i] as f64;
                        want.push(v / (bias as f64 + alpha as f64 / size as f64 * sq).powf(beta as f64));
                    }
                }
            }
            let mut y = vec![f32::NAN; x.len()];
            lrn(&x, &mut y, b, c, inner, size, alpha, beta, bias);
            assert_close(&y, &want, &format!("lrn size {size}"));
        }
    }
}

// ------------------------------------------------------------------- resize

/// ONNX coordinate transformation, evaluated in f32 as the kernel documents
/// (and ONNX Runtime does), so that exact ties round identically.
fn src_coord(coord: CoordMode, x: usize, scale: f64, len_in: usize, len_out: usize) -> f64 {
    let (x, scale) = (x as f32, scale as f32);
    (match coord {
        CoordMode::HalfPixel => (x + 0.5) / scale - 0.5,
        CoordMode::HalfPixelSymmetric => {
            let adj = len_out as f32 / (scale * len_in as f32);
            len_in as f32 / 2.0 * (1.0 - adj) + (x + 0.5) / scale - 0.5
        }
        CoordMode::PytorchHalfPixel => {
            if len_out > 1 {
                (x + 0.5) / scale - 0.5
            } else {
                0.0
            }
        }
        CoordMode::AlignCorners => {
            if len_out == 1 {
                0.0
            } else {
                x * (len_in as f32 - 1.0) / (len_out as f32 - 1.0)
            }
        }
        CoordMode::Asymmetric => x / scale,
        CoordMode::TfHalfPixelForNn => (x + 0.5) / scale,
    }) as f64
}

fn nearest_ref(v: f64, mode: NearestMode, len: usize) -> usize {
    let r = match mode {
        NearestMode::RoundPreferFloor => {
            if v.fract() == 0.5 {
                v.floor()
            } else {
                v.round()
            }
        }
        NearestMode::RoundPreferCeil => {
            if v.fract() == 0.5 {
                v.ceil()
            } else {
                v.round()
            }
        }
        NearestMode::Floor => v.floor(),
        NearestMode::Ceil => v.ceil(),
    };
    r.clamp(0.0, len as f64 - 1.0) as usize
}

/// ONNX reference linear interpolation: neighbours floor(x), floor(x)+1 of
/// the edge-padded data, weights by the fractional part.
fn linear_ref(data: impl Fn(usize) -> f64, x: f64, len: usize) -> f64 {
    let x0 = x.floor();
    let ratio = x - x0;
    let clampi = |i: f64| i.clamp(0.0, len as f64 - 1.0) as usize;
    (1.0 - ratio) * data(clampi(x0)) + ratio * data(clampi(x0 + 1.0))
}

const COORDS: [CoordMode; 6] = [
    CoordMode::HalfPixel,
    CoordMode::HalfPixelSymmetric,
    CoordMode::PytorchHalfPixel,
    CoordMode::AlignCorners,
    CoordMode::Asymmetric,
    CoordMode::TfHalfPixelForNn,
];

fn check_resize(bc: usize, (in_h, in_w): (usize, usize), (out_h, out_w): (usize, usize), seed: u64) {
    let mut rng = Rng::new(seed);
    let x = rng.vec(bc * in_h * in_w);
    let scale_h = out_h as f32 / in_h as f32;
    let scale_w = out_w as f32 / in_w as f32;
    for coord in COORDS {
        let p = Resize { batch_channels: bc, in_h, in_w, out_h, out_w, scale_h, scale_w, coord };
        let n = bc * out_h * out_w;
        for mode in [NearestMode::RoundPreferFloor, NearestMode::RoundPreferCeil, NearestMode::Floor, NearestMode::Ceil]
        {
            let mut want = vec![];
            for c in 0..bc {
                for oh in 0..out_h {
                    let ih = nearest_ref(src_coord(coord, oh, scale_h as f64, in_h, out_h), mode, in_h);
                    for ow in 0..out_w {
                        let iw = nearest_ref(src_coord(coord, ow, scale_w as f64, in_w, out_w), mode, in_w);
                        want.push(x[(c * in_h + ih) * in_w + iw] as f64);
                    }
                }
            }
            let mut y = vec![f32::NAN; n];
            resize_nearest(&p, mode, &x, &mut y);
            assert_close(&y, &want, &format!("nearest {mode:?} {p:?}"));
        }
        let mut want = vec![];
        for c in 0..bc {
            for oh in 0..out_h {
                let sy = src_coord(coord, oh, scale_h as f64, in_h, out_h);
                for ow in 0..out_w {
                    let sx = src_coord(coord, ow, scale_w as f64, in_w, out_w);
                    let row = |ih: usize| linear_ref(|iw| x[(c * in_h + ih) * in_w + iw] as f64, sx, in_w);
                    want.push(linear_ref(row, sy, in_h));
                }
            }
        }
        let mut y = vec![f32::NAN; n];
        resize_linear(&p, &x, &mut y);
        assert_close(&y, &want, &format!("linear {p:?}"));
    }
}

#[test]
fn resize_up_down_1d() {
    check_resize(2, (4, 5), (8, 10), 1); // 2x up
    check_resize(1, (8, 10), (4, 5), 2); // 2x down
    check_resize(3, (3, 4), (9, 6), 3); // 3x / 1.5x
    check_resize(1, (5, 7), (3, 11), 4); // mixed
    check_resize(2, (1, 6), (1, 13), 5); // 1-D
    check_resize(1, (3, 70), (2, 140), 6); // wider than a column block
    check_resize(1, (4, 4), (1, 1), 7); // single output
    check_resize(0, (4, 4), (2, 2), 8); // empty
}

#[test]
fn resize_nearest_ties() {
    // Asymmetric 2x upsample: source coordinate x / 2 has exact halves.
    let x = [10.0f32, 20.0, 30.0];
    let p = Resize {
        batch_channels: 1,
        in_h: 1,
        in_w: 3,
        out_h: 1,
        out_w: 6,
        scale_h: 1.0,
        scale_w: 2.0,
        coord: CoordMode::Asymmetric,
    };
    let mut y = [0.0f32; 6];
    resize_nearest(&p, NearestMode::RoundPreferFloor, &x, &mut y);
    assert_eq!(y, [10.0, 10.0, 20.0, 20.0, 30.0, 30.0]);
    resize_nearest(&p, NearestMode::RoundPreferCeil, &x, &mut y);
    assert_eq!(y, [10.0, 20.0, 20.0, 30.0, 30.0, 30.0]);
}

// ------------------------------------------------------------------ rms_norm

#[test]
fn rms_norm_shapes() {
    let mut rng = Rng::new(5);
    for &(outer, axis, inner) in &[(1, 1, 1), (3, 10, 1), (2, 5, 3), (2, 4, 70), (0, 3, 2), (2, 0, 3), (4, 33, 1)] {
        let x = rng.vec(outer * axis * inner);
        let eps = 1e-3;
        let mut want = vec![0.0f64; x.len()];
        for o in 0..outer {
            for i in 0..inner {
                let at = |a: usize| (o * axis + a) * inner + i;
                let ms = (0..axis).map(|a| (x[at(a)] as f64).powi(2)).sum::<f64>() / axis as f64;
                for a in 0..axis {
                    want[at(a)] = x[at(a)] as f64 / (ms + eps as f64).sqrt();
                }
            }
        }
        let mut y = vec![f32::NAN; x.len()];
        rms_norm(&x, &mut y, outer, axis, inner, eps);
        assert_close(&y, &want, &format!("rms_norm {outer}x{axis}x{inner}"));
    }
}
