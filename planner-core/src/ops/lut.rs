//! 256-entry lookup tables over 8-bit activations, computed at build time (Sigmoid, Tanh,
//! HardSwish, LeakyRelu, Relu, Clip and any elementwise function between a DequantizeLinear and a
//! QuantizeLinear; one per channel for a batch normalization): `runtime_min::quant::lut`, or
//! `lut_in_place` over the input's bytes.

use proc_macro2::TokenStream;
use quote::quote;

use super::qparams::{in_place_if, int_data, QParams};
use super::{Target, OpKind, Operands, Scratch, Step};
use crate::tensor::Data;

/// A table lookup; inputs `[x, tables]`: `channels` tables of 256 entries of the output type,
/// indexed by the input's raw byte. With one table it applies to every element; with several,
/// element `i` uses table `(i / inner) % channels` (one per index of a channel axis, `inner` the
/// elements after it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lut {
    /// Number of tables.
    pub channels: usize,
    /// Consecutive elements that share a table (unused with one table).
    pub inner: usize,
}

/// Entries per table.
const ENTRIES: usize = 256;

impl Lut {
    /// The table of `f` from `x` to `y`: each input dequantized, mapped by `f` in `f32`, quantized
    /// with ties to even (what onnxruntime's QLinear lookup tables hold).
    pub fn new(x: QParams, y: QParams, f: impl Fn(f32) -> f32) -> Result<(Lut, Data), String> {
        Lut::per_channel(x, y, 1, 0, |_, v| f(v))
    }

    /// One table per index of a channel axis of `channels` indices, each followed by `inner`
    /// elements: table `c` holds `f(c, v)` (a batch normalization's per-channel affine map).
    pub fn per_channel(
        x: QParams,
        y: QParams,
        channels: usize,
        inner: usize,
        f: impl Fn(usize, f32) -> f32,
    ) -> Result<(Lut, Data), String> {
        if x.dtype != y.dtype {
            return Err("input and output of different integer types".into());
        }
        let entries: Vec<i32> = (0..channels).flat_map(|c| x.table(&y, |v| f(c, v))).collect();
        Ok((Lut { channels, inner }, int_data(y.dtype, entries.into_iter())))
    }
}

impl OpKind for Lut {
    fn kernel_name(&self) -> &'static str {
        "quant::lut"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let (tables, y) = (&s.inputs[1], &s.output);
        let Lut { channels, inner } = *self;
        match (s.in_place, channels) {
            (Some(_), 1) => quote!(::sramfit::kernels::quant::lut_in_place(#tables, #y);),
            (None, 1) => {
                let x = &s.inputs[0];
                quote!(::sramfit::kernels::quant::lut(#tables, #x, #y);)
            }
            (Some(_), _) => quote! {
                let __tables = #tables;
                for (__i, __y) in (#y).chunks_exact_mut(#inner).enumerate() {
                    ::sramfit::kernels::quant::lut_in_place(&__tables[(__i % #channels) * #ENTRIES..][..#ENTRIES], __y);
                }
            },
            (None, _) => {
                let x = &s.inputs[0];
                quote! {
                    let __tables = #tables;
                    for (__i, (__x, __y)) in (#x).chunks_exact(#inner).zip((#y).chunks_exact_mut(#inner)).enumerate() {
                        ::sramfit::kernels::quant::lut(&__tables[(__i % #channels) * #ENTRIES..][..#ENTRIES], __x, __y);
                    }
                }
            }
        }
    }

    fn macs(&self, _: &Operands<'_>) -> u64 {
        0
    }

    fn scratch(&self) -> Scratch {
        Scratch::NONE
    }

    fn stack_bytes(&self, _: Target) -> u64 {
        // No local arrays.
        0
    }

    fn plane_order(&self) -> Option<crate::ops::PlaneOrder> {
        None
    }

    fn in_place_inputs(&self, o: &Operands<'_>) -> Vec<usize> {
        if in_place_if(o, 0, true) {
            vec![0]
        } else {
            Vec::new()
        }
    }
}

#[cfg(feature = "onnx")]
pub(crate) use super::lowering::from_protobuf as lower;
