//! How tract nodes become IR ops: the registry entry each operator module declares
//! ([`Lowerer`]), the view of one tract node a lowering gets ([`TractNode`]), what it returns
//! ([`Lowered`]), and the geometry helpers several operators share.
//!
//! A lowering returns `Err(reason)` for an operator configuration the runtime does not support,
//! so that the importer can list every unsupported node at once.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::cnn::{PaddingSpec, PoolSpec};
use tract_onnx::tract_core::ops::nn::DataFormat;

use super::Op;
use crate::tensor::strides_of;
use crate::tensor::Data;

/// One entry of an operator module's `LOWERINGS`: the tract nodes it takes, and how.
pub struct Lowerer {
    /// Whether this entry lowers `node` (usually a downcast of its op).
    pub accepts: fn(&TypedNode) -> bool,
    /// The fewest inputs the lowering reads (fewer is reported as unsupported, not a panic).
    pub min_inputs: usize,
    /// The lowering.
    pub lower: fn(&TractNode<'_>) -> Result<Lowered, String>,
}

/// The first lowering that accepts `node`, in registry order.
pub fn find(node: &TypedNode) -> Option<&'static Lowerer> {
    super::LOWERINGS.iter().flat_map(|l| l.iter()).find(|l| (l.accepts)(node))
}

/// The `lower` module of the operators no tract node lowers to: the integer operators, which
/// [`crate::import`] builds from the ONNX protobuf of a quantized model, and those only a rewrite
/// makes (the channel-blocked layout's, [`crate::optimize::blocked`]).
pub mod from_protobuf {
    /// No tract lowerings.
    pub(crate) const LOWERINGS: &[super::Lowerer] = &[];
}

/// One tract node with the concrete shapes of its inputs and output.
pub struct TractNode<'a> {
    /// The decluttered model (for constants and the shapes of other outlets).
    pub model: &'a TypedModel,
    /// The node.
    pub node: &'a TypedNode,
    /// Its inputs' shapes.
    pub in_shapes: Vec<Vec<usize>>,
    /// Its output's shape.
    pub out_shape: Vec<usize>,
}

impl TractNode<'_> {
    /// The constant value of an outlet, if tract knows it.
    pub fn konst(&self, o: OutletId) -> Option<Arc<Tensor>> {
        self.model.outlet_fact(o).ok()?.konst.clone()
    }

    /// The constant value of input `i`, if the node has that input and tract knows it.
    pub fn input_konst(&self, i: usize) -> Option<Arc<Tensor>> {
        self.node.inputs.get(i).and_then(|&o| self.konst(o))
    }

    /// The concrete shape of any outlet of the model.
    pub fn shape(&self, o: OutletId) -> Result<Vec<usize>, String> {
        let fact = self.model.outlet_fact(o).map_err(|e| format!("{e:#}"))?;
        fact.shape.as_concrete().map(<[usize]>::to_vec).ok_or_else(|| format!("symbolic shape {:?}", fact.shape))
    }
}

/// Where one input of the IR node comes from.
pub enum Src {
    /// Input `i` of the tract node.
    Input(usize),
    /// Another outlet of the model (an input of a node fused into this one).
    Outlet(OutletId),
    /// A constant made at build time.
    Const {
        /// Appended to the node's name.
        name: &'static str,
        /// Its shape.
        shape: Vec<usize>,
        /// Its values.
        data: Data,
    },
    /// Input `input` of the tract node, copied with its axes permuted (axis `i` of the copy is axis
    /// `perm[i]` of the input) by an extra step scheduled just before this node (a constant is
    /// permuted at build time instead).
    Permuted {
        /// Which input.
        input: usize,
        /// The permutation.
        perm: Vec<usize>,
    },
}

/// An IR op and where its inputs come from.
pub struct Lowered {
    /// The op.
    pub op: Op,
    /// Its inputs, in the order the op defines.
    pub inputs: Vec<Src>,
    /// The op writes the tract node's output with its axes permuted: axis `i` of the tract output
    /// is axis `perm[i]` of what the op writes, copied into place by an extra step after it (a
    /// channels-last window op computed channels first).
    pub output_perm: Option<Vec<usize>>,
}

impl Lowered {
    /// `op` reading the tract node's inputs `inputs`.
    pub fn new(op: Op, inputs: Vec<usize>) -> Lowered {
        Lowered { op, inputs: inputs.into_iter().map(Src::Input).collect(), output_perm: None }
    }

    /// A window op (convolution, pooling) of `spec` over input 0, computed by the NCHW kernels: in
    /// a channels-last layout (NHWC, HWC) its input is permuted to channels first and its output
    /// back ([`Lowered::output_perm`]), so the steps around it are transposes.
    pub fn window(op: Op, spec: &PoolSpec, rank: usize, mut inputs: Vec<Src>) -> Lowered {
        let (to_first, back): (Vec<usize>, Vec<usize>) = match spec.data_format {
            DataFormat::NHWC => (
                std::iter::once(0).chain([rank - 1]).chain(1..rank - 1).collect(),
                std::iter::once(0).chain(2..rank).chain([1]).collect(),
            ),
            DataFormat::HWC => (std::iter::once(rank - 1).chain(0..rank - 1).collect(), (1..rank).chain([0]).collect()),
            DataFormat::NCHW | DataFormat::CHW => return Lowered { op, inputs, output_perm: None },
        };
        inputs[0] = Src::Permuted { input: 0, perm: to_first };
        Lowered { op, inputs, output_perm: Some(back) }
    }
}

