//! Memory planning: assign every buffer of a [`Problem`] a byte offset in one arena.
//!
//! Several planners are available ([`Algorithm`]); [`plan`] runs them all and keeps the smallest
//! arena. Everything is deterministic: the same problem and [`Options`] give the same [`Plan`],
//! byte for byte, on every machine (the search budget counts work, not time).
//!
//! Planners never check their own output; [`crate::verify::verify`] does, independently.

mod greedy;
mod instance;
mod lower_bound;
mod naive;
mod search;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::problem::Problem;
use greedy::Order;
use instance::Instance;

/// The live-sum lower bound of a problem: no valid plan has a smaller arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LowerBound {
    /// Maximum over steps of the bytes the buffers live at that step need: the sum of their sizes
    /// rounded up to the smallest alignment among them, minus the topmost buffer's tail padding
    /// (which is the sum of aligned sizes whenever sizes are multiples of a common alignment).
    pub bytes: u64,
    /// The first step where that maximum occurs (0 for a problem without bytes).
    pub step: u32,
}

/// A planning algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    /// Every buffer in its own region: the upper bound.
    Naive,
    /// Largest first, each at the lowest offset that fits (TFLite Micro's greedy planner).
    GreedyBySize,
    /// Most conflicting first, each at the lowest offset that fits (TVM USMP).
    GreedyByConflicts,
    /// Buffers of the busiest steps first, each at the lowest offset that fits (TFLite GPU).
    GreedyByBreadth,
    /// Branch-and-bound search seeded by several greedy orders, bounded by a work budget.
    Search,
}

impl Algorithm {
    /// All algorithms, in the order [`plan`] tries them and breaks ties.
    pub const ALL: [Algorithm; 5] = [
        Algorithm::Naive,
        Algorithm::GreedyBySize,
        Algorithm::GreedyByConflicts,
        Algorithm::GreedyByBreadth,
        Algorithm::Search,
    ];

    /// The snake_case name, as used in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Naive => "naive",
            Algorithm::GreedyBySize => "greedy_by_size",
            Algorithm::GreedyByConflicts => "greedy_by_conflicts",
            Algorithm::GreedyByBreadth => "greedy_by_breadth",
            Algorithm::Search => "search",
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The result of planning.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// `offsets[i]` is buffer `i`'s byte offset in the arena.
    pub offsets: Vec<u64>,
    /// The arena size: the highest `offset + size` (0 for an empty problem).
    pub arena_bytes: u64,
    /// The algorithm that produced these offsets.
    pub algorithm: Algorithm,
    /// Whether no smaller arena exists: it equals the lower bound, or the search proved it.
    pub optimal: bool,
    /// The problem's lower bound.
    pub lower_bound: LowerBound,
}

/// Planner settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Options {
    /// Budget of the search in deterministic work units (one unit is one unplaced buffer
    /// considered at one search node, or one section or neighbour visited; 2 to 3 ns each). 0
    /// disables the search. The search stops as soon as it reaches the lower bound, so problems
    /// that greedy planners already solve optimally never spend any of it.
    pub search_steps: u64,
    /// The search only runs on problems with at most this many non-empty buffers; larger ones get
    /// the best greedy plan.
    pub search_max_buffers: usize,
}

impl Options {
    /// The default search budget, in work units: under a second on a hard problem.
    pub const DEFAULT_SEARCH_STEPS: u64 = 300_000_000;
    /// The budget of `sramfit plan --search-long` (offline plans): 100 times the default, up to a
    /// minute or two on the hardest known problems (the MiniMalloc instances).
    pub const LONG_SEARCH_STEPS: u64 = 30_000_000_000;
}

impl Default for Options {
    fn default() -> Self {
        Options { search_steps: Self::DEFAULT_SEARCH_STEPS, search_max_buffers: 2_000 }
    }
}

/// The problem's lower bound (see [`LowerBound`]).
pub fn lower_bound(p: &Problem) -> LowerBound {
    lower_bound::lower_bound(p)
}

