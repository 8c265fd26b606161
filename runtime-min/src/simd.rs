//! The x86-64 FMA path of the GEMM core, compiled only when the build enables `avx2` and `fma`
//! (the workspace's `.cargo/config.toml` builds the host for its own CPU; a baseline x86-64 or a
//! Cortex-M build never sees this module and uses the portable kernel in `gemm.rs`).
//!
//! Register tiles of 12 vector accumulators (vectors of `L` lanes: 8 with AVX2, 16 with
//! AVX-512): [`gemm_cols`], `MN` rows by two vectors of columns, reads A and B in place
//! (wide outputs with A row-major: matrix products, OIHW convolution weights); [`gemm_rows`] and
//! [`conv_implicit`], vectors of rows (output channels) by columns (positions), broadcasting B, so
//! narrow outputs (a 2x2 feature map has 4 columns) still fill the lanes: two vectors by 6 columns,
//! or one vector by 12 when a block has at most `L` rows (16 output channels on AVX-512). Their A is read in place
//! when its rows are contiguous (convolution weights packed at build time, see
//! [`crate::ConvWeights::KMajor`]), and each tile then sums all of `k` in registers; otherwise A is
//! packed one `KC`-deep panel at a time on the stack and partial sums wait in C. Each element of C
//! is the k-ascending chain of fused multiply-adds of its row and column (partial sums are stored
//! and reloaded exactly), so a result never depends on the tile that computes it, on A's layout,
//! on the tile size an im2col scratch allows, or on `n`.
//!
//! This is the crate's only module with `unsafe`: the intrinsics wrappers below, and the unchecked
//! reads in [`micro_indirect`] and [`micro_row`] whose bounds are checked once per tile.
#![allow(unsafe_code)]

use core::arch::x86_64::*;

use crate::gemm::{finish, Bias, Gemm};
use crate::util::valid_range;
use crate::Conv2d;

#[cfg(target_feature = "avx512f")]
mod lanes {
    use super::*;
    /// One vector register.
    pub type V = __m512;
    /// Lanes per vector.
    pub const L: usize = 16;
    /// All lanes zero.
    #[inline(always)]
    pub fn zero() -> V {
        // SAFETY: this module is compiled only with `avx512f` enabled for the whole crate.
        unsafe { _mm512_setzero_ps() }
    }
    /// All lanes `v`.
    #[inline(always)]
    pub fn splat(v: f32) -> V {
        // SAFETY: as in `zero`.
        unsafe { _mm512_set1_ps(v) }
    }
    /// `a * b + c`, rounded once.
    #[inline(always)]
    pub fn fma(a: V, b: V, c: V) -> V {
        // SAFETY: as in `zero`.
        unsafe { _mm512_fmadd_ps(a, b, c) }
    }
    /// Loads `L` floats.
    #[inline(always)]
    pub fn load(s: &[f32; L]) -> V {
        // SAFETY: `avx512f` is enabled (see `zero`); the pointer comes from a reference to
        // exactly `L` floats, and the unaligned load has no alignment requirement.
        unsafe { _mm512_loadu_ps(s.as_ptr()) }
    }
    /// Stores `L` floats.
    #[inline(always)]
    pub fn store(d: &mut [f32; L], v: V) {
        // SAFETY: as in `load`, with an exclusive reference.
        unsafe { _mm512_storeu_ps(d.as_mut_ptr(), v) }
    }
}

#[cfg(not(target_feature = "avx512f"))]
mod lanes {
    use super::*;
    /// One vector register.
    pub type V = __m256;
    /// Lanes per vector.
    pub const L: usize = 8;
    /// All lanes zero.
    #[inline(always)]
    pub fn zero() -> V {
        // SAFETY: this module is compiled only with `avx2` and `fma` enabled for the whole crate.
        unsafe { _mm256_setzero_ps() }
    }
    /// All lanes `v`.
    #[inline(always)]
    pub fn splat(v: f32) -> V {
        // SAFETY: as in `zero`.
        unsafe { _mm256_set1_ps(v) }
    }
    /// `a * b + c`, rounded once.
    #[inline(always)]
    pub fn fma(a: V, b: V, c: V) -> V {
        // SAFETY: as in `zero`.
        unsafe { _mm256_fmadd_ps(a, b, c) }
    }
    /// Loads `L` floats.
    #[inline(always)]
    pub fn load(s: &[f32; L]) -> V {
        // SAFETY: `avx` is enabled (see `zero`); the pointer comes from a reference to exactly
        // `L` floats, and the unaligned load has no alignment requirement.
        unsafe { _mm256_loadu_ps(s.as_ptr()) }
    }
    /// Stores `L` floats.
    #[inline(always)]
    pub fn store(d: &mut [f32; L], v: V) {
        // SAFETY: as in `load`, with an exclusive reference.
        unsafe { _mm256_storeu_ps(d.as_mut_ptr(), v) }
    }
}

