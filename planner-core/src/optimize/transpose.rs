//! Transpose as metadata: a copy that only permutes (or reshapes) a tensor for a matrix product
//! becomes strides of that product, and a copy from NHWC to NCHW for a convolution becomes its
//! NHWC input layout, so the copied tensor never exists.
//!
//! The matrix product kernel ([`sramfit_runtime_min::MatMul`]) reads each operand through a batch,
//! row and column stride, so it can read a transposed operand where it lies. Such copies come from
//! a Transpose that tract did not fold into the product, and from the importer's fallback that puts
//! both einsum operands in a canonical layout when their axes do not nest (ShuffleNetV2's last
//! convolution after a channel shuffle, a Gemm after Flatten whose weights are stored transposed).
//! The convolution kernel reads an NHWC input in place ([`ConvInput::Nhwc`]): the transpose an
//! NHWC graph (a Keras model exported by tf2onnx) has on its input goes into its first
//! convolution.
//!
//! A copy node is folded into the product or convolution that reads it when: it is one
//! whole-tensor strided copy of its input (no offset, non-negative source strides, a dense
//! row-major destination), its output is read once, by that node, and is not a graph output, and
//! (a product) every element the product reads at the new strides is, exhaustively checked, the
//! element the copy would have put at the old position, or (a convolution's input) its source
//! strides are those of the NHWC tensor of the NCHW shape it writes. The copy node and its tensor
//! are then removed.

use sramfit_runtime_min::{ConvInput, MatMul};

use crate::ir::{strides_of, Graph, Op};
use crate::ops::copy::{Copies, StridedCopy};

/// Most element positions checked for one fold; a larger operand keeps its copy.
const MAX_CHECKED: usize = 1 << 24;

/// Folds every eligible copy into the matrix product or convolution reading it; returns how many
/// were folded. Near-linear: producers and use counts are computed once and kept up to date, and
/// folded copies are dropped in one pass at the end.
pub fn fold_transposes(g: &mut Graph) -> usize {
    let producers = g.producers();
    let mut uses = g.reads();
    let mut removed = vec![false; g.nodes.len()];
    let mut folded = 0;
    for j in 0..g.nodes.len() {
        // A folded operand may itself be a transposing copy's output: keep folding into node j.
        while let Some((slot, i, strides)) = foldable_operand(g, j, &producers, &uses) {
            let Op::MatMul(p) = &mut g.nodes[j].op else { unreachable!("checked by foldable_operand") };
            set_operand(p, slot, strides);
            bypass(g, (j, slot, i), &mut uses, &mut removed);
            folded += 1;
        }
        if let Some(i) = foldable_conv_input(g, j, &producers, &uses) {
            let Op::Conv(p) = &mut g.nodes[j].op else { unreachable!("checked by foldable_conv_input") };
            p.input = ConvInput::Nhwc;
            bypass(g, (j, 0, i), &mut uses, &mut removed);
            folded += 1;
        }
    }
    super::drop_nodes(g, &removed);
    folded
}

/// Node `j` reads input `slot` from the source of copy `i` instead of from the copy, which is
/// marked removed.
fn bypass(g: &mut Graph, (j, slot, i): (usize, usize, usize), uses: &mut [usize], removed: &mut [bool]) {
    let (copied, source) = (g.nodes[j].inputs[slot], g.nodes[i].inputs[0]);
    g.nodes[j].inputs[slot] = source;
    // The copy's output loses its only reader; its source trades the copy for node j.
    uses[copied] -= 1;
    removed[i] = true;
}

/// An operand's extents and strides: four batch axes, rows, columns.
type Operand = ([usize; 6], [usize; 6]);

/// Operand `slot` (0: A `[m, k]`, 1: B `[k, n]`) of `p`.
fn operand(p: &MatMul, slot: usize) -> Operand {
    let [b0, b1, b2, b3] = p.batch;
    match slot {
        0 => {
            let s = p.a_batch_strides;
            ([b0, b1, b2, b3, p.m, p.k], [s[0], s[1], s[2], s[3], p.a_row_stride, p.a_col_stride])
        }
        _ => {
            let s = p.b_batch_strides;
            ([b0, b1, b2, b3, p.k, p.n], [s[0], s[1], s[2], s[3], p.b_row_stride, p.b_col_stride])
        }
    }
}

/// Gives operand `slot` of `p` new strides.
fn set_operand(p: &mut MatMul, slot: usize, s: [usize; 6]) {
    let [b0, b1, b2, b3, row, col] = s;
    match slot {
        0 => (p.a_batch_strides, p.a_row_stride, p.a_col_stride) = ([b0, b1, b2, b3], row, col),
        _ => (p.b_batch_strides, p.b_row_stride, p.b_col_stride) = ([b0, b1, b2, b3], row, col),
    }
}

