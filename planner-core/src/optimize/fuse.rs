//! Activation fusion: `Conv -> Relu` becomes one `Conv` whose epilogue applies the Relu, and an
//! `f32` `Add -> Relu` (a residual network's sum) one `add_activated`.
//!
//! The kernels already apply [`Activation`] to every output value after the bias (the Add's to
//! each sum), on the same `f32` the separate node would have read back, so the fused result is
//! bit-identical. A node is fused only when the producer's output has exactly one reader (the
//! activation), is not a graph output, and the producer's current epilogue composes with the
//! activation (`None` composes with anything; two clamps compose into one when their ranges
//! overlap, e.g. `Max(x, 0)` then `Min(x, 6)` from an ONNX Clip, into ReLU6). The intermediate
//! tensor is then removed.

use sramfit_runtime_min::Activation;

use crate::ir::{DType, Graph, Op};
use crate::ops::binary::Binary;
use crate::ops::unary::Unary;

/// The epilogue equivalent to an elementwise node, if there is one.
fn activation_of(u: &Unary) -> Option<Activation> {
    match *u {
        Unary::Relu => Some(Activation::Relu),
        Unary::Clip { min, max } => Some(Activation::Clip { min, max }),
        Unary::LeakyRelu { alpha } => Some(Activation::LeakyRelu { alpha }),
        Unary::HardSwish => Some(Activation::HardSwish),
        Unary::Sigmoid => Some(Activation::Sigmoid),
        Unary::Tanh => Some(Activation::Tanh),
        _ => None,
    }
}

/// `then` applied after `first`, as one epilogue, if it exists.
fn compose(first: Activation, then: Activation) -> Option<Activation> {
    let clamp = |a: Activation| match a {
        Activation::Relu => Some((0.0, f32::INFINITY)),
        Activation::Clip { min, max } => Some((min, max)),
        _ => None,
    };
    match (first, clamp(first), clamp(then)) {
        (Activation::None, _, _) => Some(then),
        // clamp(clamp(v, a1, b1), a2, b2) == clamp(v, max(a1, a2), min(b1, b2)) when the ranges
        // overlap (otherwise the result would be a constant; not worth a special case).
        (_, Some((a1, b1)), Some((a2, b2))) => {
            let (min, max) = (a1.max(a2), b1.min(b2));
            (min <= max).then_some(if min == 0.0 && max == f32::INFINITY {
                Activation::Relu
            } else {
                Activation::Clip { min, max }
            })
        }
        _ => None,
    }
}

/// The epilogue of a kernel that has one (an Add's only on `f32`, which the caller checks).
fn epilogue(op: &mut Op) -> Option<&mut Activation> {
    match op {
        Op::Conv(p) => Some(&mut p.act),
        Op::MatMul(p) => Some(&mut p.act),
        Op::Binary(b) if b.kind == Binary::Add => Some(&mut b.act),
        _ => None,
    }
}

/// Fuses every eligible activation; returns how many nodes were removed. Linear in the nodes: the
/// readers of every tensor are counted once, and fused nodes are dropped in one pass at the end.
pub fn fuse_activations(g: &mut Graph) -> usize {
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); g.tensors.len()];
    for (j, n) in g.nodes.iter().enumerate() {
        for &t in &n.inputs {
            if readers[t].last() != Some(&j) {
                readers[t].push(j);
            }
        }
    }
    let mut is_output = vec![false; g.tensors.len()];
    g.outputs.iter().for_each(|&t| is_output[t] = true);
    let mut removed = vec![false; g.nodes.len()];
    let mut fused = 0;
    for i in 0..g.nodes.len() {
        // The new output may feed another activation (Clip as Max + Min): keep fusing into node i.
        while let Some((j, act)) = fusable_reader(g, i, &readers, &is_output) {
            let out = g.nodes[j].output;
            *epilogue(&mut g.nodes[i].op).expect("checked by fusable_reader") = act;
            g.nodes[i].output = out;
            removed[j] = true;
            fused += 1;
        }
    }
    super::drop_nodes(g, &removed);
    fused
}

