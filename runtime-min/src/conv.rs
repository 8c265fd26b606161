//! 2-D (and 1-D) convolution and transposed convolution, NCHW.

use crate::arch::{self, KernelCall, Kernels};
use crate::conv_shape::{Conv2d, ConvInput, ConvOperands};
use crate::epilogue::{Bias, Gemm};
use crate::gemm::gemm;
use crate::util::{gather_strided, valid_range};

/// Number of output positions processed per im2col tile; bounds the scratch
/// memory of [`conv2d`] to `in_channels/groups * kernel_h * kernel_w *
/// min(out_h * out_w, CONV_TILE)` floats.
pub const CONV_TILE: usize = 64;

/// Whether `p` is 1x1 at stride 1 without padding: each output position reads the input's
/// position of the same index.
#[inline(always)]
pub(crate) const fn conv_is_pointwise(p: &Conv2d) -> bool {
    p.kernel_h == 1
        && p.kernel_w == 1
        && p.stride_h == 1
        && p.stride_w == 1
        && p.pad_top == 0
        && p.pad_left == 0
        && p.out_h == p.in_h
        && p.out_w == p.in_w
}

/// Rows of the im2col matrix (input values per output position) materialised at once: deeper
/// convolutions are computed as several GEMMs over blocks of this many rows, accumulating in the
/// output, so their scratch does not grow with `in_channels * kernel_h * kernel_w`. Blocking does not
/// change results: each output is the same k-ascending chain of multiply-adds either way.
pub const IM2COL_K_BLOCK: usize = 128;

/// Scratch elements [`conv2d`] uses per output position of an im2col tile:
/// `in_channels / groups * kernel_h * kernel_w` capped at [`IM2COL_K_BLOCK`], or 0 when the
/// convolution never uses im2col (pointwise: 1x1, stride 1, no padding; or
/// `in_channels / groups == 1`, depthwise and single-input-channel, on an NCHW input; an NHWC
/// input always runs through im2col, [`ConvInput::Nhwc`]).
pub const fn conv2d_scratch_per_position(p: &Conv2d) -> usize {
    if p.groups == 0 {
        return 0;
    }
    let icg = p.in_channels / p.groups;
    if matches!(p.input, ConvInput::Nchw) && (icg == 1 || conv_is_pointwise(p)) {
        return 0;
    }
    let kk = icg * p.kernel_h * p.kernel_w;
    if kk < IM2COL_K_BLOCK {
        kk
    } else {
        IM2COL_K_BLOCK
    }
}

/// Length in f32 elements of the `scratch` slice with which [`conv2d`] runs
/// fastest: [`conv2d_scratch_per_position`] times `min(out_h * out_w,
/// CONV_TILE)`. Any shorter slice works too (smaller tiles), down to none at
/// all (direct convolution, no im2col).
pub const fn conv2d_scratch_len(p: &Conv2d) -> usize {
    let positions = p.out_h * p.out_w;
    let tile = if positions < CONV_TILE { positions } else { CONV_TILE };
    conv2d_scratch_per_position(p) * tile
}