use lanes::{fma, load, splat, store, zero, L, V};

/// Rows of the tallest row-vector tile (two vectors).
const MV: usize = 2 * L;
/// Columns of the widest row-vector tile.
const NB: usize = 12;
/// Depth of one packed A panel (stack: `MV * KC` floats, 16 KiB with AVX-512).
const KC: usize = 128;
/// Rows of the column-vector tile ([`gemm_cols`]).
const MN: usize = 6;
/// Columns of the column-vector tile (two vectors).
const NN: usize = 2 * L;

/// `C = act(alpha * A B + bias)` for one matrix triple (any strides), with `g.k > 0`.
///
/// Two tiles: with A row-contiguous and B column-contiguous, blocks of `NN` columns run on
/// [`gemm_cols`] (vectors along the columns, A and B read in place, no packing); the columns left
/// over, and every other layout, on [`gemm_rows`] (vectors along the rows; A read in place when its
/// rows are contiguous, as with weights packed at build time, else packed). Both compute each
/// element as the same k-ascending chain of fused multiply-adds, so the split never changes a
/// result.
pub(crate) fn gemm(g: &Gemm, a: &[f32], b: &[f32], bias: Bias, c: &mut [f32]) {
    let n_main = match g.a_cs == 1 && g.b_cs == 1 {
        true => g.n - g.n % NN,
        false => 0,
    };
    if n_main > 0 {
        gemm_cols(g, n_main, a, b, bias, c);
    }
    if n_main < g.n {
        let rest = Gemm { n: g.n - n_main, ..*g };
        let bias = match bias {
            Bias::Col(v) => Bias::Col(&v[n_main..]),
            other => other,
        };
        gemm_rows(&rest, a, &b[n_main * g.b_cs..], bias, &mut c[n_main..]);
    }
}

/// Columns `0..n_main` (a multiple of `NN`) of C, in tiles of `MN` rows by `NN` columns: every
/// step broadcasts one value of each of `MN` rows of A and multiplies two vectors of a row of B.
/// Needs `a_cs == 1` and `b_cs == 1`.
fn gemm_cols(g: &Gemm, n_main: usize, a: &[f32], b: &[f32], bias: Bias, c: &mut [f32]) {
    let k = g.k;
    let mut i0 = 0;
    while i0 < g.m {
        let mr = MN.min(g.m - i0);
        // Rows past `mr` repeat the last one: computed, never stored.
        let rows: [&[f32]; MN] = core::array::from_fn(|r| &a[(i0 + r.min(mr - 1)) * g.a_rs..][..k]);
        let mut j0 = 0;
        while j0 < n_main {
            let mut acc = [[zero(); 2]; MN];
            if g.add_to_c {
                for (r, acc_r) in acc.iter_mut().enumerate().take(mr) {
                    let (lo, hi) = c[(i0 + r) * g.c_rs + j0..][..NN].split_at(L);
                    *acc_r = [load(lo.try_into().unwrap()), load(hi.try_into().unwrap())];
                }
            }
            for kk in 0..k {
                let (lo, hi) = b[kk * g.b_rs + j0..][..NN].split_at(L);
                let (b0, b1) = (load(lo.try_into().unwrap()), load(hi.try_into().unwrap()));
                for (acc_r, row) in acc.iter_mut().zip(&rows) {
                    let av = splat(row[kk]);
                    acc_r[0] = fma(av, b0, acc_r[0]);
                    acc_r[1] = fma(av, b1, acc_r[1]);
                }
            }
            for (r, acc_r) in acc.iter().enumerate().take(mr) {
                let crow = &mut c[(i0 + r) * g.c_rs + j0..][..NN];
                let (lo, hi) = crow.split_at_mut(L);
                store(lo.try_into().unwrap(), acc_r[0]);
                store(hi.try_into().unwrap(), acc_r[1]);
                if g.epilogue {
                    finish(crow, g, bias, i0 + r, j0);
                }
            }
            j0 += NN;
        }
        i0 += MN;
    }
}

