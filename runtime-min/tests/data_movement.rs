mod common;
use common::*;
use sramfit_runtime_min::*;

// ------------------------------------------------------------- copy_strided

fn check_strided(
    shape: &[usize],
    src_off: usize,
    ss: &[isize],
    dst_off: usize,
    ds: &[isize],
    src_len: usize,
    dst_len: usize,
) {
    let x: Vec<f32> = (0..src_len).map(|i| i as f32 + 0.5).collect();
    let mut y = vec![-1.0f32; dst_len];
    let p = Strided { shape, src_offset: src_off, src_strides: ss, dst_offset: dst_off, dst_strides: ds };
    copy_strided(&p, &x, &mut y);
    let mut want = vec![-1.0f32; dst_len];
    for idx in indices(shape) {
        let s = src_off as isize + idx.iter().zip(ss).map(|(&i, &s)| i as isize * s).sum::<isize>();
        let d = dst_off as isize + idx.iter().zip(ds).map(|(&i, &s)| i as isize * s).sum::<isize>();
        want[d as usize] = x[s as usize];
    }
    assert_eq!(y, want, "{p:?}");
}

fn contiguous(shape: &[usize]) -> Vec<isize> {
    strides_of(shape).into_iter().map(|s| s as isize).collect()
}

#[test]
fn transpose_all_permutations() {
    let shape = [2usize, 3, 4];
    let st = strides_of(&shape);
    let perms = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
    for perm in perms {
        let out_shape: Vec<usize> = perm.iter().map(|&d| shape[d]).collect();
        let ss: Vec<isize> = perm.iter().map(|&d| st[d] as isize).collect();
        check_strided(&out_shape, 0, &ss, 0, &contiguous(&out_shape), 24, 24);
    }
    // NCHW -> NHWC with longer rows.
    let shape = [1usize, 5, 6, 7];
    let st = strides_of(&shape);
    let out = [1usize, 6, 7, 5];
    let ss = [st[0] as isize, st[2] as isize, st[3] as isize, st[1] as isize];
    check_strided(&out, 0, &ss, 0, &contiguous(&out), 210, 210);
}

#[test]
fn slices_with_negative_steps() {
    // x[4, 10]; y = x[1:4, ::-1]
    check_strided(&[3, 10], 19, &[10, -1], 0, &[10, 1], 40, 30);
    // y = x[::-2, 8:1:-3]
    check_strided(&[2, 3], 38, &[-20, -3], 0, &[3, 1], 40, 6);
    // reversed destination
    check_strided(&[7], 0, &[1], 6, &[-1], 7, 7);
    // positive step 2 slice
    check_strided(&[4, 5], 1, &[10, 2], 0, &[5, 1], 40, 20);
}

#[test]
fn concat_split_expand_tile() {
    // Concat along axis 1: [2,3] into [2,7] at column 4.
    check_strided(&[2, 3], 0, &[3, 1], 4, &[7, 1], 6, 14);
    // Split: take columns 2..5 of [3, 8].
    check_strided(&[3, 3], 2, &[8, 1], 0, &[3, 1], 24, 9);
    // Expand [3,1] -> [3,5] (stride 0 on source).
    check_strided(&[3, 5], 0, &[1, 0], 0, &[5, 1], 3, 15);
    // Tile [2,3] x (2, 2) as a rank-4 copy.
    check_strided(&[2, 2, 2, 3], 0, &[0, 3, 0, 1], 0, &[12, 6, 3, 1], 6, 24);
    // DepthToSpace-like 6-D permutation.
    let (b, c, h, w, bs) = (1usize, 2usize, 2usize, 3usize, 2usize);
    let in_shape = [b, bs, bs, c, h, w];
    let st = strides_of(&in_shape);
    let out_view = [b, c, h, bs, w, bs];
    let ss = [st[0], st[3], st[4], st[1], st[5], st[2]].map(|s| s as isize);
    check_strided(&out_view, 0, &ss, 0, &contiguous(&out_view), 48, 48);
}

#[test]
fn rank0_rank8_and_empty() {
    check_strided(&[], 3, &[], 1, &[], 5, 2);
    let shape = [2usize, 1, 2, 1, 2, 1, 2, 2];
    let c = contiguous(&shape);
    let rev: Vec<isize> = c.iter().map(|s| -s).collect();
    check_strided(&shape, 31, &rev, 0, &c, 32, 32);
    check_strided(&[3, 0, 2], 0, &[0, 2, 1], 0, &[0, 2, 1], 1, 1);
}

