//! The caller's buffers are the graph's boundary: inputs are read from them and outputs written into
//! them, with no copy. This pass makes that possible for every graph: where an output's bytes cannot
//! be the caller's buffer (it is a graph input, a constant, or a tensor already bound to another
//! output), it appends a copy node that writes the output.

use crate::ir::{Graph, Node, Op, StridedCopy, TensorId, TensorKind};

/// Follows views back to the tensor that owns the bytes.
pub fn root_of(g: &Graph, mut t: TensorId) -> TensorId {
    while let Some(n) = g.producer(t).map(|i| &g.nodes[i]) {
        if n.op != Op::View {
            break;
        }
        t = n.inputs[0];
    }
    t
}

/// Appends copy nodes so that every graph output is rooted in an activation of its own.
pub fn bind_outputs(g: &mut Graph) {
    let mut claimed: Vec<TensorId> = Vec::new();
    for j in 0..g.outputs.len() {
        let out = g.outputs[j];
        let root = root_of(g, out);
        let needs_copy = !matches!(g.tensors[root].kind, TensorKind::Activation) || claimed.contains(&root);
        if !needs_copy {
            claimed.push(root);
            continue;
        }
        let t = &g.tensors[out];
        let (name, shape) = (format!("{}.copy", t.name), t.shape.clone());
        let strides: Vec<isize> = crate::ir::strides_of(&shape).into_iter().map(|s| s as isize).collect();
        let copy = StridedCopy {
            input: 0,
            shape: shape.clone(),
            src_offset: 0,
            src_strides: strides.clone(),
            dst_offset: 0,
            dst_strides: strides,
        };
        let new = g.add_tensor(name.clone(), shape, TensorKind::Activation);
        g.nodes.push(Node {
            name,
            source_op: "OutputCopy".into(),
            op: Op::Copy(vec![copy]),
            inputs: vec![out],
            output: new,
        });
        g.outputs[j] = new;
        claimed.push(new);
    }
}