/// The accumulators of one row-vector tile: column `c` holds rows `0..R * L` in `R` vectors.
type Acc<const R: usize, const C: usize> = [[V; R]; C];

/// Working memory of the row-vector kernels (on the stack, about 24 KiB with AVX-512): the packed A
/// panel (unused when A is read in place), a B panel (columns gathered from anywhere), and a
/// staging tile between the accumulators and C's rows.
struct Panels {
    a: [f32; MV * KC],
    b: [f32; KC * NB],
    tile: [[f32; MV]; NB],
}

impl Panels {
    fn new() -> Self {
        Panels { a: [0.0; MV * KC], b: [0.0; KC * NB], tile: [[0.0; MV]; NB] }
    }
}

/// Runs `block::<R, C>` on the rows `i0..i0 + mr` of a row-vector kernel: two vectors by 6
/// columns, or, for a block of at most `L` rows (e.g. a convolution with 16 output channels on
/// AVX-512), one vector by 12 columns, so that no lane computes a missing row. Both shapes keep
/// 12 accumulators.
macro_rules! by_rows {
    ($mr:expr, $block:ident($($arg:expr),* $(,)?)) => {
        if $mr <= L { $block::<1, 12>($($arg),*) } else { $block::<2, 6>($($arg),*) }
    };
}

/// A's rows of one row-vector tile, `kc` deep: the `R * L` values of depth `kk` at
/// `a[kk * stride..]`. Either a panel packed on the stack (`stride == R * L`) or A itself, read in
/// place (its rows contiguous: weights packed at build time, or a transposed operand).
#[derive(Clone, Copy)]
struct APanel<'a> {
    a: &'a [f32],
    stride: usize,
    kc: usize,
}

impl APanel<'_> {
    /// The `R` vectors of rows at depth `kk`.
    #[inline(always)]
    fn at<const R: usize>(&self, kk: usize) -> [V; R] {
        let row = &self.a[kk * self.stride..][..R * L];
        core::array::from_fn(|r| load(row[r * L..][..L].try_into().unwrap()))
    }
}

/// `acc_c += av * bv`, lane by lane: one column of a row-vector tile at one depth.
#[inline(always)]
fn fma_column<const R: usize>(acc_c: &mut [V; R], av: &[V; R], bv: V) {
    for (acc_v, &a) in acc_c.iter_mut().zip(av) {
        *acc_v = fma(a, bv, *acc_v);
    }
}

/// `acc += A * B` over the panel's depth, where row `kk` of B is `b[kk * bs..kk * bs + C]`.
#[inline(always)]
fn micro<const R: usize, const C: usize>(ap: APanel, b: &[f32], bs: usize, acc: &mut Acc<R, C>) {
    for kk in 0..ap.kc {
        let av = ap.at::<R>(kk);
        let brow: &[f32; C] = b[kk * bs..kk * bs + C].try_into().unwrap();
        for (acc_c, &bv) in acc.iter_mut().zip(brow) {
            fma_column(acc_c, &av, splat(bv));
        }
    }
}

/// `acc += A * B` over the panel's depth, where `B[k][c] = x[base[c] + koff]` with `koff` the
/// offset of row `k` of the im2col matrix (walked by `taps`) and `koff_max` bounding them all.
#[inline(always)]
fn micro_indirect<const R: usize, const C: usize>(
    ap: APanel,
    x: &[f32],
    base: &[usize; C],
    mut taps: Taps,
    koff_max: usize,
    acc: &mut Acc<R, C>,
) {
    // One bounds check per column for the whole panel instead of one per value.
    let cols: [&[f32]; C] = core::array::from_fn(|c| &x[base[c]..][..=koff_max]);
    for kk in 0..ap.kc {
        let av = ap.at::<R>(kk);
        let ko = taps.next();
        debug_assert!(ko <= koff_max);
        for (acc_c, col) in acc.iter_mut().zip(&cols) {
            // SAFETY: `ko <= koff_max` (the caller's bound on `koff`) and `col.len() == koff_max + 1`.
            fma_column(acc_c, &av, splat(unsafe { *col.get_unchecked(ko) }));
        }
    }
}

