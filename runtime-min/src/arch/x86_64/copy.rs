//! Copies without a library call: the rows of small planes (KWS's 25x5 maps, MobileNetV2's 6x6
//! and 3x3 ones, int8 output rows) are copied once or twice per channel, and one `memcpy` call
//! per row cost more than the arithmetic on it; a deinterleave for a constant step.

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

/// `dst[i] = src[i * S]` for all `i < dst.len() = src.len().div_ceil(S)` (a vectorised
/// deinterleave for a constant step).
#[inline(always)]
pub(super) fn copy_every<const S: usize>(dst: &mut [f32], src: &[f32]) {
    let (chunks, rest) = src.as_chunks::<S>();
    for (d, chunk) in dst.iter_mut().zip(chunks) {
        *d = chunk[0];
    }
    if let Some(&v) = rest.first() {
        dst[chunks.len()] = v;
    }
}
