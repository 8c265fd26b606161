//! A sum reduction followed by a multiplication by `1 / count` (tract's GlobalAveragePool and
//! ReduceMean: `Reduce<Sum>` then a `Mul` by the reciprocal of the reduced element count) becomes
//! one mean reduction. One step instead of two, and no weight whose value is computed from a
//! shape: a model with a bounded dynamic dimension averaged over that dimension keeps the same
//! weights at every length.

use crate::ir::{Graph, Op};
use crate::ops::binary::{Binary, BinaryOp};
use crate::ops::reduce::{ReduceOp, Reducer};
use crate::ops::view::View;

/// Rewrites every such pair in `g`: the reduction becomes [`Reducer::Mean`] and the multiplication
/// a view of its output. Returns how many were rewritten.
pub fn fuse_mean(g: &mut Graph) -> usize {
    let producers = g.producers();
    let readers = g.reads();
    let mut fused = 0;
    for m in 0..g.nodes.len() {
        let Some(r) = mean_pair(g, m, &producers, &readers) else { continue };
        if let Op::Reduce(ReduceOp { kind, .. }) = &mut g.nodes[r].op {
            *kind = Reducer::Mean;
        }
        let sum = g.nodes[r].output;
        let node = &mut g.nodes[m];
        node.op = Op::View(View);
        node.inputs = vec![sum];
        fused += 1;
    }
    fused
}

/// The reduction node that node `m` multiplies by `1 / count`, if `m` is such a multiplication of
/// a sum reduction that nothing else reads and that is not a graph output (`readers`:
/// [`Graph::reads`], which counts a graph output as a read).
fn mean_pair(g: &Graph, m: usize, producers: &[Option<usize>], readers: &[usize]) -> Option<usize> {
    let node = &g.nodes[m];
    if !matches!(node.op, Op::Binary(BinaryOp { kind: Binary::Mul, .. })) || node.inputs.len() != 2 {
        return None;
    }
    let scalar = |t: usize| match g.tensors[t].data()?.as_f32()? {
        [v] => Some(*v),
        _ => None,
    };
    let (sum, c) = match (scalar(node.inputs[0]), scalar(node.inputs[1])) {
        (None, Some(c)) => (node.inputs[0], c),
        (Some(c), None) => (node.inputs[1], c),
        _ => return None,
    };
    let r = producers[sum]?;
    let Op::Reduce(ReduceOp { kind: Reducer::Sum, red_shape, .. }) = &g.nodes[r].op else { return None };
    let count = red_shape.iter().product::<usize>();
    let same_shape = g.tensors[node.output].shape == g.tensors[sum].shape;
    (count > 1 && c == 1.0 / count as f32 && readers[sum] == 1 && same_shape).then_some(r)
}