/// All of C in row-vector tiles (any strides): every step multiplies the vectors of A's rows by
/// one broadcast value of each column of B.
fn gemm_rows(g: &Gemm, a: &[f32], b: &[f32], bias: Bias, c: &mut [f32]) {
    let mut panels = Panels::new();
    let mut i0 = 0;
    while i0 < g.m {
        let mr = MV.min(g.m - i0);
        by_rows!(mr, rows_block(g, a, b, c, i0, mr, &mut panels));
        if g.epilogue {
            for r in 0..mr {
                finish(&mut c[(i0 + r) * g.c_rs..][..g.n], g, bias, i0 + r, 0);
            }
        }
        i0 += MV;
    }
}

/// Whether the row-vector kernels read rows `i0..i0 + R * L` of A in place: they are contiguous
/// (`a_rs == 1`) and the last depth's vectors lie inside `a` (rows past `m` are read, computed and
/// never stored).
fn a_in_place<const R: usize>(g: &Gemm, a: &[f32], i0: usize) -> bool {
    g.a_rs == 1 && (g.k - 1) * g.a_cs + i0 + R * L <= a.len()
}

/// Rows `i0..i0 + mr` of [`gemm_rows`] in tiles of `R * L` rows by `C` columns, over the
/// [`passes`] of A's depth.
fn rows_block<const R: usize, const C: usize>(
    g: &Gemm,
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    i0: usize,
    mr: usize,
    panels: &mut Panels,
) {
    let Panels { a: apack, b: bpack, tile } = panels;
    passes::<R>(g, a, i0, mr, apack, |blk| {
        for j0 in (0..g.n).step_by(C) {
            let cols = Cols::<C>::run(j0, C.min(g.n - j0));
            let mut acc: Acc<R, C> = [[zero(); R]; C];
            if blk.accumulate {
                load_tile(g, c, i0, mr, &cols, tile, &mut acc);
            }
            for (kb, kc) in blk.b_blocks() {
                let (bsrc, bs) = b_panel::<C>(g, b, &cols, kb, kc, bpack);
                micro(blk.panel(kb, kc), bsrc, bs, &mut acc);
            }
            store_tile(g, c, i0, mr, &cols, tile, &acc);
        }
    });
}

/// The rows and depth one pass of the row-vector kernels computes: rows `i0..i0 + mr`, depth
/// `k0..k0 + kc`, with A's rows read from `a` (positioned at depth `k0`) every `stride` values.
struct Block<'a> {
    i0: usize,
    mr: usize,
    k0: usize,
    kc: usize,
    /// C already holds partial sums to add to (earlier passes, or `Gemm::add_to_c`).
    accumulate: bool,
    a: &'a [f32],
    stride: usize,
}

impl Block<'_> {
    /// A's rows at depths `kb..kb + kc` of this pass.
    fn panel(&self, kb: usize, kc: usize) -> APanel<'_> {
        APanel { a: &self.a[(kb - self.k0) * self.stride..], stride: self.stride, kc }
    }

    /// The pass's depth in blocks of at most `KC` (a B panel's depth): `(start, length)`.
    fn b_blocks(&self) -> impl Iterator<Item = (usize, usize)> {
        let end = self.k0 + self.kc;
        (self.k0..end).step_by(KC).map(move |kb| (kb, KC.min(end - kb)))
    }
}

/// Runs `pass` over A's depth for rows `i0..i0 + mr`: once over all of `k` when A's rows are read
/// in place ([`a_in_place`]), with the tiles' sums in registers throughout; otherwise once per
/// `KC`-deep panel, packed into `apack` first, the tiles' partial sums waiting in C in between.
fn passes<const R: usize>(
    g: &Gemm,
    a: &[f32],
    i0: usize,
    mr: usize,
    apack: &mut [f32; MV * KC],
    mut pass: impl FnMut(&Block),
) {
    if a_in_place::<R>(g, a, i0) {
        return pass(&Block { i0, mr, k0: 0, kc: g.k, accumulate: g.add_to_c, a: &a[i0..], stride: g.a_cs });
    }
    for k0 in (0..g.k).step_by(KC) {
        let kc = KC.min(g.k - k0);
        pack_a::<R>(g, a, i0, mr, k0, kc, apack);
        pass(&Block { i0, mr, k0, kc, accumulate: k0 > 0 || g.add_to_c, a: &apack[..], stride: R * L });
    }
}

