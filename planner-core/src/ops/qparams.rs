//! The vocabulary the integer operators share: an activation's quantization ([`QParams`]), the
//! per-channel requantization arrays they keep in the weight blob, and the build-time functions of
//! `runtime-min::quant` that are generic over the 8-bit element type, dispatched on [`DType`].

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min::quant::{self as rtq, QuantInt, Requant};

use crate::tensor::{DType, Data, Quant, Tensor};

/// Evaluates `$body` with `$t` the Rust type of the 8-bit `DType` `$dtype` (`u8` for `U8`, else `i8`).
macro_rules! on_dtype {
    ($dtype:expr, $t:ident => $body:expr) => {
        match $dtype {
            DType::U8 => {
                type $t = u8;
                $body
            }
            _ => {
                type $t = i8;
                $body
            }
        }
    };
}
pub(crate) use on_dtype;

/// [`on_dtype`] over every quantized integer type: also `i16` for `I16` (TFLite's 16x8 mode).
macro_rules! on_int_dtype {
    ($dtype:expr, $t:ident => $body:expr) => {
        if $dtype == DType::I16 {
            type $t = i16;
            $body
        } else {
            on_dtype!($dtype, $t => $body)
        }
    };
}

/// How a quantized activation's integers map to reals: `real = scale * (q - zero_point)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QParams {
    /// The real value of one step.
    pub scale: f32,
    /// The integer that represents 0.
    pub zero_point: i32,
    /// `I8` or `U8`; `I16` in TFLite's 16x8 mode.
    pub dtype: DType,
}

impl QParams {
    /// The quantization of an 8-bit or `i16` tensor: its per-tensor [`Quant`], or "raw integers"
    /// (scale 1, zero point 0) when it has none (an integer tensor no quantized operator has
    /// described).
    pub fn of(t: &Tensor) -> Result<QParams, String> {
        if !matches!(t.dtype, DType::I8 | DType::U8 | DType::I16) {
            return Err(format!("`{}` is {}, not a quantized integer tensor", t.name, t.dtype.rust_name()));
        }
        match &t.quant {
            Some(Quant::PerTensor { scale, zero_point }) => {
                Ok(QParams { scale: *scale, zero_point: *zero_point, dtype: t.dtype })
            }
            Some(Quant::PerAxis { .. }) => Err(format!("`{}` is quantized per axis", t.name)),
            None => Ok(QParams { scale: 1.0, zero_point: 0, dtype: t.dtype }),
        }
    }

    /// As a tensor's [`Quant`].
    pub fn quant(&self) -> Quant {
        Quant::PerTensor { scale: self.scale, zero_point: self.zero_point }
    }

    /// Whether `other` represents every integer as the same real (the same type, scale and zero
    /// point), so that a value passes between the two unchanged.
    pub fn same_as(&self, other: &QParams) -> bool {
        self.dtype == other.dtype && self.scale == other.scale && self.zero_point == other.zero_point
    }

    /// The element type's range `(MIN, MAX)`.
    pub fn range(&self) -> (i32, i32) {
        on_int_dtype!(self.dtype, T => (<T as QuantInt>::MIN, <T as QuantInt>::MAX))
    }

    /// The output clamp of a fused activation whose real range is `[lo, hi]` (TFLite's
    /// `CalculateActivationRangeQuantized`: each bound quantized, kept inside the type).
    pub fn clamp(&self, (lo, hi): (f32, f32)) -> (i32, i32) {
        on_int_dtype!(self.dtype, T => rtq::activation_range::<T>(lo, hi, self.scale, self.zero_point))
    }

    /// `real` quantized to this type (ties to even, as ONNX QuantizeLinear), saturated.
    pub fn quantize(&self, real: f32) -> i32 {
        on_int_dtype!(self.dtype, T => rtq::quantize_value::<T>(real, self.scale, self.zero_point, rtq::Rounding::HalfToEven).to_i32())
    }

    /// The real value of the integer `q`.
    pub fn dequantize(&self, q: i32) -> f32 {
        (q - self.zero_point) as f32 * self.scale
    }

    /// The table of `f` over every value of the type, as ONNX runtimes build theirs: each input
    /// dequantized with `self`, mapped by `f` in `f32`, quantized with `out` (ties to even). Entry
    /// `byte` holds the output for the input whose raw byte it is.
    pub fn table(&self, out: &QParams, f: impl Fn(f32) -> f32) -> Vec<i32> {
        (0..256)
            .map(|byte: i32| {
                let q = match self.dtype {
                    DType::I8 => byte as u8 as i8 as i32,
                    _ => byte,
                };
                out.quantize(f(self.dequantize(q)))
            })
            .collect()
    }
}

