//! The input rows a band of output rows reads, staged once per band so that every tap of a block
//! of consecutive output positions is one contiguous run of bytes ([`Band`]).
//!
//! The band's input is split into stride phases (as the f32 padded-plane depthwise kernel splits
//! its plane, `super::super::depthwise`): for each staged channel `c`, row phase `rp`
//! (`0..stride_h`) and column phase `cp` (`0..stride_w`) a strip holds `srows` rows of `vw`
//! bytes, byte `(i', i)` the input at row `(oy0 + i') * stride_h + rp - pad_top`, column `i *
//! stride_w + cp - pad_left`, or the input zero point outside the input, xor `flip`. Output
//! position `(r, ox)` of the band is the *virtual position* `q = r * vw + ox` (`vw >= out_w`;
//! the columns from `out_w` on are computed and dropped), and tap `(ky, kx)` of virtual
//! positions `q..q + n` is the strip of phases `((ky * dilation_h) % stride_h, (kx *
//! dilation_w) % stride_w)` from byte `q + ((ky * dilation_h) / stride_h) * vw + (kx *
//! dilation_w) / stride_w` on: no border cases, any stride, dilation, padding and input layout
//! (the staging reads the input through its strides).

use core::mem::MaybeUninit;

use super::vector::{bytes, copy_xor, deinterleave16, deinterleave2, load16, store16, transpose16, xor16, zero16};
use crate::arch::x86_64_facts::{INT8_BAND_BYTES, INT8_BLOCK};
use crate::quant::{Conv2d, QuantElem};

/// Bytes read past the last strip (by virtual positions past the band's last output): zeros.
const SLACK: usize = 2 * INT8_BLOCK;

/// The staging geometry of one layer: how many output rows a band holds.
#[derive(Clone, Copy)]
pub(super) struct Band {
    /// Virtual positions per output row: `out_w` plus the columns the widest tap reaches.
    pub(super) vw: usize,
    /// Output rows per band (at least 1).
    pub(super) rows: usize,
    /// Rows of a strip: `rows` plus the rows the tallest tap reaches.
    srows: usize,
    /// Channels staged together.
    channels: usize,
}

impl Band {
    /// The geometry for staging `channels` channels of `p` with at most `max_virtual` virtual
    /// positions per band, if one output row fits.
    pub(super) fn new(p: &Conv2d, channels: usize, max_virtual: usize) -> Option<Band> {
        let vw = p.out_w + (p.kernel_w - 1) * p.dilation_w / p.stride_w;
        let extra = (p.kernel_h - 1) * p.dilation_h / p.stride_h;
        let strip_row = channels * p.stride_h * p.stride_w * vw;
        let room = INT8_BAND_BYTES.checked_sub(vw + SLACK)?;
        let rows = (room / strip_row.max(1)).checked_sub(extra)?.min(p.out_h).min(max_virtual / vw.max(1));
        (rows > 0).then_some(Band { vw, rows, srows: rows + extra, channels })
    }

    /// The geometry of a pointwise convolution read in place ([`reads_planes`],
    /// [`reads_pixels`]): virtual positions are the positions of an output image, one band holds
    /// them all, nothing is staged.
    pub(super) fn whole(p: &Conv2d) -> Band {
        Band { vw: p.out_w, rows: p.out_h, srows: p.out_h, channels: 0 }
    }

    /// Bytes of one strip.
    const fn strip(&self) -> usize {
        self.srows * self.vw
    }

    /// Bytes of the staging buffer this geometry uses.
    pub(super) fn bytes(&self, p: &Conv2d) -> usize {
        self.channels * p.stride_h * p.stride_w * self.strip() + self.vw + SLACK
    }

    /// The offset of tap `(c, ky, kx)`'s bytes for virtual position 0.
    pub(super) fn tap(&self, p: &Conv2d, c: usize, ky: usize, kx: usize) -> usize {
        let (row, col) = (ky * p.dilation_h, kx * p.dilation_w);
        let strip = (c * p.stride_h + row % p.stride_h) * p.stride_w + col % p.stride_w;
        strip * self.strip() + row / p.stride_h * self.vw + col / p.stride_w
    }

