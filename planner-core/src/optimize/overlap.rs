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
use crate::liveness::{self, Liveness, Sharing, Storage, Uses};
use crate::ops::PlaneOrder;
use crate::plan;

/// The input index and the byte offset of that input after the output's start, if step `i` of
/// `g` may overlap its input and output under `sharing` (after concat elision and in-place
/// execution): the kernel has a plane order, the input is an arena tensor this step reads last,
/// stored in no other tensor, holding no other tensor still alive at step `i` (the input of an
/// overlapped step before it, dead by then: a chain of overlapped steps), and the output is
/// stored in no other tensor but as the overlapped input of a later step (the chain grown
/// backwards). A row order (NHWC layers) only if `rows`.
fn candidate(
    g: &Graph,
    uses: &Uses,
    sharing: &Sharing,
    owner: &[TensorId],
    (i, rows): (usize, bool),
) -> Option<(usize, u64)> {
    let n = &g.nodes[i];
    let order = n.op.kind().plane_order().filter(|o| rows || !o.rows)?;
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
    // The input owns its buffer, and whatever else it holds is dead before this step; the output
    // is stored in no other tensor, or as an overlapped step's input.
    let holds_only_dead = owner[rx] == rx
        && owner.iter().enumerate().all(|(t, &o)| o != rx || t == rx || uses.last_use[t].is_none_or(|l| l < i));
    let overlapped_input = |t: TensorId| {
        sharing.overlap.iter().zip(&g.nodes).any(|(k, m)| k.is_some_and(|k| uses.roots[m.inputs[k]] == t))
    };
    let output_free = sharing.part_of[ry].is_none() || overlapped_input(ry);
    let others_apart = n.inputs.iter().skip(1).all(|&t| uses.roots[t] != rx);
    let ok = fits
        && ry == y
        && rx != ry
        && in_arena(rx)
        && in_arena(ry)
        && uses.last_use[rx] == Some(i)
        && sharing.part_of[rx].is_none()
        && output_free
        && holds_only_dead
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

/// Steps a chain search ([`choose_overlaps`]'s second try) goes on overlapping without lowering
/// the best bound found, before it stops.
const PATIENCE: usize = 32;

/// Overlaps steps of `g` as the module docs say, recording them in `sharing`, and returns the
/// liveness under the final sharing (no scratch yet). First greedily: the step at the peak,
/// again and again while that does not raise the lower bound, keeping the set with the lowest
/// bound. If that lowers nothing, once more letting up to [`PATIENCE`] steps in a row raise it: a
/// chain of equal layers (a DS-CNN's) lowers the bound only once the chain spans every step at
/// the peak, since one overlapped step's shared buffer meets the next layer's output at the next
/// step. The chain search only runs when the greedy one found nothing, so a graph the greedy
/// search improves (and patch-based execution, which searches over such graphs) sees the same
/// steps overlapped as with the greedy search alone.
pub fn choose_overlaps(g: &Graph, uses: &Uses, sharing: &mut Sharing, rows: bool) -> Liveness {
    let start = liveness::analyze(g, uses, sharing);
    let bound = plan::lower_bound(&start.problem).bytes;
    for patience in [None, Some(PATIENCE)] {
        if let Some((chosen, live)) = overlap_peaks(g, uses, sharing, (&start, bound), (patience, rows)) {
            *sharing = chosen;
            return live;
        }
    }
    start
}

/// Overlaps the step at the peak of live bytes, one after the other, while fewer than `patience`
/// steps in a row have not lowered the best bound found (`None`: while none raises the bound);
/// the sharing and liveness of the lowest bound seen, if below `start`'s `bound`. Each round
/// overlaps another step, so there are at most as many rounds as steps.
fn overlap_peaks(
    g: &Graph,
    uses: &Uses,
    sharing: &Sharing,
    (start, bound): (&Liveness, u64),
    (patience, rows): (Option<usize>, bool),
) -> Option<(Sharing, Liveness)> {
    let (mut current, mut live) = (sharing.clone(), start.clone());
    let (mut best, mut best_bound, mut last_bound) = (None, bound, bound);
    let mut since_best = 0;
    while since_best < patience.unwrap_or(usize::MAX) {
        let peak = live.peak_step(g.nodes.len());
        if peak >= g.nodes.len() || current.overlap[peak].is_some() {
            break;
        }
        let owner = current.owners(g, uses);
        let Some((k, offset)) = candidate(g, uses, &current, &owner, (peak, rows)) else { break };
        current.overlap[peak] = Some(k);
        current.part_of[uses.roots[g.nodes[peak].inputs[k]]] = Some((uses.roots[g.nodes[peak].output], offset));
        live = liveness::analyze(g, uses, &current);
        let next_bound = plan::lower_bound(&live.problem).bytes;
        if patience.is_none() && next_bound > last_bound {
            break;
        }
        (since_best, last_bound) = (since_best + 1, next_bound);
        if next_bound < best_bound {
            (best, best_bound, since_best) = (Some((current.clone(), live.clone())), next_bound, 0);
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
