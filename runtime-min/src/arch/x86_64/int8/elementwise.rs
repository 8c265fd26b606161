//! The int8 / uint8 add and subtract of two tensors of one shape ([`crate::quant::add`],
//! [`crate::quant::sub`] and their in-place variants, without broadcasting) on eight `i32`
//! lanes: TFLite's `AddFunc` term for term, each input widened, its zero point subtracted,
//! shifted left and rescaled ([`Multiplier8`]), the sum or difference through the output stage
//! ([`Requant8`]). Integer arithmetic: the portable kernel's bits.

use core::arch::x86_64::{__m128i, __m256i};

use super::requant::{narrow16, Multiplier8, Requant8};
use super::vector::{add, bytes, bytes16, bytes_mut, shl, splat, store16, sub, widen8};
use crate::quant::{Add, QuantInt};
use crate::Broadcast;

/// Elements per vector.
const LANES: usize = 8;
/// Elements per block: two vectors, one 16-byte store.
const BLOCK: usize = 2 * LANES;

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

    /// The outputs of eight pairs of input bytes, as `i32` lanes.
    #[inline(always)]
    fn combine(&self, a: &[u8], b: &[u8], signed: bool) -> __m256i {
        let sa = self.a.apply(shl(sub(widen8(a, signed), self.a_zero_point), self.left_shift));
        let sb = self.b.apply(shl(sub(widen8(b, signed), self.b_zero_point), self.left_shift));
        let raw = if self.subtract { sub(sa, sb) } else { add(sa, sb) };
        self.output.apply(raw)
    }

    /// The output bytes of 16 pairs of input bytes.
    #[inline(always)]
    fn block(&self, a: &[u8], b: &[u8], signed: bool) -> __m128i {
        narrow16::<false>(
            self.combine(&a[..LANES], &b[..LANES], signed),
            self.combine(&a[LANES..], &b[LANES..], signed),
        )
    }

    /// The output bytes of `a` and `b` (fewer than 16 elements each), in the first `a.len()`
    /// bytes of the result.
    #[inline(always)]
    fn tail(&self, a: &[u8], b: &[u8], signed: bool) -> [u8; BLOCK] {
        let (mut ta, mut tb) = ([0u8; BLOCK], [0u8; BLOCK]);
        ta[..a.len()].copy_from_slice(a);
        tb[..b.len()].copy_from_slice(b);
        bytes16(self.block(&ta, &tb, signed))
    }
}

/// `y = a + b` (or `a - b`), all `len` elements contiguous.
#[inline(always)]
pub(super) fn add_sub<T: QuantInt>(p: &Add, len: usize, (a, b): (&[T], &[T]), y: &mut [T], subtract: bool) {
    let lanes = AddLanes::new::<T>(p, subtract);
    let (a, b, y) = (bytes(&a[..len]), bytes(&b[..len]), bytes_mut(&mut y[..len]));
    let full = len - len % BLOCK;
    let blocks = a[..full].chunks_exact(BLOCK).zip(b[..full].chunks_exact(BLOCK));
    for ((ac, bc), yc) in blocks.zip(y[..full].chunks_exact_mut(BLOCK)) {
        store16(yc, lanes.block(ac, bc, T::MIN < 0));
    }
    if full < len {
        y[full..].copy_from_slice(&lanes.tail(&a[full..], &b[full..], T::MIN < 0)[..len - full]);
    }
}

/// `acc = acc + b` (or `acc - b`), all `len` elements contiguous.
#[inline(always)]
pub(super) fn add_sub_in_place<T: QuantInt>(p: &Add, len: usize, acc: &mut [T], b: &[T], subtract: bool) {
    let lanes = AddLanes::new::<T>(p, subtract);
    let (acc, b) = (bytes_mut(&mut acc[..len]), bytes(&b[..len]));
    let full = len - len % BLOCK;
    for (ac, bc) in acc[..full].chunks_exact_mut(BLOCK).zip(b[..full].chunks_exact(BLOCK)) {
        let v = lanes.block(ac, bc, T::MIN < 0);
        store16(ac, v);
    }
    if full < len {
        let out = lanes.tail(&acc[full..], &b[full..], T::MIN < 0);
        acc[full..].copy_from_slice(&out[..len - full]);
    }
}
