//! The output stage of the int8 kernels on eight `i32` lanes ([`Requant8`]): TFLite's
//! `MultiplyByQuantizedMultiplier` (double rounding, [`Multiplier8`]) or onnxruntime's single
//! rounding to even ([`SingleMultiplier8`]), as `ChannelQuant::rounding` says, then the output
//! zero point and the clamps, the same function as `ChannelQuant`'s portable output stage term
//! for term. Double rounding:
//!
//! - the left shift wraps (`VPSLLVD`), as `x * (1 << shift)` does;
//! - the saturating rounding doubling high multiply is `(a * b + 2^30) >> 31` on exact 64-bit
//!   products (`VPMULDQ` of the even lanes, and of the odd lanes shifted down), the one
//!   overflowing case `i32::MIN * i32::MIN` replaced by `i32::MAX`, as in the portable
//!   `saturating_rounding_doubling_high_mul` (gemmlowp's formulation; ruy's and XNNPACK's AVX2
//!   requantization split the lanes the same way);
//! - the rounding right shift adds one where the remainder exceeds half the divisor, minus one
//!   for negative values (ties away from zero), with a per-lane `VPSRAVD`;
//! - then the zero point (wrapping), `max(act_min)`, `min(act_max)` and the element type's range.
//!
//! Module invariant as in [`super::vector`] (AVX2 instructions, reached only from the int8 entry
//! points).

use core::arch::x86_64::*;

use super::vector::load_i32;
use crate::quant::{ChannelQuant, QuantInt, Requant, RequantRounding};

/// TFLite multipliers (`multiply_by_quantized_multiplier`): the same in every lane
/// ([`Multiplier8::new`]), or one per lane if `PER_LANE` ([`Multiplier8::lanes`]; a constant, so
/// that the broadcast form reads no per-lane field and keeps its registers).
#[derive(Clone, Copy)]
pub(super) struct Multiplier8<const PER_LANE: bool = false> {
    multiplier: __m256i,
    /// The odd lanes' multipliers in the even lanes (for `VPMULDQ` of the odd lanes), if
    /// `PER_LANE`.
    multiplier_odd: __m256i,
    /// `max(shift, 0)`.
    left: __m256i,
    /// `max(-shift, 0)`.
    right: __m256i,
    /// `2^right - 1`.
    mask: __m256i,
    /// `mask >> 1`.
    half: __m256i,
    /// A lane's multiplier is `i32::MIN`, so its product can overflow.
    saturates: bool,
}

impl Multiplier8 {
    /// `multiplier * 2^(shift - 31)` (`shift` in `-31..=31`) in every lane.
    #[inline(always)]
    pub(super) fn new(requant: Requant) -> Self {
        let [left, right, mask, half] = multiplier_terms(requant);
        // SAFETY: the module invariant.
        unsafe {
            Multiplier8 {
                multiplier: _mm256_set1_epi32(requant.multiplier),
                multiplier_odd: _mm256_set1_epi32(requant.multiplier),
                left: _mm256_set1_epi32(left),
                right: _mm256_set1_epi32(right),
                mask: _mm256_set1_epi32(mask),
                half: _mm256_set1_epi32(half),
                saturates: requant.multiplier == i32::MIN,
            }
        }
    }
}

impl Multiplier8<true> {
    /// Lane `i`'s multiplier `requants[i]`.
    #[inline(always)]
    pub(super) fn lanes(requants: [Requant; 8]) -> Self {
        let terms = requants.map(multiplier_terms);
        let field = |i: usize| load(terms.map(|t| t[i]));
        let multiplier = load(requants.map(|r| r.multiplier));
        Multiplier8 {
            multiplier,
            // SAFETY: the module invariant.
            multiplier_odd: unsafe { _mm256_srli_epi64::<32>(multiplier) },
            left: field(0),
            right: field(1),
            mask: field(2),
            half: field(3),
            saturates: requants.iter().any(|r| r.multiplier == i32::MIN),
        }
    }
}

