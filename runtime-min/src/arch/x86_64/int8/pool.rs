//! The int8 / uint8 max pooling ([`crate::quant::max_pool2d`]) of 2x2 windows at stride 2
//! without padding (LeNet- and VGG-style downsampling) on rows of contiguous columns, a channel's
//! rows at a time: per output row, the two input rows' bytewise maximum (`PMAXSB` / `PMAXUB`),
//! its even and odd columns split by one byte shuffle, their maximum and the clamp, 8 outputs per
//! 16 input columns; the rest one by one. A maximum and a clamp: the portable kernel's bits.

use core::arch::x86_64::*;

use super::requant::elem;
use super::vector::{bytes, bytes_mut, load16, store8};
use crate::quant::{Pool2d, QuantInt};

/// Outputs per vector step.
const LANES: usize = 8;

/// Whether [`max_pool2d`] takes `p` on elements of type `T`: 8-bit elements, 2x2 windows at
/// stride 2, undilated, no padding before the input, every window inside it, contiguous columns
/// in and out.
pub(super) fn takes<T: QuantInt>(p: &Pool2d) -> bool {
    size_of::<T>() == 1
        && (p.kernel_h, p.kernel_w, p.stride_h, p.stride_w) == (2, 2, 2, 2)
        && (p.dilation_h, p.dilation_w, p.pad_top, p.pad_left) == (1, 1, 0, 0)
        && 2 * p.out_h <= p.in_h
        && 2 * p.out_w <= p.in_w
        && p.x_strides.w == 1
        && p.y_strides.w == 1
}

/// [`crate::quant::max_pool2d`] for a `p` that [`takes`] accepts.
#[inline(always)]
pub(super) fn max_pool2d<T: QuantInt>(p: &Pool2d, x: &[T], y: &mut [T]) {
    let (xs, ys) = (p.x_strides, p.y_strides);
    let (x, y) = (bytes(x), bytes_mut(y));
    // The clamp in the element type's range (clamping then saturating is saturating the bounds
    // then clamping, for values inside the range).
    let byte = |v: i32| bytes(core::slice::from_ref(&T::saturate(v)))[0];
    let (low, high) = (byte(p.act_min), byte(p.act_max));
    let clamp = |v: i32| byte(v.max(p.act_min).min(p.act_max));
    let signed = T::MIN < 0;
    for b in 0..p.batch {
        for c in 0..p.channels {
            for oy in 0..p.out_h {
                let top = &x[b * xs.n + c * xs.c + 2 * oy * xs.h..][..2 * p.out_w];
                let bottom = &x[b * xs.n + c * xs.c + (2 * oy + 1) * xs.h..][..2 * p.out_w];
                let out = &mut y[b * ys.n + c * ys.c + oy * ys.h..][..p.out_w];
                let mut ox = 0;
                while ox + LANES <= p.out_w {
                    let v = window_max(load16(&top[2 * ox..]), load16(&bottom[2 * ox..]), signed, (low, high));
                    store8(&mut out[ox..], v);
                    ox += LANES;
                }
                for (ox, d) in out.iter_mut().enumerate().skip(ox) {
                    let window = [top[2 * ox], top[2 * ox + 1], bottom[2 * ox], bottom[2 * ox + 1]];
                    *d = clamp(window.iter().map(|&v| elem::<T>(v).to_i32()).fold(i32::MIN, i32::max));
                }
            }
        }
    }
}

/// The clamped maxima of the 8 2x2 windows whose top rows are the 16 bytes `top` and bottom
/// rows `bottom`, compared as signed or unsigned bytes, clamped to the bytes `[low, high]`: the
/// first 8 bytes of the result.
#[inline(always)]
fn window_max(top: __m128i, bottom: __m128i, signed: bool, (low, high): (u8, u8)) -> __m128i {
    // SAFETY: AVX2 is on (the int8 entry points' invariant, `super::vector`).
    unsafe {
        let rows = if signed { _mm_max_epi8(top, bottom) } else { _mm_max_epu8(top, bottom) };
        // The even columns in the low 8 bytes, the odd ones in the high 8.
        let columns = _mm_shuffle_epi8(rows, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
        let odd = _mm_unpackhi_epi64(columns, columns);
        let (low, high) = (_mm_set1_epi8(low as i8), _mm_set1_epi8(high as i8));
        if signed {
            _mm_min_epi8(_mm_max_epi8(_mm_max_epi8(columns, odd), low), high)
        } else {
            _mm_min_epu8(_mm_max_epu8(_mm_max_epu8(columns, odd), low), high)
        }
    }
}
