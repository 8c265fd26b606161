//! 3-D, 2-D and 1-D max and average pooling, NC(D)HW.

use crate::util::{gather_strided, valid_range};

/// Parameters of [`max_pool2d`] / [`avg_pool2d`] (ONNX MaxPool /
/// AveragePool on `[batch, channels, in_d, in_h, in_w]` data).
///
/// Output `(od, oh, ow)` covers input rows `oh * stride_h - pad_top + kh *
/// dilation_h` for `kh < kernel_h` (depth and columns likewise). Windows may
/// extend past `in_h + pad_bottom` (ONNX `ceil_mode`). 2-D pooling: `in_d =
/// out_d = kernel_d = stride_d = dilation_d = 1` with zero depth pads; 1-D
/// pooling: additionally `in_h = out_h = kernel_h = 1` with zero vertical
/// pads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pool2d {
    /// N.
    pub batch: usize,
    /// C.
    pub channels: usize,
    /// Input depth (1 for 2-D and 1-D pooling).
    pub in_d: usize,
    /// Output depth.
    pub out_d: usize,
    /// Window depth.
    pub kernel_d: usize,
    /// Depth stride (>= 1).
    pub stride_d: usize,
    /// Depth dilation (>= 1).
    pub dilation_d: usize,
    /// Padding planes in front of the input.
    pub pad_front: usize,
    /// Padding planes behind the input (only used by `count_include_pad`).
    pub pad_back: usize,
    /// Input height.
    pub in_h: usize,
    /// Input width.
    pub in_w: usize,
    /// Output height.
    pub out_h: usize,
    /// Output width.
    pub out_w: usize,
    /// Window height.
    pub kernel_h: usize,
    /// Window width.
    pub kernel_w: usize,
    /// Vertical stride (>= 1).
    pub stride_h: usize,
    /// Horizontal stride (>= 1).
    pub stride_w: usize,
    /// Vertical dilation (>= 1).
    pub dilation_h: usize,
    /// Horizontal dilation (>= 1).
    pub dilation_w: usize,
    /// Padding rows above the input.
    pub pad_top: usize,
    /// Padding columns left of the input.
    pub pad_left: usize,
    /// Padding rows below the input (only used by `count_include_pad`).
    pub pad_bottom: usize,
    /// Padding columns right of the input (only used by `count_include_pad`).
    pub pad_right: usize,
    /// Average pooling only: divide by the number of window positions inside
    /// the padded extent instead of inside the input.
    pub count_include_pad: bool,
}

/// Shared row-wise driver: every output row is initialised to `init`, then
/// combined (`comb(&mut y, x)`) with the strided input row segment of every
/// window tap that lands inside the input; `fin(row, od, oh)` post-processes it.
#[inline(always)]
fn pool_rows(
    p: &Pool2d,
    x: &[f32],
    y: &mut [f32],
    init: f32,
    comb: impl Fn(&mut f32, f32) + Copy,
    fin: impl Fn(&mut [f32], usize, usize),
) {
    let in_plane = p.in_h * p.in_w;
    let in_vol = p.in_d * in_plane;
    let out_plane = p.out_h * p.out_w;
    let out_vol = p.out_d * out_plane;
    if out_vol == 0 {
        return;
    }
    let planes = p.batch * p.channels;
    for (pi, yvol) in y[..planes * out_vol].chunks_exact_mut(out_vol).enumerate() {
        let xvol = &x[pi * in_vol..][..in_vol];
        for (od, yplane) in yvol.chunks_exact_mut(out_plane).enumerate() {
            let d_off = (od * p.stride_d) as isize - p.pad_front as isize;
            let (kd_lo, kd_hi) = valid_range(p.kernel_d, p.dilation_d, d_off, p.in_d);
            for (oh, yrow) in yplane.chunks_exact_mut(p.out_w).enumerate() {
                yrow.fill(init);
                let h_off = (oh * p.stride_h) as isize - p.pad_top as isize;
                let (kh_lo, kh_hi) = valid_range(p.kernel_h, p.dilation_h, h_off, p.in_h);
                for kd in kd_lo..kd_hi {
                    let id = (d_off + (kd * p.dilation_d) as isize) as usize;
                    let xplane = &xvol[id * in_plane..][..in_plane];
                    for kh in kh_lo..kh_hi {
                        let ih = (h_off + (kh * p.dilation_h) as isize) as usize;
                        let xrow = &xplane[ih * p.in_w..][..p.in_w];
                        for kw in 0..p.kernel_w {
                            let w_off = (kw * p.dilation_w) as isize - p.pad_left as isize;
                            let (lo, hi) = valid_range(p.out_w, p.stride_w, w_off, p.in_w);
                            if lo >= hi {
                                continue;
                            }
                            let s = ((lo * p.stride_w) as isize + w_off) as usize;
                            gather_strided(&mut yrow[lo..hi], &xrow[s..], p.stride_w, comb);
                        }
                    }
                }
                fin(yrow, od, oh);
            }
        }
    }
}

/// ONNX MaxPool (see [`Pool2d`]): the maximum over the window positions
/// that lie inside the input (padding never wins). An output whose window
/// contains no input position is `-inf`.
pub fn max_pool2d(p: &Pool2d, x: &[f32], y: &mut [f32]) {
    pool_rows(
        p,
        x,
        y,
        f32::NEG_INFINITY,
        |d, v| {
            if v > *d || v.is_nan() {
                *d = v
            }
        },
        |_, _, _| {},
    );
}

/// ONNX AveragePool (see [`Pool2d`]): the sum over the window positions
/// inside the input divided by their number, or with `count_include_pad` by
/// the number of window positions inside the padded extent
/// `[-pad_front, in_d + pad_back) x [-pad_top, in_h + pad_bottom) x
/// [-pad_left, in_w + pad_right)` (window
/// positions beyond that extent, from `ceil_mode`, never count). An output
/// with a zero divisor is 0.
pub fn avg_pool2d(p: &Pool2d, x: &[f32], y: &mut [f32]) {
    let (lim_d, lim_h, lim_w, base_d, base_h, base_w) = if p.count_include_pad {
        (
            p.in_d + p.pad_front + p.pad_back,
            p.in_h + p.pad_top + p.pad_bottom,
            p.in_w + p.pad_left + p.pad_right,
            0,
            0,
            0,
        )
    } else {
        (p.in_d, p.in_h, p.in_w, p.pad_front, p.pad_top, p.pad_left)
    };
    pool_rows(
        p,
        x,
        y,
        0.0,
        |d, v| *d += v,
        |row, od, oh| {
            let d_off = (od * p.stride_d) as isize - base_d as isize;
            let (a, b) = valid_range(p.kernel_d, p.dilation_d, d_off, lim_d);
            let cd = b - a;
            let h_off = (oh * p.stride_h) as isize - base_h as isize;
            let (a, b) = valid_range(p.kernel_h, p.dilation_h, h_off, lim_h);
            let ch = cd * (b - a);
            for (ow, v) in row.iter_mut().enumerate() {
                let w_off = (ow * p.stride_w) as isize - base_w as isize;
                let (a, b) = valid_range(p.kernel_w, p.dilation_w, w_off, lim_w);
                let cnt = ch * (b - a);
                *v = if cnt == 0 { 0.0 } else { *v / cnt as f32 };
            }
        },
    );
}
