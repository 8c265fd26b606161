//! Lifetimes of the arena-resident tensors over the schedule, as a planning [`Problem`].
//!
//! Convention (seed 000 section 4): a tensor is live from the step that writes it through the step
//! that reads it last, inclusive, so a node's inputs and its output always conflict. A view extends
//! the life of the tensor it views to its own last use. A kernel's scratch buffer lives for its one
//! step. Constants live in read-only memory. Graph inputs and outputs live in the caller's buffers
//! ([`Io::Caller`]), or in the arena ([`Io::Arena`]): an input from the start of the run through its
//! last reader, an output from the step that writes it through the end of the run.
//!
//! In-place execution (seed 000 section 6.1), when enabled: an elementwise step whose kernel can
//! overwrite an input ([`crate::ir::Node::in_place_inputs`]) writes its output into that input's
//! buffer when the three conditions hold — same size (the kernel fact), this step is the input's
//! last reader (through any view), and the input is an arena tensor (not the caller's input or
//! output, not a constant) that no other input of the step shares. The output then joins the
//! input's buffer, whose life extends to the output's last use; [`Liveness::in_place`] records
//! the decision and [`crate::verify::verify_in_place`] checks it independently.

use crate::ir::{Graph, Io, Op, TensorId, TensorKind};
use crate::ops::copy::Copies;
use crate::ops::Scratch;
use crate::optimize::Optimizations;
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
    /// For each step, the input (index into the node's inputs) whose bytes its output overwrites.
    pub in_place: Vec<Option<usize>>,
    /// Byte offset of each tensor inside its arena buffer: 0, except for the inputs of an elided
    /// concatenation, which live in their slice of its output.
    pub offset_in_buffer: Vec<u64>,
    /// For each step, whether it is an elided concatenation: its inputs were written straight into
    /// their slices of its output, so it runs no code.
    pub elided: Vec<bool>,
}

