//! Constant padding (and cropping) of a quantized tensor: TFLite PAD / PADV2, ONNX Pad in constant
//! mode; the pad value is the zero point (the quantized 0) unless the graph says otherwise.

use super::QuantInt;
use crate::util::{contiguous_strides, Layout};
use crate::MAX_RANK;

/// Parameters of [`pad`]: contiguous tensors of rank `<= MAX_RANK`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pad<'a> {
    /// Shape of the input.
    pub in_shape: &'a [usize],
    /// Elements added before each axis; negative values crop.
    pub pads_begin: &'a [isize],
    /// Shape of the output (the end pads are implied; negative = crop).
    pub out_shape: &'a [usize],
}

/// `y` is `value` everywhere except where it overlaps the input shifted by `pads_begin`, which is
/// copied.
pub fn pad<T: QuantInt>(p: &Pad, x: &[T], y: &mut [T], value: T) {
    let rank = p.in_shape.len();
    assert!(rank <= MAX_RANK && p.pads_begin.len() == rank && p.out_shape.len() == rank, "pad: ranks");
    y.fill(value);
    let (xs, ys) = (contiguous_strides(p.in_shape), contiguous_strides(p.out_shape));
    // The overlap, in input coordinates [lo, hi) per axis.
    let mut region = [0usize; MAX_RANK];
    let (mut x_offset, mut y_offset) = (0isize, 0isize);
    for d in 0..rank {
        let begin = p.pads_begin[d];
        let lo = (-begin).max(0);
        let hi = (p.in_shape[d] as isize).min(p.out_shape[d] as isize - begin);
        region[d] = (hi - lo).max(0) as usize;
        x_offset += lo * xs[d];
        y_offset += (lo + begin) * ys[d];
    }
    let Some(l) = Layout::<2>::new(&region[..rank], |s, d| if s == 0 { ys[d] } else { xs[d] }) else {
        return;
    };
    let (n, _) = l.inner();
    l.for_each_outer([y_offset, x_offset], |[yo, xo]| {
        y[yo as usize..][..n].copy_from_slice(&x[xo as usize..][..n]);
    });
}
