//! Subsampling as a stride: a copy that keeps every `s`-th row or column of an NCHW feature map
//! for a 1x1 convolution becomes that convolution's stride, so the subsampled tensor never
//! exists and its copy never runs.
//!
//! tract turns a strided 1x1 convolution (ResNet's downsampling shortcuts) into a `Downsample`
//! of the feature map per strided axis (two copies for a 2-D stride) and a matrix product of the
//! weights by the subsampled map; the importer lowers them to strided copies and a matrix product
//! (or, when a scale or shift followed, [`super::fold_affine`] already made it a 1x1
//! convolution). The fold restores the convolution: ResNet-8's two shortcuts took 8.1 and
//! 5.5 us as copies and product, 4.3 and 4.0 as strided convolutions (`sramfit-bench --layers`).
//!
//! A copy is folded into the 1x1 convolution (no padding, NCHW input) or pointwise matrix
//! product (constant weights by the feature map, dense) that reads it when: it is one strided
//! copy from offset 0 into a dense destination, read by that node alone and not a graph output;
//! its source is a dense `[batch, channels, H, W]` (or `[batch, channels, W]`) tensor and it
//! copies all of the batch and channels and, along each spatial axis, every `s`-th value from the
//! first (`s >= 1`, `ceil(H / s)` values). The convolution then reads the source at its stride
//! times `s`: output position `o` reads input `o * stride * s`, the value the copy put at
//! `o * stride`. A matrix product first becomes the 1x1 convolution it computes. Each output is
//! the same chain of multiply-adds over the same values, so results are bit-identical.

use sramfit_runtime_min::{Conv2d, ConvInput};

use crate::ir::{strides_of, Graph, Op};
use crate::ops::copy::{Copies, StridedCopy};

/// Folds every eligible subsampling copy into the 1x1 convolution or pointwise matrix product
/// reading it; returns how many copies were folded. Near-linear: producers and use counts are
/// computed once and kept up to date, and folded copies are dropped in one pass at the end.
pub fn fold_subsampling(g: &mut Graph) -> usize {
    let producers = g.producers();
    let mut uses = g.reads();
    let mut removed = vec![false; g.nodes.len()];
    let mut folded = 0;
    for j in 0..g.nodes.len() {
        // A 2-D stride is two copies, one per axis: keep folding into node j.
        while let Some((i, p)) = subsampling_input(g, j, &producers, &uses) {
            if matches!(g.nodes[j].op, Op::MatMul(_)) && !super::fold_affine::as_pointwise_conv(g, j) {
                break;
            }
            g.nodes[j].op = Op::Conv(p);
            let (copied, source) = (g.nodes[j].inputs[0], g.nodes[i].inputs[0]);
            g.nodes[j].inputs[0] = source;
            uses[copied] -= 1;
            removed[i] = true;
            folded += 1;
        }
    }
    super::drop_nodes(g, &removed);
    folded
}

/// The subsampling of one spatial axis: the source's extent and the step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Axis {
    extent: usize,
    step: usize,
}

/// A foldable copy's source spatial axes (height, width; height `{ extent: 1, step: 1 }` for a
/// 1-D map).
type Subsampling = (Axis, Axis);

/// Convolution `p` (1x1, no padding) reading the copy's source instead of its output: its input
/// extents are the copy's (or, for a matrix product made a 1x1 convolution, all positions as one
/// row at stride 1, which takes the copy's 2-D shape); `None` when they are neither.
fn strided(p: &Conv2d, (h, w): Subsampling) -> Option<Conv2d> {
    let (in_h, in_w) = (h.extent.div_ceil(h.step), w.extent.div_ceil(w.step));
    let positions = in_h * in_w;
    let flat = p.stride_h == 1 && p.stride_w == 1 && p.in_h * p.in_w == positions && p.out_h * p.out_w == positions;
    let (out_h, out_w, stride_h, stride_w) = match (p.in_h == in_h && p.in_w == in_w, flat) {
        (true, _) => (p.out_h, p.out_w, p.stride_h, p.stride_w),
        (false, true) => (in_h, in_w, 1, 1),
        (false, false) => return None,
    };
    Some(Conv2d {
        in_h: h.extent,
        in_w: w.extent,
        out_h,
        out_w,
        stride_h: stride_h * h.step,
        stride_w: stride_w * w.step,
        ..*p
    })
}

