//! The int8 / uint8 add and subtract of two tensors of one shape ([`crate::quant::add`],
//! [`crate::quant::sub`] and their in-place variants, without broadcasting) on eight `i32`
//! lanes: TFLite's `AddFunc` term for term, each input widened, its zero point subtracted,
//! shifted left and rescaled ([`Multiplier8`]), the sum or difference through the output stage
//! ([`Requant8`]). Integer arithmetic: the portable kernel's bits.

use core::arch::x86_64::__m256i;

use super::requant::{elem, narrow, Multiplier8, Requant8};
use super::vector::{add, bytes, shl, splat, sub, widen8};
use crate::quant::{Add, QuantInt};
use crate::Broadcast;

/// Elements per vector.
const LANES: usize = 8;

/// The element count of `shape` if both inputs are laid out as the output (no axis of more than
/// one element broadcast or strided otherwise).
pub(super) fn same_shape(shape: &Broadcast) -> Option<usize> {
    let mut stride = 1;
    for d in (0..shape.out_shape.len()).rev() {
        let n = shape.out_shape[d];
        if n > 1 && (shape.a_strides[d] != stride || shape.b_strides[d] != stride) {
            return None;
        }
        stride *= n;
    }
    Some(stride)
}

/// TFLite's add (or subtract) of `p` on eight lanes.
struct AddLanes {
    a_zero_point: __m256i,
    b_zero_point: __m256i,
    left_shift: i32,
    a: Multiplier8,
    b: Multiplier8,
    output: Requant8,
    subtract: bool,
}

impl AddLanes {
    #[inline(always)]
    fn new<T: QuantInt>(p: &Add, subtract: bool) -> Self {
        AddLanes {
            a_zero_point: splat(p.a_zero_point),
            b_zero_point: splat(p.b_zero_point),
            left_shift: p.scaling.left_shift,
            a: Multiplier8::new(p.scaling.a),
            b: Multiplier8::new(p.scaling.b),
            output: Requant8::of::<T>(p.scaling.output, p.y_zero_point, (p.act_min, p.act_max)),
            subtract,
        }
    }

    /// The output bytes of eight pairs of input bytes.
    #[inline(always)]
    fn combine(&self, a: &[u8], b: &[u8], signed: bool) -> [u8; LANES] {
        let sa = self.a.apply(shl(sub(widen8(a, signed), self.a_zero_point), self.left_shift));
        let sb = self.b.apply(shl(sub(widen8(b, signed), self.b_zero_point), self.left_shift));
        let raw = if self.subtract { sub(sa, sb) } else { add(sa, sb) };
        narrow(self.output.apply(raw))
    }

    /// The outputs of `a` and `b` (`n <= 8` elements each), written by `put(index, byte)`.
    #[inline(always)]
    fn block(&self, a: &[u8], b: &[u8], signed: bool, mut put: impl FnMut(usize, u8)) {
        let out = if a.len() == LANES {
            self.combine(a, b, signed)
        } else {
            let (mut ta, mut tb) = ([0u8; LANES], [0u8; LANES]);
            ta[..a.len()].copy_from_slice(a);
            tb[..b.len()].copy_from_slice(b);
            self.combine(&ta, &tb, signed)
        };
        for (i, &v) in out.iter().enumerate().take(a.len()) {
            put(i, v);
        }
    }
}

/// `y = a + b` (or `a - b`), all `len` elements contiguous.
#[inline(always)]
pub(super) fn add_sub<T: QuantInt>(p: &Add, len: usize, (a, b): (&[T], &[T]), y: &mut [T], subtract: bool) {
    let lanes = AddLanes::new::<T>(p, subtract);
    let (a, b, y) = (bytes(&a[..len]), bytes(&b[..len]), &mut y[..len]);
    for ((ac, bc), yc) in a.chunks(LANES).zip(b.chunks(LANES)).zip(y.chunks_mut(LANES)) {
        lanes.block(ac, bc, T::MIN < 0, |i, v| yc[i] = elem(v));
    }
}

/// `acc = acc + b` (or `acc - b`), all `len` elements contiguous.
#[inline(always)]
pub(super) fn add_sub_in_place<T: QuantInt>(p: &Add, len: usize, acc: &mut [T], b: &[T], subtract: bool) {
    let lanes = AddLanes::new::<T>(p, subtract);
    let b = bytes(&b[..len]);
    for (ac, bc) in acc[..len].chunks_mut(LANES).zip(b.chunks(LANES)) {
        let mut a = [0u8; LANES];
        a[..ac.len()].copy_from_slice(bytes(ac));
        lanes.block(&a[..ac.len()], bc, T::MIN < 0, |i, v| ac[i] = elem(v));
    }
}
