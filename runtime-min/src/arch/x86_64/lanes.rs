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
}

/// Implements [`Lanes`] for `$isa` with its intrinsics.
macro_rules! lanes {
    ($isa:ident, $v:ty, $l:literal, $zero:ident, $splat:ident, $mul:ident, $add:ident, $fma:ident, $load:ident, $store:ident) => {
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
    _mm256_storeu_ps
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
    _mm512_storeu_ps
);

// The stack arrays are sized for the widest vectors.
const _: () = assert!(Avx512::L == crate::arch::x86_64_facts::MAX_LANES && Avx2::L <= Avx512::L);
