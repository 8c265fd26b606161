//! Greedy offset placement: take buffers in some order and put each at the lowest aligned offset
//! where it does not collide with an already placed buffer whose lifetime overlaps its own (the
//! TFLite Micro `GreedyMemoryPlanner` idea). The orders differ by planner.

use std::cmp::Reverse;

use super::instance::{align_up, Instance};

/// The order in which a greedy pass places buffers. Ties always fall back to the buffer id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    /// Largest first, then longest lived (TFLite Micro).
    Size,
    /// Most conflicting buffers first, then largest (TVM USMP `greedy_by_conflicts`).
    Conflicts,
    /// Buffers of the busiest steps first, then largest (TFLite GPU greedy by breadth).
    Breadth,
    /// Earliest first step first, then largest (optimal for equal sizes without holes).
    Birth,
    /// Largest size x lifetime first.
    Area,
    /// Longest lived first, then largest.
    Length,
}

/// Places every buffer in the given order; returns the offsets (zero-sized buffers get 0).
pub(crate) fn greedy(inst: &Instance, order: Order) -> Vec<u64> {
    place(inst, &ordering(inst, order))
}

/// The buffers that occupy bytes, sorted by `order`.
fn ordering(inst: &Instance, order: Order) -> Vec<usize> {
    let mut ids: Vec<usize> = inst.nonzero().collect();
    let (s, l) = (&inst.sizes, &inst.live_steps);
    match order {
        Order::Size => ids.sort_by_key(|&b| (Reverse(s[b]), Reverse(l[b]), b)),
        Order::Conflicts => {
            let c = conflict_counts(inst);
            ids.sort_by_key(|&b| (Reverse(c[b]), Reverse(s[b]), b));
        }
        Order::Breadth => {
            let w = breadths(inst);
            ids.sort_by_key(|&b| (Reverse(w[b]), Reverse(s[b]), b));
        }
        Order::Birth => ids.sort_by_key(|&b| (inst.first_step[b], Reverse(s[b]), b)),
        Order::Area => ids.sort_by_key(|&b| (Reverse(u128::from(s[b]) * u128::from(l[b])), b)),
        Order::Length => ids.sort_by_key(|&b| (Reverse(l[b]), Reverse(s[b]), b)),
    }
    ids
}

/// For each buffer, how many others are live in its envelope (holes are ignored: this only ranks
/// buffers). `O(n log n)` by counting starts before its end and ends before its start.
fn conflict_counts(inst: &Instance) -> Vec<usize> {
    let ids: Vec<usize> = inst.nonzero().collect();
    let mut los: Vec<u32> = ids.iter().map(|&b| inst.envelope(b).0).collect();
    let mut his: Vec<u32> = ids.iter().map(|&b| inst.envelope(b).1).collect();
    los.sort_unstable();
    his.sort_unstable();
    let mut counts = vec![0; inst.len()];
    for &b in &ids {
        let (lo, hi) = inst.envelope(b);
        let started_before_end = los.partition_point(|&x| x < hi);
        let ended_before_start = his.partition_point(|&x| x <= lo);
        counts[b] = started_before_end - ended_before_start - 1;
    }
    counts
}

/// For each buffer, the largest total live size over the sections where it is live.
pub(crate) fn breadths(inst: &Instance) -> Vec<u64> {
    let table = SparseMax::new(inst.section_totals());
    (0..inst.len())
        .map(|b| inst.ranges[b].iter().map(|&(lo, hi)| table.max(lo as usize, hi as usize)).max().unwrap_or(0))
        .collect()
}

/// Range-maximum queries in `O(1)` after `O(n log n)` preprocessing.
struct SparseMax {
    levels: Vec<Vec<u64>>,
}

impl SparseMax {
    fn new(values: Vec<u64>) -> Self {
        let mut levels = vec![values];
        let mut width = 1;
        while 2 * width <= levels[0].len() {
            let prev = &levels[levels.len() - 1];
            let next = (0..prev.len() - width).map(|i| prev[i].max(prev[i + width])).collect();
            levels.push(next);
            width *= 2;
        }
        SparseMax { levels }
    }

    /// Maximum of `values[lo..hi]` (`lo < hi`).
    fn max(&self, lo: usize, hi: usize) -> u64 {
        let k = (usize::BITS - 1 - (hi - lo).leading_zeros()) as usize;
        self.levels[k][lo].max(self.levels[k][hi - (1 << k)])
    }
}

/// Places buffers in `order` at the lowest aligned offset that fits among the placed buffers they
/// conflict with. Placed buffers are indexed by blocks of sections so that finding the conflicting
/// ones costs about the number of buffers live nearby, not the number placed.
pub(crate) fn place(inst: &Instance, order: &[usize]) -> Vec<u64> {
    let width = inst.sections.div_ceil(4096).max(1);
    let mut blocks: Vec<Vec<usize>> = vec![Vec::new(); inst.sections.div_ceil(width)];
    let mut offsets = vec![0u64; inst.len()];
    let mut seen = vec![usize::MAX; inst.len()];
    let mut busy: Vec<(u64, u64)> = Vec::new();
    for (round, &b) in order.iter().enumerate() {
        busy.clear();
        for &(lo, hi) in &inst.ranges[b] {
            for block in &blocks[lo as usize / width..=(hi as usize - 1) / width] {
                for &o in block {
                    if seen[o] != round {
                        seen[o] = round;
                        if inst.conflict(b, o) {
                            busy.push((offsets[o], offsets[o] + inst.sizes[o]));
                        }
                    }
                }
            }
        }
        busy.sort_unstable();
        offsets[b] = lowest_fit(&busy, inst.sizes[b], inst.aligns[b]);
        for &(lo, hi) in &inst.ranges[b] {
            for block in &mut blocks[lo as usize / width..=(hi as usize - 1) / width] {
                if block.last() != Some(&b) {
                    block.push(b);
                }
            }
        }
    }
    offsets
}

/// The lowest offset, a multiple of `align`, where `size` bytes avoid every interval of `busy`
/// (sorted by start).
fn lowest_fit(busy: &[(u64, u64)], size: u64, align: u64) -> u64 {
    let mut candidate = 0;
    for &(start, end) in busy {
        if candidate + size <= start {
            break;
        }
        candidate = candidate.max(align_up(end, align));
    }
    candidate
}
