//! Branch-and-bound over canonical placements, in the style of MiniMalloc (Moffitt, ASPLOS 2023).
//!
//! The decision question "do all buffers fit under `cap`?" is answered by a depth-first search
//! that places one buffer per node at the lowest offset it can take given the buffers already
//! placed. Only canonical placement sequences are explored (offsets never decrease along a path,
//! ties broken by a static preorder), and a node is cut when
//! - some section's floor plus the sizes still to place in it exceeds `cap`,
//! - the chosen offset is at or above the top of some other unplaced buffer placed at its lowest
//!   offset (that buffer could always slide into the gap below, so a lower solution dominates),
//! - the subtree of a "hatless" buffer failed: one whose placement raised no unplaced buffer's
//!   lowest offset, so it constrains nothing left and any solution could drop it to where it was
//!   tried; the node then fails as a whole,
//! - the global work budget is spent.
//!
//! When no unplaced buffer crosses a section boundary any more, the two sides are independent and
//! are solved one after the other without backtracking into each other.
//!
//! [`improve`] drives the decision search: first at the lower bound, then by bisection between the
//! best height proven or presumed infeasible and the best known plan.

use std::cmp::Reverse;

use super::instance::{align_up, Instance};

/// Offset of an unplaced buffer.
const UNPLACED: u64 = u64::MAX;

/// The outcome of an optimisation run, in bytes.
pub(crate) struct Improved {
    /// Offsets of a plan at least as good as the seed, or `None` if none better was found.
    pub offsets: Option<Vec<u64>>,
    /// Whether the returned (or seed) height is proven minimal.
    pub proven: bool,
}

/// Tries to beat `seed_height` (bytes) down to `lower_bound` within `budget` work units. One work
/// unit is one unplaced buffer considered at one search node.
pub(crate) fn improve(inst: &Instance, seed_height: u64, lower_bound: u64, budget: u64) -> Improved {
    let space = Space::new(inst);
    let g = space.granule;
    let mut best_height = seed_height.div_ceil(g);
    let mut best: Option<Vec<u64>> = None;
    // Every height below `proven_lo` is infeasible; every height below `lo` is presumed to be.
    let mut proven_lo = lower_bound.div_ceil(g);
    let mut lo = proven_lo;
    let mut remaining = budget;
    let mut first = true;
    while proven_lo < best_height && remaining > 0 {
        if lo >= best_height {
            // Every bisection target ran out of budget: start again above the proven bound, with
            // larger slices.
            lo = proven_lo + 1;
        }
        // 60% of the budget goes to the lower bound itself, then bisection gets quarters of the rest.
        let (target, slice) =
            if first { (lo, remaining / 5 * 3) } else { (lo + (best_height - lo) / 2, remaining / 4 + 1) };
        first = false;
        let mut decider = Decider::new(&space, target);
        let outcome = decider.decide(slice.min(remaining));
        remaining = remaining.saturating_sub(decider.work.max(1));
        match outcome {
            Decision::Feasible => {
                best_height = space.height(&decider.solution);
                best = Some(decider.solution);
            }
            Decision::Infeasible => {
                if proven_lo == lo {
                    proven_lo = target + 1;
                }
                lo = target + 1;
            }
            Decision::Unknown => lo = target + 1,
        }
    }
    Improved { offsets: best.map(|sol| space.to_bytes(&sol, inst.len())), proven: proven_lo >= best_height }
}

/// The search's view of the instance: only buffers with bytes, sizes in units of the greatest
/// common divisor of all sizes and alignments.
struct Space {
    /// Global id of each local buffer.
    ids: Vec<usize>,
    granule: u64,
    sizes: Vec<u64>,
    aligns: Vec<u64>,
    ranges: Vec<Vec<(u32, u32)>>,
    envelopes: Vec<(u32, u32)>,
    /// Local ids of the buffers each buffer conflicts with.
    overlaps: Vec<Vec<u32>>,
    /// Local ids of the buffers live in each section.
    members: Vec<Vec<u32>>,
    /// Live steps of each local buffer (for preorders).
    live_steps: Vec<u64>,
    sections: usize,
}

