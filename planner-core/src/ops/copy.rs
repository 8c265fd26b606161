//! Data movement as strided copies from inputs into the output (Transpose, Slice, Concat, Gather
//! with constant indices, Downsample, broadcast): one `runtime_min::copy_strided` per copy.

use proc_macro2::TokenStream;
use quote::quote;

use super::literal::slice_expr;
use sramfit_runtime_min as rt;

use super::{OpKind, Operands, Scratch, Step, Target};
use crate::tensor::strides_of;

/// One strided copy from an input into the node's output (see `runtime_min::Strided`).
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

    /// A copy of all of input `input` (of `shape`) into the same elements of an output of that shape.
    pub fn whole(input: usize, shape: &[usize]) -> StridedCopy {
        let strides = dense(shape);
        StridedCopy {
            input,
            shape: shape.to_vec(),
            src_offset: 0,
            src_strides: strides.clone(),
            dst_offset: 0,
            dst_strides: strides,
        }
    }
}

/// The copies of one step, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Copies(pub Vec<StridedCopy>);

impl OpKind for Copies {
    fn kernel_name(&self) -> &'static str {
        "copy_strided"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let calls = self.0.iter().map(|c| {
            let (x, y) = (&s.inputs[c.input], &s.output);
            let (shape, so, ss, d_o, ds) = (
                slice_expr(&c.shape),
                c.src_offset,
                slice_expr(&c.src_strides),
                c.dst_offset,
                slice_expr(&c.dst_strides),
            );
            quote!(::sramfit::kernels::copy_strided(
                &::sramfit::kernels::Strided { shape: #shape, src_offset: #so, src_strides: #ss, dst_offset: #d_o, dst_strides: #ds },
                #x, #y);)
        });
        quote!(#(#calls)*)
    }

    fn macs(&self, _: &Operands<'_>) -> u64 {
        0
    }

    fn scratch(&self) -> Scratch {
        Scratch::NONE
    }

    fn stack_bytes(&self, target: Target) -> u64 {
        rt::rank_generic_stack_bytes(target) as u64
    }

    fn plane_order(&self) -> Option<crate::ops::PlaneOrder> {
        None
    }

    fn in_place_inputs(&self, _: &Operands<'_>) -> Vec<usize> {
        Vec::new()
    }
}

/// A copy of input 0 (of shape `input`) permuted by `perm` (output axis `i` is input axis `perm[i]`).
pub fn transpose(perm: &[usize], input: &[usize], out: &[usize]) -> Copies {
    let s = strides_of(input);
    Copies(vec![StridedCopy {
        input: 0,
        shape: out.to_vec(),
        src_offset: 0,
        src_strides: perm.iter().map(|&p| s[p] as isize).collect(),
        dst_offset: 0,
        dst_strides: dense(out),
    }])
}

/// Row-major strides of `shape`, signed.
pub fn dense(shape: &[usize]) -> Vec<isize> {
    strides_of(shape).into_iter().map(|x| x as isize).collect()
}

/// The concatenation along `axis` of inputs of `in_shapes` into an output of shape `out`.
pub fn concat_copies(in_shapes: &[Vec<usize>], axis: usize, out: &[usize]) -> Copies {
    let out_strides = strides_of(out);
    let mut offset = 0;
    let copies = (in_shapes.iter().enumerate())
        .map(|(i, shape)| {
            let c = StridedCopy {
                input: i,
                shape: shape.clone(),
                src_offset: 0,
                src_strides: dense(shape),
                dst_offset: offset * out_strides[axis],
                dst_strides: dense(out),
            };
            offset += shape[axis];
            c
        })
        .collect();
    Copies(copies)
}

/// A copy of the part of input 0 (of shape `input`) that starts at index `start` of `axis` and has
/// shape `out` (Slice along one axis, one output of Split).
pub fn slice_along(input: &[usize], axis: usize, start: usize, out: &[usize]) -> StridedCopy {
    StridedCopy {
        input: 0,
        shape: out.to_vec(),
        src_offset: start * strides_of(input)[axis],
        src_strides: dense(input),
        dst_offset: 0,
        dst_strides: dense(out),
    }
}

#[cfg(feature = "onnx")]
pub(crate) mod lower {
    use tract_onnx::tract_core::ops::array::{Gather, MultiBroadcastTo, Slice, TypedConcat};
    use tract_onnx::tract_core::ops::downsample::Downsample;

    use super::{concat_copies, dense, slice_along, Copies, StridedCopy};
    use crate::ops::lowering::{broadcast_strides, Lowered, Lowerer, TractNode};
    use crate::ops::Op;
    use crate::tensor::strides_of;

    pub(crate) const LOWERINGS: &[Lowerer] = &[
        Lowerer { accepts: |n| n.op_is::<TypedConcat>(), min_inputs: 0, lower: concat },
        Lowerer { accepts: |n| n.op_is::<Slice>(), min_inputs: 1, lower: slice },
        Lowerer { accepts: |n| n.op_is::<Gather>(), min_inputs: 2, lower: gather },
        Lowerer { accepts: |n| n.op_is::<Downsample>(), min_inputs: 1, lower: downsample },
        Lowerer { accepts: |n| n.op_is::<MultiBroadcastTo>(), min_inputs: 1, lower: broadcast_to },
    ];

    fn concat(t: &TractNode<'_>) -> Result<Lowered, String> {
        let op = t.node.op_as::<TypedConcat>().ok_or("not a Concat")?;
        Ok(Lowered::new(Op::Copy(concat_copies(&t.in_shapes, op.axis, &t.out_shape)), (0..t.in_shapes.len()).collect()))
    }

    fn slice(t: &TractNode<'_>) -> Result<Lowered, String> {
        let op = t.node.op_as::<Slice>().ok_or("not a Slice")?;
        let start = op.start.to_i64().map_err(|_| "slice with a symbolic start".to_string())?;
        let copy = slice_along(&t.in_shapes[0], op.axis, start as usize, &t.out_shape);
        Ok(Lowered::new(Op::Copy(Copies(vec![copy])), vec![0]))
    }

    /// Every `stride`-th element along `axis`, starting at `modulo`; a negative stride walks the
    /// axis backwards from its last element down to `modulo` (ndarray's
    /// `Slice::new(modulo, None, stride)`).
    fn downsample(t: &TractNode<'_>) -> Result<Lowered, String> {
        let op = t.node.op_as::<Downsample>().ok_or("not a Downsample")?;
        let (input, out) = (&t.in_shapes[0], &t.out_shape);
        if op.stride == 0 || op.axis >= input.len() {
            return Err("downsampling with a zero stride or a bad axis".into());
        }
        let s = strides_of(input);
        let mut src_strides = dense(input);
        src_strides[op.axis] *= op.stride;
        let first = if op.stride > 0 { op.modulo } else { input[op.axis].saturating_sub(1) };
        let copy = StridedCopy {
            input: 0,
            shape: out.to_vec(),
            src_offset: if out.iter().product::<usize>() == 0 { 0 } else { first * s[op.axis] },
            src_strides,
            dst_offset: 0,
            dst_strides: dense(out),
        };
        Ok(Lowered::new(Op::Copy(Copies(vec![copy])), vec![0]))
    }

    fn broadcast_to(t: &TractNode<'_>) -> Result<Lowered, String> {
        let (input, out) = (&t.in_shapes[0], &t.out_shape);
        let copy = StridedCopy {
            input: 0,
            shape: out.to_vec(),
            src_offset: 0,
            src_strides: broadcast_strides(input, out).into_iter().map(|x| x as isize).collect(),
            dst_offset: 0,
            dst_strides: dense(out),
        };
        Ok(Lowered::new(Op::Copy(Copies(vec![copy])), vec![0]))
    }

    /// Gather with constant indices: one strided copy per index.
    fn gather(t: &TractNode<'_>) -> Result<Lowered, String> {
        let op = t.node.op_as::<Gather>().ok_or("not a Gather")?;
        let (axis, data, out) = (op.axis, &t.in_shapes[0], &t.out_shape);
        let indices = t.input_konst(1).ok_or("Gather with run-time indices")?;
        if axis >= data.len() {
            return Err(format!("axis {axis} of a rank-{} tensor", data.len()));
        }
        let idx = indices.cast_to::<i64>().map_err(|e| e.to_string())?;
        let idx = idx.to_plain_array_view::<i64>().map_err(|e| e.to_string())?.iter().copied().collect::<Vec<_>>();
        let len = data[axis] as i64;
        let (ds, os) = (strides_of(data), strides_of(out));
        let q = indices.rank();
        if out.len() != data.len() - 1 + q {
            return Err("unexpected Gather output rank".into());
        }
        // The copied block: every axis of `data` but `axis`; in the output, the axes before and
        // after the index axes.
        let shape: Vec<usize> = data.iter().enumerate().filter(|&(d, _)| d != axis).map(|(_, &n)| n).collect();
        let src_strides: Vec<isize> = (0..data.len()).filter(|&d| d != axis).map(|d| ds[d] as isize).collect();
        let dst_strides: Vec<isize> =
            (0..out.len()).filter(|&d| d < axis || d >= axis + q).map(|d| os[d] as isize).collect();
        let post: usize = data[axis + 1..].iter().product();
        let mut copies = Vec::with_capacity(idx.len());
        for (j, &i) in idx.iter().enumerate() {
            let i = if i < 0 { i + len } else { i };
            if !(0..len).contains(&i) {
                return Err(format!("Gather index {i} out of range for an axis of {len}"));
            }
            copies.push(StridedCopy {
                input: 0,
                shape: shape.clone(),
                src_offset: i as usize * ds[axis],
                src_strides: src_strides.clone(),
                dst_offset: j * post,
                dst_strides: dst_strides.clone(),
            });
        }
        Ok(Lowered::new(Op::Copy(Copies(copies)), vec![0]))
    }
}