/// 2-D convolution (ONNX Conv), see [`Conv2d`]. `x`: `[batch, in_channels,
/// in_h, in_w]` (or `[batch, in_h, in_w, in_channels]`, [`ConvInput::Nhwc`]), `w`: `[out_channels, in_channels / groups, kernel_h,
/// kernel_w]`, `bias`: `[out_channels]`, `y`: `[batch, out_channels, out_h,
/// out_w]`. `scratch` may have any length: [`conv2d_scratch_len`] elements
/// give the fastest path, fewer give smaller im2col tiles, and fewer than
/// [`conv2d_scratch_per_position`] (e.g. none) the direct convolution, which
/// needs no working memory at all.
///
/// Paths: pointwise convolutions are one GEMM per (image, group) straight on
/// the input; `in_channels / groups == 1` (depthwise, with any channel
/// multiplier) and convolutions without enough scratch for one im2col column
/// are a direct row-wise convolution; everything else is im2col over tiles of
/// up to [`CONV_TILE`] output positions followed by the tiled GEMM. On x86-64
/// CPUs with AVX2 and FMA (detected at run time, see
/// [`kernel_path`](crate::kernel_path)), a non-pointwise convolution with at
/// least 8 output channels per group runs as an implicit GEMM that reads the
/// input in place and uses no scratch, unless it has at most 16 output
/// positions and the scratch holds a whole im2col tile; and 3x3 depthwise
/// convolutions run on kernels of their own.
///
/// On targets other than x86-64 the call is an inlining candidate, as the convolution was before
/// the dispatch layer existed: inlined into a model's unrolled steps, its parameters are
/// constants and LLVM specialises the loops (the Cortex-M4F keyword-spotting model ran 3x the
/// instructions with one shared out-of-line copy).
#[cfg_attr(not(target_arch = "x86_64"), inline)]
pub fn conv2d(p: &Conv2d, x: &[f32], w: &[f32], bias: Option<&[f32]>, y: &mut [f32], scratch: &mut [f32]) {
    if p.input == ConvInput::Nhwc {
        return crate::conv_nhwc::conv2d_nhwc(p, x, w, bias, y, scratch);
    }
    arch::run(Conv2dCall { p, x, w, bias, y, scratch });
}

/// The arguments of one [`conv2d`], whose body [`arch::run`] compiles per kernel path.
struct Conv2dCall<'a> {
    p: &'a Conv2d,
    x: &'a [f32],
    w: &'a [f32],
    bias: Option<&'a [f32]>,
    y: &'a mut [f32],
    scratch: &'a mut [f32],
}

impl KernelCall for Conv2dCall<'_> {
    #[inline(always)]
    fn run(self, kernels: Kernels) {
        let Conv2dCall { p, x, w, bias, y, scratch } = self;
        conv2d_on(kernels, p, x, w, bias, y, scratch);
    }
}

/// [`conv2d`] on `kernels`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn conv2d_on(
    kernels: Kernels,
    p: &Conv2d,
    x: &[f32],
    w: &[f32],
    bias: Option<&[f32]>,
    y: &mut [f32],
    scratch: &mut [f32],
) {
    let positions = p.out_h * p.out_w;
    if p.batch == 0 || p.out_channels == 0 || positions == 0 {
        return;
    }
    let icg = p.in_channels / p.groups;
    let ocg = p.out_channels / p.groups;
    let kk = icg * p.kernel_h * p.kernel_w;
    let pointwise = conv_is_pointwise(p);
    let kb = kk.min(IM2COL_K_BLOCK);
    let tile = (scratch.len() / kb).min(CONV_TILE);
    let implicit = !pointwise && kernels.implicit_conv(ocg, tile, positions);
    if !implicit && (icg == 1 || (!pointwise && tile == 0)) {
        let bias_rows = bias.map_or(Bias::None, Bias::Row);
        let ops = ConvOperands { icg, ocg, x, w, bias: bias_rows, y: &mut *y };
        if !kernels.depthwise(p, ops) {
            conv_direct(p, icg, ocg, x, w, bias, y);
        }
        return;
    }
    let in_plane = p.in_h * p.in_w;
    for n in 0..p.batch {
        for g in 0..p.groups {
            let xg = &x[(n * p.in_channels + g * icg) * in_plane..][..icg * in_plane];
            // To the end of `w`: the FMA kernels may read a whole vector past a group's last
            // output channel (lanes computed, never stored) while it stays inside `w`.
            let (w0, a_rs, a_cs) = p.weights.gemm_operand(g, ocg, kk);
            let wg = &w[w0..];
            let yg = &mut y[(n * p.out_channels + g * ocg) * positions..][..ocg * positions];
            let gb = match bias {
                Some(b) => Bias::Row(&b[g * ocg..][..ocg]),
                None => Bias::None,
            };
            let mut gm = Gemm {
                m: ocg,
                n: positions,
                k: kk,
                a_rs,
                a_cs,
                b_rs: positions,
                b_cs: 1,
                c_rs: positions,
                alpha: 1.0,
                act: p.act,
                add_to_c: false,
                epilogue: true,
            };
            if pointwise {
                gemm(kernels, &gm, wg, xg, gb, yg);
                continue;
            }
            if implicit {
                kernels.conv_implicit(p, ConvOperands { icg, ocg, x: xg, w: wg, bias: gb, y: yg });
                continue;
            }
            let mut p0 = 0;
            while p0 < positions {
                let t = tile.min(positions - p0);
                let mut k0 = 0;
                while k0 < kk {
                    let kc = kb.min(kk - k0);
                    let cols = &mut scratch[..kc * t];
                    im2col_tile(p, icg, xg, p0, k0, cols.chunks_exact_mut(t));
                    gm.n = t;
                    gm.k = kc;
                    gm.b_rs = t;
                    gm.add_to_c = k0 > 0;
                    gm.epilogue = k0 + kc == kk;
                    gemm(kernels, &gm, &wg[k0 * a_cs..], cols, gb, &mut yg[p0..]);
                    k0 += kc;
                }
                p0 += t;
            }
        }
    }
}

