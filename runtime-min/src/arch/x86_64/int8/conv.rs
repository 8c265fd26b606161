//! The int8 / uint8 convolution ([`crate::quant::conv2d`]) as a matrix product over packed
//! panels, on a [`Dot4`]: `y[o][q] = bias[o] + sum_k w[o][k] x[k][q]` for the taps `k` of the
//! window (OHWI order) and blocks of [`INT8_BLOCK`] output positions `q`.
//!
//! Per chunk of output channels their weights are prepared once, 4 taps to a word
//! ([`Dot4::prepare`]: on AVX2 the two `i16` pairs `VPMADDWD` multiplies, so that the tiles
//! broadcast them from memory instead of widening the bytes again for every block). Per band of
//! output rows the input is staged ([`Band`]; a pointwise layer between whole planes or
//! consecutive pixels is read in place, [`Read`]), then per block of positions the block's `taps
//! x 16` window bytes are packed into a panel of 4-tap groups (four 16-byte rows of the staging
//! transposed into sixteen 4-byte columns, [`transpose4`]; pixels: four pixels' 16 taps per 4x4
//! transpose of 4-byte words, [`pack_pixels`]), which every tile of output channels
//! reads: a tile of `MR` channels by 16 positions keeps its `2 MR` accumulators in registers over
//! all taps.
//!
//! The dot product multiplies unsigned activations by signed weights: uint8 inputs as they are;
//! int8 inputs are staged (or loaded) xor 0x80 (`x + 128`), and the accumulators start at `bias[o] - 128
//! sum_k w[o][k]` (VNNI's usual offset, as in onnxruntime's and oneDNN's u8s8 kernels). The
//! padding is the input zero point, a group's missing taps are zero bytes with zero weights, so
//! each output is the portable kernel's integer sum exactly (sums wrap alike in any order), and
//! the output stage is the portable one ([`Requant8`]).

use core::arch::x86_64::{__m128i, __m256i};
use core::mem::MaybeUninit;

use super::band::{reads_pixels, reads_planes, zeroed, Band, Outputs};
use super::dot::Dot4;
use super::requant::{elem, narrow16, Requant8};
use super::vector::{
    bytes, bytes16, bytes_mut, copy_short, load16, load32, splat, store16, store32, transpose4, transpose_dwords,
    xor16, zero16,
};
use crate::arch::x86_64_facts::{
    INT8_BAND_BYTES, INT8_BLOCK, INT8_CHANNEL_CHUNK, INT8_CONV_BYTES, INT8_MAX_TAPS, INT8_WEIGHT_WORDS,
};
use crate::quant::{ChannelQuant, Conv2d, QuantElem};

// The buffers below take what the kernel facts say.
const _: () = assert!(
    INT8_CONV_BYTES
        == INT8_BAND_BYTES
            + INT8_MAX_TAPS * INT8_BLOCK
            + INT8_MAX_TAPS * 4
            + INT8_WEIGHT_WORDS * 8
            + INT8_CHANNEL_CHUNK * 4
);
// At least one tile of channels prepared at a time at the largest window.
const _: () = assert!(INT8_WEIGHT_WORDS / INT8_MAX_TAPS.div_ceil(4) >= 4);

/// How a layer's taps are read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Read {
    /// From the staging of each band ([`Band::stage`]).
    Staged,
    /// In place, from whole input planes ([`reads_planes`]).
    Planes,
    /// In place, from consecutive pixels ([`reads_pixels`]).
    Pixels,
}

impl Read {
    /// How [`conv2d`] reads `p`.
    fn of(p: &Conv2d) -> Read {
        if reads_planes(p) {
            Read::Planes
        } else if reads_pixels(p) {
            Read::Pixels
        } else {
            Read::Staged
        }
    }
}

/// Whether [`conv2d`] takes `p`: symmetric weights, an input zero point of the input's type, at
/// most [`INT8_MAX_TAPS`] taps, and a pointwise layer read in place ([`reads_planes`],
/// [`reads_pixels`]) or one output row's input fitting the staging buffer.
pub(super) fn takes<T: QuantElem>(p: &Conv2d) -> bool {
    let taps = p.taps();
    p.w_zero_point == 0
        && (T::MIN..=T::MAX).contains(&p.x_zero_point)
        && taps > 0
        && taps <= INT8_MAX_TAPS
        && p.out_h * p.out_w > 0
        && match Read::of(p) {
            // Tap offsets fit `u32`.
            Read::Planes => taps * p.x_strides.c <= u32::MAX as usize,
            Read::Pixels => true,
            Read::Staged => Band::new(p, p.group_in_channels(), usize::MAX).is_some(),
        }
}

