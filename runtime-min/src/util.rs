//! Private helpers shared by several kernels: axis coalescing, odometer
//! iteration, window range computation and lane-parallel folds.

use crate::MAX_RANK;

/// A rank-generic iteration space with `N` stride sets, after dropping
/// size-1 axes and merging adjacent axes that are contiguous in every set.
pub(crate) struct Layout<const N: usize> {
    pub rank: usize,
    pub shape: [usize; MAX_RANK],
    pub strides: [[isize; MAX_RANK]; N],
}

impl<const N: usize> Layout<N> {
    /// Builds a coalesced layout; `stride(set, axis)` gives the stride of
    /// `axis` in stride set `set`. Returns `None` if any axis has length 0.
    #[inline(always)]
    pub fn new(shape: &[usize], stride: impl Fn(usize, usize) -> isize) -> Option<Self> {
        assert!(shape.len() <= MAX_RANK, "rank exceeds MAX_RANK");
        let mut l = Layout { rank: 0, shape: [1; MAX_RANK], strides: [[0; MAX_RANK]; N] };
        if shape.contains(&0) {
            return None;
        }
        for (d, &n) in shape.iter().enumerate() {
            if n == 1 {
                continue;
            }
            if l.rank > 0 {
                let r = l.rank - 1;
                let mergeable = (0..N).all(|s| l.strides[s][r] == stride(s, d) * n as isize);
                if mergeable {
                    l.shape[r] *= n;
                    for s in 0..N {
                        l.strides[s][r] = stride(s, d);
                    }
                    continue;
                }
            }
            let r = l.rank;
            l.shape[r] = n;
            for s in 0..N {
                l.strides[s][r] = stride(s, d);
            }
            l.rank += 1;
        }
        Some(l)
    }

    /// Length and strides of the innermost axis (1 and zeros for rank 0).
    #[inline(always)]
    pub fn inner(&self) -> (usize, [isize; N]) {
        if self.rank == 0 {
            (1, [0; N])
        } else {
            let r = self.rank - 1;
            let mut s = [0; N];
            for (k, v) in s.iter_mut().enumerate() {
                *v = self.strides[k][r];
            }
            (self.shape[r], s)
        }
    }

    /// Calls `f` with the offsets (starting from `base`) of every position of
    /// all axes except the innermost one, in row-major order. Called exactly
    /// once for rank 0 and 1.
    #[inline(always)]
    pub fn for_each_outer(&self, base: [isize; N], mut f: impl FnMut([isize; N])) {
        if self.rank <= 1 {
            f(base);
            return;
        }
        let outer = self.rank - 1;
        let mut idx = [0usize; MAX_RANK];
        let mut off = base;
        loop {
            f(off);
            let mut d = outer;
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                idx[d] += 1;
                for (s, o) in off.iter_mut().enumerate() {
                    *o += self.strides[s][d];
                }
                if idx[d] < self.shape[d] {
                    break;
                }
                idx[d] = 0;
                for (s, o) in off.iter_mut().enumerate() {
                    *o -= self.strides[s][d] * self.shape[d] as isize;
                }
            }
        }
    }
}

/// Machine words (`usize`) on the stack of a kernel that walks a [`Layout`] of `sets` stride sets
/// with [`Layout::for_each_outer`]: the layout (rank, shape, strides) and the walk's index and
/// offsets.
pub(crate) const fn layout_walk_words(sets: usize) -> usize {
    (1 + MAX_RANK + sets * MAX_RANK) + (MAX_RANK + sets)
}

/// Row-major contiguous strides of `shape` (in elements).
#[inline(always)]
pub(crate) fn contiguous_strides(shape: &[usize]) -> [isize; MAX_RANK] {
    assert!(shape.len() <= MAX_RANK, "rank exceeds MAX_RANK");
    let mut s = [0isize; MAX_RANK];
    let mut acc = 1isize;
    for d in (0..shape.len()).rev() {
        s[d] = acc;
        acc *= shape[d] as isize;
    }
    s
}

/// The range `[lo, hi)` of `t` in `[0, count)` with
/// `0 <= t * stride + offset < limit` (`stride >= 1`).
#[inline(always)]
pub(crate) fn valid_range(count: usize, stride: usize, offset: isize, limit: usize) -> (usize, usize) {
    let s = stride as isize;
    let lo = if offset >= 0 { 0 } else { (-offset + s - 1) / s };
    let room = limit as isize - offset;
    let hi = if room <= 0 { 0 } else { (room + s - 1) / s };
    let hi = (hi as usize).min(count);
    let lo = (lo as usize).min(hi);
    (lo, hi)
}