/// Fills `rows` (rows `k0..` of the im2col matrix, i.e. `(ic, kh, kw)` in row-major order, each
/// with one value per output position `p0..p0 + t`) with the input values those positions see
/// (zero outside the input).
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn im2col_tile(p: &Conv2d, icg: usize, xg: &[f32], p0: usize, k0: usize, mut rows: core::slice::ChunksExactMut<f32>) {
    let in_plane = p.in_h * p.in_w;
    let ksize = p.kernel_h * p.kernel_w;
    for ic in k0 / ksize..icg {
        let xplane = &xg[ic * in_plane..][..in_plane];
        for kh in 0..p.kernel_h {
            let h_off = (kh * p.dilation_h) as isize - p.pad_top as isize;
            for kw in 0..p.kernel_w {
                if ic * ksize + kh * p.kernel_w + kw < k0 {
                    continue;
                }
                let Some(row) = rows.next() else { return };
                let w_off = (kw * p.dilation_w) as isize - p.pad_left as isize;
                let (lo, hi) = valid_range(p.out_w, p.stride_w, w_off, p.in_w);
                let (mut oh, mut ow) = (p0 / p.out_w, p0 % p.out_w);
                let mut dst = row;
                while !dst.is_empty() {
                    let seg = dst.len().min(p.out_w - ow);
                    let (d, rest) = dst.split_at_mut(seg);
                    let ih = (oh * p.stride_h) as isize + h_off;
                    if ih < 0 || ih >= p.in_h as isize {
                        d.fill(0.0);
                    } else {
                        let xrow = &xplane[ih as usize * p.in_w..][..p.in_w];
                        let a = lo.clamp(ow, ow + seg);
                        let b = hi.clamp(a, ow + seg);
                        d[..a - ow].fill(0.0);
                        d[b - ow..].fill(0.0);
                        if b > a {
                            let s = ((a * p.stride_w) as isize + w_off) as usize;
                            gather_strided(&mut d[a - ow..b - ow], &xrow[s..], p.stride_w, |d, v| *d = v);
                        }
                    }
                    dst = rest;
                    ow = 0;
                    oh += 1;
                }
            }
        }
    }
}