impl<const PER_LANE: bool> Multiplier8<PER_LANE> {
    /// `multiply_by_quantized_multiplier` of each lane of `x`.
    #[inline(always)]
    pub(super) fn apply(&self, x: __m256i) -> __m256i {
        // SAFETY: the module invariant.
        unsafe {
            let scaled = _mm256_sllv_epi32(x, self.left);
            let nudge = _mm256_set1_epi64x(1 << 30);
            let even = _mm256_add_epi64(_mm256_mul_epi32(scaled, self.multiplier), nudge);
            let multiplier_odd = if PER_LANE { self.multiplier_odd } else { self.multiplier };
            let odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64::<32>(scaled), multiplier_odd), nudge);
            // Bits 31..62 of each 64-bit sum: into the low half for even lanes, the high half for odd.
            let high = _mm256_blend_epi32::<0b1010_1010>(_mm256_srli_epi64::<31>(even), _mm256_slli_epi64::<1>(odd));
            // i32::MIN * i32::MIN gave i32::MIN: flip it to i32::MAX.
            let high = if self.saturates {
                let min = _mm256_set1_epi32(i32::MIN);
                let overflowed = _mm256_cmpeq_epi32(scaled, min);
                let overflowed = if PER_LANE {
                    _mm256_and_si256(overflowed, _mm256_cmpeq_epi32(self.multiplier, min))
                } else {
                    overflowed
                };
                _mm256_xor_si256(high, overflowed)
            } else {
                high
            };
            // Rounding divide by 2^right: + 1 where the remainder exceeds half (+ 1 if negative).
            let remainder = _mm256_and_si256(high, self.mask);
            let threshold = _mm256_add_epi32(self.half, _mm256_srli_epi32::<31>(high));
            _mm256_sub_epi32(_mm256_srav_epi32(high, self.right), _mm256_cmpgt_epi32(remainder, threshold))
        }
    }
}

/// onnxruntime's single rounding (`multiply_by_quantized_multiplier_half_even`), one multiplier
/// per lane ([`SingleMultiplier8::lanes`]) or the same in every lane ([`SingleMultiplier8::new`]):
/// the exact 64-bit product (even and odd lanes apart) divided by `2^(31 - shift)` with ties to
/// even as one floor division of a biased product, saturated to `i32`. Where every lane's
/// multiplier is below one half (`shift < 0`, most layers) the division is by at least `2^32` and
/// its quotient fits 31 bits: the high words of the biased products shifted by `right - 32` on
/// `i32` lanes (`VPSRAVD`), nothing to saturate. Otherwise (AVX2 has no arithmetic 64-bit shift)
/// `!((!v) >> r)` for negative `v`, then the saturation.
#[derive(Clone, Copy)]
pub(super) struct SingleMultiplier8<const PER_LANE: bool = false> {
    multiplier: __m256i,
    /// The odd lanes' multipliers in the even lanes (for `VPMULDQ` of the odd lanes), if
    /// `PER_LANE`.
    multiplier_odd: __m256i,
    /// The division of the even lanes' products (of every lane's unless `PER_LANE`).
    even: Divisor4,
    /// The division of the odd lanes' products, if `PER_LANE`.
    odd: Divisor4,
    /// `right - 32` in each `i32` lane, if every lane's `right` is at least 32.
    high_shift: Option<__m256i>,
}

/// The rounded division by `2^right` of four 64-bit products (`right = 31 - shift` of each).
#[derive(Clone, Copy)]
struct Divisor4 {
    /// `right` in each 64-bit lane.
    right: __m256i,
    /// `2^(right - 1) - 1` in each 64-bit lane (0 for `right == 0`).
    half_less_one: __m256i,
    /// 1 in each 64-bit lane (0 for `right == 0`, an exact quotient: nothing to round).
    lsb: __m256i,
}

impl Divisor4 {
    /// The divisor of `requant` in every 64-bit lane.
    #[inline(always)]
    fn splat(requant: Requant) -> Self {
        let (right, half_less_one, lsb) = divisor_terms(requant);
        // SAFETY: the module invariant.
        unsafe {
            Divisor4 {
                right: _mm256_set1_epi64x(right),
                half_less_one: _mm256_set1_epi64x(half_less_one),
                lsb: _mm256_set1_epi64x(lsb),
            }
        }
    }