/// The producer of node `j`'s feature map and the convolution `j` becomes reading that
/// producer's input, when `j` is a 1x1 convolution (no padding, NCHW) or a pointwise matrix
/// product and the producer a foldable subsampling copy.
fn subsampling_input(g: &Graph, j: usize, producers: &[Option<usize>], uses: &[usize]) -> Option<(usize, Conv2d)> {
    let n = &g.nodes[j];
    let (map, p) = match &n.op {
        Op::Conv(p) => {
            let one = p.kernel_h == 1 && p.kernel_w == 1 && p.pad_top == 0 && p.pad_left == 0;
            (one && p.input == ConvInput::Nchw).then_some((n.inputs[0], *p))?
        }
        Op::MatMul(_) => {
            let (x, p) = super::fold_affine::pointwise_feature_map(g, j)?;
            (n.inputs[x], p)
        }
        _ => return None,
    };
    if uses[map] != 1 {
        return None;
    }
    let i = producers[map]?;
    let Op::Copy(Copies(copies)) = &g.nodes[i].op else { return None };
    let [c] = copies.as_slice() else { return None };
    let s = subsampling(c, &g.tensors[g.nodes[i].inputs[0]].shape, (p.batch, p.in_channels))?;
    strided(&p, s).map(|p| (i, p))
}

