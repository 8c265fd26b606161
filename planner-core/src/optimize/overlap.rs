//! Overlapping input and output (vMCU-style): a step whose kernel writes its output in an order
//! that consumes its input first ([`crate::ops::OpKind::plane_order`], the kernel contract stated
//! in `runtime-min`'s `overlap.rs`) gets its input and output in one buffer, the output starting
//! `D` bytes before the input, so the pair takes `max(D + input, output)` bytes at that step
//! instead of `input + output`.
//!
//! For a plane order (planes written in ascending order; output plane `q` reads input planes
//! from `first_read(q)` on: plane `q` of an NCHW depthwise layer, the rows of its windows for an
//! NHWC convolution) output plane `q` must end at or before input plane `first_read(q)`'s start
//! for every `q`: `(q + 1) * out_plane <= D + first_read(q) * in_plane`, in bytes. The smallest
//! such `D` is the largest difference over the planes (one pass): for a stride-1 same-size
//! depthwise layer one plane (the output begins one plane before the input); for a 3x3 NHWC
//! convolution with one row of padding, two rows.
//!
//! The shared buffer lives from the input's producer to the output's last reader, so it takes
//! more bytes than either tensor alone at the other steps: [`choose_overlaps`] overlaps the step
//! at the peak of live bytes, one at a time, while that lowers the arena's lower bound, and keeps
//! the set with the lowest bound. [`crate::verify::verify_in_place`] re-derives the condition from
//! the step's shapes and the kernel fact and rejects a plan that breaks it.

use crate::ir::{Graph, TensorId, TensorKind};
use crate::ops::PlaneOrder;
use crate::liveness::{self, Liveness, Sharing, Storage, Uses};
use crate::plan;

/// The input index and the byte offset of that input after the output's start, if step `i` of
/// `g` may overlap its input and output under `sharing` (after concat elision and in-place
/// execution): the kernel has a plane order, the input is an arena tensor this step reads last,
/// and neither tensor shares its buffer with another yet.
fn candidate(g: &Graph, uses: &Uses, sharing: &Sharing, owner: &[TensorId], i: usize) -> Option<(usize, u64)> {
    let n = &g.nodes[i];
    let order = n.op.kind().plane_order()?;
    let (x, y) = (*n.inputs.first()?, n.output);
    let (rx, ry) = (uses.roots[x], uses.roots[y]);
    let in_arena = |t: TensorId| match g.tensors[t].kind {
        TensorKind::Activation => !uses.holds_output[t],
        _ => false,
    };
    let es = g.tensors[y].dtype.size() as u64;
    let fits = g.tensors[rx].len() == order.in_planes * order.in_plane
        && g.tensors[ry].len() == order.planes * order.out_plane
        && g.tensors[rx].dtype == g.tensors[ry].dtype;
    // Alone in their buffers: the input owns only itself and is owned by nobody else; the output
    // is not stored inside another tensor.
    let alone = owner[rx] == rx && owner.iter().enumerate().all(|(t, &o)| o != rx || t == rx);
    let others_apart = n.inputs.iter().skip(1).all(|&t| uses.roots[t] != rx);
    let ok = fits
        && ry == y
        && rx != ry
        && in_arena(rx)
        && in_arena(ry)
        && uses.last_use[rx] == Some(i)
        && sharing.part_of[rx].is_none()
        && sharing.part_of[ry].is_none()
        && alone
        && others_apart
        && sharing.in_place[i].is_none();
    ok.then(|| (0, smallest_displacement(order, es)))
}

/// The smallest `D` (bytes; elements of `es` bytes) that keeps every output plane of `order`
/// before the first input plane it reads: `max_q ((q + 1) * out_plane - first_read(q) * in_plane)`.
fn smallest_displacement(order: PlaneOrder, es: u64) -> u64 {
    let (in_plane, out_plane) = (order.in_plane as u64 * es, order.out_plane as u64 * es);
    (0..order.planes)
        .map(|q| ((q as u64 + 1) * out_plane).saturating_sub(order.first_read(q) as u64 * in_plane))
        .max()
        .unwrap_or(0)
}

/// Overlaps steps of `g` as the module docs say, recording them in `sharing`, and returns the
/// liveness under the final sharing (no scratch yet).
pub fn choose_overlaps(g: &Graph, uses: &Uses, sharing: &mut Sharing) -> Liveness {
    let mut live = liveness::analyze(g, uses, sharing);
    let mut bound = plan::lower_bound(&live.problem).bytes;
    let mut current = sharing.clone();
    let (mut best, mut best_bound) = (live.clone(), bound);
    loop {
        let peak = live.peak_step(g.nodes.len());
        if peak >= g.nodes.len() || current.overlap[peak].is_some() {
            break;
        }
        let owner = current.owners(g, uses);
        let Some((k, offset)) = candidate(g, uses, &current, &owner, peak) else { break };
        let mut next = current.clone();
        next.overlap[peak] = Some(k);
        next.part_of[uses.roots[g.nodes[peak].inputs[k]]] = Some((uses.roots[g.nodes[peak].output], offset));
        let next_live = liveness::analyze(g, uses, &next);
        let next_bound = plan::lower_bound(&next_live.problem).bytes;
        if next_bound > bound {
            break;
        }
        (current, live, bound) = (next, next_live, next_bound);
        if bound < best_bound {
            (*sharing, best, best_bound) = (current.clone(), live.clone(), bound);
        }
    }
    best
}

/// How many steps of `g` overlap their input and output under `live`, and how many bytes their
/// shared buffers take less than input and output apart.
pub fn saved(g: &Graph, live: &Liveness) -> (usize, u64) {
    let mut saved = (0, 0);
    for (n, k) in g.nodes.iter().zip(&live.overlap) {
        let (Some(k), Storage::Arena(b)) = (k, live.storage[n.output]) else { continue };
        let apart = g.tensors[n.inputs[*k]].bytes() + g.tensors[n.output].bytes();
        saved = (saved.0 + 1, saved.1 + apart.saturating_sub(live.problem.buffers[b].size));
    }
    saved
}
