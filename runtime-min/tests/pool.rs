mod common;
use common::*;
use sramfit_runtime_min::*;

fn pool_ref(p: &Pool2d, x: &[f32], is_max: bool) -> Vec<f64> {
    let mut out = vec![];
    // One axis: (input position, inside the input, inside the padded extent) of window tap k.
    let tap = |o: usize, k: usize, s: usize, d: usize, pb: usize, pe: usize, len: usize| {
        let i = (o * s + k * d) as isize - pb as isize;
        (i, i >= 0 && (i as usize) < len, i < (len + pe) as isize)
    };
    for c in 0..p.batch * p.channels {
        for od in 0..p.out_d {
            for oh in 0..p.out_h {
                for ow in 0..p.out_w {
                    let mut mx = f64::NEG_INFINITY;
                    let mut sum = 0.0;
                    let mut cnt_in = 0usize;
                    let mut cnt_pad = 0usize;
                    for kd in 0..p.kernel_d {
                        let (id, d_in, d_pad) = tap(od, kd, p.stride_d, p.dilation_d, p.pad_front, p.pad_back, p.in_d);
                        for kh in 0..p.kernel_h {
                            let (ih, h_in, h_pad) =
                                tap(oh, kh, p.stride_h, p.dilation_h, p.pad_top, p.pad_bottom, p.in_h);
                            for kw in 0..p.kernel_w {
                                let (iw, w_in, w_pad) =
                                    tap(ow, kw, p.stride_w, p.dilation_w, p.pad_left, p.pad_right, p.in_w);
                                if d_pad && h_pad && w_pad {
                                    cnt_pad += 1;
                                }
                                if d_in && h_in && w_in {
                                    let at = ((c * p.in_d + id as usize) * p.in_h + ih as usize) * p.in_w + iw as usize;
                                    let v = x[at] as f64;
                                    mx = mx.max(v);
                                    sum += v;
                                    cnt_in += 1;
                                }
                            }
                        }
                    }
                    let cnt = if p.count_include_pad { cnt_pad } else { cnt_in };
                    out.push(if is_max { mx } else { sum / cnt as f64 });
                }
            }
        }
    }
    out
}

fn check(p: Pool2d, seed: u64) {
    let mut rng = Rng::new(seed);
    let x = rng.vec(p.batch * p.channels * p.in_d * p.in_h * p.in_w);
    let n = p.batch * p.channels * p.out_d * p.out_h * p.out_w;
    let mut y = vec![f32::NAN; n];
    max_pool2d(&p, &x, &mut y);
    assert_close(&y, &pool_ref(&p, &x, true), &format!("max {p:?}"));
    let mut y = vec![f32::NAN; n];
    avg_pool2d(&p, &x, &mut y);
    assert_close(&y, &pool_ref(&p, &x, false), &format!("avg {p:?}"));
}

#[test]
fn basic() {
    check(pool_params((2, 3), (8, 8), (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), false, false), 1);
    check(pool_params((1, 2), (7, 9), (3, 3), (1, 1), (1, 1), (0, 0, 0, 0), false, false), 2);
}

#[test]
fn padding_and_count_include_pad() {
    for cip in [false, true] {
        check(pool_params((1, 2), (7, 6), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), false, cip), 10);
        check(pool_params((1, 2), (7, 6), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), false, cip), 11);
        check(pool_params((2, 1), (9, 8), (3, 2), (2, 1), (1, 1), (2, 0, 1, 1), false, cip), 12);
    }
}

/// Windows wider than the column taps whose ranges the x86-64 build computes once per call
/// (8): the taps past them are computed per row, in the same window order.
#[test]
fn windows_wider_than_the_cached_column_taps() {
    for cip in [false, true] {
        check(pool_params((1, 2), (6, 23), (3, 11), (1, 2), (1, 1), (1, 5, 1, 5), false, cip), 13);
        check(pool_params((1, 3), (5, 30), (2, 9), (2, 3), (1, 2), (0, 4, 1, 4), false, cip), 14);
    }
}

#[test]
fn ceil_mode() {
    for cip in [false, true] {
        check(pool_params((1, 3), (6, 6), (3, 3), (2, 2), (1, 1), (0, 0, 0, 0), true, cip), 20);
        check(pool_params((1, 2), (7, 8), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), true, cip), 21);
        check(pool_params((1, 2), (10, 11), (2, 3), (3, 2), (1, 1), (1, 0, 0, 1), true, cip), 22);
    }
}

#[test]
fn dilation_and_stride_gt_kernel() {
    for cip in [false, true] {
        check(pool_params((1, 2), (11, 12), (3, 2), (1, 2), (2, 3), (1, 2, 2, 1), false, cip), 30);
        check(pool_params((2, 2), (13, 14), (2, 2), (4, 5), (1, 1), (0, 0, 0, 0), false, cip), 31);
        check(pool_params((1, 1), (9, 9), (2, 2), (3, 3), (2, 2), (1, 1, 1, 1), true, cip), 32);
    }
}

