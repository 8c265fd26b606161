//! The vector operations the FMA kernels are written in ([`Lanes`]), for AVX2 ([`Avx2`], 8 lanes)
//! and AVX-512F ([`Avx512`], 16 lanes).
//!
//! Module invariant, on which every `unsafe` block here rests: these functions execute the
//! instructions of their instruction set, so they are only reached from the entry points of
//! [`super`], which are compiled with its target features and called only when detection found
//! the CPU and the OS support them. They are `#[inline(always)]`, so that they (and the intrinsics
//! they call) are compiled into those entry points with the features on.

use crate::Activation;
use core::arch::x86_64::*;

/// One instruction set's `f32` vectors.
pub(crate) trait Lanes {
    /// One vector register.
    type V: Copy;
    /// Lanes per vector.
    const L: usize;
    /// Vector registers.
    const REGISTERS: usize;
    /// All lanes zero.
    fn zero() -> Self::V;
    /// All lanes `v`.
    fn splat(v: f32) -> Self::V;
    /// `a * b`, rounded.
    fn mul(a: Self::V, b: Self::V) -> Self::V;
    /// `a + b`, rounded.
    fn add(a: Self::V, b: Self::V) -> Self::V;
    /// `a * b + c`, rounded once.
    fn fma(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// Lane by lane `a > b ? a : b`: `b` where either is NaN (x86's `maxps`).
    fn max(a: Self::V, b: Self::V) -> Self::V;
    /// Lane by lane `a < b ? a : b`: `b` where either is NaN (x86's `minps`).
    fn min(a: Self::V, b: Self::V) -> Self::V;
    /// Lane by lane `v < 0 ? w : v` (`v` where it is NaN).
    fn where_negative(v: Self::V, w: Self::V) -> Self::V;
    /// Lane by lane `v > d || v is NaN ? v : d`: max pooling's combination of a running maximum
    /// `d` with the next value `v` (`crate::pool`'s), which keeps the later of two NaNs and, of
    /// two equal values, the earlier (the sign of a zero).
    fn pool_max(d: Self::V, v: Self::V) -> Self::V;
    /// Loads the first `L` floats of `s` (which has at least `L`).
    fn load(s: &[f32]) -> Self::V;
    /// Stores `v` into the first `L` floats of `d` (which has at least `L`).
    fn store(d: &mut [f32], v: Self::V);
    /// Loads the `L` floats at `p`, for loops whose bounds are checked before them.
    ///
    /// # Safety
    /// `p` points to `L` readable floats.
    unsafe fn load_ptr(p: *const f32) -> Self::V;
    /// Loads the `n` floats at `p` (`n <= L`) into the first lanes, the others zero, reading
    /// nothing past them.
    ///
    /// # Safety
    /// `p` points to `n` readable floats.
    unsafe fn load_first_ptr(p: *const f32, n: usize) -> Self::V;
    /// Stores the first `n` lanes of `v` (`n <= L`) into `d[..n]`, writing nothing past them.
    fn store_first(d: &mut [f32], v: Self::V, n: usize);
    /// `dst[k * ds + i] = src[i * ss + k]` for `i < L` and `k < n` (`1 <= n <= L`): `L` rows of
    /// `n` values, `ss` apart in `src`, transposed into `n` rows of `L` values, `ds` apart in
    /// `dst` (rows of fewer than `L` values read with a masked load: nothing past them).
    fn transpose(src: &[f32], ss: usize, n: usize, dst: &mut [f32], ds: usize);
    /// The even and the odd lanes of `a` then `b` (`2 * L` consecutive values): `([a0, a2, ..,
    /// b0, b2, ..], [a1, a3, .., b1, b3, ..])`.
    fn deinterleave(a: Self::V, b: Self::V) -> (Self::V, Self::V);
    /// Writes rows `0..mr` of a register tile of `C` consecutive columns, column `c` holding its
    /// rows in the `R` vectors `acc[c]`, as runs: row `r` to `rows[r * rs..][..C]`. Returns false,
    /// writing nothing, where this instruction set has no transposes for the tile.
    fn store_rows<const R: usize, const C: usize>(
        acc: &[[Self::V; R]; C],
        mr: usize,
        rows: &mut [f32],
        rs: usize,
    ) -> bool;
}

/// The two-operand methods of [`Lanes`] on vectors `$v`, each its intrinsic.
macro_rules! binary_ops {
    ($v:ty; $($name:ident => $intrinsic:ident),* $(,)?) => {
        $(
            #[inline(always)]
            fn $name(a: $v, b: $v) -> $v {
                // SAFETY: the module invariant (the features are on and supported).
                unsafe { $intrinsic(a, b) }
            }
        )*
    };
}

/// Implements [`Lanes`] for `$isa` with its intrinsics.
macro_rules! lanes {
    ($isa:ident, $v:ty, $l:literal, $registers:literal, $zero:ident, $splat:ident, $mul:ident, $add:ident, $fma:ident, $max:ident, $min:ident, $where_negative:ident, $pool_max:ident, $load:ident, $store:ident, $load_first:ident, $store_first:ident, $transpose:ident, $deinterleave:ident, $store_rows:ident) => {
        impl Lanes for $isa {
            type V = $v;
            const L: usize = $l;
            const REGISTERS: usize = $registers;
            #[inline(always)]
            fn zero() -> $v {
                // SAFETY: the module invariant (the features are on and supported).
                unsafe { $zero() }
            }
            #[inline(always)]
            fn splat(v: f32) -> $v {
                // SAFETY: as in `zero`.
                unsafe { $splat(v) }
            }
            binary_ops!($v; mul => $mul, add => $add, max => $max, min => $min);
            #[inline(always)]
            fn fma(a: $v, b: $v, c: $v) -> $v {
                // SAFETY: as in `zero`.
                unsafe { $fma(a, b, c) }
            }
            #[inline(always)]
            fn where_negative(v: $v, w: $v) -> $v {
                $where_negative(v, w)
            }
            #[inline(always)]
            fn pool_max(d: $v, v: $v) -> $v {
                $pool_max(d, v)
            }
            #[inline(always)]
            fn load(s: &[f32]) -> $v {
                let s = &s[..$l];
                // SAFETY: as in `zero`; the pointer is to `L` floats, and unaligned loads have no
                // alignment requirement.
                unsafe { $load(s.as_ptr()) }
            }
            #[inline(always)]
            unsafe fn load_ptr(p: *const f32) -> $v {
                // SAFETY: as in `zero`, and the caller's promise that `p` points to `L` floats.
                unsafe { $load(p) }
            }
            #[inline(always)]
            unsafe fn load_first_ptr(p: *const f32, n: usize) -> $v {
                // SAFETY: the caller's promise that `p` points to `n` floats.
                unsafe { $load_first(p, n) }
            }
            #[inline(always)]
            fn store_first(d: &mut [f32], v: $v, n: usize) {
                $store_first(&mut d[..n], v)
            }
            #[inline(always)]
            fn store(d: &mut [f32], v: $v) {
                let d = &mut d[..$l];
                // SAFETY: as in `load`, with an exclusive borrow.
                unsafe { $store(d.as_mut_ptr(), v) }
            }
            #[inline(always)]
            fn transpose(src: &[f32], ss: usize, n: usize, dst: &mut [f32], ds: usize) {
                $transpose(src, ss, n, dst, ds)
            }
            #[inline(always)]
            fn deinterleave(a: $v, b: $v) -> ($v, $v) {
                $deinterleave(a, b)
            }
            #[inline(always)]
            fn store_rows<const R: usize, const C: usize>(
                acc: &[[$v; R]; C],
                mr: usize,
                rows: &mut [f32],
                rs: usize,
            ) -> bool {
                $store_rows::<R, C>(acc, mr, rows, rs)
            }
        }
    };
}

/// AVX2 + FMA: 8 lanes.
pub(crate) struct Avx2;
lanes!(
    Avx2,
    __m256,
    8,
    16,
    _mm256_setzero_ps,
    _mm256_set1_ps,
    _mm256_mul_ps,
    _mm256_add_ps,
    _mm256_fmadd_ps,
    _mm256_max_ps,
    _mm256_min_ps,
    where_negative_avx2,
    pool_max_avx2,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    load_first_avx2,
    store_first_avx2,
    transpose_avx2,
    deinterleave_avx2,
    store_rows_avx2
);

/// AVX-512F: 16 lanes.
pub(crate) struct Avx512;
lanes!(
    Avx512,
    __m512,
    16,
    32,
    _mm512_setzero_ps,
    _mm512_set1_ps,
    _mm512_mul_ps,
    _mm512_add_ps,
    _mm512_fmadd_ps,
    _mm512_max_ps,
    _mm512_min_ps,
    where_negative_avx512,
    pool_max_avx512,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    load_first_avx512,
    store_first_avx512,
    transpose_avx512,
    deinterleave_avx512,
    store_rows_avx512
);

/// [`Lanes::where_negative`] on AVX2: a blend on an ordered less-than (false for NaN).
#[inline(always)]
fn where_negative_avx2(v: __m256, w: __m256) -> __m256 {
    // SAFETY: the module invariant.
    unsafe { _mm256_blendv_ps(v, w, _mm256_cmp_ps::<_CMP_LT_OQ>(v, _mm256_setzero_ps())) }
}

/// [`Lanes::where_negative`] on AVX-512: a masked blend on an ordered less-than (false for NaN).
#[inline(always)]
fn where_negative_avx512(v: __m512, w: __m512) -> __m512 {
    // SAFETY: the module invariant.
    unsafe { _mm512_mask_blend_ps(_mm512_cmp_ps_mask::<_CMP_LT_OQ>(v, _mm512_setzero_ps()), v, w) }
}

/// [`Lanes::pool_max`] on AVX2: a blend on an ordered greater-than or an unordered compare of `v`
/// with itself.
#[inline(always)]
fn pool_max_avx2(d: __m256, v: __m256) -> __m256 {
    // SAFETY: the module invariant.
    unsafe {
        let take = _mm256_or_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(v, d), _mm256_cmp_ps::<_CMP_UNORD_Q>(v, v));
        _mm256_blendv_ps(d, v, take)
    }
}

