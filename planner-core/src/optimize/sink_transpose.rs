//! Transposes moved and cancelled: a copy that only permutes its input's axes is moved below the
//! elementwise step that reads it (a unary function, or a binary one whose other operand is a
//! constant, whose strides are permuted instead), until it meets another permuting copy; a pair
//! that composes to the identity becomes a view, any other pair one copy.
//!
//! Layout changes come in such pairs where the importer computes a channels-last window op with
//! the NCHW kernels (a transpose in, a transpose out: [`crate::ops::lowering::Lowered::window`])
//! and the next one reads the result: between two convolutions of an NHWC graph only a fused
//! activation or a per-channel scale separates them. Moving a transpose changes no value: the
//! elementwise step computes the same function of the same elements, in another order.
//!
//! Each pass is linear (producers and readers computed once); passes repeat while a transpose
//! moved, and every move brings one transpose a step further down its chain, so the passes are as
//! many as the longest chain of elementwise steps a transpose crosses.

use crate::ir::{Graph, Node, Op, TensorId, TensorKind};
use crate::ops::binary::BinaryOp;
use crate::ops::copy::{self, Copies};
use crate::ops::view::View;
use crate::tensor::strides_of;

/// The permutation a copy applies, if it is one whole-tensor transpose of its input: axis `i` of
/// the output is axis `perm[i]` of the input.
fn permutation(g: &Graph, n: &Node) -> Option<Vec<usize>> {
    let Op::Copy(Copies(copies)) = &n.op else { return None };
    let [c] = &copies[..] else { return None };
    let (input, output) = (&g.tensors[n.inputs[0]].shape, &g.tensors[n.output].shape);
    if c.input != 0 || c.src_offset != 0 || c.dst_offset != 0 || c.dst_strides != copy::dense(output) {
        return None;
    }
    if input.len() != output.len() || c.shape != *output {
        return None;
    }
    let strides = strides_of(input);
    let mut used = vec![false; input.len()];
    let mut perm = Vec::with_capacity(output.len());
    for (i, &extent) in output.iter().enumerate() {
        // An axis of extent 1 may carry any stride: match it to an unused input axis of extent 1.
        let j = (0..input.len())
            .find(|&j| !used[j] && input[j] == extent && (extent == 1 || c.src_strides[i] == strides[j] as isize))?;
        used[j] = true;
        perm.push(j);
    }
    Some(perm)
}

/// Moves and cancels transposes until none moves; returns how many were removed.
pub fn sink_transposes(g: &mut Graph) -> usize {
    let (mut removed, mut changed) = (0, false);
    loop {
        let (moved, cancelled) = pass(g);
        removed += cancelled;
        if moved + cancelled == 0 {
            break;
        }
        changed = true;
    }
    if changed {
        // A moved transpose leaves its old output unread, a cancelled one its own.
        super::remove_unused_tensors(g);
    }
    removed
}

/// One pass over the graph: every transpose whose only reader is elementwise or another transpose
/// moves one step or cancels; returns `(moved, cancelled)`.
fn pass(g: &mut Graph) -> (usize, usize) {
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); g.tensors.len()];
    for (j, n) in g.nodes.iter().enumerate() {
        for &t in &n.inputs {
            readers[t].push(j);
        }
    }
    let is_output = |g: &Graph, t: TensorId| g.outputs.contains(&t) || g.inputs.contains(&t);
    let mut gone = vec![false; g.nodes.len()];
    let mut after: Vec<Option<Node>> = vec![None; g.nodes.len()];
    let (mut moved, mut cancelled) = (0, 0);
    for i in 0..g.nodes.len() {
        if gone[i] {
            continue;
        }
        let Some(perm) = permutation(g, &g.nodes[i]) else { continue };
        let (x, t) = (g.nodes[i].inputs[0], g.nodes[i].output);
        let Some(&[r]) = readers.get(t).map(Vec::as_slice) else { continue };
        if is_output(g, t) || gone[r] || after[r].is_some() || r <= i {
            continue;
        }
        if let Some(second) = permutation(g, &g.nodes[r]) {
            // Axis k of the second's output is axis perm[second[k]] of x.
            let composed: Vec<usize> = second.iter().map(|&k| perm[k]).collect();
            let out = g.nodes[r].output;
            g.nodes[r].op = match composed.iter().enumerate().all(|(k, &p)| k == p) {
                true => Op::View(View),
                false => Op::Copy(copy::transpose(&composed, &g.tensors[x].shape, &g.tensors[out].shape)),
            };
            g.nodes[r].inputs = vec![x];
            gone[i] = true;
            cancelled += 1;
            continue;
        }
        let Some(op) = moved_below(g, &g.nodes[r], t, &perm) else { continue };
        // The reader now computes in x's layout into a new tensor, which the transpose then permutes.
        let y = g.nodes[r].output;
        let staged = format!("{}.unpermuted", g.tensors[y].name);
        let (shape, dtype) = (g.tensors[x].shape.clone(), g.tensors[y].dtype);
        let u = g.add_tensor(staged, shape, dtype, TensorKind::Activation);
        let reader = &mut g.nodes[r];
        reader.op = op;
        reader.inputs.iter_mut().filter(|v| **v == t).for_each(|v| *v = x);
        reader.output = u;
        let transpose = Node { inputs: vec![u], output: y, ..g.nodes[i].clone() };
        gone[i] = true;
        after[r] = Some(transpose);
        moved += 1;
    }
    let mut nodes = Vec::with_capacity(g.nodes.len());
    for (k, n) in std::mem::take(&mut g.nodes).into_iter().enumerate() {
        if !gone[k] {
            nodes.push(n);
        }
        if let Some(t) = after[k].take() {
            nodes.push(t);
        }
    }
    g.nodes = nodes;
    (moved, cancelled)
}