impl Space {
    fn new(inst: &Instance) -> Self {
        let ids: Vec<usize> = inst.nonzero().collect();
        // Offsets of a packed plan are sums of sizes rounded up to alignments, so they stay
        // multiples of the sizes' gcd, reduced by the alignments that do not divide it.
        let sizes_gcd = ids.iter().fold(0, |g, &b| gcd(g, inst.sizes[b]));
        let granule = ids.iter().map(|&b| inst.aligns[b]).filter(|&a| sizes_gcd % a != 0).fold(sizes_gcd, gcd).max(1);
        let mut members = vec![Vec::new(); inst.sections];
        for (local, &b) in ids.iter().enumerate() {
            for &(lo, hi) in &inst.ranges[b] {
                for m in &mut members[lo as usize..hi as usize] {
                    m.push(local as u32);
                }
            }
        }
        let envelopes: Vec<(u32, u32)> = ids.iter().map(|&b| inst.envelope(b)).collect();
        let mut overlaps = vec![Vec::new(); ids.len()];
        let mut by_start: Vec<usize> = (0..ids.len()).collect();
        by_start.sort_by_key(|&i| (envelopes[i], i));
        for (k, &i) in by_start.iter().enumerate() {
            for &j in &by_start[k + 1..] {
                if envelopes[j].0 >= envelopes[i].1 {
                    break;
                }
                if inst.conflict(ids[i], ids[j]) {
                    overlaps[i].push(j as u32);
                    overlaps[j].push(i as u32);
                }
            }
        }
        for o in &mut overlaps {
            o.sort_unstable();
        }
        Space {
            granule,
            sizes: ids.iter().map(|&b| inst.sizes[b] / granule).collect(),
            aligns: ids.iter().map(|&b| inst.aligns[b] / granule).map(|a| a.max(1)).collect(),
            ranges: ids.iter().map(|&b| inst.ranges[b].clone()).collect(),
            live_steps: ids.iter().map(|&b| inst.live_steps[b]).collect(),
            envelopes,
            members,
            sections: inst.sections,
            overlaps,
            ids,
        }
    }

    fn len(&self) -> usize {
        self.ids.len()
    }

    fn height(&self, sol: &[u64]) -> u64 {
        sol.iter().zip(&self.sizes).map(|(o, s)| o + s).max().unwrap_or(0)
    }

    fn to_bytes(&self, sol: &[u64], n: usize) -> Vec<u64> {
        let mut offsets = vec![0; n];
        for (local, &b) in self.ids.iter().enumerate() {
            offsets[b] = sol[local] * self.granule;
        }
        offsets
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Static preorders tried in turn; each ranks buffers by three keys, largest first.
const PREORDERS: [[Key; 3]; 3] =
    [[Key::Total, Key::Length, Key::Area], [Key::Total, Key::Area, Key::Length], [Key::Length, Key::Area, Key::Total]];

/// A preorder key (larger first).
#[derive(Clone, Copy)]
enum Key {
    /// The largest sum of sizes still to place in one of the buffer's sections.
    Total,
    /// Live steps.
    Length,
    /// Size times live steps.
    Area,
}

enum Decision {
    Feasible,
    Infeasible,
    Unknown,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
    Found,
    NotFound,
    Aborted,
}

/// A sub-problem: buffers confined to a section range, with their static preorder.
struct Part {
    lo: usize,
    hi: usize,
    /// Local buffer ids, in preorder.
    pre: Vec<u32>,
}

/// State of one decision search at a fixed capacity.
struct Decider<'a> {
    space: &'a Space,
    cap: u64,
    preorder: [Key; 3],
    offset: Vec<u64>,
    min_off: Vec<u64>,
    floor: Vec<u64>,
    /// Sum of unplaced sizes per section.
    total: Vec<u64>,
    /// Per section boundary `s` (between `s` and `s + 1`): unplaced buffers spanning it.
    cuts: Vec<u32>,
    solution: Vec<u64>,
    work: u64,
    limit: u64,
    /// Scratch marks for the sections touched by one placement.
    mark: Vec<u32>,
    mark_gen: u32,
    touched: Vec<u32>,
    /// Undo stacks: lowest offsets and section floors changed by the placements on the path.
    undo_min: Vec<(u32, u64)>,
    undo_floor: Vec<(u32, u64)>,
    /// The candidates of every node on the path, `(lowest offset, preorder position)`.
    orders: Vec<(u64, u32)>,
}

impl<'a> Decider<'a> {
    fn new(space: &'a Space, cap: u64) -> Self {
        let n = space.len();
        let mut total = vec![0; space.sections];
        let mut cuts = vec![0; space.sections];
        for b in 0..n {
            for &(lo, hi) in &space.ranges[b] {
                for t in &mut total[lo as usize..hi as usize] {
                    *t += space.sizes[b];
                }
            }
            let (lo, hi) = space.envelopes[b];
            for c in &mut cuts[lo as usize..hi as usize - 1] {
                *c += 1;
            }
        }
        Decider {
            space,
            cap,
            preorder: PREORDERS[0],
            offset: vec![UNPLACED; n],
            min_off: vec![0; n],
            floor: vec![0; space.sections],
            total,
            cuts,
            solution: vec![0; n],
            work: 0,
            limit: 0,
            mark: vec![0; space.sections],
            mark_gen: 0,
            touched: Vec::new(),
            undo_min: Vec::new(),
            undo_floor: Vec::new(),
            orders: Vec::new(),
        }
    }

