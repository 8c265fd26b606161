//! ONNX Resize (nearest and bilinear) over the two innermost axes.

/// Output columns whose source coordinates are computed together (bounds the
/// stack use to a few arrays of this many elements).
pub(crate) const RESIZE_BLOCK: usize = 64;

/// ONNX Resize `coordinate_transformation_mode`: maps an output coordinate
/// `x` to an input coordinate, with `scale` the axis scale and `len_in` /
/// `len_out` the axis lengths.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CoordMode {
    /// `(x + 0.5) / scale - 0.5`.
    HalfPixel,
    /// `(len_in / 2) * (1 - len_out / (scale * len_in)) + (x + 0.5) / scale - 0.5`
    /// (ONNX `half_pixel_symmetric`).
    HalfPixelSymmetric,
    /// `(x + 0.5) / scale - 0.5` if `len_out > 1`, else 0.
    PytorchHalfPixel,
    /// `x * (len_in - 1) / (len_out - 1)` (0 if `len_out == 1`); ignores `scale`.
    AlignCorners,
    /// `x / scale`.
    Asymmetric,
    /// `(x + 0.5) / scale` (ONNX `tf_half_pixel_for_nn`).
    TfHalfPixelForNn,
}

/// ONNX Resize `nearest_mode`: how a fractional source coordinate is
/// rounded (the result is then clamped to `[0, len_in - 1]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NearestMode {
    /// Round to nearest, halves down.
    RoundPreferFloor,
    /// Round to nearest, halves up.
    RoundPreferCeil,
    /// `floor`.
    Floor,
    /// `ceil`.
    Ceil,
}

/// Parameters of [`resize_nearest`] / [`resize_linear`]: `x` is
/// `[batch_channels, in_h, in_w]`, `y` is `[batch_channels, out_h, out_w]`
/// (`batch_channels` = product of all leading axes, which must not be
/// resized). 1-D resize: `in_h = out_h = 1`, `scale_h = 1`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Resize {
    /// Product of the leading (not resized) axes.
    pub batch_channels: usize,
    /// Input height.
    pub in_h: usize,
    /// Input width.
    pub in_w: usize,
    /// Output height.
    pub out_h: usize,
    /// Output width.
    pub out_w: usize,
    /// Height scale as ONNX uses it (the `scales` input, or `out_h / in_h`
    /// when `sizes` was given).
    pub scale_h: f32,
    /// Width scale (see `scale_h`).
    pub scale_w: f32,
    /// Coordinate transformation mode.
    pub coord: CoordMode,
}

/// Source coordinate of output coordinate `x` on one axis (ONNX formula,
/// evaluated in f32 with a true division by `scale` like ONNX Runtime).
#[inline(always)]
fn source_coord(coord: CoordMode, x: usize, scale: f32, len_in: usize, len_out: usize) -> f32 {
    let x = x as f32;
    match coord {
        CoordMode::HalfPixel => (x + 0.5) / scale - 0.5,
        CoordMode::HalfPixelSymmetric => {
            let adj = len_out as f32 / (scale * len_in as f32);
            let offset = len_in as f32 / 2.0 * (1.0 - adj);
            offset + (x + 0.5) / scale - 0.5
        }
        CoordMode::PytorchHalfPixel => {
            if len_out > 1 {
                (x + 0.5) / scale - 0.5
            } else {
                0.0
            }
        }
        CoordMode::AlignCorners => {
            if len_out > 1 {
                x * (len_in as f32 - 1.0) / (len_out as f32 - 1.0)
            } else {
                0.0
            }
        }
        CoordMode::Asymmetric => x / scale,
        CoordMode::TfHalfPixelForNn => (x + 0.5) / scale,
    }
}

#[inline(always)]
fn nearest_index(v: f32, mode: NearestMode, len_in: usize) -> usize {
    let f = libm::floorf(v);
    let r = match mode {
        NearestMode::RoundPreferFloor => {
            if v - f == 0.5 {
                f
            } else {
                libm::roundf(v)
            }
        }
        NearestMode::RoundPreferCeil => {
            if v - f == 0.5 {
                f + 1.0
            } else {
                libm::roundf(v)
            }
        }
        NearestMode::Floor => f,
        NearestMode::Ceil => libm::ceilf(v),
    };
    (r.max(0.0) as usize).min(len_in - 1)
}

