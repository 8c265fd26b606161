//! The graph IR: tensors with static shapes, and nodes in schedule order whose ops are already
//! resolved to the kernel calls of `runtime-min`.
//!
//! [`crate::import`] builds it from ONNX; [`crate::liveness`] derives lifetimes from it;
//! [`crate::codegen`] emits one kernel call per node. It can be built by hand in tests.

use sramfit_runtime_min as rt;

/// Index of a tensor in [`Graph::tensors`].
pub type TensorId = usize;

/// Where a tensor's data comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum TensorKind {
    /// Graph input `i`, read from the caller's buffer.
    Input(usize),
    /// Constant data (weights), stored in read-only memory; `f32` values, row-major.
    Const(Vec<f32>),
    /// Computed by a node.
    Activation,
}

/// A tensor: a name, a static shape, and where its data lives. Every tensor is `f32`.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// The ONNX tensor (or node output) name, for messages and reports.
    pub name: String,
    /// Static shape, row-major.
    pub shape: Vec<usize>,
    /// Origin of the data.
    pub kind: TensorKind,
}

impl Tensor {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Size in bytes (`f32` elements).
    pub fn bytes(&self) -> u64 {
        self.len() as u64 * 4
    }
}

/// One strided copy from an input into the node's output (see [`rt::Strided`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StridedCopy {
    /// Which of the node's inputs to read.
    pub input: usize,
    /// Extent of the copied block.
    pub shape: Vec<usize>,
    /// First source element.
    pub src_offset: usize,
    /// Source strides, in elements (negative: reversed axes).
    pub src_strides: Vec<isize>,
    /// First destination element.
    pub dst_offset: usize,
    /// Destination strides, in elements.
    pub dst_strides: Vec<isize>,
}

impl StridedCopy {
    /// Whether this copy moves one contiguous run of `shape`'s elements from `src_offset` to a
    /// contiguous run at `dst_offset` (row-major strides on every axis of extent above 1).
    pub fn is_contiguous_block(&self) -> bool {
        let want = strides_of(&self.shape);
        let dense = |strides: &[isize]| {
            strides.len() == self.shape.len()
                && self.shape.iter().zip(strides.iter().zip(&want)).all(|(&e, (&s, &w))| e == 1 || s == w as isize)
        };
        dense(&self.src_strides) && dense(&self.dst_strides)
    }
}

/// Elementwise functions of one tensor (kernel `name(x, y)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unary {
    /// `max(x, 0)`.
    Relu,
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// Hyperbolic tangent.
    Tanh,
    /// `e^x`.
    Exp,
    /// Natural logarithm.
    Ln,
    /// Square root.
    Sqrt,
    /// `1 / sqrt(x)`.
    Rsqrt,
    /// `1 / x`.
    Reciprocal,
    /// Absolute value.
    Abs,
    /// Negation.
    Neg,
    /// `x * x`.
    Square,
    /// Error function.
    Erf,
    /// Round down.
    Floor,
    /// Round up.
    Ceil,
    /// Round half to even.
    Round,
    /// Sine.
    Sin,
    /// Cosine.
    Cos,
    /// `ln(1 + e^x)`.
    Softplus,
    /// `x / (1 + |x|)`.
    Softsign,
    /// `x * relu6(x + 3) / 6`.
    HardSwish,
    /// `x * sigmoid(x)`.
    Silu,
    /// `0.5 x (1 + erf(x / sqrt 2))`.
    Gelu,
    /// `min(max(x, min), max)`.
    Clip {
        /// Lower bound.
        min: f32,
        /// Upper bound.
        max: f32,
    },
    /// `x` if positive, else `alpha * x`.
    LeakyRelu {
        /// Negative slope.
        alpha: f32,
    },
    /// `x^e` for a constant exponent.
    PowScalar {
        /// The exponent.
        exponent: f32,
    },
}

/// Elementwise functions of two broadcast tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binary {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a / b`.
    Div,
    /// `max(a, b)`.
    Max,
    /// `min(a, b)`.
    Min,
    /// `a ^ b`.
    Pow,
}

/// Reductions over some axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reducer {
    /// Sum.
    Sum,
    /// Arithmetic mean.
    Mean,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
    /// Product.
    Prod,
    /// Sum of squares.
    SumSquare,
    /// Mean of squares (tract's `MeanOfSquares`).
    MeanSquare,
}