    /// Round-robin over the preorders with a doubling work limit (MiniMalloc style) for the first
    /// eighth of `budget`, then one long run per preorder with the rest (restarts only pay off
    /// while they are cheap: a hard instance is usually solved by one preorder's long run), until
    /// one finds a solution, one proves there is none, or `budget` is spent.
    fn decide(&mut self, budget: u64) -> Decision {
        let n = self.space.len() as u64;
        if self.space.sizes.iter().any(|&s| s > self.cap) {
            return Decision::Infeasible;
        }
        let quick = budget / 8;
        let mut round_limit = 16 * n * n + 1024;
        while self.work + 3 * round_limit <= quick {
            for preorder in PREORDERS {
                if let Some(decision) = self.run(preorder, round_limit) {
                    return decision;
                }
            }
            round_limit = round_limit.saturating_mul(2);
        }
        let long = budget.saturating_sub(self.work);
        for (preorder, eighths) in PREORDERS.into_iter().zip([3, 3, 2]) {
            if let Some(decision) = self.run(preorder, long / 8 * eighths) {
                return decision;
            }
        }
        Decision::Unknown
    }

    /// One depth-first search from scratch with `preorder`, limited to `limit` more work units.
    /// `None` if it ran out.
    fn run(&mut self, preorder: [Key; 3], limit: u64) -> Option<Decision> {
        self.preorder = preorder;
        self.limit = self.work + limit;
        let all: Vec<u32> = (0..self.space.len() as u32).collect();
        match self.solve_range(0, self.space.sections, &all) {
            Status::Found => Some(Decision::Feasible),
            Status::NotFound => Some(Decision::Infeasible),
            Status::Aborted => None,
        }
    }

    /// Splits the unplaced buffers of `bufs` living in `[lo, hi)` at boundaries no unplaced buffer
    /// crosses, and solves each piece in turn.
    fn solve_range(&mut self, lo: usize, hi: usize, bufs: &[u32]) -> Status {
        let space = self.space;
        let mut start = lo;
        for boundary in lo..hi {
            if boundary + 1 < hi && self.cuts[boundary] > 0 {
                continue;
            }
            let end = boundary + 1;
            let mut pre: Vec<u32> = bufs
                .iter()
                .copied()
                .filter(|&b| {
                    self.offset[b as usize] == UNPLACED && {
                        let (blo, bhi) = space.envelopes[b as usize];
                        (blo as usize) < end && start < bhi as usize
                    }
                })
                .collect();
            if !pre.is_empty() {
                let keys: Vec<[u64; 3]> = pre.iter().map(|&b| self.key(b as usize)).collect();
                let mut idx: Vec<usize> = (0..pre.len()).collect();
                idx.sort_by_key(|&i| (Reverse(keys[i]), pre[i]));
                pre = idx.iter().map(|&i| pre[i]).collect();
                let part = Part { lo: start, hi: end, pre };
                let base = self.orders.len();
                self.orders.extend((0..part.pre.len() as u32).map(|p| (0, p)));
                let peak = self.peak(part.lo, part.hi);
                let status = self.search(&part, (base, self.orders.len()), (0, 0), peak);
                self.orders.truncate(base);
                if status != Status::Found {
                    return status;
                }
            }
            start = end;
        }
        Status::Found
    }

