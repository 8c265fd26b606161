//! The input rows a band of output rows reads, staged once per band so that every tap of a block
//! of consecutive output positions is one contiguous run of bytes ([`Band`]).
//!
//! For each staged channel `c`, kernel row `ky` and column phase `f` (`0..stride_w`) a strip
//! holds, for each output row `r` of the band, `vw` bytes: byte `i` is the input at row `(oy0 +
//! r) * stride_h + ky * dilation_h - pad_top`, column `i * stride_w + f - pad_left`, or the
//! input zero point outside the input, xor `flip`. Output position `(r, ox)` is the *virtual
//! position* `q = r * vw + ox` (`vw >= out_w`; the columns from `out_w` on are computed and
//! dropped), and the tap `(ky, kx)` of virtual positions `q..q + n` is the strip of `(c, ky,
//! (kx * dilation_w) % stride_w)` from byte `q + (kx * dilation_w) / stride_w` on: no border
//! cases, any stride, dilation, padding and input layout (the staging reads the input through
//! its strides). This is the f32 padded-plane depthwise kernel's layout (`super::super::depthwise`)
//! with the rows of each kernel row staged apart, so that a band of any number of rows
//! flattens.

use crate::arch::x86_64_facts::{INT8_BAND_BYTES, INT8_BLOCK};
use crate::quant::{Conv2d, QuantElem};

/// The staging geometry of one layer: how many output rows a band holds.
#[derive(Clone, Copy)]
pub(super) struct Band {
    /// Virtual positions per output row: `out_w` plus the columns the widest tap reaches.
    pub(super) vw: usize,
    /// Output rows per band (at least 1).
    pub(super) rows: usize,
    /// Channels staged together.
    channels: usize,
}

impl Band {
    /// The geometry for staging `channels` channels of `p`, if one output row fits the buffer.
    pub(super) fn new(p: &Conv2d, channels: usize) -> Option<Band> {
        let vw = p.out_w + (p.kernel_w - 1) * p.dilation_w / p.stride_w;
        let row_bytes = channels * p.kernel_h * p.stride_w * vw;
        let room = INT8_BAND_BYTES.checked_sub(vw + INT8_BLOCK)?;
        let rows = (room / row_bytes.max(1)).min(p.out_h);
        (rows > 0).then_some(Band { vw, rows, channels })
    }

    /// Bytes of one strip.
    const fn strip(&self) -> usize {
        self.rows * self.vw
    }

    /// The offset of tap `(c, ky, kx)`'s bytes for virtual position 0.
    pub(super) fn tap(&self, p: &Conv2d, c: usize, ky: usize, kx: usize) -> usize {
        let col = kx * p.dilation_w;
        ((c * p.kernel_h + ky) * p.stride_w + col % p.stride_w) * self.strip() + col / p.stride_w
    }

    /// Stages output rows `oy0..oy0 + rows` (`rows <= self.rows`) of image `b`, input channels
    /// `c0..c0 + self.channels`, into `buf` (at least [`INT8_BAND_BYTES`]).
    #[inline(always)]
    pub(super) fn stage<T: QuantElem>(
        &self,
        p: &Conv2d,
        x: &[T],
        (b, c0): (usize, usize),
        (oy0, rows): (usize, usize),
        flip: u8,
        buf: &mut [u8],
    ) {
        let (xs, sw, vw) = (p.x_strides, p.stride_w, self.vw);
        let pad = T::saturate(p.x_zero_point).byte() ^ flip;
        let mut strips = buf.chunks_exact_mut(self.strip());
        for c in c0..c0 + self.channels {
            for ky in 0..p.kernel_h {
                for f in 0..sw {
                    // Virtual columns `lo..hi` read the input: `0 <= i * sw + f - pad_left < in_w`.
                    let hi = (p.pad_left + p.in_w).saturating_sub(f).div_ceil(sw).min(vw);
                    let lo = p.pad_left.saturating_sub(f).div_ceil(sw).min(hi);
                    let strip = strips.next().expect("the buffer holds the band");
                    for (r, row) in strip.chunks_exact_mut(vw).take(rows).enumerate() {
                        let Some(iy) = p.input_row(oy0 + r, ky) else {
                            row.fill(pad);
                            continue;
                        };
                        row[..lo].fill(pad);
                        row[hi..].fill(pad);
                        if lo == hi {
                            continue;
                        }
                        let base = b * xs.n + c * xs.c + iy * xs.h;
                        let first = lo * sw + f - p.pad_left;
                        if sw == 1 && xs.w == 1 {
                            let src = &x[base + first..][..hi - lo];
                            row[lo..hi].iter_mut().zip(src).for_each(|(d, s)| *d = s.byte() ^ flip);
                        } else {
                            for (i, d) in row[lo..hi].iter_mut().enumerate() {
                                *d = x[base + (first + i * sw) * xs.w].byte() ^ flip;
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Where the outputs of a block of virtual positions go: for each position of the block that is
/// an output, its lane and its output offset without the channel term.
pub(super) struct Outputs {
    /// `(lane, offset)` of the block's outputs, `len` of them.
    pub(super) at: [(usize, usize); INT8_BLOCK],
    pub(super) len: usize,
}

impl Outputs {
    /// The outputs among virtual positions `q0..q0 + lanes` of the band of image `b` starting at
    /// output row `oy0`, `virtual_len` virtual positions long.
    #[inline(always)]
    pub(super) fn new(
        p: &Conv2d,
        band: &Band,
        (b, oy0): (usize, usize),
        (q0, lanes): (usize, usize),
        virtual_len: usize,
    ) -> Self {
        let ys = p.y_strides;
        let mut out = Outputs { at: [(0, 0); INT8_BLOCK], len: 0 };
        let (mut r, mut ox) = (q0 / band.vw, q0 % band.vw);
        for lane in 0..lanes.min(virtual_len - q0) {
            if ox < p.out_w {
                out.at[out.len] = (lane, b * ys.n + (oy0 + r) * ys.h + ox * ys.w);
                out.len += 1;
            }
            ox += 1;
            if ox == band.vw {
                (r, ox) = (r + 1, 0);
            }
        }
        out
    }

    /// The block's outputs.
    pub(super) fn iter(&self) -> impl Iterator<Item = &(usize, usize)> {
        self.at[..self.len].iter()
    }
}
