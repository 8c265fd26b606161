//! The 3x3 depthwise convolution at stride 2 on AVX-512F, read and written where its NCHW planes
//! are: no staging, no transposes. Plain Rust over the AVX-512 intrinsics, compiled into the
//! AVX-512 entry point of [`super`] (everything here is `#[inline(always)]`).
//!
//! Sixteen consecutive outputs of a row read, for a kernel row, the 33 input values from twice
//! their first column (less the left padding): two vectors of them deinterleaved give the taps
//! of kernel columns 0 (even values) and 1 (odd), and two more from two values on give column 2
//! (even). The loads are masked to the lanes inside the input row (AVX-512's masked loads
//! neither read nor fault on masked-off lanes, which load zero); a kernel row outside the input
//! is a vector of zeros. So every output is `act(bias + w0 * x0 + w1 * x1 + ...)`, each product
//! rounded, then added in row-major tap order, a tap outside the input adding `w * 0`: the
//! channel-blocked kernel's sums (it stages the padding as zeros), which the AVX2 path runs on the
//! same layers on separate planes ([`strided_applies`] takes no other), and the padded-plane
//! kernel's, which it runs on them in a shared region, so both paths give the same bits; and the
//! direct convolution's values (which skips those taps, as the plane kernel for planes too large
//! to pad does: for finite weights only a zero sum's sign can differ).
//!
//! Several rows and vectors of a channel are summed at once (independent chains: the add's
//! latency is hidden), all their taps read before any output is stored. In a region shared by
//! input and output, a channel's output plane ends at or before its input plane starts, so its
//! stores only overwrite planes already read.
//!
//! Against the channel-blocked kernel (Sapphire Rapids, old and new code alternating in one
//! process, p10): VWW's 16-channel 48x48 layer 7.1-7.3 to 4.9 us, one of its tiled bands of 4
//! output rows 1.5 to 0.9, of 2 rows 0.66-0.69 to 0.55; MobileNetV2's 48-channel 48x48 layer
//! 20.6-21.2 to 14.2-14.3; a 64-channel 32x32 one 11.7-12.0 to 6.9-7.1.

use super::depthwise_blocked::blocked_applies;
use super::depthwise_io::{DepthwiseOperands, Planes};
use super::lanes::{activate, Avx2, Avx512, Lanes};
use crate::arch::x86_64_facts::depthwise_bytes;
use crate::conv_shape::Conv2d;
use core::arch::x86_64::*;

/// Lanes per vector.
const L: usize = 16;

/// The widest output row (in vectors) kept in registers at once.
const MAX_VECTORS: usize = 4;

/// Whether [`depthwise_strided`] computes depthwise convolution `p` with `ocg` output channels per
/// group, its planes in one shared region or not: a layer whose channels the channel-blocked
/// kernel would all take on separate planes ([`blocked_applies`], whole blocks of 8), 3x3 at
/// stride 2 without dilation, at most one padding column on the left, output rows of one to
/// [`MAX_VECTORS`] vectors (on narrower ones the channel-blocked kernel is faster: VWW's 32
/// channels of 12x12 outputs, 5.2 against 9.9 us), and an activation with a vector form.
///
/// A shared region needs nothing more: this kernel stages nothing, and goes through the channels
/// in order, each output plane ending before its own input plane. (The channel-blocked kernel
/// takes a shared region only where a block's whole input fits its stage, so until this kernel
/// took them, MobileNetV2-0.35's 48-channel 48x48 layer, overlapped in its plan, ran on the
/// plane kernels: 41.6-42.0 against 19.2-19.7 us for this kernel on the same region, Zen 4,
/// old and new code alternating in one process, p10.)
#[inline(always)]
pub(super) fn strided_applies(p: &Conv2d, ocg: usize) -> bool {
    blocked_applies(p, ocg, false)
        && p.out_channels.is_multiple_of(Avx2::L)
        && (p.kernel_h, p.kernel_w) == (3, 3)
        && (p.stride_h, p.stride_w) == (2, 2)
        && (p.dilation_h, p.dilation_w) == (1, 1)
        && p.pad_left <= 1
        && (L..=MAX_VECTORS * L).contains(&p.out_w)
        && activate::<Avx512>(p.act, Avx512::zero()).is_some()
}

/// All output planes of a depthwise convolution that [`strided_applies`] to:
/// `y[n, c] = act(bias[c] + conv(x[n, c], w[c]))`, each plane's rows a few at a time, each row's
/// vectors together.
#[inline(always)]
pub(super) fn depthwise_strided(p: &Conv2d, ops: DepthwiseOperands) {
    match p.out_w.div_ceil(L) {
        1 => planes::<8, 1>(p, ops),
        2 => planes::<4, 2>(p, ops),
        3 => planes::<2, 3>(p, ops),
        _ => planes::<2, 4>(p, ops),
    }
}