    /// The divisors of `requants`, one per 64-bit lane.
    #[inline(always)]
    fn of(requants: [Requant; 4]) -> Self {
        let terms = requants.map(divisor_terms);
        // SAFETY: the module invariant.
        let load = |v: [i64; 4]| unsafe { _mm256_loadu_si256(v.as_ptr().cast()) };
        Divisor4 {
            right: load(terms.map(|t| t.0)),
            half_less_one: load(terms.map(|t| t.1)),
            lsb: load(terms.map(|t| t.2)),
        }
    }

    /// The rounded, saturated quotients of the 64-bit lanes `p`, as `i64` lanes: `biased(p) >>
    /// right`, `lsb` being the low bit of the truncated quotient (ties to even in one floor
    /// division).
    #[inline(always)]
    fn round(&self, p: __m256i) -> __m256i {
        // SAFETY: the module invariant.
        unsafe {
            let biased = self.biased(p);
            let sign = _mm256_cmpgt_epi64(_mm256_setzero_si256(), biased);
            let v = _mm256_xor_si256(_mm256_srlv_epi64(_mm256_xor_si256(biased, sign), self.right), sign);
            let (max, min) = (_mm256_set1_epi64x(i32::MAX as i64), _mm256_set1_epi64x(i32::MIN as i64));
            let v = _mm256_blendv_epi8(v, max, _mm256_cmpgt_epi64(v, max));
            _mm256_blendv_epi8(v, min, _mm256_cmpgt_epi64(min, v))
        }
    }

    /// `p + half - 1 + lsb` of the 64-bit lanes `p`: the floor of its quotient by `2^right` is
    /// `p`'s quotient rounded to even (`|p| <= 2^62`, so the sum cannot overflow).
    #[inline(always)]
    fn biased(&self, p: __m256i) -> __m256i {
        // SAFETY: the module invariant.
        unsafe {
            let lsb = _mm256_and_si256(_mm256_srlv_epi64(p, self.right), self.lsb);
            _mm256_add_epi64(_mm256_add_epi64(p, self.half_less_one), lsb)
        }
    }
}

impl SingleMultiplier8 {
    /// `multiplier * 2^(shift - 31)` (`shift` in `-31..=31`) in every lane.
    #[inline(always)]
    pub(super) fn new(requant: Requant) -> Self {
        let divisor = Divisor4::splat(requant);
        // SAFETY: the module invariant.
        unsafe {
            SingleMultiplier8 {
                multiplier: _mm256_set1_epi32(requant.multiplier),
                multiplier_odd: _mm256_set1_epi32(requant.multiplier),
                even: divisor,
                odd: divisor,
                high_shift: (requant.shift < 0).then(|| _mm256_set1_epi32(-1 - requant.shift)),
            }
        }
    }
}

impl SingleMultiplier8<true> {
    /// Lane `i`'s multiplier `requants[i]`.
    #[inline(always)]
    pub(super) fn lanes(requants: [Requant; 8]) -> Self {
        let multiplier = load(requants.map(|r| r.multiplier));
        let pick = |first: usize| core::array::from_fn(|i| requants[2 * i + first]);
        SingleMultiplier8 {
            multiplier,
            // SAFETY: the module invariant.
            multiplier_odd: unsafe { _mm256_srli_epi64::<32>(multiplier) },
            even: Divisor4::of(pick(0)),
            odd: Divisor4::of(pick(1)),
            high_shift: requants.iter().all(|r| r.shift < 0).then(|| load(requants.map(|r| -1 - r.shift))),
        }
    }
}

