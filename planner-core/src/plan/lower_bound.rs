//! The live-sum lower bound: no plan can use fewer bytes than the buffers live at one step need.

use std::collections::BTreeMap;

use super::LowerBound;
use crate::problem::Problem;

/// Computes [`LowerBound`] by a sweep over span start/end events, in `O(n log n)`.
///
/// At each step with live buffers, let `m` be the smallest alignment among them. Every offset is a
/// multiple of `m`, so stacked buffers each occupy their size rounded up to `m`, except the topmost
/// one whose tail padding lies outside the arena. The bound at that step is therefore
/// `sum(round_up(size, m)) - max(round_up(size, m) - size)`. When all live buffers share one
/// alignment and their sizes are multiples of it, this is exactly the sum of their aligned sizes.
pub(crate) fn lower_bound(p: &Problem) -> LowerBound {
    let mut aligns: Vec<u64> = p.buffers.iter().filter(|b| b.size > 0).map(|b| b.align.max(1)).collect();
    aligns.sort_unstable();
    aligns.dedup();
    // Events (step, buffer, is_start); ends are at `last + 1`, processed before starts at that step.
    let mut events: Vec<(u64, bool, usize)> = Vec::new();
    for (i, b) in p.buffers.iter().enumerate().filter(|(_, b)| b.size > 0) {
        for s in b.lifetime.spans() {
            events.push((u64::from(s.first), true, i));
            events.push((u64::from(s.last) + 1, false, i));
        }
    }
    events.sort_unstable();
    let mut live_aligns: BTreeMap<u64, usize> = BTreeMap::new();
    // Per distinct alignment `a`: sum of live sizes rounded up to `a`, and the multiset of pads.
    let mut rounded_sum = vec![0u64; aligns.len()];
    let mut pads: Vec<BTreeMap<u64, usize>> = vec![BTreeMap::new(); aligns.len()];
    let mut best = LowerBound { bytes: 0, step: 0 };
    let mut i = 0;
    while i < events.len() {
        let step = events[i].0;
        while i < events.len() && events[i].0 == step {
            let (_, start, b) = events[i];
            let (size, align) = (p.buffers[b].size, p.buffers[b].align.max(1));
            for (k, &a) in aligns.iter().enumerate() {
                let rounded = size.div_ceil(a).saturating_mul(a);
                let pad = rounded - size;
                if start {
                    rounded_sum[k] = rounded_sum[k].saturating_add(rounded);
                    *pads[k].entry(pad).or_insert(0) += 1;
                } else {
                    rounded_sum[k] -= rounded;
                    remove_one(&mut pads[k], pad);
                }
            }
            if start {
                *live_aligns.entry(align).or_insert(0) += 1;
            } else {
                remove_one(&mut live_aligns, align);
            }
            i += 1;
        }
        if let Some((&m, _)) = live_aligns.iter().next() {
            let k = aligns.binary_search(&m).expect("live alignment is a known alignment");
            let max_pad = pads[k].keys().next_back().copied().unwrap_or(0);
            let bytes = rounded_sum[k] - max_pad;
            if bytes > best.bytes {
                // Steps beyond u32::MAX cannot start a span, so `step` fits.
                best = LowerBound { bytes, step: step as u32 };
            }
        }
    }
    best
}

fn remove_one(map: &mut BTreeMap<u64, usize>, key: u64) {
    if let Some(c) = map.get_mut(&key) {
        *c -= 1;
        if *c == 0 {
            map.remove(&key);
        }
    }
}