/// Rows `k0..k0 + kc` of B's columns `cols` for [`micro`]: in place when they are contiguous
/// whole tiles, else gathered into `bpack` (missing columns zero). Returns the rows and their
/// stride.
fn b_panel<'a, const C: usize>(
    g: &Gemm,
    b: &'a [f32],
    cols: &Cols<C>,
    k0: usize,
    kc: usize,
    bpack: &'a mut [f32; KC * NB],
) -> (&'a [f32], usize) {
    let j0 = cols.j[0];
    if g.b_cs == 1 && cols.n == C {
        return (&b[k0 * g.b_rs + j0..], g.b_rs);
    }
    for (kk, dst) in bpack[..kc * C].chunks_exact_mut(C).enumerate() {
        let base = (k0 + kk) * g.b_rs + j0 * g.b_cs;
        for (jj, d) in dst.iter_mut().enumerate() {
            *d = if jj < cols.n { b[base + jj * g.b_cs] } else { 0.0 };
        }
    }
    (&bpack[..], C)
}

/// The columns of C one tile computes: `j[..n]` (the rest repeat the last one: computed, never
/// stored). Any set of columns, so that a convolution can group the positions it reads the same
/// way.
#[derive(Clone, Copy)]
struct Cols<const C: usize> {
    j: [usize; C],
    n: usize,
}

impl<const C: usize> Cols<C> {
    /// Columns `j0..j0 + n`.
    fn run(j0: usize, n: usize) -> Self {
        Cols { j: core::array::from_fn(|c| j0 + c.min(n - 1)), n }
    }
}

/// Loads the partial sums `C[i0..i0 + mr, cols]` into `acc` (through `tile`; lanes outside the
/// tile keep stale values, never stored).
#[inline(always)]
fn load_tile<const R: usize, const C: usize>(
    g: &Gemm,
    c: &[f32],
    i0: usize,
    mr: usize,
    cols: &Cols<C>,
    tile: &mut [[f32; MV]; NB],
    acc: &mut Acc<R, C>,
) {
    for (&j, col) in cols.j.iter().zip(tile.iter_mut()).take(cols.n) {
        for (r, v) in col.iter_mut().enumerate().take(mr) {
            *v = c[(i0 + r) * g.c_rs + j];
        }
    }
    for (acc_c, col) in acc.iter_mut().zip(tile.iter()) {
        *acc_c = core::array::from_fn(|r| load(col[r * L..][..L].try_into().unwrap()));
    }
}

/// Stores `acc` to `C[i0..i0 + mr, cols]` (through `tile`).
#[inline(always)]
fn store_tile<const R: usize, const C: usize>(
    g: &Gemm,
    c: &mut [f32],
    i0: usize,
    mr: usize,
    cols: &Cols<C>,
    tile: &mut [[f32; MV]; NB],
    acc: &Acc<R, C>,
) {
    for (acc_c, col) in acc.iter().zip(tile.iter_mut()) {
        for (r, &v) in acc_c.iter().enumerate() {
            store((&mut col[r * L..][..L]).try_into().unwrap(), v);
        }
    }
    for r in 0..mr {
        let crow = &mut c[(i0 + r) * g.c_rs..];
        for (&j, col) in cols.j.iter().zip(tile.iter()).take(cols.n) {
            crow[j] = col[r];
        }
    }
}

/// Packs `A[i0..i0 + mr, k0..k0 + kc]` into `ap` as `kc` rows of `R * L` values (rows past `mr`
/// zero).
fn pack_a<const R: usize>(g: &Gemm, a: &[f32], i0: usize, mr: usize, k0: usize, kc: usize, ap: &mut [f32]) {
    let a = &a[i0 * g.a_rs..];
    for (kk, dst) in ap[..kc * R * L].chunks_exact_mut(R * L).enumerate() {
        let col = (k0 + kk) * g.a_cs;
        let (live, pad) = dst.split_at_mut(mr);
        for (r, d) in live.iter_mut().enumerate() {
            *d = a[r * g.a_rs + col];
        }
        pad.fill(0.0);
    }
}

