//! Build-time algebra: a per-output-channel scale (`Mul`) or shift (`Add`) by a constant after a
//! convolution, the remnants of an unfolded BatchNormalization, goes into the convolution's
//! weights and bias, so the steps that applied it at run time disappear (and the activation after
//! them can then be fused into the convolution's epilogue). A pointwise convolution that tract
//! turned into a matrix product of constant weights (`[out, in]`) by the feature map (`[in,
//! positions]`, or at one position the feature map `[1, in]` by the weights `[in, out]`) becomes
//! the 1x1 convolution it is first, so its scale and shift fold the same way, in the same
//! constants at every length of a bounded dimension.
//!
//! Folding changes float rounding: `(w . x + b) * s` becomes `(s w) . x + s b`. The results stay
//! within the usual tolerance of onnxruntime's (which folds BatchNormalization the same way); the
//! rewrite property test compares the folded build with the plain one within that tolerance,
//! and every other rewrite bit for bit.
//!
//! A step is folded when: it is a `Mul` or `Add` of the convolution's output and an `f32`
//! constant that is a scalar or varies along the output channels only; the convolution's output
//! is read by that step alone and is not a graph output; the convolution has no activation yet;
//! and its weights (and bias) are constants.

use sramfit_runtime_min::{Activation, Conv2d};

use crate::ir::{Graph, Op};
use crate::ops::binary::Binary;
use crate::tensor::{strides_of, Data, TensorKind};

/// Folds every eligible scale and shift into the convolution before it; returns how many steps
/// were folded. Near-linear: readers are counted once, folded steps dropped in one pass at the end.
pub fn fold_scale_shift(g: &mut Graph) -> usize {
    let mut readers = g.reads();
    let mut producers = g.producers();
    let mut removed = vec![false; g.nodes.len()];
    let mut folded = 0;
    for (j, folded_away) in removed.iter_mut().enumerate() {
        let Some((i, values, kind)) = foldable(g, j, &producers, &readers) else { continue };
        if matches!(g.nodes[i].op, Op::MatMul(_)) && !as_pointwise_conv(g, i) {
            continue;
        }
        fold_into_conv(g, i, &values, kind);
        // Node i now writes what node j wrote.
        let out = g.nodes[j].output;
        let old = g.nodes[i].output;
        g.nodes[i].output = out;
        producers[out] = Some(i);
        readers[old] -= 1;
        *folded_away = true;
        folded += 1;
    }
    super::drop_nodes(g, &removed);
    folded
}

/// For a `Mul` / `Add` node `j` of a foldable producer's output and a constant: the producer, the
/// constant's value per output channel, and the operation.
fn foldable(g: &Graph, j: usize, producers: &[Option<usize>], readers: &[usize]) -> Option<(usize, Vec<f32>, Binary)> {
    let Op::Binary(b) = &g.nodes[j].op else { return None };
    if !matches!(b.kind, Binary::Mul | Binary::Add) {
        return None;
    }
    let out_shape = &g.tensors[g.nodes[j].output].shape;
    let dense = strides_of(out_shape);
    // Read element for element (an axis of extent 1 has no stride to agree on).
    let elementwise = |s: &[usize]| (0..out_shape.len()).all(|a| out_shape[a] == 1 || s.get(a) == Some(&dense[a]));
    let inputs = &g.nodes[j].inputs;
    // Which operand is the producer's output, which the constant.
    let (x, c, c_strides) = match (inputs.first(), inputs.get(1)) {
        (Some(&x), Some(&c)) if elementwise(&b.a_strides) && is_const(g, c) => (x, c, &b.b_strides),
        (Some(&c), Some(&x)) if elementwise(&b.b_strides) && is_const(g, c) => (x, c, &b.a_strides),
        _ => return None,
    };
    let i = producers[x]?;
    if readers[x] != 1 || g.tensors[x].shape != *out_shape {
        return None;
    }
    let channels = match &g.nodes[i].op {
        Op::Conv(p) if p.act == Activation::None && conv_constants(g, i) => {
            (p.batch, p.out_channels, p.out_h * p.out_w)
        }
        Op::MatMul(p) if p.act == Activation::None => match pointwise_orientation(g, i)? {
            Orientation::WeightsFirst => (1, p.m, p.n),
            Orientation::WeightsSecond => (1, p.n, 1),
        },
        _ => return None,
    };
    let TensorKind::Const(Data::F32(data)) = &g.tensors[c].kind else { return None };
    per_channel(out_shape, c_strides, channels, data).map(|v| (i, v, b.kind))
}

