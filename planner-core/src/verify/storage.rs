//! The second half of the proof: that the tensors liveness put in one arena buffer may share it.
//!
//! [`super::verify`] proves that buffers whose lifetimes overlap get disjoint bytes. That is only
//! enough if each buffer's lifetime covers every tensor stored in it, and if tensors sharing a
//! buffer never need their bytes at the same time. Views of a tensor share its bytes by design
//! (they are the same data). The only other sharing allowed is what the storage passes introduce
//! and record in [`Liveness`]: in-place execution (step `s` overwrites input `a` with output `b`
//! when `a`'s last read is step `s` itself, the kernel is elementwise in that input
//! ([`crate::ir::Node::in_place_inputs`]), and no other input of the step lives in the same
//! buffer), elided concatenations (each input already in its exact slice of the output), and
//! overlapped steps (step `s` writes its output over input `a` starting before it, its kernel has a
//! plane order, and for every plane `q` the output's plane `q` ends at or before the first input
//! plane it reads starts (input plane `q` for an NCHW depthwise layer; its windows' first row for
//! an NHWC convolution), so no output element is written over input still to be read: checked
//! plane by plane from the step's shapes and the kernel fact). This check re-derives all of that from the graph,
//! sharing no code with the decisions in [`crate::optimize`] and [`crate::liveness`].
//!
//! It is near-linear: the view roots, producers and last reads come from one pass over the nodes,
//! and each buffer's tensors are swept in order of birth against the ones still alive, so a chain
//! of in-place steps costs a constant per step.

use crate::ir::{Graph, Node, Op, TensorId};
use crate::liveness::{Liveness, Storage};
use crate::ops::copy::Copies;

/// One group of tensors with the same bytes: a view root and its views.
#[derive(Clone, Copy)]
struct Resident {
    root: TensorId,
    /// Byte range inside the buffer.
    bytes: (u64, u64),
    /// Step writing the root.
    first: usize,
    /// Last step reading the root or any of its views (`first` if never read).
    last: usize,
}

/// What the verifier derives from the graph alone.
struct Facts {
    /// The tensor owning each tensor's bytes (views followed back).
    root: Vec<TensorId>,
    /// The step writing each tensor.
    producer: Vec<Option<usize>>,
    /// The last step reading each root through any view (the caller's read after the last step
    /// counts for graph outputs).
    last_read: Vec<Option<usize>>,
}

impl Facts {
    fn of(g: &Graph) -> Facts {
        let n = g.tensors.len();
        let (mut root, mut producer, mut last_read): (Vec<TensorId>, _, Vec<Option<usize>>) =
            ((0..n).collect(), vec![None; n], vec![None; n]);
        for (i, node) in g.nodes.iter().enumerate() {
            producer[node.output] = Some(i);
            if node.op.is_view() {
                root[node.output] = root[node.inputs[0]];
                continue;
            }
            for &t in &node.inputs {
                let r = root[t];
                last_read[r] = Some(last_read[r].map_or(i, |l: usize| l.max(i)));
            }
        }
        let end = g.nodes.len().saturating_sub(1);
        for &o in &g.outputs {
            let r = root[o];
            last_read[r] = Some(last_read[r].map_or(end, |l| l.max(end)));
        }
        Facts { root, producer, last_read }
    }
}