// ---------------------------------------------------------------------- pad

fn reflect(mut i: isize, n: isize) -> isize {
    if n == 1 {
        return 0;
    }
    while i < 0 || i >= n {
        if i < 0 {
            i = -i;
        }
        if i >= n {
            i = 2 * (n - 1) - i;
        }
    }
    i
}

fn pad_ref(p: &Pad, x: &[f32]) -> Vec<f64> {
    let ist = strides_of(p.in_shape);
    indices(p.out_shape)
        .iter()
        .map(|o| {
            let mut off = 0isize;
            for d in 0..o.len() {
                let n = p.in_shape[d] as isize;
                let i = o[d] as isize - p.pads_begin[d];
                let s = if (0..n).contains(&i) {
                    i
                } else {
                    match p.mode {
                        PadMode::Constant(v) => return v as f64,
                        PadMode::Edge => i.clamp(0, n - 1),
                        PadMode::Wrap => ((i % n) + n) % n,
                        PadMode::Reflect => reflect(i, n),
                    }
                };
                off += s * ist[d] as isize;
            }
            x[off as usize] as f64
        })
        .collect()
}

fn check_pad(in_shape: &[usize], begin: &[isize], end: &[isize], seed: u64) {
    let out_shape: Vec<usize> =
        (0..in_shape.len()).map(|d| (in_shape[d] as isize + begin[d] + end[d]) as usize).collect();
    let mut rng = Rng::new(seed);
    let x = rng.vec(in_shape.iter().product());
    for mode in [PadMode::Constant(0.0), PadMode::Constant(-2.5), PadMode::Reflect, PadMode::Edge, PadMode::Wrap] {
        let p = Pad { in_shape, pads_begin: begin, out_shape: &out_shape, mode };
        let mut y = vec![f32::NAN; out_shape.iter().product()];
        pad(&p, &x, &mut y);
        assert_close(&y, &pad_ref(&p, &x), &format!("{p:?}"));
    }
}

#[test]
fn pad_modes() {
    check_pad(&[5], &[2], &[3], 1);
    check_pad(&[3, 4], &[1, 2], &[2, 1], 2);
    check_pad(&[2, 3, 4], &[0, 1, 3], &[1, 0, 3], 3);
    check_pad(&[1, 2, 5, 5], &[0, 0, 1, 1], &[0, 0, 1, 1], 4);
    check_pad(&[4, 1], &[1, 0], &[1, 0], 5); // width 1: reflect == edge
}

#[test]
fn pad_crop_and_wide_pads() {
    check_pad(&[6, 7], &[-1, 2], &[1, -3], 10); // crops mixed with pads
    check_pad(&[6], &[-2], &[-3], 11); // pure crop
    check_pad(&[3], &[7], &[8], 12); // pads larger than the axis (wrap/reflect repeat)
    check_pad(&[], &[], &[], 13); // rank 0
    check_pad(&[3, 2], &[0, 0], &[0, 0], 14); // identity
}

// ------------------------------------------------------------------- gather

#[test]
fn gather_axis() {
    let (outer, axis, inner) = (3usize, 5usize, 4usize);
    let x: Vec<f32> = (0..outer * axis * inner).map(|i| i as f32).collect();
    for indices in [&[0i64, 4, -1, 2, 2][..], &[-5], &[], &[3, 1]] {
        let mut y = vec![f32::NAN; outer * indices.len() * inner];
        gather(&x, &mut y, outer, axis, inner, indices);
        let mut want = vec![];
        for o in 0..outer {
            for &ix in indices {
                let ix = if ix < 0 { ix + axis as i64 } else { ix } as usize;
                want.extend_from_slice(&x[(o * axis + ix) * inner..][..inner]);
            }
        }
        assert_eq!(y, want);
    }
    // inner == 1 (gather along the last axis)
    let mut y = vec![0.0; 6];
    gather(&x[..15], &mut y, 3, 5, 1, &[4, -4]);
    assert_eq!(y, [4.0, 1.0, 9.0, 6.0, 14.0, 11.0]);
}

#[test]
#[should_panic]
fn gather_out_of_range_panics() {
    let x = [0.0f32; 4];
    let mut y = [0.0f32; 1];
    gather(&x, &mut y, 1, 4, 1, &[4]);
}
