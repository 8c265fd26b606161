//! The x86-64 FMA path of the GEMM core, compiled only when the build enables `avx2` and `fma`
//! (the workspace's `.cargo/config.toml` builds the host for its own CPU; a baseline x86-64 or a
//! Cortex-M build never sees this module and uses the portable kernel in `gemm.rs`).
//!
//! Two register tiles of 12 vector accumulators (vectors of `L` lanes: 8 with AVX2, 16 with
//! AVX-512): [`gemm_cols`], `MN` rows by two vectors of columns, reads A and B in place (wide
//! outputs: im2col tiles, pointwise convolutions); [`gemm_rows`], two vectors of rows (output
//! channels of a convolution) by `NB` columns, packs A per `KC`-deep panel on the stack and
//! broadcasts B, so narrow outputs (a 2x2 feature map has 4 columns) still fill the lanes. Each
//! element of C is the k-ascending chain of fused multiply-adds of its row and column (`KC` blocks
//! are stored and reloaded exactly), so a result never depends on the tile that computes it, on
//! the tile size an im2col scratch allows, or on `n`.
//!
//! This is the crate's only module with `unsafe`: the intrinsics wrappers below, and one unchecked
//! read in [`micro_indirect`] whose bound is checked once per tile.
#![allow(unsafe_code)]

use core::arch::x86_64::*;

use crate::gemm::{finish, Bias, Gemm};
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

/// Rows of the row-vector tile ([`gemm_rows`]: two vectors).
const MV: usize = 2 * L;
/// Columns of the row-vector tile.
const NB: usize = 6;
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
/// over, and every other layout, on [`gemm_rows`] (vectors along the rows, A packed). Both compute
/// each element as the same k-ascending chain of fused multiply-adds, so the split never changes
/// a result.
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

/// The accumulators of one [`gemm_rows`] tile: column `c` holds rows `0..MV` in two vectors.
type Acc = [[V; 2]; NB];

/// `acc += Apanel * B`: `ap` is `kc` packed rows of `MV` values, row `kk` of B is
/// `b[kk * bs..kk * bs + NB]`.
#[inline(always)]
fn micro(ap: &[f32], b: &[f32], bs: usize, acc: &mut Acc) {
    for (kk, arow) in ap.chunks_exact(MV).enumerate() {
        let (lo, hi) = arow.split_at(L);
        let a0 = load(lo.try_into().unwrap());
        let a1 = load(hi.try_into().unwrap());
        let brow: &[f32; NB] = b[kk * bs..kk * bs + NB].try_into().unwrap();
        for (acc_c, &bv) in acc.iter_mut().zip(brow) {
            let bv = splat(bv);
            acc_c[0] = fma(a0, bv, acc_c[0]);
            acc_c[1] = fma(a1, bv, acc_c[1]);
        }
    }
}

/// All of C in tiles of `MV` rows by `NB` columns (any strides): every step multiplies two
/// vectors of a packed A panel by one broadcast value of each of `NB` columns of B.
fn gemm_rows(g: &Gemm, a: &[f32], b: &[f32], bias: Bias, c: &mut [f32]) {
    let mut apack = [0.0f32; MV * KC];
    let mut bpack = [0.0f32; KC * NB];
    let mut tile = [[0.0f32; MV]; NB];
    let mut k0 = 0;
    while k0 < g.k {
        let kc = KC.min(g.k - k0);
        let first = k0 == 0 && !g.add_to_c;
        let mut i0 = 0;
        while i0 < g.m {
            let mr = MV.min(g.m - i0);
            pack_a(g, a, i0, mr, k0, kc, &mut apack[..kc * MV]);
            let mut j0 = 0;
            while j0 < g.n {
                let nb = NB.min(g.n - j0);
                let (bsrc, bs): (&[f32], usize) = if g.b_cs == 1 && nb == NB {
                    (&b[k0 * g.b_rs + j0..], g.b_rs)
                } else {
                    for (kk, dst) in bpack[..kc * NB].chunks_exact_mut(NB).enumerate() {
                        let base = (k0 + kk) * g.b_rs + j0 * g.b_cs;
                        for (jj, d) in dst.iter_mut().enumerate() {
                            *d = if jj < nb { b[base + jj * g.b_cs] } else { 0.0 };
                        }
                    }
                    (&bpack[..], NB)
                };
                let mut acc: Acc = [[zero(); 2]; NB];
                if !first {
                    load_tile(g, c, i0, mr, j0, nb, &mut tile, &mut acc);
                }
                micro(&apack[..kc * MV], bsrc, bs, &mut acc);
                store_tile(g, c, i0, mr, j0, nb, &mut tile, &acc);
                j0 += NB;
            }
            if k0 + kc == g.k && g.epilogue {
                for r in 0..mr {
                    finish(&mut c[(i0 + r) * g.c_rs..][..g.n], g, bias, i0 + r, 0);
                }
            }
            i0 += MV;
        }
        k0 += kc;
    }
}