/// Whether tensor `t` is an `f32` constant.
fn is_const(g: &Graph, t: usize) -> bool {
    matches!(g.tensors[t].kind, TensorKind::Const(Data::F32(_)))
}

/// Whether convolution `i`'s weights and bias (if any) are `f32` constants.
fn conv_constants(g: &Graph, i: usize) -> bool {
    g.nodes[i].inputs[1..].iter().all(|&t| is_const(g, t))
}

/// The constant's value for each of `channels` output channels, when the constant (read with
/// `strides` over the output `shape`, `[batch, channels, positions]` in elements) is a scalar or
/// varies along the channel axis only.
fn per_channel(
    shape: &[usize],
    strides: &[usize],
    (batch, channels, positions): (usize, usize, usize),
    data: &[f32],
) -> Option<Vec<f32>> {
    if strides.iter().all(|&s| s == 0) {
        return Some(vec![*data.first()?; channels]);
    }
    // The channel axis: `channels` values, `positions` elements after it, `batch` before it.
    let axis = (0..shape.len()).find(|&a| {
        shape[a] == channels
            && shape[a + 1..].iter().product::<usize>() == positions
            && shape[..a].iter().product::<usize>() == batch
    })?;
    let varies_elsewhere = (0..shape.len()).any(|a| a != axis && shape[a] > 1 && strides[a] != 0);
    if varies_elsewhere {
        return None;
    }
    (0..channels).map(|ch| data.get(ch * strides[axis]).copied()).collect()
}

/// Which operand of a matrix product that is a pointwise convolution holds the weights.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Orientation {
    /// Constant `A` (`[out, in]`) times the feature map `B` (`[in, positions]`, dense row-major):
    /// the output is `[out, positions]`.
    WeightsFirst,
    /// The feature map of one position `A` (`[1, in]`) times constant `B` (`[in, out]`): the
    /// output is `[1, out]` (tract's orientation of the same product at one position).
    WeightsSecond,
}

/// The orientation of matrix product `i` when it is a pointwise convolution: one batch, alpha 1,
/// no bias, the feature map and the output dense.
fn pointwise_orientation(g: &Graph, i: usize) -> Option<Orientation> {
    let Op::MatMul(p) = g.nodes[i].op else { return None };
    let [a, b] = g.nodes[i].inputs[..] else { return None };
    // Dense row-major `[rows, cols]` through `(row, col)` strides (an axis of extent 1 has no
    // stride to agree on).
    let dense = |(rows, cols): (usize, usize), (row, col): (usize, usize)| {
        (cols == 1 || col == 1) && (rows == 1 || row == cols)
    };
    let single = p.batch.iter().product::<usize>() == 1 && p.alpha == 1.0 && dense((p.m, p.n), (p.c_row_stride, 1));
    match (is_const(g, a), is_const(g, b)) {
        (true, false) if single && dense((p.k, p.n), (p.b_row_stride, p.b_col_stride)) => {
            Some(Orientation::WeightsFirst)
        }
        (false, true) if single && p.m == 1 && dense((1, p.k), (p.a_row_stride, p.a_col_stride)) => {
            Some(Orientation::WeightsSecond)
        }
        _ => None,
    }
}