/// `(i0, i1, w1)`: linear interpolation between `i0` and `i1` with weight
/// `w1` on `i1`, after clamping `v` to `[0, len_in - 1]`.
#[inline(always)]
fn linear_coeffs(v: f32, len_in: usize) -> (usize, usize, f32) {
    let v = v.clamp(0.0, (len_in - 1) as f32);
    let i0 = (libm::floorf(v) as usize).min(len_in - 1);
    let i1 = (i0 + 1).min(len_in - 1);
    (i0, i1, v - i0 as f32)
}

/// ONNX Resize with `mode = nearest` (see [`Resize`], [`CoordMode`],
/// [`NearestMode`]): `y[c, oh, ow] = x[c, round(map_h(oh)), round(map_w(ow))]`
/// with indices clamped to the input.
pub fn resize_nearest(p: &Resize, nearest: NearestMode, x: &[f32], y: &mut [f32]) {
    let (in_plane, out_plane) = (p.in_h * p.in_w, p.out_h * p.out_w);
    if out_plane == 0 || p.batch_channels == 0 {
        return;
    }
    let sh = |o| source_coord(p.coord, o, p.scale_h, p.in_h, p.out_h);
    let sw = |o| source_coord(p.coord, o, p.scale_w, p.in_w, p.out_w);
    let mut c0 = 0;
    while c0 < p.out_w {
        let w = RESIZE_BLOCK.min(p.out_w - c0);
        let mut ix = [0usize; RESIZE_BLOCK];
        for (t, v) in ix[..w].iter_mut().enumerate() {
            *v = nearest_index(sw(c0 + t), nearest, p.in_w);
        }
        let ix = &ix[..w];
        for oh in 0..p.out_h {
            let ih = nearest_index(sh(oh), nearest, p.in_h);
            for c in 0..p.batch_channels {
                let xr = &x[c * in_plane + ih * p.in_w..][..p.in_w];
                let yr = &mut y[c * out_plane + oh * p.out_w + c0..][..w];
                for (yv, &i) in yr.iter_mut().zip(ix) {
                    *yv = xr[i];
                }
            }
        }
        c0 += w;
    }
}

/// ONNX Resize with `mode = linear` on the two innermost axes (bilinear;
/// linear for 1-D): source coordinates from [`CoordMode`], clamped to
/// `[0, len_in - 1]` (as ONNX Runtime and the ONNX reference do), then
/// interpolated between the two neighbouring input samples on each axis.
/// (`antialias` and `exclude_outside` are not supported.)
pub fn resize_linear(p: &Resize, x: &[f32], y: &mut [f32]) {
    let (in_plane, out_plane) = (p.in_h * p.in_w, p.out_h * p.out_w);
    if out_plane == 0 || p.batch_channels == 0 {
        return;
    }
    let sh = |o| source_coord(p.coord, o, p.scale_h, p.in_h, p.out_h);
    let sw = |o| source_coord(p.coord, o, p.scale_w, p.in_w, p.out_w);
    let mut c0 = 0;
    while c0 < p.out_w {
        let w = RESIZE_BLOCK.min(p.out_w - c0);
        let mut i0 = [0usize; RESIZE_BLOCK];
        let mut i1 = [0usize; RESIZE_BLOCK];
        let mut f1 = [0.0f32; RESIZE_BLOCK];
        for t in 0..w {
            (i0[t], i1[t], f1[t]) = linear_coeffs(sw(c0 + t), p.in_w);
        }
        let (i0, i1, f1) = (&i0[..w], &i1[..w], &f1[..w]);
        for oh in 0..p.out_h {
            let (h0, h1, g1) = linear_coeffs(sh(oh), p.in_h);
            let g0 = 1.0 - g1;
            for c in 0..p.batch_channels {
                let r0 = &x[c * in_plane + h0 * p.in_w..][..p.in_w];
                let r1 = &x[c * in_plane + h1 * p.in_w..][..p.in_w];
                let yr = &mut y[c * out_plane + oh * p.out_w + c0..][..w];
                for (t, yv) in yr.iter_mut().enumerate() {
                    let (a, b, f) = (i0[t], i1[t], f1[t]);
                    let top = r0[a] + f * (r0[b] - r0[a]);
                    let bot = r1[a] + f * (r1[b] - r1[a]);
                    *yv = g0 * top + g1 * bot;
                }
            }
        }
        c0 += w;
    }
}