/// What a node computes, with every parameter resolved to constants.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// The output is the input's bytes under another shape (Reshape, Flatten, Squeeze, Unsqueeze,
    /// Identity, Dropout in inference): no code, no memory.
    View,
    /// 2-D (or 1-D) convolution; inputs `[x, weights, bias?]`.
    Conv(rt::Conv2d),
    /// 2-D (or 1-D) transposed convolution; inputs `[x, weights (OIHW), bias?]`.
    ConvTranspose(rt::ConvTranspose2d),
    /// Batched strided matrix product; inputs `[a, b, bias?]`.
    MatMul(rt::MatMul),
    /// Elementwise function of input 0.
    Unary(Unary),
    /// Broadcast elementwise function of inputs 0 and 1; strides address each input in the output's
    /// index space (0 on broadcast axes).
    Binary {
        /// The function.
        kind: Binary,
        /// Strides of input 0 over the output shape.
        a_strides: Vec<usize>,
        /// Strides of input 1 over the output shape.
        b_strides: Vec<usize>,
    },
    /// Max pooling over (D,) H, W.
    MaxPool(rt::Pool2d),
    /// Average pooling over (D,) H, W.
    AvgPool(rt::Pool2d),
    /// Reduction: the output index space is `out_shape`, addressed in the input by `out_in_strides`;
    /// the reduced block is `red_shape` with `red_strides`.
    Reduce {
        /// The reducer.
        kind: Reducer,
        /// Input strides of each output axis.
        out_in_strides: Vec<usize>,
        /// Extents of the reduced axes.
        red_shape: Vec<usize>,
        /// Input strides of the reduced axes.
        red_strides: Vec<usize>,
    },
    /// Softmax (or log-softmax) over the middle axis of an `[outer, axis, inner]` view.
    Softmax {
        /// Log-softmax instead of softmax.
        log: bool,
        /// Product of the axes before the softmax axis.
        outer: usize,
        /// Extent of the softmax axis.
        axis_len: usize,
        /// Product of the axes after it.
        inner: usize,
    },
    /// `x / sqrt(mean(x^2) + eps)` over the middle axis of an `[outer, axis, inner]` view.
    RmsNorm {
        /// Product of the axes before the normalised axis.
        outer: usize,
        /// Extent of the normalised axis.
        axis_len: usize,
        /// Product of the axes after it.
        inner: usize,
        /// Added to the mean of squares.
        eps: f32,
    },
    /// Local response normalisation across channels of a `[batch, channels, inner]` view.
    Lrn {
        /// N.
        batch: usize,
        /// C.
        channels: usize,
        /// Product of the spatial axes.
        inner: usize,
        /// Number of channels summed.
        size: usize,
        /// Scale of the sum of squares.
        alpha: f32,
        /// Exponent.
        beta: f32,
        /// Added before the exponent.
        bias: f32,
    },
    /// `where(cmp(in0, in1), in2, in3)` with broadcasting; strides address each input in the
    /// output's index space (0 on broadcast axes), in input order.
    Select {
        /// The comparison.
        cmp: rt::Cmp,
        /// Strides of the four inputs over the output shape.
        strides: [Vec<usize>; 4],
    },
    /// Resize of the two innermost axes (nearest with `nearest` set, else bilinear).
    Resize {
        /// Geometry, scales and coordinate mode.
        params: rt::Resize,
        /// Rounding of nearest-neighbour resize; `None` for linear.
        nearest: Option<rt::NearestMode>,
    },
    /// Strided copies from inputs into the output (Transpose, Slice, Concat, broadcast).
    Copy(Vec<StridedCopy>),
    /// Padding of input 0 (`pads_begin` per axis, negative crops).
    Pad {
        /// Leading pad per axis.
        pads_begin: Vec<isize>,
        /// The padding mode.
        mode: rt::PadMode,
    },
}

impl Op {
    /// The kernel's preferred scratch in `f32` elements (planned as a one-step arena buffer).
    pub fn scratch_elems(&self) -> usize {
        match self {
            Op::Conv(p) => rt::conv2d_scratch_len(p),
            _ => 0,
        }
    }

    /// The granularity of a smaller scratch: the kernel also runs with any multiple of this many
    /// elements below [`Op::scratch_elems`], or with none (0 when the scratch cannot shrink).
    pub fn scratch_step(&self) -> usize {
        match self {
            Op::Conv(p) => rt::conv2d_scratch_per_position(p),
            _ => 0,
        }
    }