/// [`Lanes::pool_max`] on AVX-512: a masked blend on an ordered greater-than or an unordered
/// compare of `v` with itself.
#[inline(always)]
fn pool_max_avx512(d: __m512, v: __m512) -> __m512 {
    // SAFETY: the module invariant.
    unsafe {
        let take = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(v, d) | _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
        _mm512_mask_blend_ps(take, d, v)
    }
}

/// The activation of every lane of `v` in registers, with the bits of [`Activation::apply`]
/// (NaN included), where it has a vector form: None, ReLU (`v < 0 ? 0 : v` is `max(0, v)`),
/// Clip with `min <= max` (`max(min, v)`, then `min(max, that)`), LeakyRelu. `None` for the
/// others, which the caller applies on a copy of the lanes.
#[inline(always)]
pub(super) fn activate<S: Lanes>(act: Activation, v: S::V) -> Option<S::V> {
    match act {
        Activation::None => Some(v),
        Activation::Relu => Some(S::max(S::zero(), v)),
        Activation::Clip { min, max } if min <= max => Some(S::min(S::splat(max), S::max(S::splat(min), v))),
        Activation::LeakyRelu { alpha } => Some(S::where_negative(v, S::mul(S::splat(alpha), v))),
        _ => None,
    }
}

/// The AVX2 mask of the first `n` lanes (`n <= 8`).
#[inline(always)]
fn first_lanes_avx2(n: usize) -> __m256i {
    // SAFETY: the module invariant.
    unsafe { _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)) }
}