/// The op of elementwise node `r` computed on the transpose's input instead of its output `t`
/// (axis `i` of `t` is axis `perm[i]` of the input), if `r` is elementwise over `t`'s whole shape.
fn moved_below(g: &Graph, r: &Node, t: TensorId, perm: &[usize]) -> Option<Op> {
    let shape = &g.tensors[t].shape;
    if g.tensors[r.output].shape != *shape || r.inputs.iter().filter(|&&v| v == t).count() != 1 {
        return None;
    }
    match &r.op {
        Op::Unary(f) => Some(Op::Unary(*f)),
        Op::Binary(b) => {
            let k = r.inputs.iter().position(|&v| v == t)?;
            let other = r.inputs[1 - k];
            if !matches!(g.tensors[other].kind, TensorKind::Const(_)) {
                return None;
            }
            // Strides over the output's axes, moved to the input's axes: axis i is axis perm[i].
            let permute = |s: &[usize]| {
                let mut out = vec![0; s.len()];
                perm.iter().zip(s).for_each(|(&p, &v)| out[p] = v);
                out
            };
            // The transposed operand must be read whole, at the output's own index (axes of extent
            // 1 carry any stride: their index is always 0).
            let dense = strides_of(shape);
            let strides = if k == 0 { &b.a_strides } else { &b.b_strides };
            if shape.iter().zip(strides.iter().zip(&dense)).any(|(&e, (s, d))| e > 1 && s != d) {
                return None;
            }
            let (a, b_) = (permute(&b.a_strides), permute(&b.b_strides));
            let input_dense = strides_of(&permute_shape(shape, perm));
            let (a_strides, b_strides) = if k == 0 { (input_dense, b_) } else { (a, input_dense) };
            Some(Op::Binary(BinaryOp { kind: b.kind, a_strides, b_strides, act: b.act }))
        }
        _ => None,
    }
}

/// The transpose's input shape from its output shape `shape` (axis `i` is input axis `perm[i]`).
fn permute_shape(shape: &[usize], perm: &[usize]) -> Vec<usize> {
    let mut out = vec![0; shape.len()];
    perm.iter().zip(shape).for_each(|(&p, &v)| out[p] = v);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::binary::Binary;
    use crate::ops::unary::Unary;
    use crate::tensor::{DType, Data};

    /// x [1, 2, 3, 4] NCHW -> to NHWC -> relu -> * per-channel constant -> back to NCHW -> y.
    fn nhwc_sandwich() -> Graph {
        let mut g = Graph::default();
        let (nchw, nhwc) = (vec![1, 2, 3, 4], vec![1, 3, 4, 2]);
        let x = g.add_tensor("x", nchw.clone(), DType::F32, TensorKind::Input(0));
        let a = g.add_tensor("a", nhwc.clone(), DType::F32, TensorKind::Activation);
        let r = g.add_tensor("r", nhwc.clone(), DType::F32, TensorKind::Activation);
        let k = g.add_const("k", vec![2], Data::F32(vec![2.0, 3.0]));
        let m = g.add_tensor("m", nhwc.clone(), DType::F32, TensorKind::Activation);
        let y = g.add_tensor("y", nchw.clone(), DType::F32, TensorKind::Activation);
        let mul = BinaryOp::new(Binary::Mul, vec![0, 8, 2, 1], vec![0, 0, 0, 1]);
        g.nodes.push(Node::new("to_nhwc", Op::Copy(copy::transpose(&[0, 2, 3, 1], &nchw, &nhwc)), vec![x], a));
        g.nodes.push(Node::new("relu", Op::Unary(Unary::Relu), vec![a], r));
        g.nodes.push(Node::new("scale", Op::Binary(mul), vec![r, k], m));
        g.nodes.push(Node::new("to_nchw", Op::Copy(copy::transpose(&[0, 3, 1, 2], &nhwc, &nchw)), vec![m], y));
        (g.inputs, g.outputs) = (vec![x], vec![y]);
        g
    }

    #[test]
    fn a_transpose_moves_below_elementwise_steps_and_cancels_its_inverse() {
        let mut g = nhwc_sandwich();
        assert_eq!(sink_transposes(&mut g), 1);
        let ops: Vec<&str> = g.nodes.iter().map(|n| n.op.kind().kernel_name()).collect();
        assert_eq!(ops, ["unary", "binary", "view"]);
        // Relu and the scale now run in NCHW; the constant follows the channel axis (axis 1).
        assert_eq!(g.tensors[g.nodes[0].inputs[0]].name, "x");
        let Op::Binary(b) = &g.nodes[1].op else { panic!("the scale") };
        assert_eq!((b.a_strides.clone(), b.b_strides.clone()), (vec![24, 12, 4, 1], vec![0, 1, 0, 0]));
        assert_eq!(g.nodes[2].output, g.outputs[0]);
    }

    #[test]
    fn a_transpose_read_twice_stays() {
        let mut g = nhwc_sandwich();
        let extra = g.add_tensor("extra", vec![1, 3, 4, 2], DType::F32, TensorKind::Activation);
        let a = g.nodes[0].output;
        g.nodes.push(Node::new("neg", Op::Unary(Unary::Neg), vec![a], extra));
        g.outputs.push(extra);
        assert_eq!(sink_transposes(&mut g), 0);
        assert_eq!(g.nodes.len(), 5);
    }
}