/// Loads the partial sums `C[i0..i0 + mr, j0..j0 + nb]` into `acc` (through `tile`; lanes
/// outside the tile keep stale values, never stored).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn load_tile(
    g: &Gemm,
    c: &[f32],
    i0: usize,
    mr: usize,
    j0: usize,
    nb: usize,
    tile: &mut [[f32; MV]; NB],
    acc: &mut Acc,
) {
    for (cc, col) in tile.iter_mut().enumerate().take(nb) {
        for (r, v) in col.iter_mut().enumerate().take(mr) {
            *v = c[(i0 + r) * g.c_rs + j0 + cc];
        }
    }
    for (acc_c, col) in acc.iter_mut().zip(tile.iter()) {
        let (lo, hi) = col.split_at(L);
        *acc_c = [load(lo.try_into().unwrap()), load(hi.try_into().unwrap())];
    }
}

/// Stores `acc` to `C[i0..i0 + mr, j0..j0 + nb]` (through `tile`).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn store_tile(
    g: &Gemm,
    c: &mut [f32],
    i0: usize,
    mr: usize,
    j0: usize,
    nb: usize,
    tile: &mut [[f32; MV]; NB],
    acc: &Acc,
) {
    for (acc_c, col) in acc.iter().zip(tile.iter_mut()) {
        let (lo, hi) = col.split_at_mut(L);
        store(lo.try_into().unwrap(), acc_c[0]);
        store(hi.try_into().unwrap(), acc_c[1]);
    }
    for r in 0..mr {
        let crow = &mut c[(i0 + r) * g.c_rs + j0..][..nb];
        for (d, col) in crow.iter_mut().zip(tile.iter()) {
            *d = col[r];
        }
    }
}

/// Packs `A[i0..i0 + mr, k0..k0 + kc]` into `ap` as `kc` rows of `MV` values (rows past `mr`
/// zero).
fn pack_a(g: &Gemm, a: &[f32], i0: usize, mr: usize, k0: usize, kc: usize, ap: &mut [f32]) {
    let a = &a[i0 * g.a_rs..];
    for (kk, dst) in ap[..kc * MV].chunks_exact_mut(MV).enumerate() {
        let col = (k0 + kk) * g.a_cs;
        let (live, pad) = dst.split_at_mut(mr);
        for (r, d) in live.iter_mut().enumerate() {
            *d = a[r * g.a_rs + col];
        }
        pad.fill(0.0);
    }
}

