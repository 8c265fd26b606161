//! The operators of the IR, one module per operator: each module owns everything the compiler
//! knows about its operator — the IR payload (the kernel's parameters), how tract nodes lower to
//! it (`lower`), the kernel call it emits and the parameter literals it writes, its
//! multiply-accumulates, its scratch and stack needs, and which inputs its kernel may overwrite.
//!
//! [`operators!`] below is the registry: one line per operator declares its module, its [`Op`]
//! variant and its payload type, and from it come the `Op` enum, the dispatch to the operator's
//! [`OpKind`] implementation, and the table of lowerings the importer tries. Every method of
//! `OpKind` is required, so a new operator that forgets one does not compile.
//!
//! Adding an operator: see ARCHITECTURE.md, "Adding an operator".

pub mod literal;
#[cfg(feature = "onnx")]
pub mod lowering;
pub mod qparams;

use proc_macro2::TokenStream;
use sramfit_runtime_min as rt;

pub use sramfit_runtime_min::{PlaneOrder, Target};

use crate::tensor::{DType, Tensor};

/// What every operator knows about itself. Implemented once per operator module.
pub trait OpKind {
    /// A short name of the kernel, for reports (`conv2d`, `matmul`, `view`, ...).
    fn kernel_name(&self) -> &'static str;
    /// The statements of one step: the kernel call on the slices in `step`.
    fn emit(&self, step: &Step<'_>) -> TokenStream;
    /// Multiply-accumulates of one step (0 for kernels that do not multiply-accumulate:
    /// elementwise, pooling, reductions, normalisations, copies, resize, softmax).
    fn macs(&self, operands: &Operands<'_>) -> u64;
    /// The working memory the kernel would like (planned as a one-step arena buffer).
    fn scratch(&self) -> Scratch;
    /// An upper estimate of the bytes of local arrays the kernel keeps on the stack when built for
    /// `target` (from `runtime-min`'s kernel facts, which size those arrays).
    fn stack_bytes(&self, target: Target) -> u64;
    /// The inputs whose bytes the kernel can overwrite with its output, best first: it has an
    /// in-place variant and the output is elementwise in that input (same element count and type,
    /// input read contiguously in the output's index space). This is a fact about the kernels;
    /// whether overwriting is *safe* (nobody reads the input later) is
    /// [`crate::optimize::in_place`]'s decision, checked by [`crate::verify::verify_in_place`].
    fn in_place_inputs(&self, operands: &Operands<'_>) -> Vec<usize>;
    /// The kernel's plane order when it has one (`runtime-min`'s overlap contract: output plane
    /// `q` reads input 0's plane `q` only, planes written in ascending order), which lets its
    /// output overlap its input; a fact about the kernels, `None` for most. Whether a step *is*
    /// overlapped is [`crate::optimize::overlap`]'s decision, checked by
    /// [`crate::verify::verify_in_place`].
    fn plane_order(&self) -> Option<PlaneOrder>;
}

/// The tensors a node reads and writes.
pub struct Operands<'a> {
    /// The inputs, in the order the operator defines.
    pub inputs: Vec<&'a Tensor>,
    /// The output.
    pub output: &'a Tensor,
}

/// What the code generator hands an operator to emit one step.
pub struct Step<'a> {
    /// The tensors.
    pub operands: Operands<'a>,
    /// A slice expression per input (`&[T]`, `T` the input's element type).
    pub inputs: Vec<TokenStream>,
    /// The output's slice expression (`&mut [T]`); for an in-place step, the overwritten input's
    /// bytes.
    pub output: TokenStream,
    /// The scratch slice expression, when the plan gives the step scratch.
    pub scratch: Option<TokenStream>,
    /// The input whose bytes the output overwrites (a verified in-place step).
    pub in_place: Option<usize>,
    /// For a verified overlapped step: the one `&mut` slice of the buffer holding its input and
    /// output, and their element offsets in it (the step's `inputs[0]` and `output` are then not
    /// to be used: they alias).
    pub overlap: Option<Overlapped>,
}

/// The shared buffer of an overlapped step ([`Step::overlap`]).
pub struct Overlapped {
    /// The `&mut [T]` expression of the whole buffer.
    pub region: TokenStream,
    /// Element offset of the input in `region`.
    pub input_at: usize,
    /// Element offset of the output in `region`.
    pub output_at: usize,
}

impl Step<'_> {
    /// `Some(slice)` for input `i` when the node has it, else `None`.
    pub fn optional(&self, i: usize) -> TokenStream {
        match self.inputs.get(i) {
            Some(s) => quote::quote!(Some(#s)),
            None => quote::quote!(None),
        }
    }

    /// The scratch slice, or an empty one.
    pub fn scratch_or_empty(&self) -> TokenStream {
        self.scratch.clone().unwrap_or_else(|| quote::quote!(&mut []))
    }
}

/// A kernel's working memory: `preferred` elements of `dtype`; with `step > 0` the kernel also runs
/// with any multiple of `step` elements below that, or with none (0 when it cannot shrink).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scratch {
    /// Element type of the scratch slice.
    pub dtype: DType,
    /// Elements the kernel would like.
    pub preferred: usize,
    /// Granularity of a smaller scratch, in elements (0: all or nothing).
    pub step: usize,
}

impl Scratch {
    /// No scratch.
    pub const NONE: Scratch = Scratch { dtype: DType::F32, preferred: 0, step: 0 };
}

/// The registry: `module => Variant(Payload)` per operator, with the payload's docs.
macro_rules! operators {
    ($($(#[$doc:meta])* $module:ident => $variant:ident($payload:ty),)*) => {
        $(pub mod $module;)*

        /// What a node computes, with every parameter resolved to constants.
        #[derive(Clone, Debug, PartialEq)]
        pub enum Op {
            $($(#[$doc])* $variant($payload),)*
        }

        impl Op {
            /// The operator's behaviour.
            pub fn kind(&self) -> &dyn OpKind {
                match self {
                    $(Op::$variant(o) => o,)*
                }
            }
        }

        /// Every operator's lowerings from tract, in registry order.
        #[cfg(feature = "onnx")]
        pub(crate) const LOWERINGS: &[&[lowering::Lowerer]] = &[$($module::lower::LOWERINGS,)*];
    };
}

operators! {
    /// The output is the input's bytes under another shape (Reshape, Flatten, Squeeze, Unsqueeze,
    /// Identity, Dropout in inference): no code, no memory.
    view => View(view::View),
    /// 2-D (or 1-D) convolution; inputs `[x, weights, bias?]`.
    conv => Conv(rt::Conv2d),
    /// A convolution on channel-blocked activations; inputs `[x, weights, bias?]`.
    conv_blocked => ConvBlocked(conv_blocked::ConvBlocked),
    /// A 3x3 convolution by Winograd's F(2x2, 3x3) on channel-blocked activations; inputs `[x,
    /// transformed weights, bias?]`.
    conv_winograd => ConvWinograd(conv_winograd::ConvWinograd),
    /// A conversion between NCHW and channel-blocked activations; input `[x]`.
    reorder => Reorder(reorder::Reorder),
    /// 2-D (or 1-D) transposed convolution; inputs `[x, weights (OIHW), bias?]`.
    conv_transpose => ConvTranspose(rt::ConvTranspose2d),
    /// Batched strided matrix product; inputs `[a, b, bias?]`.
    matmul => MatMul(rt::MatMul),
    /// Elementwise function of input 0.
    unary => Unary(unary::Unary),
    /// Broadcast elementwise function of inputs 0 and 1.
    binary => Binary(binary::BinaryOp),
    /// Max or average pooling over (D,) H, W.
    pool => Pool(pool::Pool),
    /// A max pooling on channel-blocked activations; input `[x]`.
    pool_blocked => PoolBlocked(pool_blocked::PoolBlocked),
    /// A global pooling of a channel-blocked activation into an NCHW one; input `[x]`.
    global_pool_blocked => GlobalPoolBlocked(global_pool_blocked::GlobalPoolBlocked),
    /// Reduction over some axes.
    reduce => Reduce(reduce::ReduceOp),
    /// Softmax (or log-softmax) over the middle axis of an `[outer, axis, inner]` view.
    softmax => Softmax(softmax::SoftmaxOp),
    /// `x / sqrt(mean(x^2) + eps)` over the middle axis of an `[outer, axis, inner]` view.
    rms_norm => RmsNorm(rms_norm::RmsNormOp),
    /// Local response normalisation across channels.
    lrn => Lrn(lrn::LrnOp),
    /// `where(cmp(in0, in1), in2, in3)` with broadcasting.
    select => Select(select::SelectOp),
    /// Resize of the two innermost axes.
    resize => Resize(resize::ResizeOp),
    /// Strided copies from inputs into the output (Transpose, Slice, Concat, Gather, broadcast).
    copy => Copy(copy::Copies),
    /// Padding of input 0.
    pad => Pad(pad::PadOp),
    /// Cumulative sum along one axis.
    cumsum => CumSum(rt::CumSum),
    /// Quantized convolution; inputs `[x, weights, folded bias, multipliers, shifts]`.
    qconv => QConv(qconv::QConv),
    /// TensorFlow Lite's hybrid convolution (float activations, int8 weights); inputs `[x,
    /// weights, bias]`.
    qhybrid_conv => QHybridConv(qhybrid_conv::QHybridConv),
    /// Quantized fully connected layer; inputs `[x, weights, folded bias, multipliers, shifts]`.
    qfully_connected => QFullyConnected(qfully_connected::QFullyConnected),
    /// Quantized batched matrix product of two activations; inputs `[a, b]`.
    qmatmul => QMatMul(qmatmul::QMatMul),
    /// Quantized broadcast add, sub or mul with rescaling; inputs `[a, b]`.
    qbinary => QBinary(qbinary::QBinary),
    /// Quantized max or average pooling; input `[x]`.
    qpool => QPool(qpool::QPool),
    /// Quantized mean over adjacent axes; input `[x]`.
    qmean => QMean(qmean::QMean),
    /// Quantized softmax; input `[x]`.
    qsoftmax => QSoftmax(qsoftmax::QSoftmax),
    /// Quantized layer normalization; inputs `[x, gains, offsets]`.
    qlayer_norm => QLayerNorm(qlayer_norm::QLayerNorm),
    /// 256-entry table lookup; inputs `[x, table]`.
    lut => Lut(lut::Lut),
    /// Requantization of a whole tensor (also TFLite Micro's int16 RELU, RELU6, LEAKY_RELU); input `[x]`.
    requantize => Requantize(requantize::Requantize),
    /// Concatenation with requantization; inputs: the tensors concatenated.
    qconcat => QConcat(qconcat::QConcat),
    /// Constant padding of an 8-bit tensor; input `[x]`.
    qpad => QPad(qpad::QPad),
    /// Quantization of an `f32` tensor, or dequantization to one; input `[x]`.
    qconvert => QConvert(qconvert::QConvert),
}

impl Op {
    /// Whether the op is a view (no code, the output is the input's bytes).
    pub fn is_view(&self) -> bool {
        matches!(self, Op::View(_))
    }
}
