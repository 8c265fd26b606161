//! Scratch fitting: a kernel whose preferred scratch (im2col tiles) would raise the arena above the
//! activation peak gets a smaller tile that fits under it, or none (the kernel's variant without
//! working memory). Decided after the tensors' lifetimes are known, from the live bytes per step.

use crate::ir::Graph;
use crate::liveness::{Liveness, ARENA_ALIGN};
use crate::ops::Scratch;

/// Smallest im2col tile worth having, in output positions: below it the direct kernel is as fast.
const MIN_SCRATCH_TILE: usize = 8;

/// Adds each step's scratch buffer to `live`: the preferred amount, or with `fit` the amount that
/// fits under the activation peak. Returns how many kernels got less than they prefer.
pub fn add_scratch(g: &Graph, live: &mut Liveness, fit: bool) -> usize {
    let needs: Vec<Scratch> = g.nodes.iter().map(|n| n.op.kind().scratch()).collect();
    let live_bytes = live.live_bytes_per_step(g.nodes.len());
    let peak = live_bytes.iter().copied().max().unwrap_or(0);
    let elems: Vec<usize> = (needs.iter().zip(&live_bytes))
        .map(|(need, &at)| match fit {
            true => fitted(need, peak.saturating_sub(at)),
            false => need.preferred,
        })
        .collect();
    let dtypes: Vec<_> = needs.iter().map(|n| n.dtype).collect();
    live.add_scratch(g, &elems, &dtypes);
    needs.iter().zip(&elems).filter(|(need, &e)| e < need.preferred).count()
}

/// The scratch elements to give a kernel needing `need` when `slack` arena bytes are free at its
/// step below the activation peak: its preferred amount if that fits, else the largest smaller tile
/// that fits, else none. Never raises the peak unless the preferred amount already fits.
fn fitted(need: &Scratch, slack: u64) -> usize {
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