#[test]
fn pool1d() {
    for cip in [false, true] {
        check(pool_params((2, 3), (1, 15), (1, 4), (1, 2), (1, 1), (0, 1, 0, 2), false, cip), 40);
        check(pool_params((1, 3), (1, 15), (1, 3), (1, 2), (1, 1), (0, 0, 0, 0), true, cip), 41);
    }
}

#[test]
fn global_window_and_empty() {
    check(pool_params((2, 4), (5, 6), (5, 6), (1, 1), (1, 1), (0, 0, 0, 0), false, false), 50);
    check(pool_params((0, 4), (5, 6), (2, 2), (1, 1), (1, 1), (0, 0, 0, 0), false, false), 51);
}

/// 3-D pooling: `params` in H, W plus a depth axis (input, kernel, stride, dilation, pads).
#[allow(clippy::too_many_arguments)]
fn params3d(hw: Pool2d, in_d: usize, kd: usize, sd: usize, dd: usize, (pf, pk): (usize, usize), ceil: bool) -> Pool2d {
    Pool2d {
        in_d,
        out_d: out_len(in_d, kd, sd, dd, pf, pk, ceil),
        kernel_d: kd,
        stride_d: sd,
        dilation_d: dd,
        pad_front: pf,
        pad_back: pk,
        ..hw
    }
}

#[test]
fn pool3d() {
    for cip in [false, true] {
        let hw = pool_params((1, 2), (6, 7), (2, 3), (2, 1), (1, 1), (1, 0, 0, 1), false, cip);
        check(params3d(hw, 5, 3, 2, 1, (1, 1), false), 60);
        let hw = pool_params((2, 1), (8, 8), (2, 2), (1, 2), (2, 1), (0, 0, 0, 0), true, cip);
        check(params3d(hw, 9, 2, 3, 2, (0, 1), true), 61);
        let hw = pool_params((1, 1), (4, 4), (4, 4), (1, 1), (1, 1), (0, 0, 0, 0), false, cip);
        check(params3d(hw, 4, 4, 1, 1, (0, 0), false), 62);
    }
}

/// Naive f32 pooling: every output folds the window taps inside the input in row-major order
/// (depth, rows, columns), the order the row-wise driver uses, so the kernels' results must match
/// bit for bit (max: any NaN in the window gives NaN; average: the sum from 0 divided by the
/// count of taps inside the input, or with `count_include_pad` inside the padded extent).
fn pool_in_order(p: &Pool2d, x: &[f32], is_max: bool) -> Vec<f32> {
    // One axis: window tap `k` of output `o`'s input position, if inside, and whether it is
    // inside the padded extent.
    let tap = |o: usize, k: usize, s: usize, d: usize, pb: usize, pe: usize, len: usize| {
        let i = (o * s + k * d) as isize - pb as isize;
        ((0..len as isize).contains(&i).then_some(i as usize), i < (len + pe) as isize)
    };
    let mut out = vec![];
    for plane in x.chunks_exact(p.in_d * p.in_h * p.in_w).take(p.batch * p.channels) {
        for od in 0..p.out_d {
            for oh in 0..p.out_h {
                for ow in 0..p.out_w {
                    let (mut window, mut padded) = (vec![], 0);
                    for kd in 0..p.kernel_d {
                        let (id, d_pad) = tap(od, kd, p.stride_d, p.dilation_d, p.pad_front, p.pad_back, p.in_d);
                        for kh in 0..p.kernel_h {
                            let (ih, h_pad) = tap(oh, kh, p.stride_h, p.dilation_h, p.pad_top, p.pad_bottom, p.in_h);
                            for kw in 0..p.kernel_w {
                                let (iw, w_pad) =
                                    tap(ow, kw, p.stride_w, p.dilation_w, p.pad_left, p.pad_right, p.in_w);
                                padded += usize::from(d_pad && h_pad && w_pad);
                                if let (Some(id), Some(ih), Some(iw)) = (id, ih, iw) {
                                    window.push(plane[(id * p.in_h + ih) * p.in_w + iw]);
                                }
                            }
                        }
                    }
                    let count = if p.count_include_pad { padded } else { window.len() };
                    out.push(if is_max {
                        window.into_iter().fold(f32::NEG_INFINITY, |m, v| {
                            if m.is_nan() || v.is_nan() {
                                f32::NAN
                            } else {
                                m.max(v)
                            }
                        })
                    } else if count == 0 {
                        0.0
                    } else {
                        window.into_iter().fold(0.0, |s, v| s + v) / count as f32
                    });
                }
            }
        }
    }
    out
}

/// [`check`], plus bit-exact agreement with [`pool_in_order`] (NaN inputs included for max).
fn check_in_order(p: Pool2d, seed: u64) {
    check(p, seed);
    let mut rng = Rng::new(seed);
    let mut x = rng.vec(p.batch * p.channels * p.in_d * p.in_h * p.in_w);
    let n = p.batch * p.channels * p.out_d * p.out_h * p.out_w;
    let mut y = vec![0.0; n];
    avg_pool2d(&p, &x, &mut y);
    let want = pool_in_order(&p, &x, false);
    assert!(y.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits()), "avg {p:?}: {y:?} != {want:?}");
    for i in (0..x.len()).step_by(7) {
        x[i] = f32::NAN;
    }
    max_pool2d(&p, &x, &mut y);
    let want = pool_in_order(&p, &x, true);
    let same = |(g, w): (&f32, &f32)| if w.is_nan() { g.is_nan() } else { g.to_bits() == w.to_bits() };
    assert!(y.iter().zip(&want).all(same), "max {p:?}: {y:?} != {want:?}");
}