impl<const PER_LANE: bool> SingleMultiplier8<PER_LANE> {
    /// `multiply_by_quantized_multiplier_half_even` of each lane of `x`.
    #[inline(always)]
    pub(super) fn apply(&self, x: __m256i) -> __m256i {
        // SAFETY: the module invariant.
        unsafe {
            let (multiplier_odd, odd_divisor) =
                if PER_LANE { (self.multiplier_odd, &self.odd) } else { (self.multiplier, &self.even) };
            let even = _mm256_mul_epi32(x, self.multiplier);
            let odd = _mm256_mul_epi32(_mm256_srli_epi64::<32>(x), multiplier_odd);
            if let Some(high_shift) = self.high_shift {
                // floor(v / 2^right) = floor(floor(v / 2^32) / 2^(right - 32)): the high words,
                // even lanes' moved down, shifted arithmetically.
                let high = _mm256_blend_epi32::<0b1010_1010>(
                    _mm256_srli_epi64::<32>(self.even.biased(even)),
                    odd_divisor.biased(odd),
                );
                return _mm256_srav_epi32(high, high_shift);
            }
            let (even, odd) = (self.even.round(even), odd_divisor.round(odd));
            _mm256_blend_epi32::<0b1010_1010>(even, _mm256_slli_epi64::<32>(odd))
        }
    }
}

/// `[left, right, mask, half]` of `requant`'s [`Multiplier8`] lane: `max(shift, 0)`,
/// `max(-shift, 0)`, `2^right - 1` and `mask >> 1`.
#[inline(always)]
fn multiplier_terms(Requant { shift, .. }: Requant) -> [i32; 4] {
    let (left, right) = (shift.max(0), (-shift).max(0));
    let mask = ((1u32 << right) - 1) as i32;
    [left, right, mask, mask >> 1]
}

/// `right = 31 - shift`, `2^(right - 1) - 1` and the rounding bit's mask (both 0 for `right ==
/// 0`: an exact quotient) of `requant`'s division.
#[inline(always)]
fn divisor_terms(requant: Requant) -> (i64, i64, i64) {
    let right = (31 - requant.shift) as i64;
    if right == 0 {
        (0, 0, 0)
    } else {
        (right, (1i64 << (right - 1)) - 1, 1)
    }
}

/// Eight `i32` as a vector.
#[inline(always)]
pub(super) fn load(v: [i32; 8]) -> __m256i {
    load_i32(&v)
}

/// The multiplier of an output stage, rounded as its [`RequantRounding`] says.
#[derive(Clone, Copy)]
enum Rounded<const PER_LANE: bool> {
    Double(Multiplier8<PER_LANE>),
    Single(SingleMultiplier8<PER_LANE>),
}

/// An output stage: a multiplier (one per lane if `PER_LANE`), the output zero point and the
/// clamps.
#[derive(Clone, Copy)]
pub(super) struct Requant8<const PER_LANE: bool = false> {
    multiplier: Rounded<PER_LANE>,
    zero_point: __m256i,
    act_min: __m256i,
    /// `min(act_max, T::MAX)`.
    high: __m256i,
    /// `T::MIN`.
    low: __m256i,
}

impl Requant8 {
    /// Channel `o` of `q` with output zero point `zero_point` and clamp `[act_min, act_max]`, for
    /// outputs of type `T`.
    #[inline(always)]
    pub(super) fn new<T: QuantInt>(q: &ChannelQuant, o: usize, zero_point: i32, clamp: (i32, i32)) -> Self {
        let requant = channel(q, o);
        let multiplier = match q.rounding {
            RequantRounding::Double => Rounded::Double(Multiplier8::new(requant)),
            RequantRounding::SingleHalfToEven => Rounded::Single(SingleMultiplier8::new(requant)),
        };
        Self::with::<T>(multiplier, zero_point, clamp)
    }

    /// `requant` (TFLite's double rounding), then `zero_point` and the clamp `[act_min,
    /// act_max]`, for outputs of type `T`.
    #[inline(always)]
    pub(super) fn of<T: QuantInt>(requant: Requant, zero_point: i32, clamp: (i32, i32)) -> Self {
        Self::with::<T>(Rounded::Double(Multiplier8::new(requant)), zero_point, clamp)
    }
}