/// Walks the rows of a convolution's im2col matrix from a given one: for each, the offset of its
/// value from the top-left input value of a position's receptive field, and the tap's displacement
/// (rows, columns) from that value. Incremental: a few additions per row, no multiplication.
#[derive(Clone, Copy)]
struct Taps {
    /// Offsets of the current input channel's plane, kernel row and kernel column.
    plane: usize,
    row: usize,
    col: usize,
    kh: usize,
    kw: usize,
    kernel_h: usize,
    kernel_w: usize,
    /// Offset steps between input channels, kernel rows and kernel columns.
    plane_step: usize,
    row_step: usize,
    col_step: usize,
    dilation_h: usize,
}

impl Taps {
    /// The walk from row `k` (`(ic, kh, kw)` in row-major order).
    fn at(p: &Conv2d, k: usize) -> Self {
        let ksize = p.kernel_h * p.kernel_w;
        let (ic, r) = (k / ksize, k % ksize);
        let (kh, kw) = (r / p.kernel_w, r % p.kernel_w);
        let (plane_step, row_step, col_step) = (p.in_h * p.in_w, p.dilation_h * p.in_w, p.dilation_w);
        Taps {
            plane: ic * plane_step,
            row: kh * row_step,
            col: kw * col_step,
            kh,
            kw,
            kernel_h: p.kernel_h,
            kernel_w: p.kernel_w,
            plane_step,
            row_step,
            col_step,
            dilation_h: p.dilation_h,
        }
    }

    /// The current row's tap displacement (rows, columns).
    #[inline(always)]
    fn tap(&self) -> (usize, usize) {
        (self.kh * self.dilation_h, self.col)
    }

    /// The current row's offset; moves to the next row.
    #[inline(always)]
    fn next(&mut self) -> usize {
        let off = self.plane + self.row + self.col;
        self.kw += 1;
        self.col += self.col_step;
        if self.kw == self.kernel_w {
            self.kw = 0;
            self.col = 0;
            self.kh += 1;
            self.row += self.row_step;
            if self.kh == self.kernel_h {
                self.kh = 0;
                self.row = 0;
                self.plane += self.plane_step;
            }
        }
        off
    }
}

/// Output positions collected for one tile of [`conv_block`]: their columns of C and the input
/// row and column of their top-left input value (negative in the padding).
struct Positions<const C: usize> {
    j: [usize; C],
    corner: [(isize, isize); C],
    n: usize,
}

impl<const C: usize> Positions<C> {
    fn new() -> Self {
        Positions { j: [0; C], corner: [(0, 0); C], n: 0 }
    }

    /// The tile's columns (missing ones repeat the last position).
    fn cols(&self) -> Cols<C> {
        Cols { j: core::array::from_fn(|c| self.j[c.min(self.n - 1)]), n: self.n }
    }

    /// Where the tile's input values are (missing columns repeat the last position).
    fn input(&self, inside: bool) -> TileInput<C> {
        let corners = core::array::from_fn(|c| self.corner[c.min(self.n - 1)]);
        match inside {
            true => TileInput::Inside(corners),
            false => TileInput::Border(corners),
        }
    }
}

/// Convolution of one (image, group) as an implicit GEMM, without im2col scratch: C (`ocg` rows
/// by `out_h * out_w` positions) = weights (`ocg` by `icg * kernel_h * kernel_w`) times the im2col
/// matrix, whose values are read straight from `xg`. Positions whose receptive field lies inside
/// the input are grouped into tiles (in any order, so a feature map's border never splits them)
/// that read `xg[base + offset]`; the border positions are grouped into tiles of their own, whose
/// columns are gathered, with zeros for the padding, into a stack panel. Weights packed at build
/// time ([`crate::ConvWeights::KMajor`]) are read in place, each tile running over all of `k` with
/// its sums in registers; other weights are packed one `KC`-deep panel at a time. Results are
/// bit-identical to im2col followed by [`gemm`]: same k order, same fused multiply-adds.
pub(crate) fn conv_implicit(p: &Conv2d, icg: usize, ocg: usize, xg: &[f32], wg: &[f32], bias: Bias, yg: &mut [f32]) {
    let kk = icg * p.kernel_h * p.kernel_w;
    let positions = p.out_h * p.out_w;
    let g = conv_gemm(p, ocg, kk, positions);
    let mut panels = Panels::new();
    let mut i0 = 0;
    while i0 < ocg {
        let mr = MV.min(ocg - i0);
        by_rows!(mr, conv_block(p, &g, xg, wg, yg, i0, mr, &mut panels));
        for r in 0..mr {
            finish(&mut yg[(i0 + r) * positions..][..positions], &g, bias, i0 + r, 0);
        }
        i0 += MV;
    }
}

