//! Concatenation of 8-bit tensors whose quantizations differ from the output's: each such input
//! requantized into its rows of the output (`runtime_min::quant::requantize` with row strides),
//! the others copied (`copy_strided`). A concatenation of inputs quantized like its output is a
//! plain [`super::copy::Copies`], which concat elision can remove.

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min::quant as rtq;

use super::qparams::{Convention, QParams};
use super::requantize::{params, rows};
use super::{Target, OpKind, Operands, Scratch, Step};

/// One input's part of a [`QConcat`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// Which of the node's inputs.
    pub input: usize,
    /// Its rows (the axes before the concatenation axis) and their length, rescaled.
    pub requantize: rtq::Requantize,
    /// Where its first row starts in the output, in elements.
    pub dst_offset: usize,
}

/// A concatenation with requantization; inputs: the tensors concatenated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QConcat(pub Vec<Part>);

impl QConcat {
    /// The concatenation along `axis` of inputs of `shapes` quantized by `inputs` into an output
    /// quantized by `y`, each multiplier rounded as `convention` does.
    pub fn new(
        axis: usize,
        shapes: &[Vec<usize>],
        (inputs, y): (&[QParams], QParams),
        convention: Convention,
    ) -> Result<QConcat, String> {
        let outer: usize = shapes.first().map_or(1, |s| s[..axis].iter().product());
        let out_row: usize = shapes.iter().map(|s| s[axis..].iter().product::<usize>()).sum();
        let mut offset = 0;
        let mut parts = Vec::with_capacity(shapes.len());
        for (i, (shape, &x)) in shapes.iter().zip(inputs).enumerate() {
            if shape[..axis].iter().product::<usize>() != outer {
                return Err("inputs whose axes before the concatenation axis differ".into());
            }
            let cols: usize = shape[axis..].iter().product();
            parts.push(Part { input: i, requantize: rows((outer, cols), (cols, out_row), (x, y), convention)?, dst_offset: offset });
            offset += cols;
        }
        Ok(QConcat(parts))
    }
}

impl OpKind for QConcat {
    fn kernel_name(&self) -> &'static str {
        "quant::requantize"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let y = &s.output;
        let calls = self.0.iter().map(|part| {
            let (p, x, offset) = (params(&part.requantize), &s.inputs[part.input], part.dst_offset);
            quote!(::sramfit::kernels::quant::requantize(&#p, #x, &mut (#y)[#offset..]);)
        });
        quote!(#(#calls)*)
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

    fn in_place_inputs(&self, _: &Operands<'_>) -> Vec<usize> {
        Vec::new()
    }
}

#[cfg(feature = "onnx")]
pub(crate) use super::lowering::from_protobuf as lower;