/// [`Lanes::load_first_ptr`] on AVX2: a masked load.
///
/// # Safety
/// `p` points to `n <= 8` readable floats.
#[inline(always)]
unsafe fn load_first_avx2(p: *const f32, n: usize) -> __m256 {
    // SAFETY: the module invariant; the mask reads only the first `n` floats.
    unsafe { _mm256_maskload_ps(p, first_lanes_avx2(n)) }
}

/// [`Lanes::store_first`] on AVX2: a masked store of `d.len() <= 8` lanes.
#[inline(always)]
fn store_first_avx2(d: &mut [f32], v: __m256) {
    // SAFETY: the module invariant; the mask writes only the first `d.len()` floats.
    unsafe { _mm256_maskstore_ps(d.as_mut_ptr(), first_lanes_avx2(d.len()), v) }
}

/// The AVX-512 mask of the first `n` lanes (`n <= 16`).
#[inline(always)]
fn first_lanes_avx512(n: usize) -> __mmask16 {
    ((1u32 << n) - 1) as __mmask16
}

/// [`Lanes::load_first_ptr`] on AVX-512: a masked load (masked-off lanes are neither read nor
/// faulted on).
///
/// # Safety
/// `p` points to `n <= 16` readable floats.
#[inline(always)]
unsafe fn load_first_avx512(p: *const f32, n: usize) -> __m512 {
    // SAFETY: the module invariant; the mask reads only the first `n` floats.
    unsafe { _mm512_maskz_loadu_ps(first_lanes_avx512(n), p) }
}