/// Convolution of one (image, group) as an implicit GEMM, without im2col scratch: C (`ocg` rows
/// by `out_h * out_w` positions) = weights (`ocg` by `icg * kernel_h * kernel_w`, packed per panel
/// as in [`gemm_rows`]) times the im2col matrix, whose values are broadcast straight from `xg`. A
/// tile of `NB` positions whose receptive fields lie inside the input reads `xg[base + offset]`
/// (the offset of each `k` computed once per `KC` block); border tiles gather their columns, with
/// zeros for the padding, into a stack panel. Results are bit-identical to im2col followed by
/// [`gemm`]: same k order, same fused multiply-adds.
pub(crate) fn conv_implicit(p: &Conv2d, icg: usize, ocg: usize, xg: &[f32], wg: &[f32], bias: Bias, yg: &mut [f32]) {
    let ksize = p.kernel_h * p.kernel_w;
    let kk = icg * ksize;
    let positions = p.out_h * p.out_w;
    let in_plane = p.in_h * p.in_w;
    let g = conv_gemm(p, ocg, kk, positions);
    if positions <= NARROW_N {
        conv_narrow(p, &g, icg, xg, wg, bias, yg);
        return;
    }
    let mut apack = [0.0f32; MV * KC];
    let mut bpack = [0.0f32; KC * NB];
    let mut tile = [[0.0f32; MV]; NB];
    // Per row of the im2col matrix: offset in `xg` from a position's base, and the tap's
    // displacement (rows, columns) from the position's top-left input value.
    let mut koff = [0usize; KC];
    let mut tap = [(0usize, 0usize); KC];
    let (span_h, span_w) = ((p.kernel_h - 1) * p.dilation_h, (p.kernel_w - 1) * p.dilation_w);
    let mut k0 = 0;
    while k0 < kk {
        let kc = KC.min(kk - k0);
        for (kr, (off, t)) in koff.iter_mut().zip(tap.iter_mut()).enumerate().take(kc) {
            let k = k0 + kr;
            let (ic, r) = (k / ksize, k % ksize);
            *t = ((r / p.kernel_w) * p.dilation_h, (r % p.kernel_w) * p.dilation_w);
            *off = ic * in_plane + t.0 * p.in_w + t.1;
        }
        let koff_max = koff[..kc].iter().copied().max().unwrap_or(0);
        let first = k0 == 0;
        let mut i0 = 0;
        while i0 < ocg {
            let mr = MV.min(ocg - i0);
            pack_a(&g, wg, i0, mr, k0, kc, &mut apack[..kc * MV]);
            let mut j0 = 0;
            while j0 < positions {
                let nb = NB.min(positions - j0);
                // Top-left input value of each position (rows, columns; may be in the padding).
                let corner: [(isize, isize); NB] = core::array::from_fn(|cc| {
                    let j = j0 + cc.min(nb - 1);
                    let (oh, ow) = (j / p.out_w, j % p.out_w);
                    ((oh * p.stride_h) as isize - p.pad_top as isize, (ow * p.stride_w) as isize - p.pad_left as isize)
                });
                let inside = corner
                    .iter()
                    .all(|&(h, w)| h >= 0 && w >= 0 && h as usize + span_h < p.in_h && w as usize + span_w < p.in_w);
                let mut acc: Acc = [[zero(); 2]; NB];
                if !first {
                    load_tile(&g, yg, i0, mr, j0, nb, &mut tile, &mut acc);
                }
                if inside {
                    let base: [usize; NB] =
                        core::array::from_fn(|cc| corner[cc].0 as usize * p.in_w + corner[cc].1 as usize);
                    micro_indirect(&apack[..kc * MV], xg, &base, &koff[..kc], koff_max, &mut acc);
                } else {
                    for ((dst, &off), &(th, tw)) in bpack.chunks_exact_mut(NB).zip(&koff).zip(&tap).take(kc) {
                        for (cc, d) in dst.iter_mut().enumerate() {
                            let (h, w) = (corner[cc].0 + th as isize, corner[cc].1 + tw as isize);
                            let ok = (0..p.in_h as isize).contains(&h) && (0..p.in_w as isize).contains(&w);
                            let at = off as isize + corner[cc].0 * p.in_w as isize + corner[cc].1;
                            *d = if ok { xg[at as usize] } else { 0.0 };
                        }
                    }
                    micro(&apack[..kc * MV], &bpack, NB, &mut acc);
                }
                store_tile(&g, yg, i0, mr, j0, nb, &mut tile, &acc);
                j0 += NB;
            }
            if k0 + kc == kk {
                for r in 0..mr {
                    finish(&mut yg[(i0 + r) * positions..][..positions], &g, bias, i0 + r, 0);
                }
            }
            i0 += MV;
        }
        k0 += kc;
    }
}

/// `acc += Apanel * B` where `B[k][c] = x[base[c] + koff[k]]` and `koff_max` bounds `koff`.
#[inline(always)]
fn micro_indirect(ap: &[f32], x: &[f32], base: &[usize; NB], koff: &[usize], koff_max: usize, acc: &mut Acc) {
    // One bounds check per column for the whole panel instead of one per value.
    let cols: [&[f32]; NB] = core::array::from_fn(|c| &x[base[c]..][..=koff_max]);
    for (arow, &ko) in ap.chunks_exact(MV).zip(koff) {
        let (lo, hi) = arow.split_at(L);
        let a0 = load(lo.try_into().unwrap());
        let a1 = load(hi.try_into().unwrap());
        debug_assert!(ko <= koff_max);
        for (acc_c, col) in acc.iter_mut().zip(&cols) {
            // SAFETY: `ko <= koff_max` (the caller's bound on `koff`) and `col.len() == koff_max + 1`.
            let bv = splat(unsafe { *col.get_unchecked(ko) });
            acc_c[0] = fma(a0, bv, acc_c[0]);
            acc_c[1] = fma(a1, bv, acc_c[1]);
        }
    }
}