    /// A short name of the kernel, for reports.
    pub fn kernel_name(&self) -> &'static str {
        match self {
            Op::View => "view",
            Op::Conv(_) => "conv2d",
            Op::ConvTranspose(_) => "conv_transpose2d",
            Op::MatMul(_) => "matmul",
            Op::Unary(_) => "unary",
            Op::Binary { .. } => "binary",
            Op::MaxPool(_) => "max_pool2d",
            Op::AvgPool(_) => "avg_pool2d",
            Op::Reduce { .. } => "reduce",
            Op::Softmax { log: false, .. } => "softmax",
            Op::Softmax { log: true, .. } => "log_softmax",
            Op::RmsNorm { .. } => "rms_norm",
            Op::Lrn { .. } => "lrn",
            Op::Select { .. } => "select_cmp",
            Op::Resize { nearest: Some(_), .. } => "resize_nearest",
            Op::Resize { nearest: None, .. } => "resize_linear",
            Op::Copy(_) => "copy_strided",
            Op::Pad { .. } => "pad",
        }
    }
}

/// One step of the schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The ONNX node name this step comes from (tract may add a suffix).
    pub name: String,
    /// The source operator's name, as tract reports it (e.g. `Conv`, `EinSum`, `Add`).
    pub source_op: String,
    /// The computation.
    pub op: Op,
    /// Input tensors, in the order the op defines.
    pub inputs: Vec<TensorId>,
    /// The output tensor (every op here has exactly one).
    pub output: TensorId,
}

#[cfg(test)]
impl Node {
    /// A node whose source operator is named like the node (hand-built test graphs).
    pub(crate) fn new(name: &str, op: Op, inputs: Vec<TensorId>, output: TensorId) -> Node {
        Node { name: name.into(), source_op: name.into(), op, inputs, output }
    }
}

impl Node {
    /// The inputs whose bytes this node's kernel can overwrite with its output, best first: the
    /// kernel has an in-place variant and the output is elementwise in that input (same element
    /// count, input read contiguously in the output's index space). This is a fact about the
    /// kernels; whether overwriting is *safe* (nobody reads the input later) is liveness' decision,
    /// checked by [`crate::verify::verify_in_place`].
    pub fn in_place_inputs(&self, tensors: &[Tensor]) -> Vec<usize> {
        let out = &tensors[self.output];
        let same_len = |k: usize| self.inputs.get(k).is_some_and(|&t| tensors[t].len() == out.len());
        match &self.op {
            Op::Unary(_) if same_len(0) => vec![0],
            Op::Binary { kind, a_strides, b_strides } => {
                let contiguous = strides_of(&out.shape);
                // Axes of extent 1 never move the index, whatever their stride.
                let dense = |k: usize, s: &[usize]| {
                    same_len(k)
                        && s.len() == contiguous.len()
                        && out.shape.iter().zip(s.iter().zip(&contiguous)).all(|(&n, (a, c))| n == 1 || a == c)
                };
                let commutative = matches!(kind, Binary::Add | Binary::Mul);
                let in_place_kernel = !matches!(kind, Binary::Pow);
                let mut v = Vec::new();
                if in_place_kernel && dense(0, a_strides) {
                    v.push(0);
                }
                if commutative && dense(1, b_strides) {
                    v.push(1);
                }
                v
            }
            _ => Vec::new(),
        }
    }
}

/// A model: tensors, and nodes in execution order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    /// All tensors.
    pub tensors: Vec<Tensor>,
    /// Nodes in schedule order; every input of a node is a graph input, a constant or the output
    /// of an earlier node.
    pub nodes: Vec<Node>,
    /// Graph inputs, in ONNX order.
    pub inputs: Vec<TensorId>,
    /// Graph outputs, in ONNX order.
    pub outputs: Vec<TensorId>,
    /// Where the graph inputs and outputs live.
    pub io: Io,
}

/// Where a graph's inputs and outputs live (`io:` in `model!`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Io {
    /// In the caller's buffers, passed to `run`: the arena holds only intermediate tensors.
    #[default]
    Caller,
    /// In the arena, planned like every other tensor: an input lives from the start of a run to
    /// its last reader (the caller writes it through the arena before the run), an output from
    /// the step that writes it to the end of the run (the caller reads it from the arena after).
    /// The arena is then the whole working memory of an inference.
    Arena,
}

impl Graph {
    /// Adds a tensor and returns its id.
    pub fn add_tensor(&mut self, name: impl Into<String>, shape: Vec<usize>, kind: TensorKind) -> TensorId {
        self.tensors.push(Tensor { name: name.into(), shape, kind });
        self.tensors.len() - 1
    }

    /// The node that writes `t`, if any.
    pub fn producer(&self, t: TensorId) -> Option<usize> {
        self.nodes.iter().position(|n| n.output == t)
    }

    /// Total bytes of constant tensors.
    pub fn weight_bytes(&self) -> u64 {
        self.tensors.iter().filter(|t| matches!(t.kind, TensorKind::Const(_))).map(Tensor::bytes).sum()
    }
}

/// Row-major strides (in elements) of a shape.
pub fn strides_of(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}