    /// Stages output rows `oy0..` (a band) of image `b`, input channels `c0..c0 +
    /// self.channels`, into `buf` ([`Band::bytes`] long, its slack zero).
    #[inline(always)]
    pub(super) fn stage<T: QuantElem>(
        &self,
        p: &Conv2d,
        x: &[T],
        (b, c0): (usize, usize),
        oy0: usize,
        flip: u8,
        buf: &mut [u8],
    ) {
        let (xs, sw, vw) = (p.x_strides, p.stride_w, self.vw);
        let pad = T::saturate(p.x_zero_point).byte() ^ flip;
        let strip = self.strip();
        // NHWC rows at stride 1 (the `.tflite` files' layers): 16 channels at a time.
        let transposed = if sw == 1 && xs.c == 1 { self.channels / 16 * 16 } else { 0 };
        for c in (c0..c0 + transposed).step_by(16) {
            self.stage_sixteen(p, bytes(x), (b, c), (c - c0, oy0), (pad, flip), buf);
        }
        let mut phases = buf.chunks_exact_mut(sw * strip).skip(transposed * p.stride_h);
        for c in c0 + transposed..c0 + self.channels {
            for rp in 0..p.stride_h {
                // The strips of row phase `rp`, one per column phase.
                let strips = phases.next().expect("the buffer holds the band");
                strips.fill(pad);
                let rows = self.input_rows(p, oy0, rp);
                // The input row of strip row `i`, at `base + i * row_step`.
                let base = |i: usize| b * xs.n + c * xs.c + ((oy0 + i) * p.stride_h + rp - p.pad_top) * xs.h;
                let row_step = p.stride_h * xs.h;
                if sw == 2 && xs.w == 1 {
                    let (even, odd) = strips.split_at_mut(strip);
                    for i in rows {
                        let row = (&mut even[i * vw..][..vw], &mut odd[i * vw..][..vw]);
                        stage_pairs(bytes(&x[base(i)..][..p.in_w]), p.pad_left, flip, row);
                    }
                    continue;
                }
                for cp in 0..sw {
                    // Columns `lo..hi` read the input: `0 <= j * sw + cp - pad_left < in_w`.
                    let hi = div_ceil((p.pad_left + p.in_w).saturating_sub(cp), sw).min(vw);
                    let lo = div_ceil(p.pad_left.saturating_sub(cp), sw).min(hi);
                    if lo == hi || rows.is_empty() {
                        continue;
                    }
                    let col = (lo * sw + cp - p.pad_left) * xs.w;
                    let phase = &mut strips[cp * strip..][..strip];
                    if sw == 1 && xs.w == 1 && hi - lo == vw && row_step == vw {
                        // Whole rows, consecutive in the input as in the strip: one run.
                        let run = &mut phase[rows.start * vw..rows.end * vw];
                        copy_xor(run, bytes(&x[base(rows.start) + col..][..run.len()]), flip);
                    } else if sw == 1 && xs.w == 1 {
                        for i in rows.clone() {
                            copy_xor(&mut phase[i * vw..][lo..hi], bytes(&x[base(i) + col..][..hi - lo]), flip);
                        }
                    } else {
                        for i in rows.clone() {
                            let first = base(i) + col;
                            for (j, d) in phase[i * vw..][lo..hi].iter_mut().enumerate() {
                                *d = x[first + j * sw * xs.w].byte() ^ flip;
                            }
                        }
                    }
                }
            }
        }
    }

    /// Stages channels `c..c + 16` of image `b` (NHWC-like: `x_strides.c == 1`, stride 1 across),
    /// the band's channels `k..k + 16`, for the band from output row `oy0`, into `buf` as
    /// [`Band::stage`] does: the padding `pad`, then per strip row 16 columns of the 16 channels
    /// per 16x16 byte transpose ([`transpose16`]: one load per pixel), xor `flip`, the columns
    /// left over one byte at a time.
    #[inline(always)]
    fn stage_sixteen(
        &self,
        p: &Conv2d,
        x: &[u8],
        (b, c): (usize, usize),
        (k, oy0): (usize, usize),
        (pad, flip): (u8, u8),
        buf: &mut [u8],
    ) {
        let (xs, vw, strip) = (p.x_strides, self.vw, self.strip());
        for rp in 0..p.stride_h {
            // Strip of band channel `k + t`, row phase `rp` (one column phase).
            let at = |t: usize| ((k + t) * p.stride_h + rp) * strip;
            for t in 0..16 {
                buf[at(t)..at(t) + strip].fill(pad);
            }
            // Columns `lo..hi` read the input (column `j - pad_left`).
            let hi = (p.pad_left + p.in_w).min(vw);
            let lo = p.pad_left.min(hi);
            for i in self.input_rows(p, oy0, rp) {
                let first = b * xs.n + c + ((oy0 + i) * p.stride_h + rp - p.pad_top) * xs.h;
                let pixel = |j: usize| first + (j - p.pad_left) * xs.w;
                let mut j = lo;
                while j + 16 <= hi {
                    let mut pixels = [zero16(); 16];
                    for (d, px) in pixels.iter_mut().enumerate() {
                        *px = load16(&x[pixel(j + d)..]);
                    }
                    for (t, channel) in transpose16(pixels).into_iter().enumerate() {
                        store16(&mut buf[at(t) + i * vw + j..], xor16(channel, flip));
                    }
                    j += 16;
                }
                for j in j..hi {
                    for t in 0..16 {
                        buf[at(t) + i * vw + j] = x[pixel(j) + t] ^ flip;
                    }
                }
            }
        }
    }