/// Computes storage and lifetimes, with in-place execution where it is safe and scratch fitted
/// under the activation peak when the [`Optimizations`] say so. Expects
/// [`crate::boundary::bind_outputs`] to have run.
pub fn analyze(g: &Graph, o: &Optimizations) -> Liveness {
    let view_roots = g.view_roots();
    let producer_step: Vec<Option<usize>> = {
        let mut p = vec![None; g.tensors.len()];
        for (i, n) in g.nodes.iter().enumerate() {
            p[n.output] = Some(i);
        }
        p
    };
    // Last step reading each view root (through any view).
    let mut last_use: Vec<Option<usize>> = vec![None; g.tensors.len()];
    for (i, n) in g.nodes.iter().enumerate() {
        if n.op.is_view() {
            continue;
        }
        for &t in &n.inputs {
            let r = view_roots[t];
            last_use[r] = Some(last_use[r].map_or(i, |l: usize| l.max(i)));
        }
    }
    let output_of = |r: TensorId| g.outputs.iter().position(|&o| view_roots[o] == r);
    let in_arena = |r: TensorId| matches!(g.tensors[r].kind, TensorKind::Activation) && output_of(r).is_none();
    // In-place steps may also overwrite a graph input, and write a graph output, when those live in
    // the arena (the caller's own buffers are never overwritten or shared).
    let may_share = |r: TensorId| match g.tensors[r].kind {
        TensorKind::Activation => g.io == Io::Arena || output_of(r).is_none(),
        TensorKind::Input(_) => g.io == Io::Arena,
        TensorKind::Const(_) => false,
    };

    let mut roots = view_roots.clone();
    // Concat elision: the inputs of an eligible concatenation live in their slices of its output,
    // whose buffer is then born with the first of them.
    let mut offset_in_buffer = vec![0u64; g.tensors.len()];
    let mut elided = vec![false; g.nodes.len()];
    let mut born = producer_step.clone();
    let mut is_part = vec![false; g.tensors.len()];
    if o.elide_concat {
        for (c, n) in g.nodes.iter().enumerate() {
            let Some(parts) = elidable_concat(g, c, &view_roots, &last_use, &in_arena) else { continue };
            for &(t, offset) in &parts {
                (roots[t], offset_in_buffer[t], is_part[t]) = (n.output, offset, true);
            }
            elided[c] = true;
            born[n.output] = parts.iter().filter_map(|&(t, _)| producer_step[t]).min();
        }
    }

    // In-place decisions, in schedule order: the output's view root joins the class of the input it
    // overwrites. `roots[t]` is then the first tensor of t's chain (the buffer's owner).
    let mut steps_in_place = vec![None; g.nodes.len()];
    if o.in_place {
        for (i, n) in g.nodes.iter().enumerate() {
            let out = view_roots[n.output];
            let chosen = n.in_place_inputs(&g.tensors).into_iter().find(|&k| {
                let r = view_roots[n.inputs[k]];
                may_share(r)
                    && may_share(out)
                    && !is_part[out]
                    && last_use[r] == Some(i)
                    && n.inputs.iter().enumerate().all(|(j, &t)| j == k || roots[view_roots[t]] != roots[r])
            });
            if let Some(k) = chosen {
                steps_in_place[i] = Some(k);
                let owner = roots[view_roots[n.inputs[k]]];
                for t in 0..g.tensors.len() {
                    if view_roots[t] == out {
                        roots[t] = owner;
                    }
                }
                last_use[owner] = last_use[out].max(last_use[owner]);
            }
        }
    }

    let mut holds_output = vec![false; g.tensors.len()];
    for &o in &g.outputs {
        holds_output[roots[view_roots[o]]] = true;
    }
    let mut storage = Vec::with_capacity(g.tensors.len());
    let mut problem = Problem::default();
    let mut owners = Vec::new();
    let mut root_buffer: Vec<Option<usize>> = vec![None; g.tensors.len()];
    for (t, &r) in roots.iter().enumerate() {
        if r != t {
            storage.push(Storage::Arena(usize::MAX)); // patched below, once the root is known
            continue;
        }
        // Ok: an arena buffer live over these steps (first, last); Err: the bytes are elsewhere.
        let span = match (&g.tensors[t].kind, output_of(t), g.io) {
            (TensorKind::Input(i), _, Io::Caller) => Err(Storage::Input(*i)),
            (TensorKind::Const(_), _, _) => Err(Storage::Const(t)),
            (TensorKind::Activation, Some(j), Io::Caller) => Err(Storage::Output(j)),
            // In the arena, an input is written by the caller before step 0 and an output is read
            // by the caller after the last step.
            (kind, _, _) => {
                let first = if matches!(kind, TensorKind::Input(_)) { 0 } else { born[t].unwrap_or(0) as u32 };
                let last = match holds_output[t] {
                    true => g.nodes.len().saturating_sub(1) as u32,
                    false => last_use[t].map_or(first, |l| l as u32),
                };
                Ok((first, last.max(first)))
            }
        };
        let s = match span {
            Err(s) => s,
            Ok((first, last)) => {
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
    let live_bytes = live_bytes_per_step(&problem, g.nodes.len());
    let peak = live_bytes.iter().copied().max().unwrap_or(0);
    let mut scratch = vec![None; g.nodes.len()];
    for (i, n) in g.nodes.iter().enumerate() {
        let need = n.op.kind().scratch();
        let elems = match o.fit_scratch {
            true => fitted_scratch(&need, peak.saturating_sub(live_bytes[i])),
            false => need.preferred,
        };
        if elems > 0 {
            problem.buffers.push(Buffer {
                name: format!("{}.scratch", n.name),
                size: (elems * need.dtype.size()) as u64,
                align: ARENA_ALIGN,
                lifetime: Lifetime::new(i as u32, i as u32),
            });
            owners.push(BufferOwner::Scratch(i));
            scratch[i] = Some(problem.buffers.len() - 1);
        }
    }
    Liveness { storage, problem, owners, scratch, in_place: steps_in_place, offset_in_buffer, elided }
}

/// The inputs of node `c` with their byte offsets in its output, if `c` is a concatenation that can
/// be elided: a copy of whole, contiguous inputs into disjoint contiguous slices of an arena output
/// (a channel concat with batch 1 in NCHW, or one on the outermost axis), where every input is an
/// arena tensor written by an earlier step for this concat alone (no other reader, no view).
fn elidable_concat(
    g: &Graph,
    c: usize,
    view_roots: &[TensorId],
    last_use: &[Option<usize>],
    in_arena: &dyn Fn(TensorId) -> bool,
) -> Option<Vec<(TensorId, u64)>> {
    let n = &g.nodes[c];
    let Op::Copy(Copies(copies)) = &n.op else { return None };
    if !in_arena(n.output) || copies.len() != n.inputs.len() {
        return None;
    }
    let mut parts = Vec::with_capacity(copies.len());
    for (k, copy) in copies.iter().enumerate() {
        let t = *n.inputs.get(copy.input)?;
        let producer = g.producer(t)?;
        let only_reader = last_use[t] == Some(c)
            && g.nodes.iter().enumerate().all(|(i, m)| i == c || !m.inputs.iter().any(|&u| view_roots[u] == t));
        let whole = copy.src_offset == 0 && copy.shape.iter().product::<usize>() == g.tensors[t].len();
        if copy.input != k
            || view_roots[t] != t
            || !in_arena(t)
            || g.nodes[producer].op.is_view()
            || producer >= c
            || !only_reader
            || n.inputs.iter().filter(|&&u| u == t).count() != 1
            || !whole
            || !copy.is_contiguous_block()
        {
            return None;
        }
        parts.push((t, (copy.dst_offset * g.tensors[t].dtype.size()) as u64));
    }
    Some(parts)
}

/// Smallest im2col tile worth having, in output positions: below it the direct kernel is as fast.
const MIN_SCRATCH_TILE: usize = 8;

/// The scratch elements to give a kernel needing `need` when `slack` arena bytes are free at its
/// step below the activation peak: its preferred amount if that fits, else the largest smaller tile
/// that fits, else none (the kernel's variant without working memory). Never raises the peak unless
/// the preferred amount already fits.
fn fitted_scratch(need: &Scratch, slack: u64) -> usize {
    let (preferred, step, size) = (need.preferred, need.step, need.dtype.size() as u64);
    if (preferred as u64 * size).next_multiple_of(ARENA_ALIGN) <= slack || step == 0 {
        return preferred;
    }
    let tile = (slack / size / step as u64) as usize;
    if tile >= MIN_SCRATCH_TILE {
        tile * step
    } else {
        0
    }
}

/// Arena bytes of the buffers live at each step (sizes rounded to their alignment).
fn live_bytes_per_step(p: &Problem, steps: usize) -> Vec<u64> {
    let mut live = vec![0; steps];
    for b in &p.buffers {
        for s in b.lifetime.spans() {
            for step in s.first..=s.last {
                if let Some(l) = live.get_mut(step as usize) {
                    *l += b.size.next_multiple_of(b.align);
                }
            }
        }
    }
    live
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary::bind_outputs;
    use crate::ir::Node;
    use crate::ops::binary::{Binary, BinaryOp};
    use crate::ops::copy::StridedCopy;
    use crate::ops::unary::Unary;
    use crate::ops::view::View;
    use crate::tensor::DType;

    /// input -> relu a -> view b -> relu c -> relu d (output): `a` is read through the view at step 2.
    fn chain_with_view() -> Graph {
        let mut g = Graph::default();
        let x = g.add_tensor("x", vec![2, 8], DType::F32, TensorKind::Input(0));
        let a = g.add_tensor("a", vec![2, 8], DType::F32, TensorKind::Activation);
        let b = g.add_tensor("b", vec![16], DType::F32, TensorKind::Activation);
        let c = g.add_tensor("c", vec![16], DType::F32, TensorKind::Activation);
        let d = g.add_tensor("d", vec![16], DType::F32, TensorKind::Activation);
        let node = |name: &str, op: Op, input: TensorId, output: TensorId| Node::new(name, op, vec![input], output);
        g.nodes = vec![
            node("relu_a", Op::Unary(Unary::Relu), x, a),
            node("view_b", Op::View(View), a, b),
            node("relu_c", Op::Unary(Unary::Relu), b, c),
            node("relu_d", Op::Unary(Unary::Relu), c, d),
        ];
        g.inputs = vec![x];
        g.outputs = vec![d];
        g
    }

    #[test]
    fn with_io_in_the_arena_inputs_live_from_the_start_and_outputs_to_the_end() {
        let mut g = chain_with_view();
        g.io = Io::Arena;
        bind_outputs(&mut g);
        let life = |l: &Liveness, t: TensorId| match l.storage[t] {
            Storage::Arena(b) => l.problem.buffers[b].lifetime.clone(),
            other => panic!("tensor {t} is not in the arena: {other:?}"),
        };
        let l = analyze(&g, &Optimizations::NONE);
        assert_eq!(life(&l, 0), Lifetime::new(0, 0), "x: written by the caller, read by step 0");
        assert_eq!(life(&l, 4), Lifetime::new(3, 3), "d: written by the last step, read by the caller after it");
        crate::verify::verify_in_place(&g, &l).expect("the storage verifier accepts it");

        // In place, the last relu may write the output over `c`, and the first may overwrite `x`:
        // the buffer then lives from step 0 (x) to the end (d).
        let l = analyze(&g, &Optimizations { in_place: true, ..Optimizations::NONE });
        assert_eq!(l.in_place.iter().flatten().count(), 3, "{:?}", l.in_place);
        assert_eq!(l.storage[0], l.storage[4], "one buffer from the input to the output");
        assert_eq!(life(&l, 0), Lifetime::new(0, 3));
        crate::verify::verify_in_place(&g, &l).expect("the storage verifier accepts it");
    }

    #[test]
    fn views_share_their_roots_buffer_and_extend_its_life() {
        let mut g = chain_with_view();
        bind_outputs(&mut g);
        let l = analyze(&g, &Optimizations::NONE);
        assert_eq!(l.storage[0], Storage::Input(0));
        assert_eq!(l.storage[1], l.storage[2], "the view shares its root's bytes");
        assert_eq!(l.storage[4], Storage::Output(0), "the last node writes the caller's buffer");
        // Two arena buffers: `a` (written at step 0, read through the view at step 2) and `c`.
        assert_eq!(l.problem.buffers.len(), 2);
        assert_eq!(l.problem.buffers[0].lifetime, Lifetime::new(0, 2));
        assert_eq!(l.problem.buffers[1].lifetime, Lifetime::new(2, 3));
        assert!(l.problem.buffers.iter().all(|b| b.size == 64 && b.align == ARENA_ALIGN));
    }

    fn sub(shape: &[usize]) -> Op {
        let s = crate::ir::strides_of(shape);
        Op::Binary(BinaryOp { kind: Binary::Sub, a_strides: s.clone(), b_strides: s })
    }

    const IN_PLACE: Optimizations = Optimizations { in_place: true, ..Optimizations::NONE };

    #[test]
    fn an_elementwise_chain_runs_in_one_buffer() {
        let mut g = chain_with_view();
        bind_outputs(&mut g);
        let l = analyze(&g, &IN_PLACE);
        // relu_c overwrites `a` (through the view), which it reads last; relu_d writes the output.
        assert_eq!(l.in_place, [None, None, Some(0), None]);
        assert_eq!(l.problem.buffers.len(), 1);
        assert_eq!(l.problem.buffers[0].lifetime, Lifetime::new(0, 3));
        assert_eq!(l.storage[1], l.storage[3]);
        crate::verify::verify_in_place(&g, &l).unwrap();
    }

    #[test]
    fn an_input_read_later_or_owned_by_the_caller_is_not_overwritten() {
        // a = relu(x); b = x - a; c = b - a; d = c - b (the output).
        let mut g = Graph::default();
        let x = g.add_tensor("x", vec![8], DType::F32, TensorKind::Input(0));
        let a = g.add_tensor("a", vec![8], DType::F32, TensorKind::Activation);
        let b = g.add_tensor("b", vec![8], DType::F32, TensorKind::Activation);
        let c = g.add_tensor("c", vec![8], DType::F32, TensorKind::Activation);
        let d = g.add_tensor("d", vec![8], DType::F32, TensorKind::Activation);
        g.nodes = vec![
            Node::new("a", Op::Unary(Unary::Relu), vec![x], a),
            Node::new("b", sub(&[8]), vec![x, a], b),
            Node::new("c", sub(&[8]), vec![b, a], c),
            Node::new("d", sub(&[8]), vec![c, b], d),
        ];
        (g.inputs, g.outputs) = (vec![x], vec![d]);
        bind_outputs(&mut g);
        let l = analyze(&g, &IN_PLACE);
        // a: x is the caller's. b: reads x (caller's) and a (read again at step 2); Sub cannot
        // overwrite its second operand anyway. c: overwrites b? b is read at step 3: no; a (its
        // last reader) is Sub's second operand: no. d: overwrites c, its first operand, read last.
        assert_eq!(l.in_place, [None, None, None, None]);
        assert_eq!(l.storage[d], Storage::Output(0), "the output is the caller's buffer");
        crate::verify::verify_in_place(&g, &l).unwrap();
        // With e = relu(d) as the output instead, d overwrites c (its first operand, read last);
        // e writes the caller's buffer.
        let e = g.add_tensor("e", vec![8], DType::F32, TensorKind::Activation);
        g.nodes.push(Node::new("e", Op::Unary(Unary::Relu), vec![d], e));
        g.outputs = vec![e];
        let l = analyze(&g, &IN_PLACE);
        assert_eq!(l.in_place, [None, None, None, Some(0), None]);
        assert_eq!(l.storage[c], l.storage[d]);
        crate::verify::verify_in_place(&g, &l).unwrap();
    }

    /// x -> relu a, x -> relu b, c = concat(a, b) on the outer axis, d = relu(c) (the output).
    fn concat_graph() -> Graph {
        let mut g = Graph::default();
        let x = g.add_tensor("x", vec![4], DType::F32, TensorKind::Input(0));
        let a = g.add_tensor("a", vec![4], DType::F32, TensorKind::Activation);
        let b = g.add_tensor("b", vec![4], DType::F32, TensorKind::Activation);
        let c = g.add_tensor("c", vec![2, 4], DType::F32, TensorKind::Activation);
        let d = g.add_tensor("d", vec![2, 4], DType::F32, TensorKind::Activation);
        let part = |input: usize| StridedCopy {
            input,
            shape: vec![1, 4],
            src_offset: 0,
            src_strides: vec![4, 1],
            dst_offset: input * 4,
            dst_strides: vec![4, 1],
        };
        g.nodes = vec![
            Node::new("a", Op::Unary(Unary::Relu), vec![x], a),
            Node::new("b", Op::Unary(Unary::Relu), vec![x], b),
            Node::new("concat", Op::Copy(Copies(vec![part(0), part(1)])), vec![a, b], c),
            Node::new("d", Op::Unary(Unary::Relu), vec![c], d),
        ];
        (g.inputs, g.outputs) = (vec![x], vec![d]);
        g
    }

    #[test]
    fn an_elided_concat_has_its_inputs_written_into_its_output() {
        let mut g = concat_graph();
        bind_outputs(&mut g);
        let o = Optimizations { elide_concat: true, ..Optimizations::NONE };
        let l = analyze(&g, &o);
        assert_eq!(l.elided, [false, false, true, false]);
        assert_eq!(l.problem.buffers.len(), 1, "one buffer: the concatenation's");
        assert_eq!((l.storage[1], l.storage[2]), (l.storage[3], l.storage[3]));
        assert_eq!((l.offset_in_buffer[1], l.offset_in_buffer[2]), (0, 16));
        assert_eq!(l.problem.buffers[0].lifetime, Lifetime::new(0, 3), "born with its first input");
        crate::verify::verify_in_place(&g, &l).unwrap();

        // Placing `b` over `a` is caught: both are needed until the concatenation.
        let mut bad = l.clone();
        bad.offset_in_buffer[2] = 0;
        let err = crate::verify::verify_in_place(&g, &bad).unwrap_err();
        assert!(err.contains("tensors `a` (steps 0..=2) and `b` (steps 1..=2) share buffer `c`"), "{err}");

        // Without elision: three buffers, the concatenation copies.
        let l = analyze(&g, &Optimizations::NONE);
        assert_eq!((l.elided.iter().filter(|&&e| e).count(), l.problem.buffers.len()), (0, 3));
    }

    #[test]
    fn the_storage_verifier_rejects_sharing_that_is_not_in_place() {
        let mut g = chain_with_view();
        bind_outputs(&mut g);
        let mut l = analyze(&g, &IN_PLACE);
        // Forget the decision: `a` and `c` still share a buffer, and both are needed at step 2.
        l.in_place[2] = None;
        let err = crate::verify::verify_in_place(&g, &l).unwrap_err();
        assert!(err.contains("tensors `a` (steps 0..=2) and `c` (steps 2..=3) share buffer `a`"), "{err}");
        // A buffer whose planned life is shorter than its tensors'.
        let mut l = analyze(&g, &IN_PLACE);
        l.problem.buffers[0].lifetime = Lifetime::new(0, 2);
        let err = crate::verify::verify_in_place(&g, &l).unwrap_err();
        assert!(err.contains("planned for steps 0..=2 but holds tensors live over steps 0..=3"), "{err}");
    }

    #[test]
    fn an_output_that_is_an_input_gets_a_copy() {
        let mut g = Graph::default();
        let x = g.add_tensor("x", vec![4], DType::F32, TensorKind::Input(0));
        g.inputs = vec![x];
        g.outputs = vec![x, x];
        bind_outputs(&mut g);
        assert_eq!(g.nodes.len(), 2, "each output gets its own copy");
        let l = analyze(&g, &Optimizations::NONE);
        assert_eq!(l.storage[g.outputs[0]], Storage::Output(0));
        assert_eq!(l.storage[g.outputs[1]], Storage::Output(1));
        assert!(l.problem.buffers.is_empty());
    }
}