/// [`Lanes::store_first`] on AVX-512: a masked store of `d.len() <= 16` lanes.
#[inline(always)]
fn store_first_avx512(d: &mut [f32], v: __m512) {
    // SAFETY: the module invariant; the mask writes only the first `d.len()` floats.
    unsafe { _mm512_mask_storeu_ps(d.as_mut_ptr(), first_lanes_avx512(d.len()), v) }
}

/// [`Lanes::deinterleave`] on AVX2: in-lane shuffles of both vectors' even (odd) values, then
/// their 64-bit halves put in order.
#[inline(always)]
fn deinterleave_avx2(a: __m256, b: __m256) -> (__m256, __m256) {
    // SAFETY: the module invariant.
    unsafe {
        let order = |v: __m256| _mm256_castpd_ps(_mm256_permute4x64_pd::<0xD8>(_mm256_castps_pd(v)));
        (order(_mm256_shuffle_ps::<0x88>(a, b)), order(_mm256_shuffle_ps::<0xDD>(a, b)))
    }
}

/// [`Lanes::deinterleave`] on AVX-512: one two-source permute each.
#[inline(always)]
fn deinterleave_avx512(a: __m512, b: __m512) -> (__m512, __m512) {
    // SAFETY: the module invariant.
    unsafe {
        let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        let odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
        (_mm512_permutex2var_ps(a, even, b), _mm512_permutex2var_ps(a, odd, b))
    }
}

/// [`Lanes::transpose`] on AVX2: eight loads (masked below eight values), [`transpose8`], `n`
/// stores.
#[inline(always)]
fn transpose_avx2(src: &[f32], ss: usize, n: usize, dst: &mut [f32], ds: usize) {
    assert!((1..=8).contains(&n) && 7 * ss + n <= src.len() && (n - 1) * ds + 8 <= dst.len());
    let mut rows = [Avx2::zero(); 8];
    // SAFETY: the module invariant; row `i` reads `src[i * ss..][..n]` (the mask keeps a short
    // row's load to its `n` values) and result `k` writes `dst[k * ds..][..8]`, inside the
    // slices by the assertion.
    unsafe {
        let mask = first_lanes_avx2(n);
        for (i, row) in rows.iter_mut().enumerate() {
            let at = src.as_ptr().add(i * ss);
            *row = if n == 8 { _mm256_loadu_ps(at) } else { _mm256_maskload_ps(at, mask) };
        }
        // A constant trip count: over the first `n` only, LLVM made the stores one `memcpy`
        // call of `n` vectors (where `ds` is a vector's width), slower than the transposes.
        let t = transpose8(rows);
        for (k, &v) in t.iter().enumerate() {
            if k < n {
                _mm256_storeu_ps(dst.as_mut_ptr().add(k * ds), v);
            }
        }
    }
}

/// [`Lanes::transpose`] on AVX-512: sixteen loads (masked below sixteen values),
/// [`transpose16`], `n` stores.
#[inline(always)]
fn transpose_avx512(src: &[f32], ss: usize, n: usize, dst: &mut [f32], ds: usize) {
    assert!((1..=16).contains(&n) && 15 * ss + n <= src.len() && (n - 1) * ds + 16 <= dst.len());
    let mut rows = [Avx512::zero(); 16];
    let mask = first_lanes_avx512(n);
    // SAFETY: as in `transpose_avx2` (masked-off lanes are neither read nor faulted on).
    unsafe {
        for (i, row) in rows.iter_mut().enumerate() {
            *row = _mm512_maskz_loadu_ps(mask, src.as_ptr().add(i * ss));
        }
        // A constant trip count, as in `transpose_avx2`.
        let t = transpose16(rows);
        for (k, &v) in t.iter().enumerate() {
            if k < n {
                _mm512_storeu_ps(dst.as_mut_ptr().add(k * ds), v);
            }
        }
    }
}