/// Output channels `i0..i0 + mr` of [`conv_implicit`], in tiles of `R * L` channels by `C`
/// positions.
#[allow(clippy::too_many_arguments)]
fn conv_block<const R: usize, const C: usize>(
    p: &Conv2d,
    g: &Gemm,
    xg: &[f32],
    wg: &[f32],
    yg: &mut [f32],
    i0: usize,
    mr: usize,
    panels: &mut Panels,
) {
    let (span_h, span_w) = ((p.kernel_h - 1) * p.dilation_h, (p.kernel_w - 1) * p.dilation_w);
    // Columns whose receptive field lies inside the input's width; in rows inside its height,
    // whole runs of `C` of them (stride 1 or 2) are row tiles.
    let (lo, hi) = valid_range(p.out_w, p.stride_w, -(p.pad_left as isize), p.in_w.saturating_sub(span_w));
    let row_tiles_end = match p.stride_w {
        1 | 2 => lo + (hi - lo) / C * C,
        _ => lo,
    };
    let Panels { a: apack, b: bpack, tile } = panels;
    passes::<R>(g, wg, i0, mr, apack, |blk| {
        let mut tile_at = |cols: &Cols<C>, input| conv_tile::<R, C>(p, g, xg, yg, blk, cols, input, bpack, tile);
        let mut inside = Positions::<C>::new();
        let mut border = Positions::<C>::new();
        for oh in 0..p.out_h {
            let h = (oh * p.stride_h) as isize - p.pad_top as isize;
            let rows_inside = h >= 0 && h as usize + span_h < p.in_h;
            let mut ow = 0;
            while ow < p.out_w {
                if rows_inside && ow == lo && lo < row_tiles_end {
                    for ow in (lo..row_tiles_end).step_by(C) {
                        let base = (oh * p.stride_h - p.pad_top) * p.in_w + ow * p.stride_w - p.pad_left;
                        tile_at(&Cols::run(oh * p.out_w + ow, C), TileInput::Row(base));
                    }
                    ow = row_tiles_end;
                    continue;
                }
                let w = (ow * p.stride_w) as isize - p.pad_left as isize;
                let is_inside = rows_inside && (lo..hi).contains(&ow);
                let set = if is_inside { &mut inside } else { &mut border };
                set.j[set.n] = oh * p.out_w + ow;
                set.corner[set.n] = (h, w);
                set.n += 1;
                if set.n == C {
                    tile_at(&set.cols(), set.input(is_inside));
                    set.n = 0;
                }
                ow += 1;
            }
        }
        for (set, is_inside) in [(&inside, true), (&border, false)] {
            if set.n > 0 {
                tile_at(&set.cols(), set.input(is_inside));
            }
        }
    });
}

/// `acc += A * B` over the panel's depth, where `B[k][c] = x[base + koff + c * S]` with `koff` the
/// offset of row `k` of the im2col matrix (walked by `taps`) and `koff_max` bounding them all.
#[inline(always)]
fn micro_row<const R: usize, const C: usize, const S: usize>(
    ap: APanel,
    x: &[f32],
    base: usize,
    mut taps: Taps,
    koff_max: usize,
    acc: &mut Acc<R, C>,
) {
    // One bounds check for the whole panel instead of one per value.
    let span = &x[base..][..=koff_max + (C - 1) * S];
    for kk in 0..ap.kc {
        let av = ap.at::<R>(kk);
        let ko = taps.next();
        debug_assert!(ko <= koff_max);
        for (c, acc_c) in acc.iter_mut().enumerate() {
            // SAFETY: `ko <= koff_max` (the caller's bound on the walk's offsets) and
            // `c * S <= (C - 1) * S`, so the index is below `span.len()`.
            fma_column(acc_c, &av, splat(unsafe { *span.get_unchecked(ko + c * S) }));
        }
    }
}

