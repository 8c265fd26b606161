//! The caller's buffers are the graph's boundary: inputs are read from them and outputs written into
//! them, with no copy. This pass makes that possible for every graph: where an output's bytes cannot
//! be the caller's buffer (it is a graph input, a constant, or a tensor already bound to another
//! output), it appends a copy node that writes the output.

use crate::ir::{Graph, Node, Op, TensorId, TensorKind};
use crate::ops::copy::{Copies, StridedCopy};

/// Appends copy nodes so that every graph output is rooted in an activation of its own.
pub fn bind_outputs(g: &mut Graph) {
    let roots = g.view_roots();
    let mut claimed: Vec<TensorId> = Vec::new();
    for j in 0..g.outputs.len() {
        let out = g.outputs[j];
        let root = roots[out];
        let needs_copy = !matches!(g.tensors[root].kind, TensorKind::Activation) || claimed.contains(&root);
        if !needs_copy {
            claimed.push(root);
            continue;
        }
        let t = &g.tensors[out];
        let (name, shape, dtype) = (format!("{}.copy", t.name), t.shape.clone(), t.dtype);
        let copy = StridedCopy::whole(0, &shape);
        let new = g.add_tensor(name.clone(), shape, dtype, TensorKind::Activation);
        g.tensors[new].quant = g.tensors[out].quant.clone();
        g.nodes.push(Node {
            name,
            source_op: "OutputCopy".into(),
            op: Op::Copy(Copies(vec![copy])),
            inputs: vec![out],
            output: new,
        });
        g.outputs[j] = new;
        claimed.push(new);
    }
}