    /// The strip rows `i` of row phase `rp` of the band from output row `oy0` that read an input
    /// row: `0 <= (oy0 + i) * stride_h + rp - pad_top < in_h`, `i < srows` (the others stay
    /// padding).
    #[inline(always)]
    fn input_rows(&self, p: &Conv2d, oy0: usize, rp: usize) -> core::ops::Range<usize> {
        let first = div_ceil(p.pad_top.saturating_sub(rp), p.stride_h).saturating_sub(oy0).min(self.srows);
        let end = div_ceil((p.pad_top + p.in_h).saturating_sub(rp), p.stride_h).saturating_sub(oy0).min(self.srows);
        first..end.max(first)
    }
}

/// Whether `p` is a pointwise convolution (1x1 window, stride 1, no padding) between whole planes
/// (NCHW-like strides: rows consecutive, elements consecutive in a row): tap `c` of output
/// position `q` is input byte `c * x_strides.c + q` of the image and group, and output `(o, q)` is
/// at `o * y_strides.c + q`, so the kernel reads the input in place ([`Band::whole`]).
pub(super) fn reads_planes(p: &Conv2d) -> bool {
    let (xs, ys) = (p.x_strides, p.y_strides);
    pointwise(p) && (xs.w, xs.h) == (1, p.in_w) && (ys.w, ys.h) == (1, p.out_w)
}

/// Whether `p` is a pointwise convolution between images of consecutive pixels (NHWC-like
/// strides: channels consecutive, rows consecutive): tap `c` of output position `q` is input byte
/// `q * x_strides.w + c` of the image and group, and output `(o, q)` is at `q * y_strides.w + o`,
/// so the kernel reads the input in place ([`Band::whole`]).
pub(super) fn reads_pixels(p: &Conv2d) -> bool {
    let (xs, ys) = (p.x_strides, p.y_strides);
    pointwise(p) && (xs.c, xs.h) == (1, p.in_w * xs.w) && (ys.c, ys.h) == (1, p.out_w * ys.w)
}

/// A pointwise window read in place ([`Conv2d::reads_input_in_place`]) at stride 1, the output
/// the size of the input.
fn pointwise(p: &Conv2d) -> bool {
    p.reads_input_in_place() && (p.stride_h, p.stride_w) == (1, 1) && (p.out_h, p.out_w) == (p.in_h, p.in_w)
}

/// `a.div_ceil(d)` without a division for the common strides 1 and 2 (the staging computes a
/// few per channel, and small planes have many channels).
#[inline(always)]
fn div_ceil(a: usize, d: usize) -> usize {
    match d {
        1 => a,
        2 => a.div_ceil(2),
        _ => a.div_ceil(d),
    }
}

/// One input row `src` into the rows of the two column phases of stride 2 (`vw` bytes each, the
/// padding already in place): column `ix` at padded column `ix + pad_left`, index `(ix +
/// pad_left) / 2` of phase `(ix + pad_left) % 2`, xor `flip`; 32 columns at a time, then 16.
#[inline(always)]
fn stage_pairs(src: &[u8], pad_left: usize, flip: u8, (even, odd): (&mut [u8], &mut [u8])) {
    let vw = even.len();
    // The phases of source columns 0, 2, 4, .. and 1, 3, 5, ..
    let (first, second) = if pad_left.is_multiple_of(2) { (even, odd) } else { (odd, even) };
    let (at0, at1) = (pad_left / 2, pad_left.div_ceil(2));
    let mut ix = 0;
    while ix + 32 <= src.len() && at0.max(at1) + ix / 2 + 16 <= vw {
        let [e, o] = deinterleave2(&src[ix..]);
        first[at0 + ix / 2..][..16].iter_mut().zip(&e).for_each(|(d, &s)| *d = s ^ flip);
        second[at1 + ix / 2..][..16].iter_mut().zip(&o).for_each(|(d, &s)| *d = s ^ flip);
        ix += 32;
    }
    if ix + 16 <= src.len() && at0.max(at1) + ix / 2 + 8 <= vw {
        let [e, o] = deinterleave16(&src[ix..]);
        first[at0 + ix / 2..][..8].iter_mut().zip(&e).for_each(|(d, &s)| *d = s ^ flip);
        second[at1 + ix / 2..][..8].iter_mut().zip(&o).for_each(|(d, &s)| *d = s ^ flip);
        ix += 16;
    }
    // The rest, a pair of columns at a time, up to the last index of a phase row.
    while ix < src.len() && at0 + ix / 2 < vw {
        first[at0 + ix / 2] = src[ix] ^ flip;
        if ix + 1 < src.len() && at1 + ix / 2 < vw {
            second[at1 + ix / 2] = src[ix + 1] ^ flip;
        }
        ix += 2;
    }
}