/// The activation node that can be fused into node `i`, with the composed epilogue.
fn fusable_reader(g: &Graph, i: usize, readers: &[Vec<usize>], is_output: &[bool]) -> Option<(usize, Activation)> {
    let mut op = g.nodes[i].op.clone();
    let current = *epilogue(&mut op)?;
    let out = g.nodes[i].output;
    if matches!(op, Op::Binary(_)) && g.tensors[out].dtype != DType::F32 {
        return None;
    }
    let [j] = readers[out][..] else { return None };
    let reader = &g.nodes[j];
    if is_output[out] || reader.inputs != [out] {
        return None;
    }
    let Op::Unary(u) = &reader.op else { return None };
    compose(current, activation_of(u)?).map(|act| (j, act))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Node, Tensor, TensorKind};
    use crate::tensor::{DType, Data};
    use sramfit_runtime_min::MatMul;

    fn matmul() -> Op {
        Op::MatMul(MatMul::row_major(1, 4, 4))
    }

    /// x -> matmul -> h -> (activations...) -> y, with `extra_reader` also reading h.
    fn graph(acts: &[Unary], extra_reader: bool) -> Graph {
        let mut g = Graph::default();
        let x = g.add_tensor("x", vec![1, 4], DType::F32, TensorKind::Input(0));
        let w = g.add_const("w", vec![4, 4], Data::F32(vec![0.5; 16]));
        let h = g.add_tensor("h", vec![1, 4], DType::F32, TensorKind::Activation);
        let node = Node::new;
        g.nodes.push(node("mm", matmul(), vec![x, w], h));
        let mut prev = h;
        for (i, a) in acts.iter().enumerate() {
            let t = g.add_tensor(format!("a{i}"), vec![1, 4], DType::F32, TensorKind::Activation);
            g.nodes.push(node(&format!("act{i}"), Op::Unary(*a), vec![prev], t));
            prev = t;
        }
        g.outputs.push(prev);
        if extra_reader {
            let t = g.add_tensor("other", vec![1, 4], DType::F32, TensorKind::Activation);
            g.nodes.push(node("other", Op::Unary(Unary::Neg), vec![h], t));
            g.outputs.push(t);
        }
        g.inputs.push(x);
        g
    }

    fn act(g: &Graph) -> Activation {
        match &g.nodes[0].op {
            Op::MatMul(p) => p.act,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn relu_after_matmul_becomes_its_epilogue() {
        let mut g = graph(&[Unary::Relu], false);
        assert_eq!(fuse_activations(&mut g), 1);
        assert_eq!(g.nodes.len(), 1);
        assert_eq!(act(&g), Activation::Relu);
        assert_eq!(g.tensors.iter().map(|t: &Tensor| t.name.as_str()).collect::<Vec<_>>(), ["x", "w", "a0"]);
        assert_eq!((g.nodes[0].output, g.outputs[0]), (2, 2));
    }

    #[test]
    fn max_then_min_compose_into_relu6() {
        let mut g = graph(&[Unary::Relu, Unary::Clip { min: f32::NEG_INFINITY, max: 6.0 }], false);
        assert_eq!(fuse_activations(&mut g), 2);
        assert_eq!(act(&g), Activation::Clip { min: 0.0, max: 6.0 });
    }

    #[test]
    fn an_activation_that_does_not_compose_stays() {
        let mut g = graph(&[Unary::Sigmoid, Unary::Relu], false);
        assert_eq!(fuse_activations(&mut g), 1);
        assert_eq!(act(&g), Activation::Sigmoid);
        assert_eq!(g.nodes.len(), 2);
        // Disjoint clamps would make a constant: not fused.
        let mut g = graph(&[Unary::Clip { min: 0.0, max: 1.0 }, Unary::Clip { min: 2.0, max: 3.0 }], false);
        assert_eq!(fuse_activations(&mut g), 1);
        assert_eq!(g.nodes.len(), 2);
    }

    /// x + x -> s -> Relu -> y, of `dtype`.
    fn sum_then_relu(dtype: DType) -> Graph {
        use crate::ops::binary::BinaryOp;
        let mut g = Graph::default();
        let [x, s, y] = ["x", "s", "y"].map(|n| g.add_tensor(n, vec![2, 3], dtype, TensorKind::Activation));
        let add = BinaryOp::new(Binary::Add, vec![3, 1], vec![3, 1]);
        g.nodes.push(Node::new("add", Op::Binary(add), vec![x, x], s));
        g.nodes.push(Node::new("relu", Op::Unary(Unary::Relu), vec![s], y));
        (g.inputs, g.outputs) = (vec![x], vec![y]);
        g
    }

    #[test]
    fn relu_after_an_f32_add_becomes_its_activation() {
        let mut g = sum_then_relu(DType::F32);
        assert_eq!(fuse_activations(&mut g), 1);
        let [n] = &g.nodes[..] else { panic!("{} steps", g.nodes.len()) };
        let Op::Binary(b) = &n.op else { panic!("{:?}", n.op) };
        assert_eq!((b.kind, b.act, g.tensors[n.output].name.as_str()), (Binary::Add, Activation::Relu, "y"));
        // Integer sums keep their Relu step (the activated kernel is `f32` only).
        let mut g = sum_then_relu(DType::I32);
        assert_eq!(fuse_activations(&mut g), 0);
    }

    #[test]
    fn a_tensor_with_another_reader_or_a_graph_output_is_not_fused() {
        let mut g = graph(&[Unary::Relu], true);
        assert_eq!(fuse_activations(&mut g), 0);
        let mut g = graph(&[Unary::Relu], false);
        g.outputs.push(2);
        assert_eq!(fuse_activations(&mut g), 0, "h is also a graph output");
    }
}