impl Requant8<true> {
    /// Lane `i` channel `channels[i]` of `q`, with output zero point `zero_point` and clamp
    /// `[act_min, act_max]`, for outputs of type `T`.
    #[inline(always)]
    pub(super) fn channels<T: QuantInt>(
        q: &ChannelQuant,
        channels: [usize; 8],
        zero_point: i32,
        clamp: (i32, i32),
    ) -> Self {
        let requants = channels.map(|o| channel(q, o));
        let multiplier = match q.rounding {
            RequantRounding::Double => Rounded::Double(Multiplier8::lanes(requants)),
            RequantRounding::SingleHalfToEven => Rounded::Single(SingleMultiplier8::lanes(requants)),
        };
        Self::with::<T>(multiplier, zero_point, clamp)
    }
}

impl<const PER_LANE: bool> Requant8<PER_LANE> {
    /// `multiplier`, then `zero_point` and the clamp, for outputs of type `T`.
    #[inline(always)]
    fn with<T: QuantInt>(multiplier: Rounded<PER_LANE>, zero_point: i32, (act_min, act_max): (i32, i32)) -> Self {
        // SAFETY: the module invariant.
        unsafe {
            Requant8 {
                multiplier,
                zero_point: _mm256_set1_epi32(zero_point),
                act_min: _mm256_set1_epi32(act_min),
                high: _mm256_set1_epi32(act_max.min(T::MAX)),
                low: _mm256_set1_epi32(T::MIN),
            }
        }
    }

    /// The outputs of the accumulators `acc`, as `i32` lanes inside `T`'s range.
    #[inline(always)]
    pub(super) fn apply(&self, acc: __m256i) -> __m256i {
        let rounded = match &self.multiplier {
            Rounded::Double(m) => m.apply(acc),
            Rounded::Single(m) => m.apply(acc),
        };
        // SAFETY: the module invariant.
        unsafe {
            let v = _mm256_max_epi32(_mm256_add_epi32(rounded, self.zero_point), self.act_min);
            _mm256_max_epi32(_mm256_min_epi32(v, self.high), self.low)
        }
    }
}

/// The multiplier of channel `o` of `q` (its only one if per-tensor).
#[inline(always)]
fn channel(q: &ChannelQuant, o: usize) -> Requant {
    let i = if q.multipliers.len() == 1 { 0 } else { o };
    Requant { multiplier: q.multipliers[i], shift: q.shifts[i] }
}

/// The low byte of each lane of `v` (lanes inside an 8-bit type's range: its values' bytes).
#[inline(always)]
pub(super) fn narrow(v: __m256i) -> [u8; 8] {
    // SAFETY: the module invariant.
    let packed = unsafe {
        let low_bytes = _mm256_setr_epi8(
            0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, //
            0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
        );
        let v =
            _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(v, low_bytes), _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0));
        _mm256_extract_epi64::<0>(v)
    };
    packed.to_le_bytes()
}

/// The low bytes of the lanes of `a` and `b` (inside an 8-bit type's range), in the order `[a
/// 0-7, b 0-7]` if `INTERLEAVED` is false, else `[a 0-3, b 0-3, a 4-7, b 4-7]`: one 16-bit pack,
/// one byte shuffle, one dword permutation.
#[inline(always)]
pub(super) fn narrow16<const INTERLEAVED: bool>(a: __m256i, b: __m256i) -> __m128i {
    // SAFETY: the module invariant.
    unsafe {
        // 16-bit lanes [a 0-3, b 0-3 | a 4-7, b 4-7] (exact: every lane fits 16 bits).
        let words = _mm256_packs_epi32(a, b);
        let low_bytes = _mm256_setr_epi8(
            0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1, //
            0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1,
        );
        // Dwords [a 0-3, b 0-3, -, -, a 4-7, b 4-7, -, -].
        let bytes = _mm256_shuffle_epi8(words, low_bytes);
        let order = if INTERLEAVED {
            _mm256_setr_epi32(0, 1, 4, 5, 0, 0, 0, 0)
        } else {
            _mm256_setr_epi32(0, 4, 1, 5, 0, 0, 0, 0)
        };
        _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(bytes, order))
    }
}

/// `T`'s value of raw byte `b`.
#[inline(always)]
pub(super) fn elem<T: QuantInt>(b: u8) -> T {
    T::saturate(if T::MIN < 0 { b as i8 as i32 } else { b as i32 })
}
