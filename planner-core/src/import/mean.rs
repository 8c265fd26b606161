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
    let mut fused = 0;
    for m in 0..g.nodes.len() {
        let Some(r) = mean_pair(g, m) else { continue };
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
/// a sum reduction that nothing else reads and that is not a graph output.
fn mean_pair(g: &Graph, m: usize) -> Option<usize> {
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
    let r = g.nodes.iter().position(|n| n.output == sum)?;
    let Op::Reduce(ReduceOp { kind: Reducer::Sum, red_shape, .. }) = &g.nodes[r].op else { return None };
    let count = red_shape.iter().product::<usize>();
    let readers = g.nodes.iter().filter(|n| n.inputs.contains(&sum)).count();
    let same_shape = g.tensors[node.output].shape == g.tensors[sum].shape;
    (count > 1 && c == 1.0 / count as f32 && readers == 1 && same_shape && !g.outputs.contains(&sum)).then_some(r)
}
