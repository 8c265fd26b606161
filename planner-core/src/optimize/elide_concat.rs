//! Concat elision: the inputs of a concatenation are written straight into their slices of its
//! output, so the concatenation costs no copy and no extra bytes (its output's buffer is born with
//! its first input).
//!
//! A concatenation qualifies when it copies whole, contiguous inputs into disjoint contiguous slices
//! of an arena output (a channel concat with batch 1 in NCHW, or one on the outermost axis), and
//! every input is an arena tensor written by an earlier step for this concatenation alone (no other
//! reader, no view). [`super::storage`] keeps the elisions only when they do not raise the lower
//! bound.

use crate::ir::{Graph, TensorId, TensorKind};
use crate::liveness::{Sharing, Uses};
use crate::ops::copy::Copies;
use crate::ops::Op;

/// Marks every eligible concatenation of `g` elided in `sharing`; returns how many.
pub fn elide_concats(g: &Graph, uses: &Uses, sharing: &mut Sharing) -> usize {
    let mut elided = 0;
    for c in 0..g.nodes.len() {
        let Some(parts) = parts(g, uses, c) else { continue };
        let out = g.nodes[c].output;
        for (t, offset) in parts {
            sharing.part_of[t] = Some((out, offset));
        }
        sharing.elided[c] = true;
        elided += 1;
    }
    elided
}

/// The inputs of node `c` with their byte offsets in its output, if `c` is an elidable
/// concatenation.
fn parts(g: &Graph, uses: &Uses, c: usize) -> Option<Vec<(TensorId, u64)>> {
    let n = &g.nodes[c];
    let Op::Copy(Copies(copies)) = &n.op else { return None };
    let in_arena = |t: TensorId| matches!(g.tensors[t].kind, TensorKind::Activation) && !uses.holds_output[t];
    if !in_arena(n.output) || copies.len() != n.inputs.len() {
        return None;
    }
    let mut parts = Vec::with_capacity(copies.len());
    for (k, copy) in copies.iter().enumerate() {
        let t = *n.inputs.get(copy.input)?;
        let producer = uses.producer[t]?;
        let whole = copy.src_offset == 0 && copy.shape.iter().product::<usize>() == g.tensors[t].len();
        if copy.input != k
            || uses.roots[t] != t
            || !in_arena(t)
            || g.nodes[producer].op.is_view()
            || producer >= c
            || uses.last_use[t] != Some(c)
            || uses.root_readers[t] != 1
            || n.inputs.iter().filter(|&&u| u == t).count() != 1
            || !whole
            || !copy.is_contiguous_block()
            || g.tensors[t].dtype != g.tensors[n.output].dtype
        {
            return None;
        }
        parts.push((t, (copy.dst_offset * g.tensors[t].dtype.size()) as u64));
    }
    Some(parts)
}