/// For a matrix product `i` that is a pointwise convolution ([`pointwise_orientation`]): which
/// of its inputs is the feature map (the other the weights), and the 1x1 convolution
/// [`as_pointwise_conv`] makes of it (its activation kept: the subsampling fold runs after
/// fusion).
pub(super) fn pointwise_feature_map(g: &Graph, i: usize) -> Option<(usize, Conv2d)> {
    let Op::MatMul(p) = g.nodes[i].op else { return None };
    let (x, out, positions) = match pointwise_orientation(g, i)? {
        Orientation::WeightsFirst => (1, p.m, p.n),
        Orientation::WeightsSecond => (0, p.n, 1),
    };
    Some((x, Conv2d { act: p.act, ..Conv2d::pointwise(p.k, out, positions) }))
}

/// Replaces matrix product `i` by the 1x1 convolution it computes ([`pointwise_feature_map`]),
/// with its weights as a dense `[out, in, 1, 1]` constant. Returns whether it did.
pub(super) fn as_pointwise_conv(g: &mut Graph, i: usize) -> bool {
    let Some((x, conv)) = pointwise_feature_map(g, i) else { return false };
    let Op::MatMul(p) = g.nodes[i].op else { return false };
    // The weights are the other operand; weight (oc, kk) is at oc * s_oc + kk * s_k.
    let (s_oc, s_k) = match x {
        1 => (p.a_row_stride, p.a_col_stride),
        _ => (p.b_col_stride, p.b_row_stride),
    };
    let (out, k) = (conv.out_channels, conv.in_channels);
    let (x, w_t) = (g.nodes[i].inputs[x], g.nodes[i].inputs[1 - x]);
    let TensorKind::Const(Data::F32(data)) = &g.tensors[w_t].kind else { return false };
    let Some(weights) = (0..out * k).map(|e| data.get(e / k * s_oc + e % k * s_k).copied()).collect() else {
        return false;
    };
    let name = format!("{}.weights", g.nodes[i].name);
    let w = g.add_const(name, vec![out, k, 1, 1], Data::F32(weights));
    g.nodes[i].op = Op::Conv(conv);
    g.nodes[i].inputs = vec![x, w];
    true
}