/// Quantized weights, 8-bit, in the layout the operator building from them documents.
#[derive(Clone, Debug, PartialEq)]
pub struct QWeights {
    /// The weights (uint8 weights converted with `weights_u8_to_i8`).
    pub values: Vec<i8>,
    /// One scale per output channel, or one for all.
    pub scales: Vec<f32>,
    /// The zero point of every weight.
    pub zero_point: i32,
}

impl QWeights {
    /// The scale of output channel `o`.
    pub fn scale(&self, o: usize) -> f32 {
        self.scales[if self.scales.len() == 1 { 0 } else { o }]
    }
}

/// Integers (already in range) as data of the quantized type `dtype`.
pub fn int_data(dtype: DType, values: impl Iterator<Item = i32>) -> Data {
    match dtype {
        DType::U8 => Data::U8(values.map(|v| v as u8).collect()),
        DType::I16 => Data::I16(values.map(|v| v as i16).collect()),
        _ => Data::I8(values.map(|v| v as i8).collect()),
    }
}

/// The smallest real multiplier [`requant`] keeps whole in Q0.31 (19 significant bits).
const SINGLE_ROUNDING_MIN: f64 = 1.0 / 4096.0;

/// The [`Requant`] of a real multiplier (the ratio of scales an accumulator is brought to the
/// output's quantization by), chosen to round once, as onnxruntime does (`round(acc * real)`).
///
/// TFLite's `QuantizeMultiplier` normalizes the multiplier into `[2^30, 2^31)` and, for a real
/// below 1/2, shifts right after the rounding doubling high multiply: the result is rounded twice,
/// and the first rounding moves about `2^-shift` of all results across a rounding boundary (3% for
/// a multiplier near 1/50, typical of a convolution), which a deep network then amplifies. A real
/// of at least 1/4096 is therefore kept whole in Q0.31 with shift 0 (the same kernel arithmetic,
/// one rounding, 19 or more significant bits); smaller ones, and those of 1/2 or more (whose shift
/// is a left shift, exact), are TFLite's. The bound: kept whole, the multiplier errs by at most
/// `2^-32` absolute, which on an output of at most 128 steps is `2^-25 / real` steps; TFLite's
/// first rounding errs by up to `2^(shift - 1)`, about `real` steps; the first is the smaller
/// above `real = 2^-12.5`.
pub fn requant(real: f64) -> Requant {
    let tflite = rtq::quantize_multiplier(real);
    if tflite.shift >= 0 || real.abs() < SINGLE_ROUNDING_MIN {
        return tflite;
    }
    Requant { multiplier: (real * (1u64 << 31) as f64).round() as i32, shift: 0 }
}

/// Whose arithmetic and layouts an integer operator reproduces: the conventions of the format its
/// model came in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Convention {
    /// ONNX, against onnxruntime's results: NCHW activations, OIHW weights, multipliers rounded
    /// once where they allow it ([`requant`]).
    Onnx,
    /// TFLite, bit for bit with TensorFlow Lite Micro: NHWC activations, OHWI (depthwise 1HWO)
    /// weights, TFLite's `QuantizeMultiplier` (double rounding) for every multiplier.
    Tflite,
}

impl Convention {
    /// The [`Requant`] of a real multiplier under this convention; refused when it is not finite
    /// or so large (`2^31` or more) that its shift leaves the kernels' range, a ratio of scales no
    /// working model has.
    pub fn requant(self, real: f64) -> Result<Requant, String> {
        if !real.is_finite() || real.abs() >= (1u64 << 31) as f64 {
            return Err(format!("a requantization by {real:e} (scales whose ratio is at least 2^31)"));
        }
        Ok(match self {
            Convention::Onnx => requant(real),
            Convention::Tflite => rtq::quantize_multiplier(real),
        })
    }

    /// The strides of a contiguous batch of feature maps in this convention's layout.
    pub fn image_strides(self, channels: usize, height: usize, width: usize) -> rtq::ImageStrides {
        match self {
            Convention::Onnx => rtq::ImageStrides::nchw(channels, height, width),
            Convention::Tflite => rtq::ImageStrides::nhwc(channels, height, width),
        }
    }
}

