//! TFLite's interpolated `i16` tables: 512 segments over the whole `i16` range plus one end point
//! (`LUTPopulateInt16<float>` and `LUTLookup(int16_t, ..)` of `kernels/internal/common.h`).

/// Entries of an [`lut_s16`] table.
pub const LUT_S16_LEN: usize = 513;

/// TFLite `LUTPopulateInt16<float>`: the table of `f` from an input quantization to an output
/// one, every operation in `f32` in TFLite's order. Each of the 512 samples is `round(f(x) /
/// output step)` corrected by half the error of linear interpolation at its segment's midpoint;
/// the last entry is `f(input max)`. Build time: the caller passes `f`, whose last bits can move
/// an entry (TFLite's `std::exp` is the C library's `expf`; the `libm` crate's differs from
/// glibc's in the last bit of about one `f32` in ten on `[-10, 0]`).
pub fn lut_s16(
    input_scale: f32,
    input_zero_point: i32,
    output_scale: f32,
    output_zero_point: i32,
    f: impl Fn(f32) -> f32,
) -> [i16; LUT_S16_LEN] {
    let (min, max) = (i16::MIN as i32, i16::MAX as i32);
    let input_min = input_scale * (min - input_zero_point) as f32;
    let input_max = input_scale * (max - input_zero_point) as f32;
    let output_min = output_scale * (min - output_zero_point) as f32;
    let output_max = output_scale * (max - output_zero_point) as f32;
    const STEPS: usize = LUT_S16_LEN - 1;
    let step = (input_max - input_min) / STEPS as f32;
    let half_step = step / 2.0;
    let inverse = (max - min + 1) as f32 / (output_max - output_min);
    let clamp = |v: f32| v.clamp(min as f32, max as f32) as i16;
    let mut lut = [0i16; LUT_S16_LEN];
    for (i, entry) in lut[..STEPS].iter_mut().enumerate() {
        let at = input_min + i as f32 * step;
        let (val, mid, next) = (f(at), f(at + half_step), f(input_min + (i + 1) as f32 * step));
        let sample = libm::roundf(val * inverse);
        let interpolated = libm::roundf((next * inverse + libm::roundf(val * inverse)) / 2.0);
        let midpoint = libm::roundf(mid * inverse);
        let bias = libm::roundf((interpolated - midpoint) / 2.0);
        *entry = clamp(sample - bias);
    }
    lut[STEPS] = clamp(libm::roundf(f(input_max) * inverse));
    lut
}

/// TFLite `LUTLookup(int16_t, const int16_t*)`: the segment of the top 9 bits of `v`,
/// interpolated linearly by its low 7 bits (rounded; `i16` wrapping arithmetic as TFLite's).
#[inline(always)]
pub fn lut_s16_lookup(v: i16, lut: &[i16]) -> i16 {
    let index = (256 + (v >> 7) as i32) as usize;
    let offset = (v & 0x7f) as i32;
    let base = lut[index];
    let slope = lut[index + 1].wrapping_sub(base) as i32;
    base.wrapping_add(((slope * offset + 64) >> 7) as i16)
}
