//! Rank-generic strided copy, padding and gather.

use crate::util::{contiguous_strides, Layout};
use crate::MAX_RANK;

/// Description of a strided copy (see [`copy_strided`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Strided<'a> {
    /// Iteration shape (rank <= `MAX_RANK`; rank 0 copies one element).
    pub shape: &'a [usize],
    /// Offset of the first source element.
    pub src_offset: usize,
    /// Source stride of each axis, in elements (may be negative or 0).
    pub src_strides: &'a [isize],
    /// Offset of the first destination element.
    pub dst_offset: usize,
    /// Destination stride of each axis, in elements (may be negative).
    pub dst_strides: &'a [isize],
}

/// For every index `i` in `p.shape`: `y[dst_offset + sum(i_d * dst_strides[d])]
/// = x[src_offset + sum(i_d * src_strides[d])]`. Destination positions must
/// be distinct for a well-defined result. Builds Transpose, Slice (incl.
/// negative steps), Concat, Split, Expand, Tile, Depth/SpaceToDepth and
/// Gather with constant indices. Axes contiguous on both sides are merged;
/// innermost runs contiguous on both sides are `copy_from_slice`. Any element type: the same
/// copies move `f32` activations and quantized `i8` / `u8` ones (a quantized transpose, slice or
/// equal-scale concatenation changes no value).
pub fn copy_strided<T: Copy>(p: &Strided, x: &[T], y: &mut [T]) {
    let Some(l) = Layout::<2>::new(p.shape, |s, d| match s {
        0 => p.dst_strides[d],
        _ => p.src_strides[d],
    }) else {
        return;
    };
    let (n, [ds, ss]) = l.inner();
    l.for_each_outer([p.dst_offset as isize, p.src_offset as isize], |[d, s]| {
        copy_run(x, y, s, ss, d, ds, n);
    });
}

/// Copies `n` elements from `x[s + t * ss]` to `y[d + t * ds]`.
#[inline(always)]
fn copy_run<T: Copy>(x: &[T], y: &mut [T], s: isize, ss: isize, d: isize, ds: isize, n: usize) {
    if ds == 1 {
        let yr = &mut y[d as usize..][..n];
        if ss == 1 {
            yr.copy_from_slice(&x[s as usize..][..n]);
        } else if ss == 0 {
            yr.fill(x[s as usize]);
        } else if ss > 0 {
            let xr = &x[s as usize..][..(n - 1) * ss as usize + 1];
            for (yv, &xv) in yr.iter_mut().zip(xr.iter().step_by(ss as usize)) {
                *yv = xv;
            }
        } else {
            let st = (-ss) as usize;
            let first = s as usize - (n - 1) * st;
            let xr = &x[first..=s as usize];
            for (yv, &xv) in yr.iter_mut().zip(xr.iter().rev().step_by(st)) {
                *yv = xv;
            }
        }
    } else {
        for t in 0..n as isize {
            y[(d + t * ds) as usize] = x[(s + t * ss) as usize];
        }
    }
}

/// Padding mode of [`pad`] (ONNX Pad `mode`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PadMode {
    /// Positions outside the input take this value.
    Constant(f32),
    /// Mirror without repeating the edge (`[a b c]` -> `c b | a b c | b a`).
    Reflect,
    /// Repeat the edge value.
    Edge,
    /// Wrap around (`[a b c]` -> `b c | a b c | a b`).
    Wrap,
}

/// The element types of [`pad`]: `f32`, and the integer types of ONNX Pad on raw integers (a
/// Constant mode's value converted with a saturating `as`).
pub trait PadElem: Copy {
    /// The Constant mode's value in this type.
    fn from_f32(v: f32) -> Self;
}

macro_rules! pad_elem {
    ($($t:ty),*) => {$(
        impl PadElem for $t {
            #[inline(always)]
            fn from_f32(v: f32) -> $t {
                v as $t
            }
        }
    )*};
}

pad_elem!(f32, i8, u8, i16, i32);

/// Description of a padding / cropping (see [`pad`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pad<'a> {
    /// Shape of the (contiguous) input; rank <= `MAX_RANK`.
    pub in_shape: &'a [usize],
    /// Elements added before each axis; negative values crop.
    pub pads_begin: &'a [isize],
    /// Shape of the (contiguous) output; the end pads are implied
    /// (`out - in - begin`, negative = crop).
    pub out_shape: &'a [usize],
    /// How positions outside the input are filled.
    pub mode: PadMode,
}

