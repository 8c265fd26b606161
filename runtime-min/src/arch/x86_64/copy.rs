//! Copies without a library call: the rows of small planes (KWS's 25x5 maps, MobileNetV2's 6x6
//! and 3x3 ones, int8 output rows) are copied once or twice per channel, and one `memcpy` call
//! per row cost more than the arithmetic on it; every other value of a row, in vectors.

use super::lanes::Lanes;

/// `dst.copy_from_slice(&src[..dst.len()])`, for rows shorter than 16 elements 8, 4, 2 and 1 at a
/// time (copies of a constant length, which compile to moves).
#[inline(always)]
pub(super) fn copy_short<T: Copy>(dst: &mut [T], src: &[T]) {
    let n = dst.len();
    if n >= 16 {
        dst.copy_from_slice(&src[..n]);
        return;
    }
    let mut i = 0;
    for width in [8, 4, 2, 1] {
        if n - i >= width {
            let (d, s) = (&mut dst[i..i + width], &src[i..i + width]);
            match width {
                8 => d.copy_from_slice(&s[..8]),
                4 => d.copy_from_slice(&s[..4]),
                2 => d.copy_from_slice(&s[..2]),
                _ => d[0] = s[0],
            }
            i += width;
        }
    }
}

/// `dst[i] = src[2 * i]` for all `i < dst.len() = src.len().div_ceil(2)`: `L` values at a time
/// from `2 * L` ([`even_odd`]), the last ones masked. Strided 1x1 convolutions' im2col rows and
/// stride-2 depthwise planes take every other input value; LLVM's code for the loop one value
/// at a time shuffled half vectors and left rows shorter than 16 values (ResNet-8's 16-wide
/// shortcut rows: 15 of them) to a scalar loop.
#[inline(always)]
pub(super) fn copy_even<S: Lanes>(dst: &mut [f32], src: &[f32]) {
    debug_assert_eq!(dst.len(), src.len().div_ceil(2));
    for (m, d) in dst.chunks_mut(S::L).enumerate() {
        let from = 2 * m * S::L;
        let (even, _) = even_odd::<S>(&src[from..src.len().min(from + 2 * S::L)]);
        match d.len() == S::L {
            true => S::store(d, even),
            false => S::store_first(d, even, d.len()),
        }
    }
}

/// The even and the odd values of `row` (at most `2 * L`), each in the first lanes of a vector
/// (the lanes past them zero).
#[inline(always)]
pub(super) fn even_odd<S: Lanes>(row: &[f32]) -> (S::V, S::V) {
    let (l, n) = (S::L, row.len());
    let load = |at: usize| {
        let part = &row[at.min(n)..];
        match part.len() >= l {
            true => S::load(part),
            // SAFETY: `part` holds the `part.len()` floats the masked load reads.
            false => unsafe { S::load_first_ptr(part.as_ptr(), part.len()) },
        }
    };
    S::deinterleave(load(0), load(l))
}
