//! Lifetimes of the arena-resident tensors over the schedule, as a planning [`Problem`].
//!
//! Convention (seed 000 section 4): a tensor is live from the step that writes it through the step
//! that reads it last, inclusive, so a node's inputs and its output always conflict. A view extends
//! the life of the tensor it views to its own last use. A kernel's scratch buffer lives for its one
//! step. Graph inputs and outputs live in the caller's buffers and constants in read-only memory, so
//! none of them is an arena buffer.

use crate::boundary::root_of;
use crate::ir::{Graph, Op, TensorId, TensorKind};
use crate::problem::{Buffer, Lifetime, Problem};

/// Alignment of every arena buffer, in bytes (enough for 128-bit SIMD loads).
pub const ARENA_ALIGN: u64 = 16;

/// Where a tensor's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    /// The caller's input buffer `i`.
    Input(usize),
    /// The caller's output buffer `i`.
    Output(usize),
    /// Read-only constant data of tensor `t` (the root of the view chain).
    Const(TensorId),
    /// Arena buffer `b` (an index into [`Liveness::problem`]).
    Arena(usize),
}

/// What an arena buffer holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferOwner {
    /// A tensor (the root of its views).
    Tensor(TensorId),
    /// The scratch space of the node at this schedule step.
    Scratch(usize),
}

/// The result of liveness analysis: where every tensor lives, and the arena buffers to plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Liveness {
    /// Storage of every tensor, indexed by [`TensorId`]; views share their root's storage.
    pub storage: Vec<Storage>,
    /// The arena buffers to place, with their lifetimes in schedule steps (node indices).
    pub problem: Problem,
    /// What each arena buffer holds, indexed like `problem.buffers`.
    pub owners: Vec<BufferOwner>,
    /// The scratch buffer of each node, if it needs one.
    pub scratch: Vec<Option<usize>>,
}

/// Computes storage and lifetimes. Expects [`crate::boundary::bind_outputs`] to have run.
pub fn analyze(g: &Graph) -> Liveness {
    let roots: Vec<TensorId> = (0..g.tensors.len()).map(|t| root_of(g, t)).collect();
    let producer_step: Vec<Option<usize>> = {
        let mut p = vec![None; g.tensors.len()];
        for (i, n) in g.nodes.iter().enumerate() {
            p[n.output] = Some(i);
        }
        p
    };
    // Last step reading each root (through any view).
    let mut last_use: Vec<Option<usize>> = vec![None; g.tensors.len()];
    for (i, n) in g.nodes.iter().enumerate() {
        if n.op == Op::View {
            continue;
        }
        for &t in &n.inputs {
            let r = roots[t];
            last_use[r] = Some(last_use[r].map_or(i, |l: usize| l.max(i)));
        }
    }
    let output_of = |r: TensorId| g.outputs.iter().position(|&o| roots[o] == r);

    let mut storage = Vec::with_capacity(g.tensors.len());
    let mut problem = Problem::default();
    let mut owners = Vec::new();
    let mut root_buffer: Vec<Option<usize>> = vec![None; g.tensors.len()];
    for (t, &r) in roots.iter().enumerate() {
        if r != t {
            storage.push(Storage::Arena(usize::MAX)); // patched below, once the root is known
            continue;
        }
        let s = match (&g.tensors[t].kind, output_of(t)) {
            (TensorKind::Input(i), _) => Storage::Input(*i),
            (TensorKind::Const(_), _) => Storage::Const(t),
            (TensorKind::Activation, Some(j)) => Storage::Output(j),
            (TensorKind::Activation, None) => {
                let first = producer_step[t].unwrap_or(0) as u32;
                let last = last_use[t].map_or(first, |l| (l as u32).max(first));
                problem.buffers.push(Buffer {
                    name: g.tensors[t].name.clone(),
                    size: g.tensors[t].bytes(),
                    align: ARENA_ALIGN,
                    lifetime: Lifetime::new(first, last),
                });
                owners.push(BufferOwner::Tensor(t));
                root_buffer[t] = Some(problem.buffers.len() - 1);
                Storage::Arena(problem.buffers.len() - 1)
            }
        };
        storage.push(s);
    }
    for (t, &r) in roots.iter().enumerate() {
        if r != t {
            storage[t] = storage[r];
        }
    }
    let mut scratch = vec![None; g.nodes.len()];
    for (i, n) in g.nodes.iter().enumerate() {
        let elems = n.op.scratch_elems();
        if elems > 0 {
            problem.buffers.push(Buffer {
                name: format!("{}.scratch", n.name),
                size: elems as u64 * 4,
                align: ARENA_ALIGN,
                lifetime: Lifetime::new(i as u32, i as u32),
            });
            owners.push(BufferOwner::Scratch(i));
            scratch[i] = Some(problem.buffers.len() - 1);
        }
    }
    Liveness { storage, problem, owners, scratch }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary::bind_outputs;
    use crate::ir::{Node, Unary};

    /// input -> relu a -> view b -> relu c -> relu d (output): `a` is read through the view at step 2.
    fn chain_with_view() -> Graph {
        let mut g = Graph::default();
        let x = g.add_tensor("x", vec![2, 8], TensorKind::Input(0));
        let a = g.add_tensor("a", vec![2, 8], TensorKind::Activation);
        let b = g.add_tensor("b", vec![16], TensorKind::Activation);
        let c = g.add_tensor("c", vec![16], TensorKind::Activation);
        let d = g.add_tensor("d", vec![16], TensorKind::Activation);
        let node = |name: &str, op: Op, input: TensorId, output: TensorId| Node {
            name: name.into(),
            source_op: name.into(),
            op,
            inputs: vec![input],
            output,
        };
        g.nodes = vec![
            node("relu_a", Op::Unary(Unary::Relu), x, a),
            node("view_b", Op::View, a, b),
            node("relu_c", Op::Unary(Unary::Relu), b, c),
            node("relu_d", Op::Unary(Unary::Relu), c, d),
        ];
        g.inputs = vec![x];
        g.outputs = vec![d];
        g
    }

    #[test]
    fn views_share_their_roots_buffer_and_extend_its_life() {
        let mut g = chain_with_view();
        bind_outputs(&mut g);
        let l = analyze(&g);
        assert_eq!(l.storage[0], Storage::Input(0));
        assert_eq!(l.storage[1], l.storage[2], "the view shares its root's bytes");
        assert_eq!(l.storage[4], Storage::Output(0), "the last node writes the caller's buffer");
        // Two arena buffers: `a` (written at step 0, read through the view at step 2) and `c`.
        assert_eq!(l.problem.buffers.len(), 2);
        assert_eq!(l.problem.buffers[0].lifetime, Lifetime::new(0, 2));
        assert_eq!(l.problem.buffers[1].lifetime, Lifetime::new(2, 3));
        assert!(l.problem.buffers.iter().all(|b| b.size == 64 && b.align == ARENA_ALIGN));
    }

    #[test]
    fn an_output_that_is_an_input_gets_a_copy() {
        let mut g = Graph::default();
        let x = g.add_tensor("x", vec![4], TensorKind::Input(0));
        g.inputs = vec![x];
        g.outputs = vec![x, x];
        bind_outputs(&mut g);
        assert_eq!(g.nodes.len(), 2, "each output gets its own copy");
        let l = analyze(&g);
        assert_eq!(l.storage[g.outputs[0]], Storage::Output(0));
        assert_eq!(l.storage[g.outputs[1]], Storage::Output(1));
        assert!(l.problem.buffers.is_empty());
    }
}
