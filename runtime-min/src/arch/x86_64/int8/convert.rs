//! ONNX QuantizeLinear of `f32` values ([`crate::quant::quantize`] with
//! [`Rounding::HalfToEven`]) on eight lanes: the same `f32` division, rounding to nearest even
//! (`VROUNDPS`, what `rintf` computes), NaN to the zero point, then the zero point and the type's
//! range, narrowed on the lanes for 8-bit types. TFLite's rounding (ties away from zero) stays portable.
//!
//! Module invariant as in [`super::vector`] (AVX2 instructions, reached only from the int8 entry
//! points).

use core::arch::x86_64::*;

use super::requant::{elem, narrow};
use super::vector::{bytes_mut, lanes, store32};
use crate::quant::{ConvertElem, Quantization, Rounding};

/// Values per vector.
const LANES: usize = 8;

/// Beyond this magnitude a rounded value saturates every [`ConvertElem`] type once a zero point
/// of at most half of it is added.
const BOUND: f32 = 65536.0;

/// Whether [`quantize`] takes `p`: ONNX's rounding, a zero point of at most `BOUND / 2`.
pub(super) fn takes(p: &Quantization, rounding: Rounding) -> bool {
    rounding == Rounding::HalfToEven && p.zero_point.unsigned_abs() <= BOUND as u32 / 2
}

/// [`crate::quant::quantize`] for a `p` that [`takes`] accepts: 8-bit types 32 values to a store,
/// the rest (and wider types) eight at a time.
#[inline(always)]
pub(super) fn quantize<T: ConvertElem>(p: &Quantization, x: &[f32], y: &mut [T]) {
    let mut done = 0;
    if size_of::<T>() == 1 {
        let out = bytes_mut(y);
        for (xc, yc) in x.chunks_exact(4 * LANES).zip(out.chunks_exact_mut(4 * LANES)) {
            let [x0, x1, x2, x3] = [0, 1, 2, 3].map(|i| &xc[i * LANES..]);
            let q = [convert::<T>(p, x0), convert::<T>(p, x1), convert::<T>(p, x2), convert::<T>(p, x3)];
            store32(yc, pack_bytes::<T>(q));
            done += 4 * LANES;
        }
    }
    for (xc, yc) in x[done..].chunks(LANES).zip(y[done..].chunks_mut(LANES)) {
        let mut v = [0f32; LANES];
        v[..xc.len()].copy_from_slice(xc);
        let q = convert::<T>(p, &v);
        if size_of::<T>() == 1 {
            // Lanes inside the type's range: their low bytes are the values.
            let bytes = narrow(q);
            for (d, &b) in yc.iter_mut().zip(&bytes) {
                *d = elem(b);
            }
        } else {
            for (d, &l) in yc.iter_mut().zip(&lanes(q)) {
                *d = T::saturate(l);
            }
        }
    }
}

/// The first eight values of `x` quantized: `i32` lanes inside `T`'s range.
#[inline(always)]
fn convert<T: ConvertElem>(p: &Quantization, x: &[f32]) -> __m256i {
    let x = &x[..LANES];
    // SAFETY: the module invariant; `x` has 8 readable floats.
    unsafe {
        let r = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_div_ps(
            _mm256_loadu_ps(x.as_ptr()),
            _mm256_set1_ps(p.scale),
        ));
        // NaN to 0 (as `as i32` does), then inside +-BOUND, where the conversion is exact.
        let r = _mm256_and_ps(r, _mm256_cmp_ps::<_CMP_ORD_Q>(r, r));
        let r = _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(-BOUND)), _mm256_set1_ps(BOUND));
        let q = _mm256_add_epi32(_mm256_cvttps_epi32(r), _mm256_set1_epi32(p.zero_point));
        _mm256_max_epi32(_mm256_min_epi32(q, _mm256_set1_epi32(T::MAX)), _mm256_set1_epi32(T::MIN))
    }
}

/// The 32 lanes of `q` (inside an 8-bit `T`'s range) as bytes, in order: two saturating packs
/// (exact here), then the dwords back in order.
#[inline(always)]
fn pack_bytes<T: ConvertElem>(q: [__m256i; 4]) -> __m256i {
    // SAFETY: the module invariant.
    unsafe {
        // Words [q0 0-3, q1 0-3 | q0 4-7, q1 4-7], [q2 0-3, q3 0-3 | q2 4-7, q3 4-7].
        let (w01, w23) = (_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
        // Dwords [q0 0-3, q1 0-3, q2 0-3, q3 0-3 | q0 4-7, q1 4-7, q2 4-7, q3 4-7].
        let b = if T::MIN < 0 { _mm256_packs_epi16(w01, w23) } else { _mm256_packus_epi16(w01, w23) };
        _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))
    }
}