/// Maps output coordinate `o - begin` to an input coordinate under `mode`;
/// `None` means "constant" (Constant mode, or an empty axis).
#[inline(always)]
fn pad_source(i: isize, n: usize, mode: PadMode) -> Option<usize> {
    let ni = n as isize;
    if (0..ni).contains(&i) {
        return Some(i as usize);
    }
    if n == 0 {
        return None;
    }
    match mode {
        PadMode::Constant(_) => None,
        PadMode::Edge => Some(i.clamp(0, ni - 1) as usize),
        PadMode::Wrap => Some(i.rem_euclid(ni) as usize),
        PadMode::Reflect => {
            if n == 1 {
                return Some(0);
            }
            let period = 2 * (ni - 1);
            let r = i.rem_euclid(period);
            Some(if r < ni { r } else { period - r } as usize)
        }
    }
}

/// ONNX Pad (every mode) with negative pads cropping. Output element `o`
/// takes the input element at `o_d - pads_begin[d]` on every axis when that
/// is inside the input; otherwise, per axis, Constant uses the value,
/// Edge clamps, Wrap wraps around and Reflect mirrors (repeatedly if the pad
/// exceeds the axis). Non-constant modes on an empty input axis yield 0.
/// Rank 0 copies the single element.
pub fn pad<T: PadElem>(p: &Pad, x: &[T], y: &mut [T]) {
    let rank = p.out_shape.len();
    assert!(rank <= MAX_RANK && p.in_shape.len() == rank && p.pads_begin.len() == rank);
    if p.out_shape.contains(&0) {
        return;
    }
    if rank == 0 {
        y[0] = x[0];
        return;
    }
    let cval = T::from_f32(match p.mode {
        PadMode::Constant(v) => v,
        _ => 0.0,
    });
    let in_strides = contiguous_strides(p.in_shape);
    let last = rank - 1;
    let (n_in, n_out, begin) = (p.in_shape[last], p.out_shape[last], p.pads_begin[last]);
    // Output columns [lo, hi) read the contiguous input columns lo - begin...
    let lo = begin.clamp(0, n_out as isize) as usize;
    let hi = (begin + n_in as isize).clamp(lo as isize, n_out as isize) as usize;
    let mut idx = [0usize; MAX_RANK];
    for yr in y[..p.out_shape.iter().product::<usize>()].chunks_exact_mut(n_out) {
        let mut base = Some(0usize);
        for d in 0..last {
            let src = pad_source(idx[d] as isize - p.pads_begin[d], p.in_shape[d], p.mode);
            base = match (base, src) {
                (Some(b), Some(s)) => Some(b + s * in_strides[d] as usize),
                _ => None,
            };
        }
        match base {
            None => yr.fill(cval),
            Some(b) => {
                let xr = &x[b..][..n_in];
                if hi > lo {
                    let s = (lo as isize - begin) as usize;
                    yr[lo..hi].copy_from_slice(&xr[s..s + hi - lo]);
                }
                let (left, rest) = yr.split_at_mut(lo);
                let right = &mut rest[hi - lo..];
                let border = left.iter_mut().enumerate();
                let border = border.chain(right.iter_mut().enumerate().map(|(t, v)| (t + hi, v)));
                for (o, yv) in border {
                    *yv = match pad_source(o as isize - begin, n_in, p.mode) {
                        Some(s) => xr[s],
                        None => cval,
                    };
                }
            }
        }
        // Advance the outer odometer.
        let mut d = last;
        while d > 0 {
            d -= 1;
            idx[d] += 1;
            if idx[d] < p.out_shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// ONNX Gather along the middle axis of `x` viewed as `[outer, axis_len,
/// inner]`: `y[o, j, i] = x[o, indices[j], i]` with `y` viewed as `[outer,
/// indices.len(), inner]`. Negative indices count from the end
/// (`axis_len + idx`); out-of-range indices panic.
pub fn gather(x: &[f32], y: &mut [f32], outer: usize, axis_len: usize, inner: usize, indices: &[i64]) {
    let out_block = indices.len() * inner;
    if out_block == 0 {
        return;
    }
    for (o, yb) in y[..outer * out_block].chunks_exact_mut(out_block).enumerate() {
        let xb = &x[o * axis_len * inner..][..axis_len * inner];
        for (yr, &ix) in yb.chunks_exact_mut(inner).zip(indices) {
            let ix = if ix < 0 { ix + axis_len as i64 } else { ix };
            assert!((0..axis_len as i64).contains(&ix), "gather index out of range");
            yr.copy_from_slice(&xb[ix as usize * inner..][..inner]);
        }
    }
}
