//! ONNX QuantizeLinear of `f32` values ([`crate::quant::quantize`] with
//! [`Rounding::HalfToEven`]) on eight lanes: the same `f32` division, rounding to nearest even
//! (`VROUNDPS`, what `rintf` computes), NaN to the zero point, then the zero point and the type's
//! range, narrowed on the lanes for 8-bit types. TFLite's rounding (ties away from zero) stays portable.
//!
//! Module invariant as in [`super::vector`] (AVX2 instructions, reached only from the int8 entry
//! points).

use core::arch::x86_64::*;

use super::requant::{elem, narrow};
use super::vector::lanes;
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

/// [`crate::quant::quantize`] for a `p` that [`takes`] accepts.
#[inline(always)]
pub(super) fn quantize<T: ConvertElem>(p: &Quantization, x: &[f32], y: &mut [T]) {
    for (xc, yc) in x.chunks(LANES).zip(y.chunks_mut(LANES)) {
        let mut v = [0f32; LANES];
        if let Ok(full) = <&[f32; LANES]>::try_from(xc) {
            v = *full;
        } else {
            v[..xc.len()].copy_from_slice(xc);
        }
        // SAFETY: the module invariant; `v` has 8 readable floats.
        let q = unsafe {
            let r = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_div_ps(
                _mm256_loadu_ps(v.as_ptr()),
                _mm256_set1_ps(p.scale),
            ));
            // NaN to 0 (as `as i32` does), then inside +-BOUND, where the conversion is exact.
            let r = _mm256_and_ps(r, _mm256_cmp_ps::<_CMP_ORD_Q>(r, r));
            let r = _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(-BOUND)), _mm256_set1_ps(BOUND));
            let q = _mm256_add_epi32(_mm256_cvttps_epi32(r), _mm256_set1_epi32(p.zero_point));
            _mm256_max_epi32(_mm256_min_epi32(q, _mm256_set1_epi32(T::MAX)), _mm256_set1_epi32(T::MIN))
        };
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
