//! Loads, stores and lane operations on 256-bit integer vectors that the int8 kernels share, over
//! slices (bounds checked here, once per vector).
//!
//! Module invariant, on which every `unsafe` block here rests: these functions execute AVX2
//! instructions, so they are only reached from the int8 entry points of [`super`], which are
//! compiled with AVX2 (at least) and called only when detection found the CPU and the OS support
//! it; they are `#[inline(always)]` so that they are compiled there. Unaligned loads and stores
//! have no alignment requirement.

use core::arch::x86_64::*;

/// The first 32 bytes of `s`.
#[inline(always)]
pub(super) fn load32(s: &[u8]) -> __m256i {
    let s = &s[..32];
    // SAFETY: the module invariant; `s` has 32 readable bytes.
    unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
}

/// The first 16 bytes of `s`.
#[inline(always)]
pub(super) fn load16(s: &[u8]) -> __m128i {
    let s = &s[..16];
    // SAFETY: the module invariant; `s` has 16 readable bytes.
    unsafe { _mm_loadu_si128(s.as_ptr().cast()) }
}

/// The first 16 bytes of `s`, each extended to an `i16` lane (sign-extended when `signed`).
#[inline(always)]
pub(super) fn widen16(s: &[u8], signed: bool) -> __m256i {
    widen(load16(s), signed)
}

/// The 16 bytes of `v`, each extended to an `i16` lane (sign-extended when `signed`).
#[inline(always)]
pub(super) fn widen(v: __m128i, signed: bool) -> __m256i {
    // SAFETY: the module invariant.
    unsafe {
        if signed {
            _mm256_cvtepi8_epi16(v)
        } else {
            _mm256_cvtepu8_epi16(v)
        }
    }
}

/// `dst[i]` = byte `src[i]` extended to `i16` (sign-extended when `signed`), 16 at a time
/// (`dst.len()` a multiple of 16, `src` at least as long).
#[inline(always)]
pub(super) fn widen_into(src: &[u8], signed: bool, dst: &mut [i16]) {
    for (i, d) in dst.chunks_exact_mut(16).enumerate() {
        store_i16(d, widen16(&src[i * 16..], signed));
    }
}

/// Stores the 16 `i16` lanes of `v` at the start of `d`.
#[inline(always)]
pub(super) fn store_i16(d: &mut [i16], v: __m256i) {
    let d = &mut d[..16];
    // SAFETY: the module invariant; `d` has 16 writable `i16`.
    unsafe { _mm256_storeu_si256(d.as_mut_ptr().cast(), v) }
}

/// The first 8 `i32` of `s`.
#[inline(always)]
pub(super) fn load_i32(s: &[i32]) -> __m256i {
    let s = &s[..8];
    // SAFETY: the module invariant; `s` has 8 readable `i32`.
    unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
}

/// The `i16` lanes of `a` and `b` interleaved: `[a0, b0, .., a3, b3 | a8, b8, .., a11, b11]` and
/// `[a4, b4, .., a7, b7 | a12, b12, .., a15, b15]` (`VPUNPCKLWD`, `VPUNPCKHWD`).
#[inline(always)]
pub(super) fn unpack16(a: __m256i, b: __m256i) -> [__m256i; 2] {
    // SAFETY: the module invariant.
    unsafe { [_mm256_unpacklo_epi16(a, b), _mm256_unpackhi_epi16(a, b)] }
}

/// The first 16 `i16` of `s`.
#[inline(always)]
pub(super) fn load_i16(s: &[i16]) -> __m256i {
    let s = &s[..16];
    // SAFETY: the module invariant; `s` has 16 readable `i16`.
    unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
}

/// The `i32` lanes of `a` and `b` interleaved: `[a0, b0, a1, b1 | a4, b4, a5, b5]` and `[a2, b2,
/// a3, b3 | a6, b6, a7, b7]` (`VPUNPCKLDQ`, `VPUNPCKHDQ`).
#[inline(always)]
pub(super) fn interleave32(a: __m256i, b: __m256i) -> [__m256i; 2] {
    // SAFETY: the module invariant.
    unsafe { [_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b)] }
}

/// `acc` plus, in each `i32` lane, the dot product of its two `i16` of `a` and of `b`
/// (`VPMADDWD`; exact unless both pairs are `(-32768, -32768)`).
#[inline(always)]
pub(super) fn madd(acc: __m256i, a: __m256i, b: __m256i) -> __m256i {
    // SAFETY: the module invariant.
    unsafe { _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)) }
}

/// The first 8 bytes of `s`, each extended to an `i32` lane (sign-extended when `signed`).
#[inline(always)]
pub(super) fn widen8(s: &[u8], signed: bool) -> __m256i {
    let s = &s[..8];
    // SAFETY: the module invariant; `s` has 8 readable bytes.
    unsafe {
        let v = _mm_loadl_epi64(s.as_ptr().cast());
        if signed {
            _mm256_cvtepi8_epi32(v)
        } else {
            _mm256_cvtepu8_epi32(v)
        }
    }
}