/// The per-channel requantization of a convolution or fully connected layer by the real
/// multipliers `reals` (one per tensor or per output channel) under `convention`: the
/// multipliers and shifts as the two `i32` arrays [`rtq::ChannelQuant`] reads from the weight
/// blob, and how they round.
///
/// Both conventions take TFLite's `QuantizeMultiplier` (31 significant bits); TFLite's files
/// round twice as TFLite Micro does, ONNX's once, to even, as onnxruntime's float requantization
/// does. The accumulations of these layers make their multipliers small (typically 1e-4 to 1e-2),
/// where 32-bit arithmetic rounding once ([`requant`]) keeps too few bits: on ResNet-18 int8,
/// that left sramfit 4 steps from onnxruntime, single rounding of the 64-bit product 2 (the
/// distance of onnxruntime's own float simulation of the file).
pub fn channel_requant(
    convention: Convention,
    reals: impl Iterator<Item = f64>,
) -> Result<(Data, Data, rtq::RequantRounding), String> {
    let r = reals.map(|real| convention.requant(real).map(|_| rtq::quantize_multiplier(real)));
    let r = r.collect::<Result<Vec<_>, _>>()?;
    let rounding = match convention {
        Convention::Onnx => rtq::RequantRounding::SingleHalfToEven,
        Convention::Tflite => rtq::RequantRounding::Double,
    };
    Ok((Data::I32(r.iter().map(|r| r.multiplier).collect()), Data::I32(r.iter().map(|r| r.shift).collect()), rounding))
}

/// The [`rtq::ChannelQuant`] expression of a step's `bias`, `multipliers` and `shifts` slices
/// rounded as `rounding`.
pub fn channel_quant_expr(
    [bias, multipliers, shifts]: [&TokenStream; 3],
    rounding: rtq::RequantRounding,
) -> TokenStream {
    let rounding = match rounding {
        rtq::RequantRounding::Double => quote!(Double),
        rtq::RequantRounding::SingleHalfToEven => quote!(SingleHalfToEven),
    };
    quote!(&::sramfit::kernels::quant::ChannelQuant {
        bias: #bias, multipliers: #multipliers, shifts: #shifts,
        rounding: ::sramfit::kernels::quant::RequantRounding::#rounding,
    })
}

/// A [`rtq::Requant`] expression.
pub fn requant_expr(r: Requant) -> TokenStream {
    let Requant { multiplier, shift } = r;
    quote!(::sramfit::kernels::quant::Requant { multiplier: #multiplier, shift: #shift })
}

/// A [`rtq::ImageStrides`] expression.
pub fn image_strides_expr(s: rtq::ImageStrides) -> TokenStream {
    let rtq::ImageStrides { n, c, h, w } = s;
    quote!(::sramfit::kernels::quant::ImageStrides { n: #n, c: #c, h: #h, w: #w })
}

/// The elementwise in-place capability every 8-bit kernel with an `_in_place` variant shares:
/// input `k` can be overwritten when it has the output's element count and type and is read at
/// the output's own index (`dense`).
pub fn in_place_if(operands: &crate::ops::Operands<'_>, k: usize, dense: bool) -> bool {
    let out = operands.output;
    dense && operands.inputs.get(k).is_some_and(|t| t.len() == out.len() && t.dtype == out.dtype)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_indexed_by_the_raw_byte() {
        let x = QParams { scale: 0.5, zero_point: -3, dtype: DType::I8 };
        let y = QParams { scale: 0.25, zero_point: 10, dtype: DType::I8 };
        let t = x.table(&y, |v| v);
        // Input 1 (byte 1): real (1 + 3) * 0.5 = 2.0, output 2.0 / 0.25 + 10 = 18.
        assert_eq!(t[1], 18);
        // Input -1 (byte 255): real (-1 + 3) * 0.5 = 1.0, output 4 + 10 = 14.
        assert_eq!(t[255], 14);
        // Input -128 (byte 128): real -62.5, output -250 + 10 saturates to -128.
        assert_eq!(t[128], -128);
    }

    #[test]
    fn requantization_rounds_once() {
        // 5129 * 0.017252217 = 88.487: TFLite's representation (shift -5) rounds 2831.57 to 2832,
        // then 2832 / 32 = 88.5 up to 89; kept whole, one rounding gives 88.
        let real = 0.017_252_216_949_122_03;
        let tflite = rtq::quantize_multiplier(real);
        assert_eq!((tflite.shift, tflite.apply(5129)), (-5, 89));
        let once = requant(real);
        assert_eq!((once.shift, once.apply(5129), once.apply(-5129)), (0, 88, -88));
        // Tiny and large multipliers keep TFLite's representation.
        assert_eq!(requant(1e-4), rtq::quantize_multiplier(1e-4));
        assert_eq!(requant(3.0), rtq::quantize_multiplier(3.0));
    }

    #[test]
    fn quantize_rounds_ties_to_even() {
        let q = QParams { scale: 1.0, zero_point: 0, dtype: DType::U8 };
        assert_eq!((q.quantize(2.5), q.quantize(3.5), q.quantize(-1.0), q.quantize(300.0)), (2, 4, 0, 255));
    }
}
