//! The naive plan: every buffer gets its own region, in id order. This is the upper bound.

use super::instance::{align_up, Instance};

/// Offsets of the naive plan.
pub(crate) fn naive(inst: &Instance) -> Vec<u64> {
    let mut end = 0;
    (0..inst.len())
        .map(|b| {
            if inst.sizes[b] == 0 {
                return 0;
            }
            let offset = align_up(end, inst.aligns[b]);
            end = offset + inst.sizes[b];
            offset
        })
        .collect()
}
