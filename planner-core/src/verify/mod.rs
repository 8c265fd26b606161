//! The independent plan verifier.
//!
//! It shares no code with the planners: it sweeps the schedule step by step, keeping the byte
//! ranges of the live buffers in an ordered map, and checks each range that becomes live against
//! its neighbours only. That costs `O((n + s) log n)` for `n` buffers with `s` spans in total
//! (plus the explicitly legal overlaps it walks past), so it can check every plan of every model.

mod storage;

pub use storage::verify_in_place;

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::problem::Problem;

/// Why a plan is invalid.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Violation {
    /// Buffers `a < b` are live together at `step` and share at least one byte.
    Overlap {
        /// The buffer with the smaller id.
        a: usize,
        /// The buffer with the larger id.
        b: usize,
        /// A step where both are live.
        step: u32,
    },
    /// A buffer's offset is not a multiple of its alignment.
    Misaligned {
        /// The buffer.
        buffer: usize,
        /// Its offset.
        offset: u64,
        /// Its alignment.
        align: u64,
    },
    /// A buffer ends after the arena.
    OutOfArena {
        /// The buffer.
        buffer: usize,
        /// `offset + size` (saturated at `u64::MAX`).
        end: u64,
        /// The arena size.
        arena_bytes: u64,
    },
    /// The plan does not have one offset per buffer.
    WrongCount {
        /// Number of buffers in the problem.
        expected: usize,
        /// Number of offsets in the plan.
        got: usize,
    },
}

impl Violation {
    /// A one-line description naming the buffers by their [`crate::problem::Buffer::name`].
    pub fn describe(&self, p: &Problem) -> String {
        let name = |i: usize| match p.buffers.get(i) {
            Some(b) => format!("`{}` (#{i})", b.name),
            None => format!("#{i}"),
        };
        match *self {
            Violation::Overlap { a, b, step } => {
                format!("buffers {} and {} are both live at step {step} and share bytes", name(a), name(b))
            }
            Violation::Misaligned { buffer, offset, align } => {
                format!("buffer {} at offset {offset} is not aligned to {align}", name(buffer))
            }
            Violation::OutOfArena { buffer, end, arena_bytes } => {
                format!("buffer {} ends at {end}, past the arena of {arena_bytes} bytes", name(buffer))
            }
            Violation::WrongCount { .. } => self.to_string(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Overlap { a, b, step } => {
                write!(f, "buffers #{a} and #{b} are both live at step {step} and share bytes")
            }
            Violation::Misaligned { buffer, offset, align } => {
                write!(f, "buffer #{buffer} at offset {offset} is not aligned to {align}")
            }
            Violation::OutOfArena { buffer, end, arena_bytes } => {
                write!(f, "buffer #{buffer} ends at {end}, past the arena of {arena_bytes} bytes")
            }
            Violation::WrongCount { expected, got } => {
                write!(f, "the plan has {got} offsets for {expected} buffers")
            }
        }
    }
}

impl std::error::Error for Violation {}

/// Checks a plan: one offset per buffer, every offset aligned, every buffer inside the arena, and
/// any two buffers live at a common step byte-disjoint unless their pair is in `legal_overlaps`
/// (unordered pairs of buffer ids). Zero-sized buffers never overlap anything. Returns the first
/// violation found (checks run in that order; overlaps are reported at the earliest step).
pub fn verify(
    p: &Problem,
    offsets: &[u64],
    arena_bytes: u64,
    legal_overlaps: &[(usize, usize)],
) -> Result<(), Violation> {
    if offsets.len() != p.buffers.len() {
        return Err(Violation::WrongCount { expected: p.buffers.len(), got: offsets.len() });
    }
    for (buffer, (b, &offset)) in p.buffers.iter().zip(offsets).enumerate() {
        let align = b.align.max(1);
        if offset % align != 0 {
            return Err(Violation::Misaligned { buffer, offset, align });
        }
        let end = offset.saturating_add(b.size);
        if end > arena_bytes || (end == u64::MAX && b.size > 0) {
            return Err(Violation::OutOfArena { buffer, end, arena_bytes });
        }
    }
    let mut legal: Vec<(usize, usize)> = legal_overlaps.iter().map(|&(a, b)| (a.min(b), a.max(b))).collect();
    legal.sort_unstable();
    let mut has_legal = vec![false; p.buffers.len()];
    for &(a, b) in &legal {
        for i in [a, b] {
            if let Some(h) = has_legal.get_mut(i) {
                *h = true;
            }
        }
    }
    let is_legal = |a: usize, b: usize| legal.binary_search(&(a.min(b), a.max(b))).is_ok();

    // Events: (step, 0 = a span ended before this step / 1 = a span starts, buffer).
    let mut events: Vec<(u64, u8, usize)> = Vec::new();
    for (i, b) in p.buffers.iter().enumerate().filter(|(_, b)| b.size > 0) {
        for s in b.lifetime.spans() {
            events.push((u64::from(s.first), 1, i));
            events.push((u64::from(s.last) + 1, 0, i));
        }
    }
    events.sort_unstable();
    // Live byte ranges keyed by (offset, buffer) -> end.
    let mut live: BTreeMap<(u64, usize), u64> = BTreeMap::new();
    for (step, kind, b) in events {
        let (start, end) = (offsets[b], offsets[b] + p.buffers[b].size);
        if kind == 0 {
            live.remove(&(start, b));
            continue;
        }
        let clash = |other: usize| Violation::Overlap { a: b.min(other), b: b.max(other), step: step as u32 };
        // Ranges starting inside [start, end) overlap it.
        for (&(_, other), _) in live.range((start, 0)..(end, 0)) {
            if !is_legal(b, other) {
                return Err(clash(other));
            }
        }
        // Ranges starting before it overlap it if they reach past `start`. Once one does not, no
        // earlier one can either unless it legally overlaps that one.
        for (&(_, other), &other_end) in live.range(..(start, 0)).rev() {
            if other_end > start {
                if !is_legal(b, other) {
                    return Err(clash(other));
                }
            } else if !has_legal[other] {
                break;
            }
        }
        live.insert((start, b), end);
    }
    Ok(())
}
