//! The offset-assignment problem: buffers with sizes, alignments and lifetimes over schedule steps.
//!
//! This is the data structure every planner consumes and the verifier checks. It knows nothing about
//! graphs or ONNX: [`crate::liveness`] builds one from a scheduled graph, and [`crate::csv`] reads one
//! from a MiniMalloc instance.

use serde::{Deserialize, Serialize};

/// A closed interval of schedule steps `[first, last]` (both inclusive).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Span {
    /// First step at which the buffer must hold its data (the step that writes it).
    pub first: u32,
    /// Last step at which the buffer must hold its data (the step that reads it last), inclusive.
    pub last: u32,
}

impl Span {
    /// A span from `first` to `last`, both inclusive. Panics in debug builds if `last < first`.
    pub fn new(first: u32, last: u32) -> Self {
        debug_assert!(first <= last, "span {first}..={last} is empty");
        Span { first, last }
    }

    /// Whether the two spans share at least one step.
    pub fn overlaps(&self, other: &Span) -> bool {
        self.first <= other.last && other.first <= self.last
    }
}

/// The steps at which a buffer is live: one or more disjoint spans in increasing order.
///
/// Most buffers have a single span. Several spans ("holes") let a buffer's bytes be lent to others
/// while it is not needed; every planner and the verifier honour them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Lifetime {
    spans: Vec<Span>,
}

impl Lifetime {
    /// A lifetime of one span `[first, last]`, inclusive.
    pub fn new(first: u32, last: u32) -> Self {
        Lifetime { spans: vec![Span::new(first, last)] }
    }

    /// A lifetime made of several spans. They are sorted and merged where they touch or overlap.
    /// Returns `None` if `spans` is empty.
    pub fn from_spans(mut spans: Vec<Span>) -> Option<Self> {
        if spans.is_empty() {
            return None;
        }
        spans.sort();
        let mut merged: Vec<Span> = Vec::with_capacity(spans.len());
        for s in spans {
            match merged.last_mut() {
                Some(m) if s.first <= m.last.saturating_add(1) => m.last = m.last.max(s.last),
                _ => merged.push(s),
            }
        }
        Some(Lifetime { spans: merged })
    }

    /// The spans, sorted, disjoint and non-adjacent.
    pub fn spans(&self) -> &[Span] {
        &self.spans
    }

    /// The first live step.
    pub fn first(&self) -> u32 {
        self.spans[0].first
    }

    /// The last live step (inclusive).
    pub fn last(&self) -> u32 {
        self.spans[self.spans.len() - 1].last
    }

    /// Whether the two lifetimes share at least one step.
    pub fn overlaps(&self, other: &Lifetime) -> bool {
        let (mut i, mut j) = (0, 0);
        while i < self.spans.len() && j < other.spans.len() {
            let (a, b) = (&self.spans[i], &other.spans[j]);
            if a.overlaps(b) {
                return true;
            }
            if a.last < b.last {
                i += 1;
            } else {
                j += 1;
            }
        }
        false
    }

    /// Whether the buffer is live at `step`.
    pub fn contains(&self, step: u32) -> bool {
        self.spans.iter().any(|s| s.first <= step && step <= s.last)
    }
}

/// One buffer to place.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Buffer {
    /// Caller's name for the buffer (a tensor name, a CSV id). Not used by planners except in messages.
    pub name: String,
    /// Size in bytes. Zero-sized buffers are legal and occupy no bytes.
    pub size: u64,
    /// Required alignment of the offset, in bytes (a power of two, at least 1).
    pub align: u64,
    /// When the buffer must hold its data.
    pub lifetime: Lifetime,
}

/// A set of buffers to place in one arena. Buffer `i` is identified by its index `i`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Problem {
    /// The buffers; the index is the buffer id used by [`crate::plan::Plan::offsets`].
    pub buffers: Vec<Buffer>,
}

impl Problem {
    /// For each step `0..steps`, the sum of `size(buffer)` over the buffers live there (steps past
    /// `steps` are ignored). Linear in the buffers' spans and the steps.
    pub fn live_bytes_per_step(&self, steps: usize, size: impl Fn(&Buffer) -> u64) -> Vec<u64> {
        // Differences at span boundaries, then a running sum.
        let mut delta = vec![0i128; steps + 1];
        for b in &self.buffers {
            let bytes = size(b) as i128;
            for s in b.lifetime.spans() {
                let first = s.first as usize;
                if first < steps {
                    delta[first] += bytes;
                    delta[(s.last as usize + 1).min(steps)] -= bytes;
                }
            }
        }
        let mut live = 0i128;
        delta[..steps]
            .iter()
            .map(|d| {
                live += d;
                live as u64
            })
            .collect()
    }
}
