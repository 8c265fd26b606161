//! Memory-aware scheduling: the execution order is part of the plan.
//!
//! ONNX fixes a topological order, not the best one: on a graph with branches, running a branch to
//! its end before starting the next (or the other way round) changes how many tensors are live at
//! once. [`memory_aware_order`] is a greedy list scheduler: among the nodes whose inputs are ready
//! it runs the one that adds the fewest live bytes (its output minus the inputs it reads last),
//! ties going to the earlier node of the original order, and views as soon as they are ready (they
//! cost nothing). The caller keeps the new order only if the real planned arena is smaller
//! ([`crate::compile`] compares the lower bounds of both orders), so this never makes a plan worse.

use crate::ir::{Graph, TensorId, TensorKind};

/// A topological order of `g.nodes` (indices) that greedily keeps the live bytes low. Each step
/// looks only at the nodes that are ready, so a chain costs a constant per node.
pub fn memory_aware_order(g: &Graph) -> Vec<usize> {
    let n = g.nodes.len();
    let producer = g.producers();
    // Readers still to run, per tensor; a view counts as a reader of what it views.
    let mut pending: Vec<usize> = vec![0; g.tensors.len()];
    // Per node, the inputs whose producer has not run; per tensor, the nodes reading it.
    let mut missing: Vec<usize> = vec![0; n];
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); g.tensors.len()];
    for (i, node) in g.nodes.iter().enumerate() {
        for &t in &node.inputs {
            pending[t] += 1;
            if producer[t].is_some() {
                missing[i] += 1;
                readers[t].push(i);
            }
        }
    }
    let mut is_output = vec![false; g.tensors.len()];
    g.outputs.iter().for_each(|&t| is_output[t] = true);
    let activation = |t: TensorId| matches!(g.tensors[t].kind, TensorKind::Activation);
    // Bytes a node's output adds (views add nothing: they share their input's bytes).
    let adds = |i: usize| if g.nodes[i].op.is_view() { 0 } else { g.tensors[g.nodes[i].output].bytes() };

    let mut ready: Vec<usize> = (0..n).filter(|&i| missing[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(at) = (0..ready.len()).min_by_key(|&r| {
        let i = ready[r];
        let node = &g.nodes[i];
        // Inputs whose last pending reader is this node stop being live (unless they are outputs).
        let mut freed = 0u64;
        for (k, &t) in node.inputs.iter().enumerate() {
            let repeats = node.inputs[..k].contains(&t);
            let last = pending[t] == node.inputs.iter().filter(|&&u| u == t).count();
            if !repeats && last && activation(t) && !is_output[t] && !node.op.is_view() {
                freed += g.tensors[t].bytes();
            }
        }
        let view_first = !node.op.is_view();
        (view_first, adds(i) as i128 - freed as i128, i)
    }) {
        let i = ready.swap_remove(at);
        for &t in &g.nodes[i].inputs {
            pending[t] -= 1;
        }
        for &r in &readers[g.nodes[i].output] {
            missing[r] -= 1;
            if missing[r] == 0 {
                ready.push(r);
            }
        }
        order.push(i);
    }
    assert_eq!(order.len(), n, "a graph in topological order always has a ready node");
    order
}

/// Puts `g.nodes` in `order` (a permutation of their indices).
pub fn reorder(g: &mut Graph, order: &[usize]) {
    let mut nodes: Vec<Option<crate::ir::Node>> = std::mem::take(&mut g.nodes).into_iter().map(Some).collect();
    g.nodes = order.iter().map(|&i| nodes[i].take().expect("order is a permutation")).collect();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Node, Op};
    use crate::ops::binary::{Binary, BinaryOp};
    use crate::ops::unary::Unary;
    use crate::tensor::DType;

    fn relu(name: &str, input: TensorId, output: TensorId) -> Node {
        Node::new(name, Op::Unary(Unary::Relu), vec![input], output)
    }

    /// x -> a1 -> a2 (small) and x -> b1 (big) -> b2 (small); out = a2 + b2. ONNX order runs a1, b1
    /// first, so the big b1 is live while a1 -> a2 runs; finishing the b branch first frees it.
    #[test]
    fn runs_a_branch_to_its_end_when_that_frees_memory() {
        let mut g = Graph::default();
        let x = g.add_tensor("x", vec![4], DType::F32, TensorKind::Input(0));
        let a1 = g.add_tensor("a1", vec![64], DType::F32, TensorKind::Activation);
        let b1 = g.add_tensor("b1", vec![1024], DType::F32, TensorKind::Activation);
        let a2 = g.add_tensor("a2", vec![64], DType::F32, TensorKind::Activation);
        let b2 = g.add_tensor("b2", vec![64], DType::F32, TensorKind::Activation);
        let out = g.add_tensor("out", vec![64], DType::F32, TensorKind::Activation);
        let s = crate::ir::strides_of(&[64]);
        g.nodes = vec![
            relu("a1", x, a1),
            relu("b1", x, b1),
            relu("a2", a1, a2),
            relu("b2", b1, b2),
            Node::new("add", Op::Binary(BinaryOp::new(Binary::Add, s.clone(), s)), vec![a2, b2], out),
        ];
        (g.inputs, g.outputs) = (vec![x], vec![out]);
        let order = memory_aware_order(&g);
        // a1 first (smallest), a2 (frees a1), then b1 -> b2 -> add: b1 never coexists with a1.
        assert_eq!(order, [0, 2, 1, 3, 4]);
        reorder(&mut g, &order);
        assert_eq!(g.nodes.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(), ["a1", "a2", "b1", "b2", "add"]);
    }
}