/// The first `len` elements of `buf`, zeroed (the kernels' stack buffers of bytes or `i16`: only
/// what a layer uses is written, not the whole array).
#[inline(always)]
pub(super) fn zeroed<T: Copy + Default>(buf: &mut [MaybeUninit<T>], len: usize) -> &mut [T] {
    let buf = &mut buf[..len];
    buf.fill(MaybeUninit::new(T::default()));
    // SAFETY: every element of `buf` was just initialised, and `MaybeUninit<T>` has `T`'s layout.
    unsafe { &mut *(buf as *mut [MaybeUninit<T>] as *mut [T]) }
}

/// Where the outputs of a block of virtual positions go.
// One per block, on the stack (no allocator to box the larger variant in).
#[allow(clippy::large_enum_variant)]
pub(super) enum Outputs {
    /// `len` outputs in the block's first lanes, consecutive in memory from offset `at` (without
    /// the channel term): rows without virtual columns, stored as they are laid out.
    Run { at: usize, len: usize },
    /// For each position of the block that is an output, its lane and its output offset without
    /// the channel term: `at[..len]`.
    Lanes { at: [(usize, usize); INT8_BLOCK], len: usize },
}

impl Outputs {
    /// The outputs among virtual positions `q0..q0 + INT8_BLOCK` of the band of image `b`
    /// starting at output row `oy0`, `virtual_len` virtual positions long.
    #[inline(always)]
    pub(super) fn new(p: &Conv2d, band: &Band, (b, oy0): (usize, usize), q0: usize, virtual_len: usize) -> Self {
        let ys = p.y_strides;
        let lanes = INT8_BLOCK.min(virtual_len - q0);
        if band.vw == p.out_w && ys.w == 1 && ys.h == p.out_w {
            // Virtual position `q` is output `q` of the band's rows.
            return Outputs::Run { at: b * ys.n + oy0 * ys.h + q0, len: lanes };
        }
        let (mut at, mut len) = ([(0, 0); INT8_BLOCK], 0);
        let (mut r, mut ox) = (q0 / band.vw, q0 % band.vw);
        for lane in 0..lanes {
            if ox < p.out_w {
                at[len] = (lane, b * ys.n + (oy0 + r) * ys.h + ox * ys.w);
                len += 1;
            }
            ox += 1;
            if ox == band.vw {
                (r, ox) = (r + 1, 0);
            }
        }
        Outputs::Lanes { at, len }
    }

    /// Whether the block has no outputs.
    #[inline(always)]
    pub(super) fn is_empty(&self) -> bool {
        match self {
            Outputs::Run { len, .. } | Outputs::Lanes { len, .. } => *len == 0,
        }
    }

    /// The offset and number of the block's outputs if they are its first lanes in order and
    /// consecutive in memory (`y_strides.w == 1`): all 16, or the first positions of a partial
    /// block (a plane smaller than a block, a layer's last block).
    #[inline(always)]
    pub(super) fn contiguous(&self, p: &Conv2d) -> Option<(usize, usize)> {
        match *self {
            Outputs::Run { at, len } => Some((at, len)),
            Outputs::Lanes { ref at, len } => {
                let ((_, first), (last_lane, last)) = (at[0], *at[..len].last()?);
                (p.y_strides.w == 1 && last_lane == len - 1 && last == first + len - 1).then_some((first, len))
            }
        }
    }

    /// The `(lane, offset)` of the block's outputs if they are not a [`Outputs::Run`] (which
    /// [`Outputs::contiguous`] gives whole).
    #[inline(always)]
    pub(super) fn lanes(&self) -> &[(usize, usize)] {
        match self {
            Outputs::Run { .. } => &[],
            Outputs::Lanes { at, len } => &at[..*len],
        }
    }
}