/// The byte xor that makes an input element of type `T` unsigned: `0x80` for `i8`.
#[inline(always)]
pub(super) fn flip<T: QuantElem>() -> u8 {
    if T::MIN < 0 {
        0x80
    } else {
        0
    }
}

/// [`crate::quant::conv2d`] for a `p` that [`takes`] accepts, in tiles of `MR` output channels.
#[inline(always)]
pub(super) fn conv2d<D: Dot4, T: QuantElem, const MR: usize>(
    p: &Conv2d,
    x: &[T],
    w: &[i8],
    q: &ChannelQuant,
    y: &mut [T],
) {
    let (taps, cpg) = (p.taps(), p.group_in_channels());
    let ocg = p.out_channels / p.groups;
    // A pointwise layer between whole planes or consecutive pixels is read in place; any other is
    // staged by bands.
    let read = Read::of(p);
    let band = match read {
        Read::Staged => Band::new(p, cpg, usize::MAX).expect("takes() checked that a row fits"),
        Read::Planes | Read::Pixels => Band::whole(p),
    };
    let mut staged = [MaybeUninit::uninit(); INT8_BAND_BYTES];
    let staged = if read == Read::Staged { zeroed(&mut staged, band.bytes(p)) } else { &mut [] };
    let quads = taps.div_ceil(4);
    let mut panel = [MaybeUninit::uninit(); INT8_MAX_TAPS * INT8_BLOCK];
    let panel = zeroed(&mut panel, quads * 4 * INT8_BLOCK).as_chunks_mut::<{ 4 * INT8_BLOCK }>().0;
    let mut start = [0i32; INT8_CHANNEL_CHUNK];
    // The prepared weights of a chunk of channels: `quads` words per channel.
    let chunk = (INT8_WEIGHT_WORDS / quads).min(INT8_CHANNEL_CHUNK) / MR * MR;
    let mut words = [MaybeUninit::uninit(); INT8_WEIGHT_WORDS];
    let words: &mut [D::Word] = zeroed(&mut words, chunk.min(ocg) * quads);
    // Where each tap's bytes start in the staging, or in the group's input planes (the same for
    // every band and group; pixels are packed by `pack_pixels`, which needs none).
    let mut tap_at = [0u32; INT8_MAX_TAPS];
    if read != Read::Pixels {
        for (k, at) in tap_at[..taps].iter_mut().enumerate() {
            let (pixel, c) = (k / cpg, k % cpg);
            let offset = match read {
                Read::Planes => c * p.x_strides.c,
                _ => band.tap(p, c, pixel / p.kernel_w, pixel % p.kernel_w),
            };
            *at = offset as u32;
        }
    }
    let (flip, offset) = (flip::<T>(), if T::MIN < 0 { 128 } else { 0 });
    // The chunk whose weights `words` holds.
    let mut prepared = None;
    for g in 0..p.groups {
        for b in 0..p.batch {
            for oy0 in (0..p.out_h).step_by(band.rows) {
                // The bytes the taps read from (the group's first input channel), and their flip.
                let source = match read {
                    Read::Planes | Read::Pixels => {
                        Source { bytes: bytes(x), base: b * p.x_strides.n + g * cpg * p.x_strides.c, flip }
                    }
                    Read::Staged => {
                        band.stage(p, x, (b, g * cpg), oy0, flip, staged);
                        Source { bytes: staged, base: 0, flip: 0 }
                    }
                };
                let virtual_len = band.rows.min(p.out_h - oy0) * band.vw;
                // The block whose windows `panel` holds (a band of one block packs it once for
                // all chunks).
                let mut packed = None;
                for oc0 in (g * ocg..(g + 1) * ocg).step_by(chunk) {
                    let oc1 = (oc0 + chunk).min((g + 1) * ocg);
                    let words = &mut words[..(oc1 - oc0) * quads];
                    if prepared != Some(oc0) {
                        prepare::<D>(p, w, q, (oc0, oc1), offset, &mut start, words);
                        prepared = Some(oc0);
                    }
                    let words = &*words;
                    for q0 in (0..virtual_len).step_by(INT8_BLOCK) {
                        let outputs = Outputs::new(p, &band, (b, oy0), q0, virtual_len);
                        if outputs.is_empty() {
                            continue;
                        }
                        if packed != Some(q0) {
                            match read {
                                Read::Staged => pack::<false>(&source, &tap_at[..taps], q0, panel),
                                Read::Planes => pack::<true>(&source, &tap_at[..taps], q0, panel),
                                Read::Pixels => pack_pixels(&source, p.x_strides.w, q0, panel),
                            }
                            packed = Some(q0);
                        }
                        for o in (oc0..oc1).step_by(MR) {
                            // The last tile repeats its last channel (computed again, stored once).
                            let mut rows = [0; MR];
                            for (r, row) in rows.iter_mut().enumerate() {
                                *row = (o + r).min(oc1 - 1) - oc0;
                            }
                            let acc = tile::<D, MR>(panel, (words, quads), rows, &start);
                            let whole = MR.is_multiple_of(4) && o + MR <= oc1;
                            if read == Read::Pixels && whole && matches!(outputs, Outputs::Lanes { .. }) {
                                // Four channels of a pixel are consecutive: stored four at a time.
                                for c in (0..MR).step_by(4) {
                                    store_pixels::<T>(p, q, o + c, &acc[c..c + 4], &outputs, y);
                                }
                                continue;
                            }
                            for (r, acc) in acc.iter().enumerate().take(oc1 - o) {
                                store::<T>(p, q, o + r, acc, &outputs, y);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Prepares the weights of output channels `oc0..oc1` of `p` into `words` (4 taps to a word, the
/// last word's missing taps zero) and their starting accumulators, `bias[o] - offset sum_k
/// w[o][k]`, into `start`.
#[inline(always)]
fn prepare<D: Dot4>(
    p: &Conv2d,
    w: &[i8],
    q: &ChannelQuant,
    (oc0, oc1): (usize, usize),
    offset: i32,
    start: &mut [i32],
    words: &mut [D::Word],
) {
    let taps = p.taps();
    for ((o, s), row) in (oc0..oc1).zip(start).zip(words.chunks_exact_mut(taps.div_ceil(4))) {
        let wo = &w[o * taps..][..taps];
        *s = q.bias[o].wrapping_sub(offset * wo.iter().fold(0i32, |s, &v| s.wrapping_add(v as i32)));
        if !taps.is_multiple_of(4) {
            D::prepare_row(wo, row);
        }
    }
    if taps.is_multiple_of(4) {
        // No word straddles two channels: the chunk's weights in one run.
        D::prepare_row(&w[oc0 * taps..oc1 * taps], words);
    }
}

/// Where the taps of a band are read: tap `k` of virtual position `q` is `bytes[base + tap_at[k] +
/// q] ^ flip` (staged, or whole planes), or `bytes[base + q * x_strides.w + k] ^ flip` (pixels).
struct Source<'a> {
    /// The staging buffer, or the whole input.
    bytes: &'a [u8],
    /// The offset of virtual position 0's taps.
    base: usize,
    /// The xor that makes the bytes unsigned (0 for the staging, already flipped).
    flip: u8,
}

impl Source<'_> {
    /// The 16 bytes of virtual positions `q..q + 16` from offset `at` on, flipped. Reading the
    /// input in place (`DIRECT`), bytes past its end (read only for positions past the last
    /// output) are zero; the staging has them.
    #[inline(always)]
    fn load<const DIRECT: bool>(&self, at: usize) -> __m128i {
        if !DIRECT {
            return load16(&self.bytes[at..]);
        }
        let at = self.base + at;
        let v = match self.bytes.get(at..at + 16) {
            Some(run) => load16(run),
            None => {
                let mut last = [0u8; 16];
                let run = self.bytes.get(at..).unwrap_or_default();
                last[..run.len()].copy_from_slice(run);
                load16(&last)
            }
        };
        if self.flip == 0 {
            v
        } else {
            xor16(v, self.flip)
        }
    }
}

/// Packs the window bytes of virtual positions `q0..q0 + 16` into `panel`: group `g`, column `j`
/// holds taps `4g..4g + 4` of position `q0 + j` (zero bytes past the last tap).
#[inline(always)]
fn pack<const DIRECT: bool>(source: &Source, tap_at: &[u32], q0: usize, panel: &mut [[u8; 4 * INT8_BLOCK]]) {
    let (quads, rest) = tap_at.as_chunks::<4>();
    for (dst, quad) in panel.iter_mut().zip(quads) {
        let mut rows = [zero16(); 4];
        for (row, &at) in rows.iter_mut().zip(quad) {
            *row = source.load::<DIRECT>(at as usize + q0);
        }
        put(dst, transpose4(rows));
    }
    if !rest.is_empty() {
        let mut rows = [zero16(); 4];
        for (row, &at) in rows.iter_mut().zip(rest) {
            *row = source.load::<DIRECT>(at as usize + q0);
        }
        put(&mut panel[quads.len()], transpose4(rows));
    }
}

/// Packs the taps of virtual positions `q0..q0 + 16` read from consecutive pixels, tap `k` of
/// position `q` at offset `q * pixel + k` (`pixel`: `x_strides.w`), into `panel` as [`pack`] does:
/// the 16 taps (four groups) of four positions from four loads and one 4x4 transpose of 4-byte
/// words. Taps past the group's last are other bytes of the input (or zeros past its end), which
/// the zero weights of the last word cancel.
#[inline(always)]
fn pack_pixels(source: &Source, pixel: usize, q0: usize, panel: &mut [[u8; 4 * INT8_BLOCK]]) {
    for h in 0..panel.len().div_ceil(4) {
        for i in 0..INT8_BLOCK / 4 {
            let mut rows = [zero16(); 4];
            for (r, row) in rows.iter_mut().enumerate() {
                *row = source.load::<true>((q0 + 4 * i + r) * pixel + 16 * h);
            }
            for (g, words) in transpose_dwords(rows).into_iter().enumerate() {
                if let Some(dst) = panel.get_mut(4 * h + g) {
                    store16(&mut dst[16 * i..], words);
                }
            }
        }
    }
}

/// Requantizes output channels `o..o + 4` of one block (accumulators `acc`) and stores them four
/// bytes per output position (`y_strides.c == 1`: [`reads_pixels`]).
#[inline(always)]
fn store_pixels<T: QuantElem>(
    p: &Conv2d,
    q: &ChannelQuant,
    o: usize,
    acc: &[[__m256i; 2]],
    outputs: &Outputs,
    y: &mut [T],
) {
    let mut rows = [zero16(); 4];
    for (r, (row, acc)) in rows.iter_mut().zip(acc).enumerate() {
        let stage = Requant8::new::<T>(q, o + r, p.y_zero_point, (p.act_min, p.act_max));
        *row = narrow16::<false>(stage.apply(acc[0]), stage.apply(acc[1]));
    }
    // Column `j`: the four channels' bytes of position `j`.
    let mut columns = [0u8; 4 * INT8_BLOCK];
    put(&mut columns, transpose4(rows));
    let y = bytes_mut(y);
    for &(lane, at) in outputs.lanes() {
        y[at + o..][..4].copy_from_slice(&columns[4 * lane..][..4]);
    }
}

/// Stores one group's two vectors of columns.
#[inline(always)]
fn put(dst: &mut [u8; 4 * INT8_BLOCK], [lo, hi]: [__m256i; 2]) {
    store32(&mut dst[..32], lo);
    store32(&mut dst[32..], hi);
}

/// The accumulators of `MR` output channels (rows `rows` of the prepared weights `words`, `quads`
/// words per row, one per group of `panel`; accumulators starting at `start[row]`) over the 16
/// positions of `panel`: `[positions 0-7, positions 8-15]` per channel. (Loops, not array maps:
/// those may be left out of line, outside the entry point's target features.)
#[inline(always)]
fn tile<D: Dot4, const MR: usize>(
    panel: &[[u8; 4 * INT8_BLOCK]],
    (words, quads): (&[D::Word], usize),
    rows: [usize; MR],
    start: &[i32],
) -> [[__m256i; 2]; MR] {
    let mut w: [&[D::Word]; MR] = [&[]; MR];
    let mut acc = [[splat(0); 2]; MR];
    for r in 0..MR {
        w[r] = &words[rows[r] * quads..][..quads][..panel.len()];
        acc[r] = [splat(start[rows[r]]); 2];
    }
    for (g, columns) in panel.iter().enumerate() {
        let a = [D::unsigned(load32(&columns[..32])), D::unsigned(load32(&columns[32..]))];
        for (acc, row) in acc.iter_mut().zip(&w) {
            let wv = D::broadcast(&row[g]);
            acc[0] = D::dot(acc[0], a[0], wv);
            acc[1] = D::dot(acc[1], a[1], wv);
        }
    }
    acc
}

/// Requantizes output channel `o`'s accumulators of one block and stores its outputs.
#[inline(always)]
fn store<T: QuantElem>(p: &Conv2d, q: &ChannelQuant, o: usize, acc: &[__m256i; 2], outputs: &Outputs, y: &mut [T]) {
    let stage = Requant8::new::<T>(q, o, p.y_zero_point, (p.act_min, p.act_max));
    let v = narrow16::<false>(stage.apply(acc[0]), stage.apply(acc[1]));
    let oc = o * p.y_strides.c;
    match outputs.contiguous(p) {
        Some((at, INT8_BLOCK)) => return store16(bytes_mut(&mut y[at + oc..][..INT8_BLOCK]), v),
        Some((at, len)) => return copy_short(bytes_mut(&mut y[at + oc..][..len]), &bytes16(v)),
        None => {}
    }
    let bytes = bytes16(v);
    for &(lane, at) in outputs.lanes() {
        y[at + oc] = elem(bytes[lane]);
    }
}