/// Direct convolution without working memory: each output row accumulates,
/// for every input channel of its group, `kernel_h * kernel_w` scaled,
/// strided input row segments. The path for depthwise convolutions (one input
/// channel per group, any channel multiplier; except the 3x3 ones the
/// architecture kernels compute), and for any convolution given no scratch.
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn conv_direct(p: &Conv2d, icg: usize, ocg: usize, x: &[f32], w: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
    let in_plane = p.in_h * p.in_w;
    let out_plane = p.out_h * p.out_w;
    let ksize = p.kernel_h * p.kernel_w;
    for n in 0..p.batch {
        for g in 0..p.groups {
            for m in 0..ocg {
                let oc = g * ocg + m;
                let b = bias.map_or(0.0, |b| b[oc]);
                let yplane = &mut y[(n * p.out_channels + oc) * out_plane..][..out_plane];
                // Weight `k` of this output channel at `wm[k * ws]`.
                let (w0, a_rs, ws) = p.weights.gemm_operand(g, ocg, icg * ksize);
                let wm = &w[w0 + m * a_rs..];
                for (oh, yrow) in yplane.chunks_exact_mut(p.out_w).enumerate() {
                    yrow.fill(b);
                    for ic in 0..icg {
                        let xplane = &x[(n * p.in_channels + g * icg + ic) * in_plane..][..in_plane];
                        accumulate_rows(p, oh, xplane, &wm[ic * ksize * ws..], ws, yrow);
                    }
                    p.act.apply_in_place(yrow);
                }
            }
        }
    }
}

/// `yrow += sum over (kh, kw) of w[kh, kw] * x[oh * stride_h + kh * dilation_h - pad_top, ...]`,
/// with tap `t = kh * kernel_w + kw` of the channel's kernel at `wk[t * ws]`: one output row of one
/// input channel's contribution. The weights of a kernel row are copied contiguous first, up to
/// [`ROW_TAPS`] at a time: reading them strided inside the loop made the Cortex-M4 build run 2.4x
/// the instructions on the keyword-spotting model.
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn accumulate_rows(p: &Conv2d, oh: usize, xplane: &[f32], wk: &[f32], ws: usize, yrow: &mut [f32]) {
    for kh in 0..p.kernel_h {
        let ih = (oh * p.stride_h + kh * p.dilation_h) as isize - p.pad_top as isize;
        if ih < 0 || ih >= p.in_h as isize {
            continue;
        }
        let xrow = &xplane[ih as usize * p.in_w..][..p.in_w];
        let mut kw0 = 0;
        while kw0 < p.kernel_w {
            let n = ROW_TAPS.min(p.kernel_w - kw0);
            let mut wrow = [0.0f32; ROW_TAPS];
            for (i, w) in wrow[..n].iter_mut().enumerate() {
                *w = wk[(kh * p.kernel_w + kw0 + i) * ws];
            }
            for (i, &wv) in wrow[..n].iter().enumerate() {
                let w_off = ((kw0 + i) * p.dilation_w) as isize - p.pad_left as isize;
                let (lo, hi) = valid_range(p.out_w, p.stride_w, w_off, p.in_w);
                if lo >= hi {
                    continue;
                }
                let s = ((lo * p.stride_w) as isize + w_off) as usize;
                gather_strided(&mut yrow[lo..hi], &xrow[s..], p.stride_w, |d, v| *d += wv * v);
            }
            kw0 += n;
        }
    }
}

/// Kernel-row weights [`accumulate_rows`] copies at a time.
const ROW_TAPS: usize = 16;

/// Stack bytes of the direct convolution's local arrays: one run of kernel-row weights.
pub(crate) const DIRECT_STACK_BYTES: usize = core::mem::size_of::<[f32; ROW_TAPS]>();

