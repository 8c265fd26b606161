//! A segment tree over sections supporting range add and range maximum, both `O(log n)`.

/// Range-add / range-max tree over `u64` values that stay non-negative.
pub(crate) struct MaxTree {
    size: usize,
    /// Maximum of the node's range, excluding pending adds of its ancestors.
    max: Vec<i64>,
    /// Pending add for the whole node range.
    add: Vec<i64>,
}

impl MaxTree {
    /// A tree holding `values`.
    pub fn new(values: &[u64]) -> Self {
        let size = values.len().next_power_of_two().max(1);
        let mut max = vec![i64::MIN / 2; 2 * size];
        for (i, &v) in values.iter().enumerate() {
            max[size + i] = v as i64;
        }
        for i in (1..size).rev() {
            max[i] = max[2 * i].max(max[2 * i + 1]);
        }
        MaxTree {
            size,
            max,
            add: vec![0; 2 * size],
        }
    }

    /// Adds `delta` to every value in `[lo, hi)`.
    pub fn add(&mut self, lo: usize, hi: usize, delta: i64) {
        self.add_rec(1, 0, self.size, lo, hi, delta);
    }

    fn add_rec(&mut self, node: usize, nlo: usize, nhi: usize, lo: usize, hi: usize, delta: i64) {
        if hi <= nlo || nhi <= lo {
            return;
        }
        if lo <= nlo && nhi <= hi {
            self.max[node] += delta;
            self.add[node] += delta;
            return;
        }
        let mid = (nlo + nhi) / 2;
        self.add_rec(2 * node, nlo, mid, lo, hi, delta);
        self.add_rec(2 * node + 1, mid, nhi, lo, hi, delta);
        self.max[node] = self.max[2 * node].max(self.max[2 * node + 1]) + self.add[node];
    }

    /// The maximum of the values in `[lo, hi)` (`lo < hi`).
    pub fn max(&self, lo: usize, hi: usize) -> u64 {
        self.max_rec(1, 0, self.size, lo, hi).max(0) as u64
    }

    fn max_rec(&self, node: usize, nlo: usize, nhi: usize, lo: usize, hi: usize) -> i64 {
        if hi <= nlo || nhi <= lo {
            return i64::MIN / 2;
        }
        if lo <= nlo && nhi <= hi {
            return self.max[node];
        }
        let mid = (nlo + nhi) / 2;
        let inner = self.max_rec(2 * node, nlo, mid, lo, hi).max(self.max_rec(
            2 * node + 1,
            mid,
            nhi,
            lo,
            hi,
        ));
        inner + self.add[node]
    }
}