/// The fast paths: non-overlapping k x k stride-k windows (k = 2, 3, any leftover rows and
/// columns dropped) and global pooling (planes folded in groups of 8 plus a remainder; an
/// average's sums on x86-64 in vectors of planes), and
/// shapes next to them that take the row-wise driver.
#[test]
fn tiled_and_global_windows() {
    let tiled = |(b, c), hw, k: (usize, usize), pads, cip| pool_params((b, c), hw, k, k, (1, 1), pads, false, cip);
    for cip in [false, true] {
        // MNIST's 2x2 stride 2, odd sizes, 3x3, 3x2 and 2x3 windows, bottom/right pads that no
        // window reaches, 1-D.
        check_in_order(tiled((2, 5), (24, 24), (2, 2), (0, 0, 0, 0), cip), 70);
        check_in_order(tiled((1, 3), (7, 9), (2, 2), (0, 0, 0, 0), cip), 71);
        check_in_order(tiled((1, 2), (10, 11), (3, 3), (0, 0, 0, 0), cip), 72);
        check_in_order(tiled((1, 2), (10, 9), (3, 2), (0, 0, 0, 0), cip), 73);
        check_in_order(tiled((2, 1), (8, 9), (2, 3), (0, 0, 1, 1), cip), 74);
        check_in_order(tiled((1, 3), (1, 15), (1, 2), (0, 0, 0, 0), cip), 75);
        // 4x4 windows (row-wise driver), and 3-D with a depth window of 1 (the 2-D fast path
        // per depth plane) or 2 (row-wise driver).
        check_in_order(tiled((1, 2), (9, 8), (4, 4), (0, 0, 0, 0), cip), 76);
        let hw = tiled((1, 2), (6, 7), (2, 2), (0, 0, 0, 0), cip);
        check_in_order(params3d(hw, 3, 1, 1, 1, (0, 0), false), 77);
        check_in_order(params3d(hw, 4, 2, 2, 1, (0, 0), false), 78);
        // Global: KWS's 64 x 25x5 and ResNet-8's 8x8 planes, 13 planes (8 + 5), batch 2.
        let global = |(b, c), hw| pool_params((b, c), hw, hw, (1, 1), (1, 1), (0, 0, 0, 0), false, cip);
        check_in_order(global((1, 64), (25, 5)), 80);
        check_in_order(global((2, 8), (8, 8)), 81);
        check_in_order(global((1, 13), (3, 7)), 82);
        check_in_order(global((3, 1), (1, 1)), 83);
        // Averages whose sums x86-64 takes a block of 8 or 16 planes at a time: blocks and
        // planes left, planes of 1, 17 and 25 values (transposed 16 positions at a time, the
        // last run shorter).
        check_in_order(global((1, 37), (1, 17)), 84);
        check_in_order(global((2, 40), (5, 5)), 85);
        check_in_order(global((1, 16), (1, 1)), 86);
    }
}

/// Padded windows three columns wide at column stride 1 and 2 (ResNet's 3x3 stride-2 max pool),
/// which x86-64 folds in one pass per output row (blocks of 8 outputs, the last one overlapping
/// the one before, rows of fewer outputs one by one, border columns tap by tap): the driver's
/// order, bit for bit, at the top and bottom rows (fewer window rows), with dilated rows, ceil
/// mode and a depth window of 1; and windows it does not take next to them.
#[test]
fn padded_windows_three_columns_wide() {
    for cip in [false, true] {
        let padded = |c, hw, k, s, d, pads, ceil| pool_params((1, c), hw, k, s, d, pads, ceil, cip);
        check_in_order(padded(3, (32, 32), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), false), 90);
        check_in_order(padded(2, (9, 41), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), false), 91);
        check_in_order(padded(2, (7, 9), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), false), 92);
        check_in_order(padded(2, (11, 30), (3, 3), (1, 1), (1, 1), (2, 2, 2, 2), false), 93);
        check_in_order(padded(2, (12, 20), (2, 3), (2, 2), (1, 1), (0, 1, 0, 1), true), 94);
        check_in_order(padded(1, (13, 19), (3, 3), (2, 2), (2, 1), (2, 1, 2, 1), false), 95);
        check_in_order(padded(1, (13, 19), (3, 3), (3, 3), (1, 1), (1, 1, 1, 1), false), 96);
        check_in_order(padded(1, (13, 19), (4, 3), (2, 2), (1, 1), (1, 1, 1, 1), false), 97);
        let hw = padded(2, (10, 17), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), false);
        check_in_order(params3d(hw, 3, 1, 1, 1, (0, 0), false), 98);
    }
}