/// Parameters of [`conv_transpose2d`]: ONNX ConvTranspose on NCHW data, with
/// the weights in OIHW order `[out_channels, in_channels / groups, kernel_h,
/// kernel_w]` (tract's layout; ONNX's `[in_channels, out_channels / groups,
/// kh, kw]` is that with the channel axes of each group swapped).
///
/// `y[n, oc, oh, ow] = bias[oc] + sum x[n, ic, ih, iw] * w[oc, ic % icg, kh, kw]`
/// over all `ic` of the group of `oc` and all `(ih, iw, kh, kw)` with
/// `oh = ih * stride_h + kh * dilation_h - pad_top` and
/// `ow = iw * stride_w + kw * dilation_w - pad_left`; contributions landing
/// outside `[0, out_h) x [0, out_w)` are dropped (output_padding and bottom/
/// right pads are implied by `out_h`/`out_w`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConvTranspose2d {
    /// N.
    pub batch: usize,
    /// C of the input.
    pub in_channels: usize,
    /// Input height.
    pub in_h: usize,
    /// Input width.
    pub in_w: usize,
    /// C of the output.
    pub out_channels: usize,
    /// Output height.
    pub out_h: usize,
    /// Output width.
    pub out_w: usize,
    /// Kernel height.
    pub kernel_h: usize,
    /// Kernel width.
    pub kernel_w: usize,
    /// Vertical stride (>= 1).
    pub stride_h: usize,
    /// Horizontal stride (>= 1).
    pub stride_w: usize,
    /// Vertical dilation (>= 1).
    pub dilation_h: usize,
    /// Horizontal dilation (>= 1).
    pub dilation_w: usize,
    /// Rows cropped from the top of the full output.
    pub pad_top: usize,
    /// Columns cropped from the left of the full output.
    pub pad_left: usize,
    /// Number of groups; divides both channel counts.
    pub groups: usize,
}

/// Transposed 2-D convolution (ONNX ConvTranspose), see [`ConvTranspose2d`].
/// `x`: `[batch, in_channels, in_h, in_w]`, `w`: `[out_channels, in_channels
/// / groups, kernel_h, kernel_w]`, `bias`: `[out_channels]`, `y`: `[batch,
/// out_channels, out_h, out_w]`. Needs no scratch.
pub fn conv_transpose2d(p: &ConvTranspose2d, x: &[f32], w: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
    let out_plane = p.out_h * p.out_w;
    if p.batch == 0 || p.out_channels == 0 || out_plane == 0 {
        return;
    }
    let icg = p.in_channels / p.groups;
    let ocg = p.out_channels / p.groups;
    let in_plane = p.in_h * p.in_w;
    let ksize = p.kernel_h * p.kernel_w;
    for n in 0..p.batch {
        let yn = &mut y[n * p.out_channels * out_plane..][..p.out_channels * out_plane];
        for (oc, yplane) in yn.chunks_exact_mut(out_plane).enumerate() {
            yplane.fill(bias.map_or(0.0, |b| b[oc]));
        }
        if in_plane == 0 {
            continue;
        }
        for g in 0..p.groups {
            for icl in 0..icg {
                let ic = g * icg + icl;
                let xplane = &x[(n * p.in_channels + ic) * in_plane..][..in_plane];
                for ocl in 0..ocg {
                    let oc = g * ocg + ocl;
                    let wk = &w[(oc * icg + icl) * ksize..][..ksize];
                    let yplane = &mut yn[oc * out_plane..][..out_plane];
                    for (ih, xrow) in xplane.chunks_exact(p.in_w).enumerate() {
                        for (kh, wrow) in wk.chunks_exact(p.kernel_w).enumerate() {
                            let oh = (ih * p.stride_h + kh * p.dilation_h) as isize - p.pad_top as isize;
                            if oh < 0 || oh >= p.out_h as isize {
                                continue;
                            }
                            let yrow = &mut yplane[oh as usize * p.out_w..][..p.out_w];
                            for (kw, &wv) in wrow.iter().enumerate() {
                                let w_off = (kw * p.dilation_w) as isize - p.pad_left as isize;
                                let (lo, hi) = valid_range(p.in_w, p.stride_w, w_off, p.out_w);
                                if lo >= hi {
                                    continue;
                                }
                                let os = ((lo * p.stride_w) as isize + w_off) as usize;
                                let xs = &xrow[lo..hi];
                                let ys = &mut yrow[os..][..(xs.len() - 1) * p.stride_w + 1];
                                for (yv, &xv) in ys.iter_mut().step_by(p.stride_w).zip(xs) {
                                    *yv += wv * xv;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