/// The operand slot of matrix product `j` whose producer `i` is a foldable copy, with the strides
/// that read the copy's input directly.
fn foldable_operand(
    g: &Graph,
    j: usize,
    producers: &[Option<usize>],
    uses: &[usize],
) -> Option<(usize, usize, [usize; 6])> {
    let Op::MatMul(p) = &g.nodes[j].op else { return None };
    (0..2).find_map(|slot| {
        let (i, c) = sole_copy(g, *g.nodes[j].inputs.get(slot)?, producers, uses)?;
        restride(c, operand(p, slot)).map(|s| (slot, i, s))
    })
}

/// The producer of convolution `j`'s input when it is a foldable copy from the NHWC tensor of
/// the NCHW input the convolution reads.
fn foldable_conv_input(g: &Graph, j: usize, producers: &[Option<usize>], uses: &[usize]) -> Option<usize> {
    let Op::Conv(p) = &g.nodes[j].op else { return None };
    if p.input != ConvInput::Nchw {
        return None;
    }
    let (i, c) = sole_copy(g, *g.nodes[j].inputs.first()?, producers, uses)?;
    let (n, ch, h, w) = (p.batch, p.in_channels, p.in_h, p.in_w);
    let nhwc = [h * w * ch, 1, w * ch, ch].map(|s| s as isize);
    // An axis of extent 1 has no stride to agree on.
    let strides_agree = (0..4).all(|a| c.shape.get(a) == Some(&1) || c.src_strides.get(a) == Some(&nhwc[a]));
    (c.shape == [n, ch, h, w] && strides_agree).then_some(i)
}

/// The producer of tensor `t` and its one strided copy, when `t` is read once (graph outputs
/// count as reads) and is the whole dense result of copying the producer's input from offset 0
/// with non-negative strides.
fn sole_copy<'g>(
    g: &'g Graph,
    t: usize,
    producers: &[Option<usize>],
    uses: &[usize],
) -> Option<(usize, &'g StridedCopy)> {
    if uses[t] != 1 {
        return None;
    }
    let i = producers[t]?;
    let Op::Copy(Copies(copies)) = &g.nodes[i].op else { return None };
    let [c] = copies.as_slice() else { return None };
    let dense = c.dst_strides.iter().map(|&s| s as usize).eq(strides_of(&c.shape));
    let whole = c.shape.iter().product::<usize>() == g.tensors[t].len();
    let plain = c.input == 0 && c.src_offset == 0 && c.dst_offset == 0 && c.src_strides.iter().all(|&s| s >= 0);
    (plain && dense && whole).then_some((i, c))
}

/// The source offset of the element the copy writes at destination offset `dst`.
fn source_of(c: &StridedCopy, mut dst: usize) -> usize {
    let mut src = 0;
    for (&d, &s) in c.dst_strides.iter().zip(&c.src_strides) {
        let d = (d as usize).max(1);
        src += dst / d * s as usize;
        dst %= d;
    }
    src
}