/// [`depthwise_strided`] with rows `V` vectors wide, `R` rows at a time (then one at a time).
#[inline(always)]
fn planes<const R: usize, const V: usize>(p: &Conv2d, ops: DepthwiseOperands) {
    let DepthwiseOperands { w, bias, mut planes, .. } = ops;
    let masks = Masks::new(p);
    let (in_plane, out_plane) = (p.in_h * p.in_w, p.out_h * p.out_w);
    for n in 0..p.batch {
        for oc in 0..p.out_channels {
            let (w0, _, ws) = p.weights.gemm_operand(oc, 1, 9);
            let chan = Channel {
                p,
                masks: &masks,
                x_at: (n * p.in_channels + oc) * in_plane,
                y_at: (n * p.out_channels + oc) * out_plane,
                w: core::array::from_fn(|t| w[w0 + t * ws]),
                bias: bias.row(oc),
            };
            let mut oh = 0;
            while oh + R <= p.out_h {
                chan.rows::<R, V>(&mut planes, oh);
                oh += R;
            }
            for oh in oh..p.out_h {
                chan.rows::<1, V>(&mut planes, oh);
            }
        }
    }
}

/// The lanes of the four loads of each output vector that lie inside an input row (the same for
/// every row and channel): `[v][0]` and `[v][1]` the two vectors from the vector's first input
/// column, `[v][2]` and `[v][3]` the two from two columns on.
struct Masks {
    lanes: [[u16; 4]; MAX_VECTORS],
}

// The kernel facts' stack bytes of a 3x3 depthwise layer cover this kernel's arrays.
const _: () = assert!(core::mem::size_of::<Masks>() + 9 * 4 <= depthwise_bytes(3, 3));

impl Masks {
    /// The masks of `p`'s output vectors.
    #[inline(always)]
    fn new(p: &Conv2d) -> Self {
        let lanes = core::array::from_fn(|v| {
            core::array::from_fn(|i| {
                let start = first_column(p, v) + [0, L as isize, 2, L as isize + 2][i];
                // Lanes `lo..hi` inside `0..in_w`.
                let lo = (-start).clamp(0, L as isize) as u32;
                let hi = (p.in_w as isize - start).clamp(lo as isize, L as isize) as u32;
                (((1u32 << hi) - 1) & !((1u32 << lo) - 1)) as u16
            })
        });
        Masks { lanes }
    }
}

/// The input column under tap column 0 of output vector `v`'s first output.
#[inline(always)]
fn first_column(p: &Conv2d, v: usize) -> isize {
    (2 * v * L) as isize - p.pad_left as isize
}

/// One output channel of one image: its input plane at `x_at` and output plane at `y_at`
/// (relative to their operands), its 9 taps and its bias.
struct Channel<'a> {
    p: &'a Conv2d,
    masks: &'a Masks,
    x_at: usize,
    y_at: usize,
    w: [f32; 9],
    bias: f32,
}

impl Channel<'_> {
    /// Output rows `oh0..oh0 + R`, `V` vectors each: all their taps summed in registers from the
    /// input plane, then stored (the lanes inside the row).
    #[inline(always)]
    fn rows<const R: usize, const V: usize>(&self, planes: &mut Planes, oh0: usize) {
        let p = self.p;
        let x = &planes.x()[self.x_at..][..p.in_h * p.in_w];
        let mut acc = [[Avx512::splat(self.bias); V]; R];
        for (r, acc_r) in acc.iter_mut().enumerate() {
            for kh in 0..3 {
                let ih = (2 * (oh0 + r) + kh) as isize - p.pad_top as isize;
                let row = usize::try_from(ih).ok().filter(|&ih| ih < p.in_h).map(|ih| &x[ih * p.in_w..][..p.in_w]);
                // Not `[0, 1, 2].map(..)`: LLVM left that an out-of-line call, outside the
                // entry point's target features, and the splats calls of their own.
                let tap = |kw: usize| Avx512::splat(self.w[kh * 3 + kw]);
                let ws = [tap(0), tap(1), tap(2)];
                for (v, a) in acc_r.iter_mut().enumerate() {
                    let taps = match row {
                        Some(row) => self.taps(row, v),
                        None => [Avx512::zero(); 3],
                    };
                    for (&wv, xv) in ws.iter().zip(taps) {
                        *a = Avx512::add(*a, Avx512::mul(wv, xv));
                    }
                }
            }
        }
        let out_w = p.out_w;
        let y = &mut planes.y()[self.y_at..][..p.out_h * out_w];
        for (r, acc_r) in acc.iter().enumerate() {
            let yr = &mut y[(oh0 + r) * out_w..][..out_w];
            for (v, &a) in acc_r.iter().enumerate() {
                let out = activate::<Avx512>(p.act, a).expect("strided_applies checked the activation");
                let n = L.min(out_w - v * L);
                Avx512::store_first(&mut yr[v * L..], out, n);
            }
        }
    }

    /// The taps of kernel columns 0, 1 and 2 under output vector `v` of an input row.
    #[inline(always)]
    fn taps(&self, row: &[f32], v: usize) -> [__m512; 3] {
        let m = self.masks.lanes[v];
        let at = row.as_ptr().wrapping_offset(first_column(self.p, v));
        // SAFETY: AVX-512F (the entry point calling this is compiled with it and only called where
        // detection found it); each masked load reads only the lanes its mask keeps, which
        // `Masks::new` found inside `row`.
        unsafe {
            let load = |i: usize, off: usize| _mm512_maskz_loadu_ps(m[i], at.wrapping_add(off));
            let (a, b) = (load(0, 0), load(1, L));
            let (c, d) = (load(2, 2), load(3, L + 2));
            let (even, odd) = Avx512::deinterleave(a, b);
            [even, odd, Avx512::deinterleave(c, d).0]
        }
    }
}