/// `v` in every lane.
#[inline(always)]
pub(super) fn splat(v: i32) -> __m256i {
    // SAFETY: the module invariant.
    unsafe { _mm256_set1_epi32(v) }
}

/// The eight lanes of `v`.
#[inline(always)]
pub(super) fn lanes(v: __m256i) -> [i32; 8] {
    let mut out = [0i32; 8];
    // SAFETY: the module invariant; `out` has 32 writable bytes.
    unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), v) };
    out
}

/// The wrapping sum of `v`'s lanes.
#[inline(always)]
pub(super) fn sum_lanes(v: __m256i) -> i32 {
    lanes(v).iter().fold(0i32, |s, &l| s.wrapping_add(l))
}

/// `a + b` lane by lane (wrapping).
#[inline(always)]
pub(super) fn add(a: __m256i, b: __m256i) -> __m256i {
    // SAFETY: the module invariant.
    unsafe { _mm256_add_epi32(a, b) }
}

/// `a - b` lane by lane (wrapping).
#[inline(always)]
pub(super) fn sub(a: __m256i, b: __m256i) -> __m256i {
    // SAFETY: the module invariant.
    unsafe { _mm256_sub_epi32(a, b) }
}

/// `v << n` lane by lane (wrapping; `n` in `0..32`).
#[inline(always)]
pub(super) fn shl(v: __m256i, n: i32) -> __m256i {
    // SAFETY: the module invariant.
    unsafe { _mm256_sllv_epi32(v, _mm256_set1_epi32(n)) }
}

/// `v` with every byte xor `flip`.
#[inline(always)]
pub(super) fn xor_bytes(v: __m256i, flip: u8) -> __m256i {
    // SAFETY: the module invariant.
    unsafe { _mm256_xor_si256(v, _mm256_set1_epi8(flip as i8)) }
}

/// `v` with every byte xor `flip`.
#[inline(always)]
pub(super) fn xor16(v: __m128i, flip: u8) -> __m128i {
    // SAFETY: the module invariant.
    unsafe { _mm_xor_si128(v, _mm_set1_epi8(flip as i8)) }
}

/// Four rows of 16 bytes as 16 columns of four: byte `t` of column `j` is byte `j` of row `t`;
/// columns 0-7 in the first vector, 8-15 in the second.
#[inline(always)]
pub(super) fn transpose4(rows: [__m128i; 4]) -> [__m256i; 2] {
    // SAFETY: the module invariant.
    unsafe {
        let lo01 = _mm_unpacklo_epi8(rows[0], rows[1]);
        let hi01 = _mm_unpackhi_epi8(rows[0], rows[1]);
        let lo23 = _mm_unpacklo_epi8(rows[2], rows[3]);
        let hi23 = _mm_unpackhi_epi8(rows[2], rows[3]);
        [
            _mm256_set_m128i(_mm_unpackhi_epi16(lo01, lo23), _mm_unpacklo_epi16(lo01, lo23)),
            _mm256_set_m128i(_mm_unpackhi_epi16(hi01, hi23), _mm_unpacklo_epi16(hi01, hi23)),
        ]
    }
}

/// Four rows of four 4-byte words as four columns: word `t` of column `j` is word `j` of row
/// `t`.
#[inline(always)]
pub(super) fn transpose_dwords(rows: [__m128i; 4]) -> [__m128i; 4] {
    // SAFETY: the module invariant.
    unsafe {
        let (lo01, hi01) = (_mm_unpacklo_epi32(rows[0], rows[1]), _mm_unpackhi_epi32(rows[0], rows[1]));
        let (lo23, hi23) = (_mm_unpacklo_epi32(rows[2], rows[3]), _mm_unpackhi_epi32(rows[2], rows[3]));
        [
            _mm_unpacklo_epi64(lo01, lo23),
            _mm_unpackhi_epi64(lo01, lo23),
            _mm_unpacklo_epi64(hi01, hi23),
            _mm_unpackhi_epi64(hi01, hi23),
        ]
    }
}

/// Stores `v` into the first 32 bytes of `d`.
#[inline(always)]
pub(super) fn store32(d: &mut [u8], v: __m256i) {
    let d = &mut d[..32];
    // SAFETY: the module invariant; `d` has 32 writable bytes.
    unsafe { _mm256_storeu_si256(d.as_mut_ptr().cast(), v) }
}

/// Sixteen zero bytes.
#[inline(always)]
pub(super) fn zero16() -> __m128i {
    // SAFETY: the module invariant.
    unsafe { _mm_setzero_si128() }
}

/// The even bytes of `s`'s first 32, then its odd ones.
#[inline(always)]
pub(super) fn deinterleave2(s: &[u8]) -> [[u8; 16]; 2] {
    let v = load32(s);
    let mut out = [[0u8; 16]; 2];
    // SAFETY: the module invariant; `out` has 32 writable bytes.
    unsafe {
        let split = _mm256_setr_epi8(
            0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, //
            0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
        );
        // Per 128-bit lane evens then odds; then the lanes' evens together and their odds.
        let v = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_shuffle_epi8(v, split));
        _mm256_storeu_si256(out.as_mut_ptr().cast(), v);
    }
    out
}