/// Checks that the schedule reads every tensor after the step that writes it, and that every arena
/// buffer's tensors may share it; the error names the tensors and step.
pub fn verify_in_place(g: &Graph, live: &Liveness) -> Result<(), String> {
    let facts = Facts::of(g);
    // The schedule itself: every step reads only tensors written by earlier steps.
    for (i, n) in g.nodes.iter().enumerate() {
        if let Some(&t) = n.inputs.iter().find(|&&t| facts.producer[t].is_some_and(|p| p >= i)) {
            return Err(format!(
                "step {i} (`{}`) reads `{}` before the step that writes it",
                n.name, g.tensors[t].name
            ));
        }
    }
    let mut is_input = vec![false; g.tensors.len()];
    g.inputs.iter().for_each(|&t| is_input[t] = true);
    let mut residents: Vec<Vec<Resident>> = vec![Vec::new(); live.problem.buffers.len()];
    for (t, &storage) in live.storage.iter().enumerate() {
        let Storage::Arena(b) = storage else { continue };
        if facts.root[t] != t {
            continue; // a view: accounted to its root
        }
        // A graph input in the arena is written by the caller before step 0.
        let first = match (facts.producer[t], is_input[t]) {
            (Some(step), _) => step,
            (None, true) => 0,
            (None, false) => return Err(format!("arena tensor `{}` has no producer", g.tensors[t].name)),
        };
        let last = facts.last_read[t].map_or(first, |l| l.max(first));
        let start = live.offset_in_buffer[t];
        let size = live.problem.buffers[b].size;
        if start + g.tensors[t].bytes() > size {
            return Err(format!(
                "tensor `{}` ({} bytes at byte {start}) does not fit in its buffer `{}` of {size} bytes",
                g.tensors[t].name,
                g.tensors[t].bytes(),
                live.problem.buffers[b].name
            ));
        }
        residents[b].push(Resident { root: t, bytes: (start, start + g.tensors[t].bytes()), first, last });
    }
    let name = |t: TensorId| &g.tensors[t].name;
    for (b, list) in residents.iter_mut().enumerate() {
        list.sort_by_key(|r| (r.first, r.root));
        if let (Some(head), Some(end)) = (list.first(), list.iter().map(|r| r.last).max()) {
            let life = &live.problem.buffers[b].lifetime;
            if head.first < life.first() as usize || end > life.last() as usize {
                return Err(format!(
                    "buffer `{}` is planned for steps {}..={} but holds tensors live over steps {}..={end}",
                    live.problem.buffers[b].name,
                    life.first(),
                    life.last(),
                    head.first
                ));
            }
        }
        // Sweep in order of birth against the tensors still alive.
        let mut alive: Vec<Resident> = Vec::new();
        for c in list.iter() {
            alive.retain(|a| a.last >= c.first);
            for a in &alive {
                let disjoint_bytes = a.bytes.1 <= c.bytes.0 || c.bytes.1 <= a.bytes.0;
                if disjoint_bytes || legal_handover(g, live, &facts, b, a, c) {
                    continue;
                }
                return Err(format!(
                    "tensors `{}` (steps {}..={}) and `{}` (steps {}..={}) share buffer `{}` while both are needed (not a legal in-place step, elided concatenation or overlapped step)",
                    name(a.root),
                    a.first,
                    a.last,
                    name(c.root),
                    c.first,
                    c.last,
                    live.problem.buffers[b].name
                ));
            }
            alive.push(*c);
        }
    }
    Ok(())
}

/// Whether `a` (born first) hands its bytes over to `c` at the step that writes `c` and reads `a`
/// last: an in-place step, or an elided concatenation that finds `a` already in place.
fn legal_handover(g: &Graph, live: &Liveness, facts: &Facts, b: usize, a: &Resident, c: &Resident) -> bool {
    let step = c.first;
    let node = &g.nodes[step];
    if a.last != step || facts.root[node.output] != c.root {
        return false;
    }
    let in_place = live.in_place[step].is_some_and(|k| {
        facts.root[node.inputs[k]] == a.root
            && a.bytes == c.bytes
            && node.in_place_inputs(&g.tensors).contains(&k)
            && node.inputs.iter().enumerate().all(|(j, &i)| j == k || live.storage[i] != Storage::Arena(b))
    });
    let elided = live.elided[step]
        && matches!(&node.op, Op::Copy(Copies(copies)) if copies.iter().any(|copy| {
            let at = c.bytes.0 + (copy.dst_offset * g.tensors[a.root].dtype.size()) as u64;
            node.inputs[copy.input] == a.root
                && a.bytes == (at, at + g.tensors[a.root].bytes())
                && copy.src_offset == 0
                && copy.is_contiguous_block()
                && copy.shape.iter().product::<usize>() == g.tensors[a.root].len()
        }));
    let overlapped = live.overlap[step].is_some_and(|k| {
        facts.root[node.inputs[k]] == a.root
            && node.inputs.iter().enumerate().all(|(j, &i)| j == k || live.storage[i] != Storage::Arena(b))
            && plane_order_holds(g, node, k, a.bytes, c.bytes)
    });
    in_place || elided || overlapped
}

/// Whether an overlapped step `node` may write its output at bytes `out` of a buffer whose bytes
/// `input` hold its input `k`: the kernel has a plane order for input 0, the byte ranges are
/// exactly the tensors, and output plane `q` ends at or before the first input plane it reads
/// (`q * stride - before`, at least 0) starts, for every plane: each output byte written only over
/// input planes no later output plane reads (the first plane read never decreases with `q`).
fn plane_order_holds(g: &Graph, node: &Node, k: usize, input: (u64, u64), out: (u64, u64)) -> bool {
    let Some(order) = node.op.kind().plane_order() else { return false };
    let (x, y) = (&g.tensors[node.inputs[k]], &g.tensors[node.output]);
    let es = y.dtype.size() as u64;
    let (in_plane, out_plane) = (order.in_plane as u64 * es, order.out_plane as u64 * es);
    let (planes, in_planes) = (order.planes as u64, order.in_planes as u64);
    let (stride, before) = (order.stride as u64, order.before as u64);
    k == 0
        && x.dtype == y.dtype
        && stride >= 1
        && input.1 - input.0 == in_planes * in_plane
        && out.1 - out.0 == planes * out_plane
        && x.bytes() == in_planes * in_plane
        && y.bytes() == planes * out_plane
        && (0..planes).all(|q| out.0 + (q + 1) * out_plane <= input.0 + (q * stride).saturating_sub(before) * in_plane)
}