/// Scales (`Mul`) or shifts (`Add`) convolution `i`'s output channels by `values`, in new
/// constants for its weights and bias.
fn fold_into_conv(g: &mut Graph, i: usize, values: &[f32], kind: Binary) {
    let Op::Conv(p) = g.nodes[i].op else { unreachable!("a convolution: checked by the caller") };
    let constant = |g: &Graph, t: usize| match &g.tensors[t].kind {
        TensorKind::Const(Data::F32(v)) => v.clone(),
        _ => unreachable!("f32 constants: checked by the caller"),
    };
    let name = g.nodes[i].name.clone();
    let bias = g.nodes[i].inputs.get(2).map(|&t| constant(g, t));
    let bias = match kind {
        Binary::Mul => {
            let w = g.nodes[i].inputs[1];
            let mut weights = constant(g, w);
            let per_channel = weights.len() / p.out_channels;
            for (oc, chunk) in weights.chunks_exact_mut(per_channel).enumerate() {
                chunk.iter_mut().for_each(|v| *v *= values[oc]);
            }
            let shape = g.tensors[w].shape.clone();
            g.nodes[i].inputs[1] = g.add_const(format!("{name}.scaled_weights"), shape, Data::F32(weights));
            bias.map(|b| b.iter().zip(values).map(|(b, s)| b * s).collect::<Vec<f32>>())
        }
        _ => Some(match bias {
            Some(b) => b.iter().zip(values).map(|(b, c)| b + c).collect(),
            None => values.to_vec(),
        }),
    };
    if let Some(b) = bias {
        let t = g.add_const(format!("{name}.folded_bias"), vec![p.out_channels], Data::F32(b));
        g.nodes[i].inputs.truncate(2);
        g.nodes[i].inputs.push(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Node;
    use crate::ops::binary::BinaryOp;
    use crate::tensor::DType;

    /// x [1, 2, 2, 2] -> 1x1 conv (2 -> 2 channels, weights [1, 2; 3, 4], bias [10, 20]) -> h
    /// -> Mul by [2, 3] per channel -> m -> Add [0.5, 0.25] per channel -> y.
    fn graph(extra_reader: bool) -> Graph {
        let mut g = Graph::default();
        let x = g.add_tensor("x", vec![1, 2, 2, 2], DType::F32, TensorKind::Input(0));
        let w = g.add_const("w", vec![2, 2, 1, 1], Data::F32(vec![1.0, 2.0, 3.0, 4.0]));
        let b = g.add_const("b", vec![2], Data::F32(vec![10.0, 20.0]));
        let s = g.add_const("s", vec![1, 2, 1, 1], Data::F32(vec![2.0, 3.0]));
        let c = g.add_const("c", vec![1, 2, 1, 1], Data::F32(vec![0.5, 0.25]));
        let [h, m, y] = ["h", "m", "y"].map(|n| g.add_tensor(n, vec![1, 2, 2, 2], DType::F32, TensorKind::Activation));
        let conv = Conv2d::pointwise(2, 2, 4);
        let per_channel = |kind| Op::Binary(BinaryOp::new(kind, vec![8, 4, 2, 1], vec![0, 1, 0, 0]));
        g.nodes.push(Node::new("conv", Op::Conv(conv), vec![x, w, b], h));
        g.nodes.push(Node::new("scale", per_channel(Binary::Mul), vec![h, s], m));
        g.nodes.push(Node::new("shift", per_channel(Binary::Add), vec![m, c], y));
        (g.inputs, g.outputs) = (vec![x], vec![y]);
        if extra_reader {
            g.outputs.push(h);
        }
        g
    }

    fn constant(g: &Graph, t: usize) -> Vec<f32> {
        let TensorKind::Const(Data::F32(v)) = &g.tensors[t].kind else { panic!("not a constant") };
        v.clone()
    }

    #[test]
    fn a_per_channel_scale_and_shift_go_into_the_weights_and_bias() {
        let mut g = graph(false);
        assert_eq!(fold_scale_shift(&mut g), 2);
        let [n] = &g.nodes[..] else { panic!("{} steps", g.nodes.len()) };
        assert_eq!(g.tensors[n.output].name, "y");
        // Channel 0 scaled by 2, channel 1 by 3; bias (10 * 2 + 0.5, 20 * 3 + 0.25).
        assert_eq!(constant(&g, n.inputs[1]), [2.0, 4.0, 9.0, 12.0]);
        assert_eq!(constant(&g, n.inputs[2]), [20.5, 60.25]);
    }

    #[test]
    fn a_convolution_output_read_elsewhere_or_an_activated_one_is_left() {
        let mut g = graph(true);
        assert_eq!(fold_scale_shift(&mut g), 0);
        let mut g = graph(false);
        let Op::Conv(p) = &mut g.nodes[0].op else { panic!() };
        p.act = Activation::Relu;
        assert_eq!(fold_scale_shift(&mut g), 0);
    }

    #[test]
    fn per_channel_values_are_read_along_the_channel_axis_only() {
        // [1, 3, 2, 2] by a [3] per-channel constant (strides 0, 1, 0, 0), a scalar, and one
        // varying along width (refused).
        let shape = [1, 3, 2, 2];
        assert_eq!(per_channel(&shape, &[0, 1, 0, 0], (1, 3, 4), &[1.0, 2.0, 3.0]), Some(vec![1.0, 2.0, 3.0]));
        assert_eq!(per_channel(&shape, &[0, 0, 0, 0], (1, 3, 4), &[5.0]), Some(vec![5.0; 3]));
        assert_eq!(per_channel(&shape, &[0, 1, 0, 1], (1, 3, 4), &[1.0; 6]), None);
    }
}
