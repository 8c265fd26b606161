//! A planner-side view of a [`Problem`]: time compressed to sections between event points.
//!
//! The time axis is cut at every span start and every step after a span end; each piece is a
//! *section*, inside which the set of live buffers is constant. Planners work on section indices
//! only, so a schedule with steps up to `u32::MAX` costs memory proportional to the buffer count.

use crate::problem::Problem;

/// Compressed problem. Zero-sized buffers have no ranges: they occupy no bytes and conflict with
/// nothing.
pub(crate) struct Instance {
    /// Size in bytes of each buffer.
    pub sizes: Vec<u64>,
    /// Alignment of each buffer (at least 1).
    pub aligns: Vec<u64>,
    /// Live steps of each buffer (the sum of its span lengths).
    pub live_steps: Vec<u64>,
    /// First live step of each buffer.
    pub first_step: Vec<u32>,
    /// Half-open section ranges `[lo, hi)` where each buffer is live, sorted and disjoint.
    pub ranges: Vec<Vec<(u32, u32)>>,
    /// Number of sections.
    pub sections: usize,
}

impl Instance {
    /// Compresses `p`.
    pub fn new(p: &Problem) -> Self {
        let mut points: Vec<u64> = Vec::new();
        for b in p.buffers.iter().filter(|b| b.size > 0) {
            for s in b.lifetime.spans() {
                points.push(u64::from(s.first));
                points.push(u64::from(s.last) + 1);
            }
        }
        points.sort_unstable();
        points.dedup();
        let index = |t: u64| points.binary_search(&t).expect("event point") as u32;
        let ranges = p
            .buffers
            .iter()
            .map(|b| {
                if b.size == 0 {
                    return Vec::new();
                }
                let spans = b.lifetime.spans().iter();
                spans.map(|s| (index(u64::from(s.first)), index(u64::from(s.last) + 1))).collect()
            })
            .collect();
        Instance {
            sizes: p.buffers.iter().map(|b| b.size).collect(),
            aligns: p.buffers.iter().map(|b| b.align.max(1)).collect(),
            live_steps: p
                .buffers
                .iter()
                .map(|b| b.lifetime.spans().iter().map(|s| u64::from(s.last - s.first) + 1).sum())
                .collect(),
            first_step: p.buffers.iter().map(|b| b.lifetime.first()).collect(),
            ranges,
            sections: points.len().saturating_sub(1),
        }
    }

    /// Number of buffers.
    pub fn len(&self) -> usize {
        self.sizes.len()
    }

    /// Ids of the buffers that occupy bytes.
    pub fn nonzero(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.len()).filter(|&b| self.sizes[b] > 0)
    }

    /// The smallest section range `[lo, hi)` containing all of the buffer's ranges.
    pub fn envelope(&self, b: usize) -> (u32, u32) {
        let r = &self.ranges[b];
        (r[0].0, r[r.len() - 1].1)
    }

    /// Whether two buffers are live in a common section.
    pub fn conflict(&self, a: usize, b: usize) -> bool {
        let (ra, rb) = (&self.ranges[a], &self.ranges[b]);
        let (mut i, mut j) = (0, 0);
        while i < ra.len() && j < rb.len() {
            if ra[i].0 < rb[j].1 && rb[j].0 < ra[i].1 {
                return true;
            }
            if ra[i].1 < rb[j].1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        false
    }

    /// Sum of the sizes of the buffers live in each section.
    pub fn section_totals(&self) -> Vec<u64> {
        let mut diff = vec![0i128; self.sections + 1];
        for b in self.nonzero() {
            for &(lo, hi) in &self.ranges[b] {
                diff[lo as usize] += i128::from(self.sizes[b]);
                diff[hi as usize] -= i128::from(self.sizes[b]);
            }
        }
        let mut acc = 0i128;
        diff[..self.sections]
            .iter()
            .map(|d| {
                acc += d;
                acc as u64
            })
            .collect()
    }

    /// The arena size of an assignment: the highest end of any buffer (0 if there is none).
    pub fn height(&self, offsets: &[u64]) -> u64 {
        offsets.iter().zip(&self.sizes).map(|(o, s)| o + s).max().unwrap_or(0)
    }
}

/// Rounds `x` up to a multiple of `align` (at least 1).
pub(crate) fn align_up(x: u64, align: u64) -> u64 {
    x.div_ceil(align) * align
}