/// The even bytes of `s`'s first 16, then its odd ones.
#[inline(always)]
pub(super) fn deinterleave16(s: &[u8]) -> [[u8; 8]; 2] {
    let v = load16(s);
    let mut out = [[0u8; 8]; 2];
    // SAFETY: the module invariant; `out` has 16 writable bytes.
    unsafe {
        let split = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
        _mm_storeu_si128(out.as_mut_ptr().cast(), _mm_shuffle_epi8(v, split));
    }
    out
}

/// The raw bytes of `x`.
#[inline(always)]
pub(super) fn bytes<T: crate::quant::QuantInt>(x: &[T]) -> &[u8] {
    // `T` is `i8` or `u8` here (the callers check; `i16` never arrives): one byte, every bit
    // pattern valid; the sealed trait admits no other 1-byte type.
    assert_eq!(core::mem::size_of::<T>(), 1, "8-bit elements only");
    // SAFETY: `T` is a 1-byte integer type (asserted above), so `x`'s memory is `x.len()`
    // initialised bytes, valid as `u8`, borrowed for the same lifetime.
    unsafe { core::slice::from_raw_parts(x.as_ptr().cast(), x.len()) }
}

/// `dst[i] = src[i] ^ flip` for the bytes of `dst` (`src` at least as long), 16 at a time.
#[inline(always)]
pub(super) fn copy_xor(dst: &mut [u8], src: &[u8], flip: u8) {
    let n = dst.len();
    let src = &src[..n];
    let mut i = 0;
    while i + 16 <= n {
        let (d, s) = (&mut dst[i..i + 16], &src[i..i + 16]);
        // SAFETY: the module invariant; `s` has 16 readable bytes, `d` 16 writable ones.
        unsafe {
            let v = _mm_xor_si128(_mm_loadu_si128(s.as_ptr().cast()), _mm_set1_epi8(flip as i8));
            _mm_storeu_si128(d.as_mut_ptr().cast(), v);
        }
        i += 16;
    }
    // The rest 8, 4, 2, 1 bytes at a time (short rows are common: 5-column KWS planes).
    for width in [8, 4, 2, 1] {
        if n - i >= width {
            let word = u64::from_le_bytes(core::array::from_fn(|j| if j < width { src[i + j] } else { 0 }));
            let flipped = (word ^ u64::from_ne_bytes([flip; 8])).to_le_bytes();
            dst[i..i + width].copy_from_slice(&flipped[..width]);
            i += width;
        }
    }
}

/// Sixteen rows of 16 bytes transposed: byte `j` of row `i` of the result is byte `i` of row `j`
/// of `rows`. Each round makes rows `2i` and `2i + 1` the byte interleaving of rows `i` and `i +
/// 8` (low and high halves), which rotates the 8-bit index `(row, column)` of every byte by one
/// bit: four rounds swap row and column.
#[inline(always)]
pub(super) fn transpose16(rows: [__m128i; 16]) -> [__m128i; 16] {
    let round = |r: [__m128i; 16]| -> [__m128i; 16] {
        core::array::from_fn(|k| {
            let (a, b) = (r[k / 2], r[k / 2 + 8]);
            // SAFETY: the module invariant.
            unsafe {
                if k % 2 == 0 {
                    _mm_unpacklo_epi8(a, b)
                } else {
                    _mm_unpackhi_epi8(a, b)
                }
            }
        })
    };
    round(round(round(round(rows))))
}

/// Stores `v` into the first 16 bytes of `d`.
#[inline(always)]
pub(super) fn store16(d: &mut [u8], v: __m128i) {
    let d = &mut d[..16];
    // SAFETY: the module invariant; `d` has 16 writable bytes.
    unsafe { _mm_storeu_si128(d.as_mut_ptr().cast(), v) }
}

/// Stores the low 8 bytes of `v` into the first 8 bytes of `d`.
#[inline(always)]
pub(super) fn store8(d: &mut [u8], v: __m128i) {
    let d = &mut d[..8];
    // SAFETY: the module invariant; `d` has 8 writable bytes.
    unsafe { _mm_storel_epi64(d.as_mut_ptr().cast(), v) }
}

/// The 16 bytes of `v`.
#[inline(always)]
pub(super) fn bytes16(v: __m128i) -> [u8; 16] {
    let mut out = [0u8; 16];
    store16(&mut out, v);
    out
}

/// The raw bytes of `x`, writable.
#[inline(always)]
pub(super) fn bytes_mut<T: crate::quant::QuantInt>(x: &mut [T]) -> &mut [u8] {
    assert_eq!(core::mem::size_of::<T>(), 1, "8-bit elements only");
    // SAFETY: as in `bytes`; every byte written through the result is a valid `T` (`i8` or `u8`).
    unsafe { core::slice::from_raw_parts_mut(x.as_mut_ptr().cast(), x.len()) }
}

pub(super) use crate::arch::x86_64::copy::copy_short;