/// The GEMM a convolution of one (image, group) is: `ocg` rows, `positions` columns, `kk` deep
/// (its epilogue is the convolution's).
fn conv_gemm(p: &Conv2d, ocg: usize, kk: usize, positions: usize) -> Gemm {
    Gemm {
        m: ocg,
        n: positions,
        k: kk,
        a_rs: kk,
        a_cs: 1,
        b_rs: 0,
        b_cs: 0,
        c_rs: positions,
        alpha: 1.0,
        act: p.act,
        add_to_c: false,
        epilogue: true,
    }
}

/// Most output positions for [`conv_narrow`].
pub(crate) const NARROW_N: usize = 16;
/// Depth of one block of [`conv_narrow`]'s transposed im2col panel (stack: 32 KiB).
const NARROW_KC: usize = 512;

/// A convolution with at most [`NARROW_N`] output positions (the last stages of an image network,
/// where the weights dwarf the activations): the im2col columns are gathered, one `NARROW_KC`-deep
/// block at a time, into a stack panel, and each output channel is the dot product of its weight
/// row (read once, in place, with vector loads: no packing) with every column. Sums run in vector
/// lanes over each block, then across lanes and blocks in a fixed order.
fn conv_narrow(p: &Conv2d, g: &Gemm, icg: usize, xg: &[f32], wg: &[f32], bias: Bias, yg: &mut [f32]) {
    let ksize = p.kernel_h * p.kernel_w;
    let kk = icg * ksize;
    let n = g.n;
    let in_plane = p.in_h * p.in_w;
    let mut cols = [[0.0f32; NARROW_KC]; NARROW_N];
    let mut k0 = 0;
    while k0 < kk {
        let kc = NARROW_KC.min(kk - k0);
        for (j, col) in cols.iter_mut().enumerate().take(n) {
            let (oh, ow) = (j / p.out_w, j % p.out_w);
            let h0 = (oh * p.stride_h) as isize - p.pad_top as isize;
            let w0 = (ow * p.stride_w) as isize - p.pad_left as isize;
            for (kr, v) in col[..kc].iter_mut().enumerate() {
                let (ic, r) = ((k0 + kr) / ksize, (k0 + kr) % ksize);
                let h = h0 + ((r / p.kernel_w) * p.dilation_h) as isize;
                let w = w0 + ((r % p.kernel_w) * p.dilation_w) as isize;
                let inside = (0..p.in_h as isize).contains(&h) && (0..p.in_w as isize).contains(&w);
                *v = if inside { xg[ic * in_plane + h as usize * p.in_w + w as usize] } else { 0.0 };
            }
        }
        for i in 0..g.m {
            let arow = &wg[i * kk + k0..][..kc];
            let sums = match n {
                0..=4 => dots::<4>(arow, &cols),
                5..=8 => dots::<8>(arow, &cols),
                _ => dots::<NARROW_N>(arow, &cols),
            };
            for (y, s) in yg[i * n..][..n].iter_mut().zip(sums) {
                *y = if k0 == 0 { s } else { *y + s };
            }
        }
        k0 += kc;
    }
    for i in 0..g.m {
        finish(&mut yg[i * n..][..n], g, bias, i, 0);
    }
}

/// `dot(arow, cols[j][..arow.len()])` for the first `N` columns, in `N` vector accumulators.
#[inline(always)]
fn dots<const N: usize>(arow: &[f32], cols: &[[f32; NARROW_KC]; NARROW_N]) -> [f32; NARROW_N] {
    let kc = arow.len();
    let main = kc - kc % L;
    let mut acc = [zero(); N];
    for c0 in (0..main).step_by(L) {
        let av = load(arow[c0..c0 + L].try_into().unwrap());
        for (acc_j, col) in acc.iter_mut().zip(cols) {
            *acc_j = fma(av, load(col[c0..c0 + L].try_into().unwrap()), *acc_j);
        }
    }
    let mut out = [0.0f32; NARROW_N];
    for ((o, acc_j), col) in out.iter_mut().zip(&acc).zip(cols) {
        let mut lanes = [0.0f32; L];
        store(&mut lanes, *acc_j);
        let mut s = 0.0;
        for v in lanes {
            s += v;
        }
        for (a, b) in arow[main..].iter().zip(&col[main..kc]) {
            s += a * b;
        }
        *o = s;
    }
    out
}