    fn key(&self, b: usize) -> [u64; 3] {
        let space = self.space;
        self.preorder.map(|k| match k {
            Key::Total => space.ranges[b]
                .iter()
                .flat_map(|&(lo, hi)| self.total[lo as usize..hi as usize].iter().copied())
                .max()
                .unwrap_or(0),
            Key::Length => space.live_steps[b],
            Key::Area => space.sizes[b].saturating_mul(space.live_steps[b]),
        })
    }

    /// Explores the node whose candidates are the unplaced buffers of `self.orders[parent]`.
    ///
    /// `peak` is at least the largest sum of unplaced sizes in a section of the part.
    fn search(&mut self, part: &Part, parent: (usize, usize), last: (u64, u32), peak: u64) -> Status {
        let start = self.orders.len();
        for i in parent.0..parent.1 {
            let p = self.orders[i].1;
            let b = part.pre[p as usize] as usize;
            if self.offset[b] == UNPLACED {
                self.orders.push((self.min_off[b], p));
            }
        }
        let end = self.orders.len();
        self.work += (end - start) as u64 + 1;
        let status = if self.work > self.limit {
            Status::Aborted
        } else if start == end {
            Status::Found
        } else {
            self.orders[start..end].sort_unstable();
            self.branch(part, (start, end), last, peak)
        };
        self.orders.truncate(start);
        status
    }

    /// Tries each candidate of `self.orders[range]` (sorted) in turn.
    fn branch(&mut self, part: &Part, range: (usize, usize), last: (u64, u32), peak: u64) -> Status {
        let space = self.space;
        let min_height = self.orders[range.0..range.1]
            .iter()
            .map(|&(o, p)| o + space.sizes[part.pre[p as usize] as usize])
            .min()
            .unwrap_or(u64::MAX);
        for i in range.0..range.1 {
            let (off, p) = self.orders[i];
            if (off, p) < last {
                continue;
            }
            if off >= min_height {
                break;
            }
            let b = part.pre[p as usize] as usize;
            if off + space.sizes[b] > self.cap {
                continue;
            }
            let undo = self.place(b, off);
            let status = match self.check(part, off, peak, undo) {
                Some(peak) => self.descend(part, range, (off, p), b, peak),
                None => Status::NotFound,
            };
            // A buffer that raised no other one's lowest offset ("hatless") constrains nothing
            // that is still to place: if the rest fails with it at its lowest offset, it fails with
            // any other buffer first too (that solution could drop this buffer down to `off`).
            let hatless = self.undo_min.len() == undo.0;
            self.unplace(b, off, undo);
            if status != Status::NotFound || hatless {
                return status;
            }
        }
        Status::NotFound
    }

    /// After placing `b`, continues the search, splitting the part if `b` was the last buffer
    /// across some boundary.
    fn descend(&mut self, part: &Part, order: (usize, usize), last: (u64, u32), b: usize, peak: u64) -> Status {
        let (lo, hi) = self.space.envelopes[b];
        let mut split = false;
        for c in &mut self.cuts[lo as usize..hi as usize - 1] {
            *c -= 1;
            split |= *c == 0;
        }
        let status = if split {
            let bufs = part.pre.clone();
            self.solve_range(part.lo, part.hi, &bufs)
        } else {
            self.search(part, order, last, peak)
        };
        for c in &mut self.cuts[lo as usize..hi as usize - 1] {
            *c += 1;
        }
        status
    }

