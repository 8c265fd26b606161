//! Weights packed at build time: constant weights are stored in the layout the GEMM kernels read
//! (the output channels of each input value contiguous), so the kernels load whole vectors of them
//! in place, with no packing and no packing buffer at run time.
//!
//! Packed are the weights of every ungrouped convolution ([`ConvWeights::KMajor`]) and the constant
//! left operand of every unbatched matrix product that reads it row by row (a pointwise
//! convolution tract turned into an einsum: its strides become row 1, column `m`). Each gets a
//! packed copy (the constant is dropped when nothing else reads it), followed by [`slack`] zeros
//! so that a kernel may load whole vectors of output channels past the last one. Depthwise and
//! grouped convolutions keep ONNX's order (with one output channel per group both orders are the
//! same). No result changes: every kernel path sums the same products in the same order in either
//! layout (checked by `runtime-min`'s convolution tests and the rewrite property test in
//! `safety/`).

use sramfit_runtime_min::ConvWeights;

use crate::ir::{Graph, Op, TensorKind};

/// Zeros after the packed weights of `out_channels` channels: up to the next multiple of 16. The
/// kernels load the output channels of one input value in vectors of 8 or 16 from multiples of 16
/// (two vectors only for a block of more than one vector's rows), so no load ends past the next
/// multiple of 16.
pub const fn slack(out_channels: usize) -> usize {
    out_channels.next_multiple_of(16) - out_channels
}

/// `rows` rows of `cols` values (row-major), transposed and followed by [`slack`]`(rows)` zeros.
fn transposed(values: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0; rows * cols + slack(rows)];
    for (r, row) in values.chunks_exact(cols).enumerate() {
        for (c, &v) in row.iter().enumerate() {
            out[c * rows + r] = v;
        }
    }
    out
}

/// Packs the weights of every eligible convolution and matrix product; returns how many were
/// packed.
pub fn pack_weights(g: &mut Graph) -> usize {
    let mut packed = 0;
    for i in 0..g.nodes.len() {
        // (operand slot, rows, columns) of the constant to transpose.
        let (slot, rows, cols) = match &g.nodes[i].op {
            Op::Conv(p) if p.weights == ConvWeights::Oihw && p.groups == 1 && p.out_channels >= 2 => {
                (1, p.out_channels, p.in_channels * p.kernel_h * p.kernel_w)
            }
            Op::MatMul(p) if p.batch == [1; 4] && p.m >= 2 && p.a_col_stride == 1 && p.a_row_stride == p.k => {
                (0, p.m, p.k)
            }
            _ => continue,
        };
        let Some(&w) = g.nodes[i].inputs.get(slot) else { continue };
        let TensorKind::Const(values) = &g.tensors[w].kind else { continue };
        if values.len() != rows * cols {
            continue;
        }
        let packed_values = transposed(values, rows, cols);
        let name = format!("{}.packed", g.tensors[w].name);
        g.nodes[i].inputs[slot] = g.add_tensor(name, vec![packed_values.len()], TensorKind::Const(packed_values));
        match &mut g.nodes[i].op {
            Op::Conv(p) => p.weights = ConvWeights::KMajor,
            Op::MatMul(p) => (p.a_row_stride, p.a_col_stride) = (1, rows),
            _ => unreachable!("matched above"),
        }
        packed += 1;
    }
    if packed > 0 {
        super::remove_unused_tensors(g);
    }
    packed
}

#[cfg(test)]
mod tests {
    use sramfit_runtime_min::{Activation, Conv2d, MatMul};

    use super::*;
    use crate::ir::Node;

    fn conv(in_channels: usize, out_channels: usize, groups: usize) -> Conv2d {
        Conv2d {
            batch: 1,
            in_channels,
            in_h: 4,
            in_w: 4,
            out_channels,
            out_h: 4,
            out_w: 4,
            kernel_h: 1,
            kernel_w: 2,
            stride_h: 1,
            stride_w: 1,
            dilation_h: 1,
            dilation_w: 1,
            pad_top: 0,
            pad_left: 0,
            groups,
            act: Activation::None,
            weights: ConvWeights::Oihw,
        }
    }