/// Batch, channels and up-to-2-D spatial extents of an activation in `format`.
fn split_shape(format: DataFormat, shape: &[usize]) -> Result<(usize, usize, Vec<usize>), String> {
    match format {
        DataFormat::NCHW if shape.len() >= 2 => Ok((shape[0], shape[1], shape[2..].to_vec())),
        DataFormat::CHW if !shape.is_empty() => Ok((1, shape[0], shape[1..].to_vec())),
        DataFormat::NHWC if shape.len() >= 2 => {
            Ok((shape[0], shape[shape.len() - 1], shape[1..shape.len() - 1].to_vec()))
        }
        DataFormat::HWC if !shape.is_empty() => Ok((1, shape[shape.len() - 1], shape[..shape.len() - 1].to_vec())),
        f => Err(format!("data format {f:?} of a rank-{} tensor", shape.len())),
    }
}

/// Per-axis values of up to 3 spatial axes as (d, h, w), the missing leading axes filled with `fill`.
pub fn dhw(v: &[usize], fill: usize) -> Result<[usize; 3], String> {
    if v.is_empty() || v.len() > 3 {
        return Err(format!("{}-D spatial input (1-D to 3-D are supported)", v.len()));
    }
    let mut a = [fill; 3];
    a[3 - v.len()..].copy_from_slice(v);
    Ok(a)
}

/// Geometry shared by convolution and pooling, as 3-D (d, h, w): 2-D has d = 1, 1-D also h = 1.
pub struct Geometry {
    /// N.
    pub batch: usize,
    /// C of the input.
    pub channels: usize,
    /// Number of spatial axes.
    pub rank: usize,
    /// Input extents.
    pub input: [usize; 3],
    /// Output extents.
    pub output: [usize; 3],
    /// Window extents.
    pub kernel: [usize; 3],
    /// Strides.
    pub stride: [usize; 3],
    /// Dilations.
    pub dilation: [usize; 3],
    /// Padding before each axis.
    pub pad_before: [usize; 3],
    /// Padding after each axis.
    pub pad_after: [usize; 3],
}

impl Geometry {
    /// The geometry of a window op with `spec` from `in_shape` to `out_shape`.
    pub fn of(spec: &PoolSpec, in_shape: &[usize], out_shape: &[usize]) -> Result<Geometry, String> {
        let (batch, channels, spatial) = split_shape(spec.data_format, in_shape)?;
        let (_, _, out_spatial) = split_shape(spec.data_format, out_shape)?;
        let rank = spatial.len();
        if spec.kernel_shape.len() != rank || out_spatial.len() != rank {
            return Err("kernel, input and output ranks differ".into());
        }
        let computed = spec.computed_padding(&spatial);
        let before: Vec<usize> = computed.iter().map(|c| c.pad_before).collect();
        let after: Vec<usize> = match &spec.padding {
            PaddingSpec::Explicit(_, a) | PaddingSpec::ExplicitOnnxPool(_, a, _) => a.to_vec(),
            _ => computed.iter().map(|c| c.pad_after).collect(),
        };
        Ok(Geometry {
            batch,
            channels,
            rank,
            input: dhw(&spatial, 1)?,
            output: dhw(&out_spatial, 1)?,
            kernel: dhw(&spec.kernel_shape, 1)?,
            stride: dhw(&spec.strides(), 1)?,
            dilation: dhw(&spec.dilations(), 1)?,
            pad_before: dhw(&before, 0)?,
            pad_after: dhw(&after, 0)?,
        })
    }

    /// The batch, channels and spatial extents of an activation of this op's layout.
    pub fn split(spec: &PoolSpec, shape: &[usize]) -> Result<(usize, usize, Vec<usize>), String> {
        split_shape(spec.data_format, shape)
    }
}

/// Strides of an input of shape `shape` over the broadcast output shape `out` (0 where broadcast).
pub fn broadcast_strides(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let strides = strides_of(shape);
    let offset = out.len() - shape.len();
    (0..out.len()).map(|i| if i < offset || shape[i - offset] == 1 { 0 } else { strides[i - offset] }).collect()
}

/// The element indices that permute a row-major tensor of `shape` by `perm` (axis `i` of the result
/// is axis `perm[i]`): `data.gather(permutation(..))` is the permuted tensor.
pub fn permutation(shape: &[usize], perm: &[usize]) -> impl Iterator<Item = usize> {
    let src_strides = strides_of(shape);
    let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let strides: Vec<usize> = perm.iter().map(|&p| src_strides[p]).collect();
    let total: usize = shape.iter().product();
    let mut index = vec![0usize; out_shape.len()];
    (0..total).map(move |_| {
        let at = index.iter().zip(&strides).map(|(&i, &s)| i * s).sum::<usize>();
        for axis in (0..index.len()).rev() {
            index[axis] += 1;
            if index[axis] < out_shape[axis] {
                break;
            }
            index[axis] = 0;
        }
        at
    })
}

/// The `f32` value of a one-element tract constant.
pub fn scalar_f32(t: &Tensor) -> Result<f32, String> {
    t.cast_to_scalar::<f32>().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::permutation;

    #[test]
    fn permutes_constants_at_build_time() {
        let permute = |v: &[f32], shape: &[usize], perm: &[usize]| -> Vec<f32> {
            permutation(shape, perm).map(|i| v[i]).collect()
        };
        // [2, 3] transposed to [3, 2].
        let v = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(permute(&v, &[2, 3], &[1, 0]), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
        // Identity permutation and a 3-D rotation.
        assert_eq!(permute(&v, &[2, 3], &[0, 1]), v.to_vec());
        let w: Vec<f32> = (0..24).map(|x| x as f32).collect();
        let r = permute(&w, &[2, 3, 4], &[2, 0, 1]);
        // r[k][i][j] = w[i][j][k]; with (i, j, k) = (1, 2, 1): r[(1*2 + 1)*3 + 2] = w[(1*3 + 2)*4 + 1].
        assert_eq!(r[11], w[21]);
    }
}