/// Number of lanes used by lane-parallel folds (lets LLVM vectorise
/// reassociated reductions).
pub(crate) const LANES: usize = 8;

/// Folds `acc` with `comb(acc, map(v))` over a contiguous slice, using
/// `LANES` independent accumulators initialised to the identity `init`.
/// `comb` must be associative and commutative.
#[inline(always)]
pub(crate) fn fold_contig(
    acc: f32,
    xs: &[f32],
    init: f32,
    map: impl Fn(f32) -> f32,
    comb: impl Fn(f32, f32) -> f32,
) -> f32 {
    let [r] = fold_contig_group([acc], [xs], init, map, comb);
    r
}

/// [`fold_contig`] of `M` slices of one length (the first's) at once, each folded by the same
/// operations in the same order (so with the same bits), as `M` independent chains: a fold of a
/// few values is bound by its chain's latency, which `M` outputs in flight hide.
#[inline(always)]
pub(crate) fn fold_contig_group<const M: usize>(
    acc: [f32; M],
    xs: [&[f32]; M],
    init: f32,
    map: impl Fn(f32) -> f32,
    comb: impl Fn(f32, f32) -> f32,
) -> [f32; M] {
    let split = xs.map(|x| x.as_chunks::<LANES>());
    let (chunks, rest) = (split.map(|s| s.0), split.map(|s| s.1));
    let mut lanes = [[init; M]; LANES];
    for c in 0..chunks.first().map_or(0, |ch| ch.len()) {
        for (l, lane) in lanes.iter_mut().enumerate() {
            for (a, ch) in lane.iter_mut().zip(&chunks) {
                *a = comb(*a, map(ch[c][l]));
            }
        }
    }
    let mut r = acc;
    for lane in lanes {
        for (a, l) in r.iter_mut().zip(lane) {
            *a = comb(*a, l);
        }
    }
    for i in 0..rest.first().map_or(0, |rs| rs.len()) {
        for (a, rs) in r.iter_mut().zip(&rest) {
            *a = comb(*a, map(rs[i]));
        }
    }
    r
}

/// Lane-parallel dot product `sum of a[i * a_step] * b[i]` over `i < b.len()`; the same sum, in the
/// same order, whatever the step (0 reads `a[0]` every time).
#[inline(always)]
pub(crate) fn dot(a: &[f32], a_step: usize, b: &[f32]) -> f32 {
    let n = b.len();
    let main = n - n % LANES;
    if a_step == 1 {
        let a = &a[..n];
        let chunks = a.chunks_exact(LANES).map(|c| <[f32; LANES]>::try_from(c).unwrap());
        dot_lanes(chunks, a[main..].iter().copied(), b)
    } else {
        let chunks = (0..main / LANES).map(|c| core::array::from_fn(|i| a[(c * LANES + i) * a_step]));
        dot_lanes(chunks, (main..n).map(|i| a[i * a_step]), b)
    }
}

/// [`dot`]'s sum: `LANES` running sums over whole chunks, added in lane order, then the rest.
#[inline(always)]
fn dot_lanes(chunks: impl Iterator<Item = [f32; LANES]>, rest: impl Iterator<Item = f32>, b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; LANES];
    let cb = b.chunks_exact(LANES);
    let b_rest = cb.remainder();
    for (x, y) in chunks.zip(cb) {
        for i in 0..LANES {
            lanes[i] += x[i] * y[i];
        }
    }
    let mut r = 0.0;
    for l in lanes {
        r += l;
    }
    for (x, y) in rest.zip(b_rest) {
        r += x * y;
    }
    r
}

/// `dst[i] = f(src[i * step])` for a strided source (`step >= 1`).
#[inline(always)]
pub(crate) fn gather_strided(dst: &mut [f32], src: &[f32], step: usize, f: impl Fn(&mut f32, f32)) {
    let n = dst.len();
    if n == 0 {
        return;
    }
    if step == 1 {
        for (d, &s) in dst.iter_mut().zip(&src[..n]) {
            f(d, s);
        }
    } else {
        let src = &src[..(n - 1) * step + 1];
        for (d, &s) in dst.iter_mut().zip(src.iter().step_by(step)) {
            f(d, s);
        }
    }
}
