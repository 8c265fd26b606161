//! Cumulative sum along one axis (ONNX CumSum), on an `[outer, len, inner]` view of the tensor.

/// Geometry and options of a cumulative sum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CumSum {
    /// Product of the axes before the summed axis.
    pub outer: usize,
    /// Extent of the summed axis.
    pub len: usize,
    /// Product of the axes after it.
    pub inner: usize,
    /// Each output excludes its own input (the first output is 0).
    pub exclusive: bool,
    /// Sum from the end of the axis towards its start.
    pub reverse: bool,
}

/// Calls `visit(position, running sum)` for every element, line by line along the axis in
/// summation order, each line's sum starting at 0.
fn walk(p: &CumSum, mut visit: impl FnMut(usize, &mut f32)) {
    let (len, inner) = (p.len, p.inner);
    for o in 0..p.outer {
        let base = o * len * inner;
        for j in 0..inner {
            let mut acc = 0.0f32;
            for i in 0..len {
                let i = if p.reverse { len - 1 - i } else { i };
                visit(base + i * inner + j, &mut acc);
            }
        }
    }
}

/// The output of one element whose input is `v`, given the line's running sum (updated).
#[inline(always)]
fn next(exclusive: bool, acc: &mut f32, v: f32) -> f32 {
    let before = *acc;
    *acc += v;
    if exclusive {
        before
    } else {
        *acc
    }
}

/// `y` = the cumulative sum of `x` along the axis: each output is the sum of the inputs before it
/// in axis order (or reversed) and, unless `exclusive`, itself, added one at a time from the first.
pub fn cumsum(p: &CumSum, x: &[f32], y: &mut [f32]) {
    walk(p, |at, acc| y[at] = next(p.exclusive, acc, x[at]));
}

/// [`cumsum`] with the output written over its input: each element is read before its position is
/// written, so the bits are [`cumsum`]'s.
pub fn cumsum_in_place(p: &CumSum, xy: &mut [f32]) {
    walk(p, |at, acc| xy[at] = next(p.exclusive, acc, xy[at]));
}