    /// A graph `x -> conv -> y` with OIHW weights `0, 1, 2, ...`.
    fn graph(p: Conv2d) -> Graph {
        let mut g = Graph::default();
        let w_len = p.out_channels * p.in_channels / p.groups * p.kernel_h * p.kernel_w;
        let x = g.add_tensor("x", vec![1, p.in_channels, 4, 4], TensorKind::Input(0));
        let w = g.add_tensor("w", vec![w_len], TensorKind::Const((0..w_len).map(|v| v as f32).collect()));
        let y = g.add_tensor("y", vec![1, p.out_channels, 4, 4], TensorKind::Activation);
        let op = Op::Conv(p);
        g.nodes.push(Node { name: "conv".into(), source_op: "Conv".into(), op, inputs: vec![x, w], output: y });
        g.inputs.push(x);
        g.outputs.push(y);
        g
    }

    #[test]
    fn ungrouped_convolution_weights_are_transposed_with_slack() {
        let mut g = graph(conv(2, 3, 1));
        assert_eq!(pack_weights(&mut g), 1);
        let Op::Conv(p) = &g.nodes[0].op else { panic!("still a convolution") };
        assert_eq!(p.weights, ConvWeights::KMajor);
        let w = &g.tensors[g.nodes[0].inputs[1]];
        let TensorKind::Const(values) = &w.kind else { panic!("still a constant") };
        // OIHW row o is `4o..4o + 4` (kk = 2 input channels x 2 taps); k-major puts the three
        // output channels of each k side by side.
        let mut want = vec![0.0, 4.0, 8.0, 1.0, 5.0, 9.0, 2.0, 6.0, 10.0, 3.0, 7.0, 11.0];
        want.resize(12 + 13, 0.0);
        assert_eq!(values, &want);
        assert_eq!(w.name, "w.packed");
        assert_eq!(g.tensors.len(), 3, "the unpacked constant is dropped");
    }

    /// `y = W x` with a constant `W` (`m` x 2, values `0, 1, 2, ...`) read through `p`'s strides.
    fn matmul_graph(p: MatMul) -> Graph {
        let mut g = Graph::default();
        let w = g.add_tensor("w", vec![p.m, p.k], TensorKind::Const((0..p.m * p.k).map(|v| v as f32).collect()));
        let x = g.add_tensor("x", vec![p.k, p.n], TensorKind::Input(0));
        let y = g.add_tensor("y", vec![p.m, p.n], TensorKind::Activation);
        let op = Op::MatMul(p);
        g.nodes.push(Node { name: "mm".into(), source_op: "EinSum".into(), op, inputs: vec![w, x], output: y });
        g.inputs.push(x);
        g.outputs.push(y);
        g
    }

    #[test]
    fn constant_left_operand_of_a_matrix_product_becomes_column_major() {
        let mut g = matmul_graph(MatMul::row_major(3, 5, 2));
        assert_eq!(pack_weights(&mut g), 1);
        let Op::MatMul(p) = &g.nodes[0].op else { panic!("still a matrix product") };
        assert_eq!((p.a_row_stride, p.a_col_stride), (1, 3));
        let TensorKind::Const(values) = &g.tensors[g.nodes[0].inputs[0]].kind else { panic!("still a constant") };
        // Row i of W is `2i, 2i + 1`; column-major puts the three rows' values of each k together.
        let mut want = vec![0.0, 2.0, 4.0, 1.0, 3.0, 5.0];
        want.resize(6 + 13, 0.0);
        assert_eq!(values, &want);
        // Already transposed, batched or a single row: left alone.
        let transposed = MatMul { a_row_stride: 1, a_col_stride: 3, ..MatMul::row_major(3, 5, 2) };
        let batched = MatMul { batch: [2, 1, 1, 1], ..MatMul::row_major(3, 5, 2) };
        for p in [transposed, batched, MatMul::row_major(1, 5, 2)] {
            let mut g = matmul_graph(p);
            let before = g.clone();
            assert_eq!(pack_weights(&mut g), 0, "{p:?}");
            assert_eq!(g, before);
        }
    }

    #[test]
    fn grouped_and_single_channel_convolutions_keep_onnx_order() {
        for p in [conv(4, 4, 4), conv(4, 4, 2), conv(3, 1, 1)] {
            let mut g = graph(p);
            let before = g.clone();
            assert_eq!(pack_weights(&mut g), 0, "{p:?}");
            assert_eq!(g, before);
        }
    }
}
