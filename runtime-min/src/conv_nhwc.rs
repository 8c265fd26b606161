//! [`conv2d`](crate::conv2d) of an NHWC input ([`ConvInput::Nhwc`](crate::ConvInput)), read in
//! place: im2col tiles gathered from the channels-last tensor, then the same tiled GEMM as the
//! NCHW im2col path, so the result has the bits of that path on the NCHW tensor. Kept apart from
//! `conv.rs`: with the layout a parameter of its helpers, LLVM inlined the NCHW convolution
//! differently and the Cortex-M4F keyword-spotting model ran 3.1x the instructions.

use crate::arch::{self, KernelCall, Kernels};
use crate::conv::{CONV_TILE, IM2COL_K_BLOCK};
use crate::conv_shape::Conv2d;
use crate::epilogue::{Bias, Gemm};
use crate::gemm::gemm;

/// Stack bytes of the one-position im2col column [`conv2d_nhwc`] uses when the scratch holds none.
pub(crate) const NHWC_STACK_BYTES: usize = IM2COL_K_BLOCK * core::mem::size_of::<f32>();

/// The convolution `p` (whose input is NHWC) of `x` into the NCHW `y`, over im2col tiles in
/// `scratch` (one position at a time in a stack column when it holds less than one).
#[inline(never)]
pub(crate) fn conv2d_nhwc(p: &Conv2d, x: &[f32], w: &[f32], bias: Option<&[f32]>, y: &mut [f32], scratch: &mut [f32]) {
    arch::run(NhwcCall { p, x, w, bias, y, scratch });
}

/// The arguments of one [`conv2d_nhwc`], whose body [`arch::run`] compiles per kernel path.
struct NhwcCall<'a> {
    p: &'a Conv2d,
    x: &'a [f32],
    w: &'a [f32],
    bias: Option<&'a [f32]>,
    y: &'a mut [f32],
    scratch: &'a mut [f32],
}

impl KernelCall for NhwcCall<'_> {
    #[inline(always)]
    fn run(self, kernels: Kernels) {
        let NhwcCall { p, x, w, bias, y, scratch } = self;
        let positions = p.out_h * p.out_w;
        if p.batch == 0 || p.out_channels == 0 || positions == 0 || p.groups == 0 {
            return;
        }
        let (icg, ocg) = (p.in_channels / p.groups, p.out_channels / p.groups);
        let kk = icg * p.kernel_h * p.kernel_w;
        let kb = kk.clamp(1, IM2COL_K_BLOCK);
        let mut column = [0.0f32; IM2COL_K_BLOCK];
        let (cols, tile) = match (scratch.len() / kb).min(CONV_TILE).min(positions) {
            0 => (&mut column[..kb], 1),
            t => (&mut scratch[..kb * t], t),
        };
        for n in 0..p.batch {
            for g in 0..p.groups {
                let (w0, a_rs, a_cs) = p.weights.gemm_operand(g, ocg, kk);
                let yg = &mut y[(n * p.out_channels + g * ocg) * positions..][..ocg * positions];
                let gb = bias.map_or(Bias::None, |b| Bias::Row(&b[g * ocg..][..ocg]));
                let mut p0 = 0;
                while p0 < positions {
                    let t = tile.min(positions - p0);
                    let mut k0 = 0;
                    while k0 < kk {
                        let kc = kb.min(kk - k0);
                        gather(p, x, (n, g * icg), (p0, t), (k0, kc), &mut cols[..kc * t]);
                        let gm = Gemm {
                            m: ocg,
                            n: t,
                            k: kc,
                            a_rs,
                            a_cs,
                            b_rs: t,
                            b_cs: 1,
                            c_rs: positions,
                            alpha: 1.0,
                            act: p.act,
                            add_to_c: k0 > 0,
                            epilogue: k0 + kc == kk,
                        };
                        gemm(kernels, &gm, &w[w0 + k0 * a_cs..], &cols[..kc * t], gb, &mut yg[p0..]);
                        k0 += kc;
                    }
                    p0 += t;
                }
            }
        }
    }
}

/// Rows `k0..k0 + kc` of the im2col matrix (`(ic, kh, kw)` in row-major order) for output
/// positions `p0..p0 + t` of image `n`, from the NHWC input channels `c0..`: row `r` at
/// `cols[r * t..]`, zero outside the input.
fn gather(
    p: &Conv2d,
    x: &[f32],
    (n, c0): (usize, usize),
    (p0, t): (usize, usize),
    (k0, kc): (usize, usize),
    cols: &mut [f32],
) {
    let ksize = p.kernel_h * p.kernel_w;
    let image = &x[n * p.in_h * p.in_w * p.in_channels..][..p.in_h * p.in_w * p.in_channels];
    for (r, row) in cols.chunks_exact_mut(t).enumerate().take(kc) {
        let k = k0 + r;
        let (ic, kh, kw) = (k / ksize, k % ksize / p.kernel_w, k % p.kernel_w);
        for (j, v) in row.iter_mut().enumerate() {
            let (oh, ow) = ((p0 + j) / p.out_w, (p0 + j) % p.out_w);
            let ih = (oh * p.stride_h + kh * p.dilation_h) as isize - p.pad_top as isize;
            let iw = (ow * p.stride_w + kw * p.dilation_w) as isize - p.pad_left as isize;
            let inside = ih >= 0 && iw >= 0 && (ih as usize) < p.in_h && (iw as usize) < p.in_w;
            *v = if inside { image[(ih as usize * p.in_w + iw as usize) * p.in_channels + c0 + ic] } else { 0.0 };
        }
    }
}