/// Strides reading the copy's source that address, for every index of the operand, the element
/// the copy would have put at the operand's old address; `None` when no such strides exist.
fn restride(c: &StridedCopy, (ext, old): Operand) -> Option<[usize; 6]> {
    let new = old.map(|s| source_of(c, s));
    if ext.iter().product::<usize>() > MAX_CHECKED {
        return None;
    }
    let mut idx = [0usize; 6];
    loop {
        let at = |s: &[usize; 6]| idx.iter().zip(s).map(|(i, s)| i * s).sum::<usize>();
        if source_of(c, at(&old)) != at(&new) {
            return None;
        }
        // Next index, innermost axis fastest.
        let mut axis = 6;
        loop {
            if axis == 0 {
                return Some(new);
            }
            axis -= 1;
            idx[axis] += 1;
            if idx[axis] < ext[axis] {
                break;
            }
            idx[axis] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Node, TensorKind};
    use crate::tensor::{DType, Data};

    /// x [2, 3] -> transpose -> xt [3, 2] -> matmul with w [2, 4] -> y [3, 4].
    fn graph(perm_copy: StridedCopy, extra_reader: bool) -> Graph {
        let mut g = Graph::default();
        let x = g.add_tensor("x", vec![2, 3], DType::F32, TensorKind::Input(0));
        let xt = g.add_tensor("xt", vec![3, 2], DType::F32, TensorKind::Activation);
        let w = g.add_const("w", vec![2, 4], Data::F32(vec![0.5; 8]));
        let y = g.add_tensor("y", vec![3, 4], DType::F32, TensorKind::Activation);
        let node = Node::new;
        let mm = MatMul::row_major(3, 4, 2);
        g.nodes.push(node("transpose", Op::Copy(Copies(vec![perm_copy])), vec![x], xt));
        g.nodes.push(node("mm", Op::MatMul(mm), vec![xt, w], y));
        (g.inputs, g.outputs) = (vec![x], vec![y]);
        if extra_reader {
            let z = g.add_tensor("z", vec![3, 2], DType::F32, TensorKind::Activation);
            g.nodes.push(node("neg", Op::Unary(crate::ops::unary::Unary::Neg), vec![xt], z));
            g.outputs.push(z);
        }
        g
    }

    fn transpose_2x3() -> StridedCopy {
        StridedCopy {
            input: 0,
            shape: vec![3, 2],
            src_offset: 0,
            src_strides: vec![1, 3],
            dst_offset: 0,
            dst_strides: vec![2, 1],
        }
    }

    #[test]
    fn a_transposed_operand_is_read_in_place_with_swapped_strides() {
        let mut g = graph(transpose_2x3(), false);
        assert_eq!(fold_transposes(&mut g), 1);
        assert_eq!(g.nodes.len(), 1);
        let Op::MatMul(p) = &g.nodes[0].op else { panic!() };
        // Row r, column c of A is x[c][r]: row stride 1, column stride 3.
        assert_eq!((p.a_row_stride, p.a_col_stride), (1, 3));
        assert_eq!(g.tensors[g.nodes[0].inputs[0]].name, "x");
        assert!(g.tensors.iter().all(|t| t.name != "xt"));
    }

    #[test]
    fn a_copy_with_another_reader_or_not_a_permutation_stays() {
        let mut g = graph(transpose_2x3(), true);
        assert_eq!(fold_transposes(&mut g), 0);
        // Reversed rows (a negative stride) cannot be expressed.
        let mut flip = transpose_2x3();
        (flip.src_offset, flip.src_strides) = (2, vec![-1, 3]);
        let mut g = graph(flip, false);
        assert_eq!(fold_transposes(&mut g), 0);
    }

    #[test]
    fn strides_are_checked_on_every_element() {
        // A 3 x 2 operand over a copy of shape [3, 2, 1]: rows at source stride 1, columns at 5.
        let c = StridedCopy {
            input: 0,
            shape: vec![3, 2, 1],
            src_offset: 0,
            src_strides: vec![1, 5, 0],
            dst_offset: 0,
            dst_strides: vec![2, 1, 1],
        };
        assert_eq!(restride(&c, ([1, 1, 1, 1, 3, 2], [0, 0, 0, 0, 2, 1])), Some([0, 0, 0, 0, 1, 5]));
        let split = StridedCopy { shape: vec![2, 2], src_strides: vec![1, 4], dst_strides: vec![2, 1], ..c };
        // One operand axis of 4 over two copy axes (2 x 2) whose source strides (1, 4) do not nest.
        assert_eq!(restride(&split, ([1, 1, 1, 1, 1, 4], [0, 0, 0, 0, 4, 1])), None);
    }

    /// x NHWC [1, 4, 5, 3] -> transpose to NCHW (perm [0, 3, 1, 2]) -> 3x3 conv -> y.
    fn nhwc_conv_graph(perm: &[usize]) -> Graph {
        use sramfit_runtime_min::{Activation, Conv2d, ConvWeights};
        let mut g = Graph::default();
        let nhwc = vec![1, 4, 5, 3];
        let copied: Vec<usize> = perm.iter().map(|&a| nhwc[a]).collect();
        let x = g.add_tensor("x", nhwc.clone(), DType::F32, TensorKind::Input(0));
        let xt = g.add_tensor("xt", copied.clone(), DType::F32, TensorKind::Activation);
        let w = g.add_const("w", vec![2, 3, 3, 3], Data::F32(vec![0.25; 54]));
        let y = g.add_tensor("y", vec![1, 2, 4, 5], DType::F32, TensorKind::Activation);
        let (in_channels, in_h, in_w) = (copied[1], copied[2], copied[3]);
        let conv = Conv2d {
            batch: 1,
            in_channels,
            in_h,
            in_w,
            out_channels: 2,
            out_h: 4,
            out_w: 5,
            kernel_h: 3,
            kernel_w: 3,
            stride_h: 1,
            stride_w: 1,
            dilation_h: 1,
            dilation_w: 1,
            pad_top: 1,
            pad_left: 1,
            groups: 1,
            act: Activation::None,
            weights: ConvWeights::Oihw,
            input: ConvInput::Nchw,
        };
        let copy = crate::ops::copy::transpose(perm, &nhwc, &copied);
        g.nodes.push(Node::new("to_nchw", Op::Copy(copy), vec![x], xt));
        g.nodes.push(Node::new("conv", Op::Conv(conv), vec![xt, w], y));
        (g.inputs, g.outputs) = (vec![x], vec![y]);
        g
    }

    #[test]
    fn an_nhwc_input_transposed_for_a_convolution_is_read_in_place() {
        let mut g = nhwc_conv_graph(&[0, 3, 1, 2]);
        assert_eq!(fold_transposes(&mut g), 1);
        let [n] = &g.nodes[..] else { panic!("{} steps", g.nodes.len()) };
        let Op::Conv(p) = &n.op else { panic!() };
        assert_eq!((p.input, g.tensors[n.inputs[0]].name.as_str()), (ConvInput::Nhwc, "x"));
        // Another permutation (N H C W: channels and width swapped too) is no NHWC read.
        let mut g = nhwc_conv_graph(&[0, 3, 2, 1]);
        assert_eq!(fold_transposes(&mut g), 0);
    }
}