/// The subsampling copy `c` does of a dense `source` tensor of `[batch, channels, H, W]` (or
/// `[batch, channels, W]`) with `(batch, channels)` as given.
fn subsampling(c: &StridedCopy, source: &[usize], (batch, channels): (usize, usize)) -> Option<Subsampling> {
    let rank = source.len();
    let plain = c.input == 0 && c.src_offset == 0 && c.dst_offset == 0;
    let dense = c.dst_strides.iter().map(|&s| s as usize).eq(strides_of(&c.shape));
    if !(plain && dense && (3..=4).contains(&rank) && c.shape.len() == rank && source[..2] == [batch, channels]) {
        return None;
    }
    let src = strides_of(source);
    // The batch and channel axes copied whole (an axis of extent 1 has no stride to agree on).
    let whole = (0..2).all(|a| c.shape[a] == source[a] && (source[a] == 1 || c.src_strides[a] == src[a] as isize));
    let axis = |a: usize| {
        let s = c.src_strides[a];
        // (A stride of 0 below an empty axis divides nothing.)
        let step = (s > 0 && src[a] > 0 && (s as usize).is_multiple_of(src[a])).then(|| s as usize / src[a])?;
        (c.shape[a] == source[a].div_ceil(step)).then_some(Axis { extent: source[a], step })
    };
    let w = axis(rank - 1)?;
    let h = match rank {
        4 => axis(2)?,
        _ => Axis { extent: 1, step: 1 },
    };
    whole.then_some((h, w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Node, TensorKind};
    use crate::ops::copy::dense;
    use crate::tensor::{DType, Data};
    use sramfit_runtime_min::{Activation, MatMul};

    /// The copy of every `step`-th value along `axis` of a dense tensor of `shape`.
    fn downsample(shape: &[usize], axis: usize, step: usize) -> (StridedCopy, Vec<usize>) {
        let mut out = shape.to_vec();
        out[axis] = shape[axis].div_ceil(step);
        let mut src_strides = dense(shape);
        src_strides[axis] *= step as isize;
        let c = StridedCopy {
            input: 0,
            shape: out.clone(),
            src_offset: 0,
            src_strides,
            dst_offset: 0,
            dst_strides: dense(&out),
        };
        (c, out)
    }

    /// x [1, 2, 5, 6] -> rows by 2 -> [1, 2, 3, 6] -> columns by 3 -> [1, 2, 3, 2] -> the 1x1
    /// convolution to 4 channels (`product`: the pointwise matrix product instead) -> y.
    fn graph(product: bool, extra_reader: bool) -> Graph {
        let mut g = Graph::default();
        let x = g.add_tensor("x", vec![1, 2, 5, 6], DType::F32, TensorKind::Input(0));
        let (rows, mid) = downsample(&[1, 2, 5, 6], 2, 2);
        let (cols, small) = downsample(&mid, 3, 3);
        let [t1, t2] = [("rows", &mid), ("cols", &small)]
            .map(|(name, shape)| g.add_tensor(name, shape.clone(), DType::F32, TensorKind::Activation));
        let w = g.add_const("w", vec![4, 2, 1, 1], Data::F32(vec![0.5; 8]));
        let y = g.add_tensor("y", vec![1, 4, 3, 2], DType::F32, TensorKind::Activation);
        g.nodes.push(Node::new("rows", Op::Copy(Copies(vec![rows])), vec![x], t1));
        g.nodes.push(Node::new("cols", Op::Copy(Copies(vec![cols])), vec![t1], t2));
        let op = match product {
            // With a fused activation, which the convolution keeps.
            true => Op::MatMul(MatMul { act: Activation::Relu, ..MatMul::row_major(4, 6, 2) }),
            false => {
                let mut p = Conv2d::pointwise(2, 4, 6);
                (p.in_h, p.in_w, p.out_h, p.out_w) = (3, 2, 3, 2);
                Op::Conv(p)
            }
        };
        let inputs = if product { vec![w, t2] } else { vec![t2, w] };
        g.nodes.push(Node::new("pointwise", op, inputs, y));
        (g.inputs, g.outputs) = (vec![x], vec![y]);
        if extra_reader {
            g.outputs.push(t1);
        }
        g
    }

    fn folded_conv(g: &Graph) -> Conv2d {
        let [n] = &g.nodes[..] else { panic!("{} steps", g.nodes.len()) };
        assert_eq!(g.tensors[n.inputs[0]].name, "x");
        let Op::Conv(p) = n.op else { panic!("{:?}", n.op) };
        p
    }

    #[test]
    fn both_copies_become_the_convolution_s_stride() {
        for product in [false, true] {
            let mut g = graph(product, false);
            assert_eq!(fold_subsampling(&mut g), 2, "product {product}");
            let p = folded_conv(&g);
            let got = (p.in_h, p.in_w, p.out_h, p.out_w, p.stride_h, p.stride_w);
            assert_eq!(got, (5, 6, 3, 2, 2, 3), "product {product}");
            let act = if product { Activation::Relu } else { Activation::None };
            assert_eq!(p.act, act, "product {product}");
            assert!(g.tensors.iter().all(|t| t.name != "rows" && t.name != "cols"));
        }
    }

    #[test]
    fn an_already_strided_convolution_multiplies_its_stride() {
        // x [1, 1, 8, 1] -> rows by 2 -> [1, 1, 4, 1] -> 1x1 convolution at row stride 2 -> [1, 1, 2, 1].
        let mut g = Graph::default();
        let x = g.add_tensor("x", vec![1, 1, 8, 1], DType::F32, TensorKind::Input(0));
        let (rows, mid) = downsample(&[1, 1, 8, 1], 2, 2);
        let t = g.add_tensor("rows", mid, DType::F32, TensorKind::Activation);
        let w = g.add_const("w", vec![1, 1, 1, 1], Data::F32(vec![2.0]));
        let y = g.add_tensor("y", vec![1, 1, 2, 1], DType::F32, TensorKind::Activation);
        let mut p = Conv2d::pointwise(1, 1, 4);
        (p.in_h, p.in_w, p.out_h, p.out_w, p.stride_h) = (4, 1, 2, 1, 2);
        g.nodes.push(Node::new("rows", Op::Copy(Copies(vec![rows])), vec![x], t));
        g.nodes.push(Node::new("conv", Op::Conv(p), vec![t, w], y));
        (g.inputs, g.outputs) = (vec![x], vec![y]);
        assert_eq!(fold_subsampling(&mut g), 1);
        let p = folded_conv(&g);
        assert_eq!((p.in_h, p.out_h, p.stride_h, p.stride_w), (8, 2, 4, 1));
    }

    #[test]
    fn copies_that_are_no_whole_subsampling_stay() {
        // A copy read elsewhere too: the second copy folds, the first stays.
        let mut g = graph(false, true);
        assert_eq!(fold_subsampling(&mut g), 1);
        assert_eq!(g.nodes.len(), 2);
        // The column copy (of [1, 2, 3, 6], every third column) starting at the second column,
        // keeping two of the three columns every second one gives, or repeating channel 0.
        for change in [
            (|c: &mut StridedCopy| c.src_offset = 1) as fn(&mut StridedCopy),
            |c| c.src_strides[3] = 2,
            |c| c.src_strides[1] = 0,
        ] {
            let mut g = graph(false, false);
            let Op::Copy(Copies(copies)) = &mut g.nodes[1].op else { panic!() };
            change(&mut copies[0]);
            assert_eq!(fold_subsampling(&mut g), 0);
            assert_eq!(g.nodes.len(), 3);
        }
        // A 3x3 convolution reads neighbours the copy dropped.
        let mut g = graph(false, false);
        let Op::Conv(p) = &mut g.nodes[2].op else { panic!() };
        (p.kernel_h, p.kernel_w, p.pad_top, p.pad_left) = (3, 3, 1, 1);
        assert_eq!(fold_subsampling(&mut g), 0);
    }
}