    /// Places `b` at `off`; returns the lengths of the undo stacks before the change.
    fn place(&mut self, b: usize, off: u64) -> (usize, usize) {
        let space = self.space;
        let undo = (self.undo_min.len(), self.undo_floor.len());
        let top = off + space.sizes[b];
        self.offset[b] = off;
        self.min_off[b] = UNPLACED;
        self.solution[b] = off;
        self.mark_gen += 1;
        self.touched.clear();
        self.work += space.overlaps[b].len() as u64;
        for &o in &space.overlaps[b] {
            let o = o as usize;
            // Placed buffers have `min_off == UNPLACED`, above any top.
            if self.min_off[o] >= top {
                continue;
            }
            self.undo_min.push((o as u32, self.min_off[o]));
            self.min_off[o] = match space.aligns[o] {
                1 => top,
                a => align_up(top, a),
            };
            for &(lo, hi) in &space.ranges[o] {
                for s in lo..hi {
                    if self.mark[s as usize] != self.mark_gen {
                        self.mark[s as usize] = self.mark_gen;
                        self.touched.push(s);
                    }
                }
            }
        }
        for &(lo, hi) in &space.ranges[b] {
            for s in lo as usize..hi as usize {
                self.undo_floor.push((s as u32, self.floor[s]));
                self.floor[s] = top;
                self.total[s] -= space.sizes[b];
            }
            self.work += u64::from(hi - lo);
        }
        // A section's floor is at least the lowest offset any of its unplaced buffers can take.
        for &s in &self.touched {
            let s = s as usize;
            // Stop at the first member that keeps the floor where it is.
            let floor = self.floor[s];
            let mut lowest = UNPLACED;
            let mut scanned = 0;
            for &m in &space.members[s] {
                scanned += 1;
                let l = self.min_off[m as usize];
                if l <= floor {
                    lowest = floor;
                    break;
                }
                lowest = lowest.min(l);
            }
            self.work += scanned;
            if lowest > floor && lowest != UNPLACED {
                self.undo_floor.push((s as u32, floor));
                self.floor[s] = lowest;
            }
        }
        undo
    }

    fn unplace(&mut self, b: usize, off: u64, undo: (usize, usize)) {
        let space = self.space;
        for &(s, f) in self.undo_floor[undo.1..].iter().rev() {
            self.floor[s as usize] = f;
        }
        self.undo_floor.truncate(undo.1);
        for &(o, m) in self.undo_min[undo.0..].iter().rev() {
            self.min_off[o as usize] = m;
        }
        self.undo_min.truncate(undo.0);
        for &(lo, hi) in &space.ranges[b] {
            for t in &mut self.total[lo as usize..hi as usize] {
                *t += space.sizes[b];
            }
        }
        self.offset[b] = UNPLACED;
        self.min_off[b] = off;
    }

    /// Whether every section of the part can still hold what remains to place in it, given that
    /// nothing is placed below `off` any more. Sections whose floor did not change passed this
    /// test against their floor at the parent node, and their totals only shrank since.
    /// Returns the new `peak` if the placement passes. The tree is only asked when the cached
    /// `peak` (which only overestimates: totals shrink along a path) is not enough.
    fn check(&mut self, part: &Part, off: u64, peak: u64, undo: (usize, usize)) -> Option<u64> {
        let fits =
            self.undo_floor[undo.1..].iter().all(|&(s, _)| self.floor[s as usize] + self.total[s as usize] <= self.cap);
        if !fits {
            return None;
        }
        if off + peak <= self.cap {
            return Some(peak);
        }
        self.work += (part.hi - part.lo) as u64;
        let peak = self.peak(part.lo, part.hi);
        (off + peak <= self.cap).then_some(peak)
    }

    /// The largest sum of unplaced sizes in a section of `[lo, hi)`.
    fn peak(&self, lo: usize, hi: usize) -> u64 {
        self.total[lo..hi].iter().copied().max().unwrap_or(0)
    }
}
