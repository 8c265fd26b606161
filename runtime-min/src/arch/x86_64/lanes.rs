//! The vector operations the FMA kernels are written in ([`Lanes`]), for AVX2 ([`Avx2`], 8 lanes)
//! and AVX-512F ([`Avx512`], 16 lanes).
//!
//! Module invariant, on which every `unsafe` block here rests: these functions execute the
//! instructions of their instruction set, so they are only reached from the entry points of
//! [`super`], which are compiled with its target features and called only when detection found
//! the CPU and the OS support them. They are `#[inline(always)]`, so that they (and the intrinsics
//! they call) are compiled into those entry points with the features on.

use core::arch::x86_64::*;

/// One instruction set's `f32` vectors.
pub(crate) trait Lanes {
    /// One vector register.
    type V: Copy;
    /// Lanes per vector.
    const L: usize;
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
    /// Loads the first `L` floats of `s` (which has at least `L`).
    fn load(s: &[f32]) -> Self::V;
    /// Stores `v` into the first `L` floats of `d` (which has at least `L`).
    fn store(d: &mut [f32], v: Self::V);
    /// Loads the `L` floats at `p`, for loops whose bounds are checked before them.
    ///
    /// # Safety
    /// `p` points to `L` readable floats.
    unsafe fn load_ptr(p: *const f32) -> Self::V;
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

/// Implements [`Lanes`] for `$isa` with its intrinsics.
macro_rules! lanes {
    ($isa:ident, $v:ty, $l:literal, $zero:ident, $splat:ident, $mul:ident, $add:ident, $fma:ident, $load:ident, $store:ident, $store_rows:ident) => {
        impl Lanes for $isa {
            type V = $v;
            const L: usize = $l;
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
            #[inline(always)]
            fn mul(a: $v, b: $v) -> $v {
                // SAFETY: as in `zero`.
                unsafe { $mul(a, b) }
            }
            #[inline(always)]
            fn add(a: $v, b: $v) -> $v {
                // SAFETY: as in `zero`.
                unsafe { $add(a, b) }
            }
            #[inline(always)]
            fn fma(a: $v, b: $v, c: $v) -> $v {
                // SAFETY: as in `zero`.
                unsafe { $fma(a, b, c) }
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
            fn store(d: &mut [f32], v: $v) {
                let d = &mut d[..$l];
                // SAFETY: as in `load`, with an exclusive borrow.
                unsafe { $store(d.as_mut_ptr(), v) }
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
    _mm256_setzero_ps,
    _mm256_set1_ps,
    _mm256_mul_ps,
    _mm256_add_ps,
    _mm256_fmadd_ps,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    store_rows_avx2
);

/// AVX-512F: 16 lanes.
pub(crate) struct Avx512;
lanes!(
    Avx512,
    __m512,
    16,
    _mm512_setzero_ps,
    _mm512_set1_ps,
    _mm512_mul_ps,
    _mm512_add_ps,
    _mm512_fmadd_ps,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    store_rows_avx512
);

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

/// [`Lanes::store_rows`] on AVX-512: no transposes (the caller writes the tile value by value).
#[inline(always)]
fn store_rows_avx512<const R: usize, const C: usize>(_: &[[__m512; R]; C], _: usize, _: &mut [f32], _: usize) -> bool {
    false
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
