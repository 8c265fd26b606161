//! The 4-way byte dot product the int8 kernels are written over ([`Dot4`]): in each of eight
//! `i32` lanes, `acc + a0 w0 + a1 w1 + a2 w2 + a3 w3` for four unsigned bytes `a` and four
//! signed bytes `w`, exact (no saturation, wrapping like TFLite's `int32_t` accumulator). AVX-512
//! VNNI has it as one instruction ([`Vnni`]: `VPDPBUSD`, 256-bit form); AVX2 computes it with
//! two `VPMADDWD` on bytes widened to 16 bits ([`Avx2`]). `VPMADDUBSW`, which multiplies bytes
//! directly, saturates its pair sums to `i16` (255 x 127 x 2 > 32767), so it is not used.
//!
//! Module invariant, on which every `unsafe` block here rests: these functions execute AVX2 (and
//! for [`Vnni`], AVX-512 VNNI / VL) instructions, so they are only reached from the int8 entry
//! points of [`super`], compiled with those target features and called only when detection found
//! the CPU and the OS support them; they are `#[inline(always)]` so that they are compiled there.

use core::arch::x86_64::*;

/// One instruction set's 4-way `u8 x i8` dot product on eight `i32` lanes.
pub(crate) trait Dot4 {
    /// Unsigned bytes prepared for [`Dot4::dot`].
    type A: Copy;
    /// Signed bytes prepared for [`Dot4::dot`].
    type W: Copy;
    /// `v`'s 32 bytes as the unsigned operand.
    fn unsigned(v: __m256i) -> Self::A;
    /// `v`'s 32 bytes as the signed operand.
    fn signed(v: __m256i) -> Self::W;
    /// Lane by lane, `acc` plus the dot product of the lane's four bytes of `a` and of `w`.
    fn dot(acc: __m256i, a: Self::A, w: Self::W) -> __m256i;

    /// The four signed bytes of `word` (little-endian) in every lane, prepared.
    #[inline(always)]
    fn signed_word(word: [i8; 4]) -> Self::W {
        // SAFETY: the module invariant (AVX is on).
        Self::signed(unsafe { _mm256_set1_epi32(i32::from_le_bytes(word.map(|b| b as u8))) })
    }
}

/// AVX2: the even and odd bytes of each 16-bit lane widened to 16 bits, two `VPMADDWD`.
pub(crate) struct Avx2;

impl Dot4 for Avx2 {
    /// (even bytes zero-extended, odd bytes zero-extended).
    type A = (__m256i, __m256i);
    /// (even bytes sign-extended, odd bytes sign-extended).
    type W = (__m256i, __m256i);

    #[inline(always)]
    fn unsigned(v: __m256i) -> Self::A {
        // SAFETY: the module invariant.
        unsafe { (_mm256_and_si256(v, _mm256_set1_epi16(0xff)), _mm256_srli_epi16::<8>(v)) }
    }

    #[inline(always)]
    fn signed(v: __m256i) -> Self::W {
        // SAFETY: the module invariant.
        unsafe { (_mm256_srai_epi16::<8>(_mm256_slli_epi16::<8>(v)), _mm256_srai_epi16::<8>(v)) }
    }

    #[inline(always)]
    fn dot(acc: __m256i, a: Self::A, w: Self::W) -> __m256i {
        // Each product fits 16 bits signed, each pair sum 17: `VPMADDWD` is exact here.
        // SAFETY: the module invariant.
        unsafe { _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_madd_epi16(a.0, w.0), _mm256_madd_epi16(a.1, w.1))) }
    }
}

/// AVX-512 VNNI with AVX512VL: one `VPDPBUSD` on 256-bit vectors.
pub(crate) struct Vnni;

impl Dot4 for Vnni {
    type A = __m256i;
    type W = __m256i;

    #[inline(always)]
    fn unsigned(v: __m256i) -> __m256i {
        v
    }

    #[inline(always)]
    fn signed(v: __m256i) -> __m256i {
        v
    }

    #[inline(always)]
    fn dot(acc: __m256i, a: __m256i, w: __m256i) -> __m256i {
        // SAFETY: the module invariant (the VNNI entry points enable avx512vnni and avx512vl).
        unsafe { _mm256_dpbusd_epi32(acc, a, w) }
    }
}