/// [`Lanes::store_rows`] on AVX2, for tiles of up to 16 columns: each vector of 8 rows of up to 8
/// columns is transposed ([`transpose8`], missing columns zero) and each of its rows stored as
/// one run. Writing a tile value by value through the stack took a third of a 3-input-channel
/// convolution's time.
#[inline(always)]
fn store_rows_avx2<const R: usize, const C: usize>(
    acc: &[[__m256; R]; C],
    mr: usize,
    rows: &mut [f32],
    rs: usize,
) -> bool {
    if C > 16 {
        return false;
    }
    // Constant indices only: indexing `acc` by a value the compiler does not unroll keeps the
    // accumulators in memory throughout the tile's loop (a 12-column tile ran 2x slower).
    for v in 0..R {
        store_rows8::<R, C, 0>(acc, v, mr, rows, rs);
        if C > 8 {
            store_rows8::<R, C, 8>(acc, v, mr, rows, rs);
        }
    }
    true
}

/// Rows `8 * v..` (up to `mr`) of columns `C0..C0 + 8` (up to `C`) of [`store_rows_avx2`]'s tile.
#[inline(always)]
fn store_rows8<const R: usize, const C: usize, const C0: usize>(
    acc: &[[__m256; R]; C],
    v: usize,
    mr: usize,
    rows: &mut [f32],
    rs: usize,
) {
    let n = C.saturating_sub(C0).min(8);
    let t = transpose8(core::array::from_fn(|i| if C0 + i < C { acc[C0 + i][v] } else { Avx2::zero() }));
    for (i, row) in t.into_iter().enumerate().take(mr.saturating_sub(v * 8)) {
        let mut lanes = [0.0; 8];
        Avx2::store(&mut lanes, row);
        rows[(v * 8 + i) * rs + C0..][..n].copy_from_slice(&lanes[..n]);
    }
}

/// [`Lanes::store_rows`] on AVX-512, for tiles of up to 16 columns: each vector of 16 rows is
/// transposed ([`transpose16`], missing columns zero) and each of its rows stored as one masked
/// run of `C` values (writing a tile value by value through the stack took a sixth of a 3x3
/// convolution's time).
#[inline(always)]
fn store_rows_avx512<const R: usize, const C: usize>(
    acc: &[[__m512; R]; C],
    mr: usize,
    rows: &mut [f32],
    rs: usize,
) -> bool {
    if C > 16 {
        return false;
    }
    let mask = first_lanes_avx512(C);
    // Constant indices only, as in `store_rows_avx2`.
    for v in 0..R {
        let mut columns = [Avx512::zero(); 16];
        for (column, acc_c) in columns.iter_mut().zip(acc) {
            *column = acc_c[v];
        }
        let t = transpose16(columns);
        for (i, row) in t.into_iter().enumerate().take(mr.saturating_sub(v * 16)) {
            let dst = &mut rows[(v * 16 + i) * rs..][..C];
            // SAFETY: the module invariant; the mask writes lanes `0..C`, all inside `dst`
            // (masked-off lanes are neither written nor faulted on).
            unsafe { _mm512_mask_storeu_ps(dst.as_mut_ptr(), mask, row) }
        }
    }
    true
}