/// The largest offset of any im2col row from a position's top-left input value: the last input
/// channel's bottom-right tap.
fn koff_max(p: &Conv2d) -> usize {
    let span = (p.kernel_h - 1) * p.dilation_h * p.in_w + (p.kernel_w - 1) * p.dilation_w;
    (p.in_channels / p.groups - 1) * p.in_h * p.in_w + span
}

/// Where the input values of one tile of [`conv_block`] are, per position (column): the input row
/// and column of the top-left value of its receptive field (negative in the padding).
enum TileInput<const C: usize> {
    /// Consecutive positions of one output row, receptive fields inside the input, stride 1 or 2:
    /// the offset of the first one's top-left value (the others follow every `stride_w`), so the
    /// micro-kernel keeps one pointer instead of one per column.
    Row(usize),
    /// Positions whose receptive fields lie inside the input, anywhere: read in place.
    Inside([(isize, isize); C]),
    /// Positions touching the padding: gathered into the B panel first, `KC` rows at a time.
    Border([(isize, isize); C]),
}

/// One tile of [`conv_block`]: C's columns `cols`, whose input values are at `input`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn conv_tile<const R: usize, const C: usize>(
    p: &Conv2d,
    g: &Gemm,
    xg: &[f32],
    yg: &mut [f32],
    blk: &Block,
    cols: &Cols<C>,
    input: TileInput<C>,
    bpack: &mut [f32; KC * NB],
    tile: &mut [[f32; MV]; NB],
) {
    let mut acc: Acc<R, C> = [[zero(); R]; C];
    if blk.accumulate {
        load_tile(g, yg, blk.i0, blk.mr, cols, tile, &mut acc);
    }
    let panel = blk.panel(blk.k0, blk.kc);
    let taps = Taps::at(p, blk.k0);
    match input {
        TileInput::Row(base) => match p.stride_w {
            1 => micro_row::<R, C, 1>(panel, xg, base, taps, koff_max(p), &mut acc),
            _ => micro_row::<R, C, 2>(panel, xg, base, taps, koff_max(p), &mut acc),
        },
        TileInput::Inside(corner) => {
            let base: [usize; C] = core::array::from_fn(|c| corner[c].0 as usize * p.in_w + corner[c].1 as usize);
            micro_indirect(panel, xg, &base, taps, koff_max(p), &mut acc);
        }
        TileInput::Border(corner) => {
            let (in_h, in_w) = (p.in_h as isize, p.in_w as isize);
            let mut taps = taps;
            for (kb, kc) in blk.b_blocks() {
                for dst in bpack[..kc * C].chunks_exact_mut(C) {
                    let (th, tw) = taps.tap();
                    let off = taps.next();
                    for (d, &(h, w)) in dst.iter_mut().zip(&corner) {
                        let (ih, iw) = (h + th as isize, w + tw as isize);
                        let ok = (0..in_h).contains(&ih) && (0..in_w).contains(&iw);
                        *d = if ok { xg[(off as isize + h * in_w + w) as usize] } else { 0.0 };
                    }
                }
                micro(blk.panel(kb, kc), &bpack[..], C, &mut acc);
            }
        }
    }
    store_tile(g, yg, blk.i0, blk.mr, cols, tile, &acc);
}

/// The GEMM a convolution of one (image, group) is: `ocg` rows, `positions` columns, `kk` deep
/// (its epilogue is the convolution's).
fn conv_gemm(p: &Conv2d, ocg: usize, kk: usize, positions: usize) -> Gemm {
    let (_, a_rs, a_cs) = p.weights.gemm_operand(0, ocg, kk);
    Gemm {
        m: ocg,
        n: positions,
        k: kk,
        a_rs,
        a_cs,
        b_rs: 0,
        b_cs: 0,
        c_rs: positions,
        alpha: 1.0,
        act: p.act,
        add_to_c: false,
        epilogue: true,
    }
}
