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
    /// Four signed bytes prepared for [`Dot4::broadcast`].
    type Word: Copy + Default;
    /// `v`'s 32 bytes as the unsigned operand.
    fn unsigned(v: __m256i) -> Self::A;
    /// `v`'s 32 bytes as the signed operand.
    fn signed(v: __m256i) -> Self::W;
    /// Lane by lane, `acc` plus the dot product of the lane's four bytes of `a` and of `w`.
    fn dot(acc: __m256i, a: Self::A, w: Self::W) -> __m256i;

    /// Four signed bytes as [`Dot4::broadcast`] reads them, prepared once per layer: the weights
    /// of four taps of one output channel, which every block of positions reads again.
    fn prepare(word: [i8; 4]) -> Self::Word;
    /// The prepared bytes `word` in every lane, as the signed operand: broadcast loads, no
    /// arithmetic.
    fn broadcast(word: &Self::Word) -> Self::W;

    /// `words[i]` = the prepared bytes `4i..4i + 4` of `row` (zeros past its end).
    #[inline(always)]
    fn prepare_row(row: &[i8], words: &mut [Self::Word]) {
        prepare_each::<Self>(row, words);
    }
}

/// `words[i]` = `D::prepare` of bytes `4i..4i + 4` of `row` (zeros past its end), one word at a
/// time.
#[inline(always)]
fn prepare_each<D: Dot4 + ?Sized>(row: &[i8], words: &mut [D::Word]) {
    for (word, quad) in words.iter_mut().zip(row.chunks(4)) {
        let mut bytes = [0i8; 4];
        bytes[..quad.len()].copy_from_slice(quad);
        *word = D::prepare(bytes);
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

    /// The `i32` words of the even bytes' and of the odd bytes' `i16` pairs.
    type Word = [i32; 2];

    #[inline(always)]
    fn prepare(word: [i8; 4]) -> [i32; 2] {
        let pair = |lo: i8, hi: i8| (lo as i16 as u16 as u32 | (hi as i16 as u16 as u32) << 16) as i32;
        [pair(word[0], word[2]), pair(word[1], word[3])]
    }

    #[inline(always)]
    fn broadcast(word: &[i32; 2]) -> Self::W {
        // SAFETY: the module invariant.
        unsafe { (_mm256_set1_epi32(word[0]), _mm256_set1_epi32(word[1])) }
    }

    /// Eight words per 32 bytes of `row` ([`Dot4::signed`], the even and odd words interleaved),
    /// the rest one at a time.
    #[inline(always)]
    fn prepare_row(row: &[i8], words: &mut [[i32; 2]]) {
        let mut i = 0;
        while 4 * i + 32 <= row.len() && i + 8 <= words.len() {
            let bytes: &[i8] = &row[4 * i..][..32];
            let out: &mut [[i32; 2]] = &mut words[i..][..8];
            // SAFETY: the module invariant; `bytes` has 32 readable bytes and `out` 64 writable.
            unsafe {
                let (even, odd) = Self::signed(_mm256_loadu_si256(bytes.as_ptr().cast()));
                // [e0, o0, e1, o1 | e4, o4, e5, o5] and [e2, o2, e3, o3 | e6, o6, e7, o7].
                let (lo, hi) = (_mm256_unpacklo_epi32(even, odd), _mm256_unpackhi_epi32(even, odd));
                _mm256_storeu_si256(out.as_mut_ptr().cast(), _mm256_permute2x128_si256::<0x20>(lo, hi));
                _mm256_storeu_si256(out[4..].as_mut_ptr().cast(), _mm256_permute2x128_si256::<0x31>(lo, hi));
            }
            i += 8;
        }
        prepare_each::<Self>(&row[4 * i..], &mut words[i..]);
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

    /// The four bytes, little-endian.
    type Word = i32;

    #[inline(always)]
    fn prepare(word: [i8; 4]) -> i32 {
        i32::from_le_bytes(word.map(|b| b as u8))
    }

    #[inline(always)]
    fn broadcast(word: &i32) -> __m256i {
        // SAFETY: the module invariant.
        unsafe { _mm256_set1_epi32(*word) }
    }

    #[inline(always)]
    fn dot(acc: __m256i, a: __m256i, w: __m256i) -> __m256i {
        // SAFETY: the module invariant (the VNNI entry points enable avx512vnni and avx512vl).
        unsafe { _mm256_dpbusd_epi32(acc, a, w) }
    }
}