/// Plans with [`Options::default`]: runs every algorithm and keeps the smallest arena.
pub fn plan(p: &Problem) -> Plan {
    plan_with(p, &Options::default())
}

/// Runs every algorithm and keeps the smallest arena (ties go to the first in [`Algorithm::ALL`]).
pub fn plan_with(p: &Problem, o: &Options) -> Plan {
    let planner = Planner::new(p);
    let mut best: Option<Plan> = None;
    for a in Algorithm::ALL {
        let seed = best.as_ref().map(|b| b.arena_bytes);
        let (candidate, proven) = match a {
            Algorithm::Search => planner.search(o, seed),
            _ => (Some(planner.run(a, o)), false),
        };
        if let Some(c) = candidate.filter(|c| best.as_ref().is_none_or(|b| c.arena_bytes < b.arena_bytes)) {
            best = Some(c);
        }
        if let Some(b) = best.as_mut() {
            b.optimal |= proven;
        }
    }
    best.expect("the naive plan always exists")
}

/// Plans with one specific algorithm.
pub fn plan_using(p: &Problem, a: Algorithm, o: &Options) -> Plan {
    Planner::new(p).run(a, o)
}

/// A compressed problem with its lower bound, shared by the algorithms.
struct Planner {
    inst: Instance,
    lower_bound: LowerBound,
}

impl Planner {
    fn new(p: &Problem) -> Self {
        Planner { inst: Instance::new(p), lower_bound: lower_bound(p) }
    }

    fn make(&self, offsets: Vec<u64>, algorithm: Algorithm, proven: bool) -> Plan {
        let arena_bytes = self.inst.height(&offsets);
        let optimal = proven || arena_bytes == self.lower_bound.bytes;
        Plan { offsets, arena_bytes, algorithm, optimal, lower_bound: self.lower_bound }
    }

    fn greedy(&self, order: Order, algorithm: Algorithm) -> Plan {
        self.make(greedy::greedy(&self.inst, order), algorithm, false)
    }

    /// Runs one algorithm on its own.
    fn run(&self, a: Algorithm, o: &Options) -> Plan {
        match a {
            Algorithm::Naive => self.make(naive::naive(&self.inst), a, false),
            Algorithm::GreedyBySize => self.greedy(Order::Size, a),
            Algorithm::GreedyByConflicts => self.greedy(Order::Conflicts, a),
            Algorithm::GreedyByBreadth => self.greedy(Order::Breadth, a),
            Algorithm::Search => self.search(o, None).0.expect("an unseeded search returns a plan"),
        }
    }

    /// The search, seeded by every greedy order (and `seed_bytes`, an arena already achieved by
    /// the caller). Returns a plan smaller than `seed_bytes` if it found one, and whether the best
    /// of the two is proven optimal.
    fn search(&self, o: &Options, seed_bytes: Option<u64>) -> (Option<Plan>, bool) {
        let mut best: Option<Vec<u64>> = None;
        let mut best_bytes = seed_bytes.unwrap_or(u64::MAX);
        for order in [Order::Size, Order::Conflicts, Order::Breadth, Order::Birth, Order::Area, Order::Length] {
            let offsets = greedy::greedy(&self.inst, order);
            let bytes = self.inst.height(&offsets);
            if bytes < best_bytes {
                (best, best_bytes) = (Some(offsets), bytes);
            }
        }
        let searchable = self.inst.nonzero().count() <= o.search_max_buffers;
        let mut proven = false;
        if searchable && o.search_steps > 0 && best_bytes > self.lower_bound.bytes {
            let improved = search::improve(&self.inst, best_bytes, self.lower_bound.bytes, o.search_steps);
            proven = improved.proven;
            if let Some(offsets) = improved.offsets {
                best = Some(offsets);
            }
        }
        (best.map(|offsets| self.make(offsets, Algorithm::Search, proven)), proven)
    }
}