/// The 16 x 16 transpose: lane `i` of vector `k` of the result is lane `k` of vector `i` of
/// `rows`. Pairs of rows interleaved, then fours, within 128-bit lanes; then the 4 x 4 grid of
/// 128-bit lanes transposed.
#[inline(always)]
fn transpose16(rows: [__m512; 16]) -> [__m512; 16] {
    // Loops, not `array::from_fn`: a closure is compiled without the target features, and where
    // LLVM did not inline it, its intrinsics became calls.
    let mut t = [Avx512::zero(); 16];
    let mut s = [Avx512::zero(); 16];
    let mut out = [Avx512::zero(); 16];
    // SAFETY: the module invariant (the features are on and supported).
    unsafe {
        for i in (0..16).step_by(2) {
            t[i] = _mm512_unpacklo_ps(rows[i], rows[i + 1]);
            t[i + 1] = _mm512_unpackhi_ps(rows[i], rows[i + 1]);
        }
        // `s[4 * g + j]`, lane `L`: column `4 * L + j` of rows `4 * g..4 * g + 4`.
        for g in (0..16).step_by(4) {
            s[g] = _mm512_shuffle_ps::<0x44>(t[g], t[g + 2]);
            s[g + 1] = _mm512_shuffle_ps::<0xEE>(t[g], t[g + 2]);
            s[g + 2] = _mm512_shuffle_ps::<0x44>(t[g + 1], t[g + 3]);
            s[g + 3] = _mm512_shuffle_ps::<0xEE>(t[g + 1], t[g + 3]);
        }
        // For each `j`, the 128-bit lanes of `s[j], s[4 + j], s[8 + j], s[12 + j]` transposed:
        // result `4 * L + j` is lane `L` of each.
        for j in 0..4 {
            let u0 = _mm512_shuffle_f32x4::<0x44>(s[j], s[4 + j]);
            let u1 = _mm512_shuffle_f32x4::<0xEE>(s[j], s[4 + j]);
            let u2 = _mm512_shuffle_f32x4::<0x44>(s[8 + j], s[12 + j]);
            let u3 = _mm512_shuffle_f32x4::<0xEE>(s[8 + j], s[12 + j]);
            out[j] = _mm512_shuffle_f32x4::<0x88>(u0, u2);
            out[4 + j] = _mm512_shuffle_f32x4::<0xDD>(u0, u2);
            out[8 + j] = _mm512_shuffle_f32x4::<0x88>(u1, u3);
            out[12 + j] = _mm512_shuffle_f32x4::<0xDD>(u1, u3);
        }
    }
    out
}

/// The 8 x 8 transpose: lane `i` of vector `k` of the result is lane `k` of vector `i` of `rows`.
#[inline(always)]
pub(super) fn transpose8(rows: [__m256; 8]) -> [__m256; 8] {
    let [r0, r1, r2, r3, r4, r5, r6, r7] = rows;
    // SAFETY: the module invariant (the features are on and supported).
    unsafe {
        let (t0, t1) = (_mm256_unpacklo_ps(r0, r1), _mm256_unpackhi_ps(r0, r1));
        let (t2, t3) = (_mm256_unpacklo_ps(r2, r3), _mm256_unpackhi_ps(r2, r3));
        let (t4, t5) = (_mm256_unpacklo_ps(r4, r5), _mm256_unpackhi_ps(r4, r5));
        let (t6, t7) = (_mm256_unpacklo_ps(r6, r7), _mm256_unpackhi_ps(r6, r7));
        let (s0, s1) = (_mm256_shuffle_ps::<0x44>(t0, t2), _mm256_shuffle_ps::<0xEE>(t0, t2));
        let (s2, s3) = (_mm256_shuffle_ps::<0x44>(t1, t3), _mm256_shuffle_ps::<0xEE>(t1, t3));
        let (s4, s5) = (_mm256_shuffle_ps::<0x44>(t4, t6), _mm256_shuffle_ps::<0xEE>(t4, t6));
        let (s6, s7) = (_mm256_shuffle_ps::<0x44>(t5, t7), _mm256_shuffle_ps::<0xEE>(t5, t7));
        [
            _mm256_permute2f128_ps::<0x20>(s0, s4),
            _mm256_permute2f128_ps::<0x20>(s1, s5),
            _mm256_permute2f128_ps::<0x20>(s2, s6),
            _mm256_permute2f128_ps::<0x20>(s3, s7),
            _mm256_permute2f128_ps::<0x31>(s0, s4),
            _mm256_permute2f128_ps::<0x31>(s1, s5),
            _mm256_permute2f128_ps::<0x31>(s2, s6),
            _mm256_permute2f128_ps::<0x31>(s3, s7),
        ]
    }
}

// The stack arrays are sized for the widest vectors.
const _: () = assert!(Avx512::L == crate::arch::x86_64_facts::MAX_LANES && Avx2::L <= Avx512::L);
