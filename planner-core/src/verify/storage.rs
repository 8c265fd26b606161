//! The second half of the proof: that the tensors liveness put in one arena buffer may share it.
//!
//! [`super::verify`] proves that buffers whose lifetimes overlap get disjoint bytes. That is only
//! enough if each buffer's lifetime covers every tensor stored in it, and if tensors sharing a
//! buffer never need their bytes at the same time. Views of a tensor share its bytes by design
//! (they are the same data). The only other sharing allowed is in-place execution: step `s`
//! overwrites input `a` with output `b` when `a`'s last read is step `s` itself, the kernel is
//! elementwise in that input ([`crate::ir::Node::in_place_inputs`]), and no other input of the
//! step lives in the same buffer. This check re-derives all of that from the graph, sharing no code
//! with the decision in [`crate::liveness`].

use crate::boundary::root_of;
use crate::ir::{Graph, Op, TensorId};
use crate::liveness::{Liveness, Storage};

/// One group of tensors with the same bytes: a view root and its views.
struct Resident {
    root: TensorId,
    /// Byte range inside the buffer.
    bytes: (u64, u64),
    /// Step writing the root.
    first: usize,
    /// Last step reading the root or any of its views (`first` if never read).
    last: usize,
}

/// Checks that the schedule reads every tensor after the step that writes it, and that every arena
/// buffer's tensors may share it; the error names the tensors and step.
pub fn verify_in_place(g: &Graph, live: &Liveness) -> Result<(), String> {
    // The schedule itself: every step reads only tensors written by earlier steps.
    for (i, n) in g.nodes.iter().enumerate() {
        if let Some(&t) = n.inputs.iter().find(|&&t| g.producer(t).is_some_and(|p| p >= i)) {
            return Err(format!(
                "step {i} (`{}`) reads `{}` before the step that writes it",
                n.name, g.tensors[t].name
            ));
        }
    }
    let buffers = live.problem.buffers.len();
    let mut residents: Vec<Vec<Resident>> = (0..buffers).map(|_| Vec::new()).collect();
    for t in 0..g.tensors.len() {
        let Storage::Arena(b) = live.storage[t] else { continue };
        if root_of(g, t) != t {
            continue; // a view: accounted to its root below
        }
        // A graph input in the arena is written by the caller before step 0; a graph output in the
        // arena is read by the caller after the last step.
        let first = match (g.producer(t), g.inputs.contains(&t)) {
            (Some(step), _) => step,
            (None, true) => 0,
            (None, false) => return Err(format!("arena tensor `{}` has no producer", g.tensors[t].name)),
        };
        let read_by_caller = g.outputs.iter().any(|&o| root_of(g, o) == t);
        let last = g
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.op != Op::View && n.inputs.iter().any(|&i| root_of(g, i) == t))
            .map(|(s, _)| s)
            .chain(read_by_caller.then(|| g.nodes.len().saturating_sub(1)))
            .max()
            .unwrap_or(first);
        let start = live.offset_in_buffer[t];
        residents[b].push(Resident { root: t, bytes: (start, start + g.tensors[t].bytes()), first, last });
    }
    let name = |t: TensorId| &g.tensors[t].name;
    for (b, list) in residents.iter_mut().enumerate() {
        list.sort_by_key(|r| r.first);
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
        for (i, a) in list.iter().enumerate() {
            for c in &list[i + 1..] {
                let (disjoint_time, disjoint_bytes) =
                    (a.last < c.first, a.bytes.1 <= c.bytes.0 || c.bytes.1 <= a.bytes.0);
                if disjoint_time || disjoint_bytes || legal_handover(g, live, b, a, c) {
                    continue;
                }
                return Err(format!(
                    "tensors `{}` (steps {}..={}) and `{}` (steps {}..={}) share buffer `{}` while both are needed (not a legal in-place step)",
                    name(a.root),
                    a.first,
                    a.last,
                    name(c.root),
                    c.first,
                    c.last,
                    live.problem.buffers[b].name
                ));
            }
        }
    }
    Ok(())
}

/// Whether `a` (born first) hands its bytes over to `c` at the step that writes `c` and reads `a`
/// last: an in-place step, or an elided concatenation that finds `a` already in place.
fn legal_handover(g: &Graph, live: &Liveness, b: usize, a: &Resident, c: &Resident) -> bool {
    let step = c.first;
    let node = &g.nodes[step];
    if a.last != step || root_of(g, node.output) != c.root {
        return false;
    }
    let in_place = live.in_place[step].is_some_and(|k| {
        root_of(g, node.inputs[k]) == a.root
            && a.bytes == c.bytes
            && node.in_place_inputs(&g.tensors).contains(&k)
            && node.inputs.iter().enumerate().all(|(j, &i)| j == k || live.storage[i] != Storage::Arena(b))
    });
    let elided = live.elided[step]
        && matches!(&node.op, Op::Copy(copies) if copies.iter().any(|copy| {
            node.inputs[copy.input] == a.root
                && a.bytes == (c.bytes.0 + copy.dst_offset as u64 * 4, c.bytes.0 + copy.dst_offset as u64 * 4 + g.tensors[a.root].bytes())
                && copy.src_offset == 0
                && copy.is_contiguous_block()
                && copy.shape.iter().product::<usize>() == g.tensors[a.root].len()
        }));
    in_place || elided
}
