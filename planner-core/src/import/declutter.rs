//! tract's declutter with its pass that merges identical readers of a value replaced by one that
//! compares the readers of values of at most [`MAX_READERS`] readers only and never merges a
//! node twice in a round.
//!
//! tract's `PushSplitDown` merges identical readers of one value (two `Transpose`s of one input
//! become one) by comparing every pair of its readers, on every optimizer round. Two faults of
//! that pass reach sramfit:
//! - a value read by thousands of nodes (a weight shared along a long chain, a shape constant
//!   every reshape reads) costs millions of node comparisons per round (a 20,000-convolution
//!   chain spent 11 of its 13 s there);
//! - within one round it can merge `a` into `b` through one value they both read and `b` into `a`
//!   through another, so that both are removed while their readers still use them: tract 0.23.9
//!   then hands the lowering a `Dummy` in their place (rewrite graph seed 186 of 200: two
//!   `MatMul(x, Transpose(x))` once their transposes were merged).
//!
//! [`MergeIdenticalReaders`] does the same merges, skips values with more than [`MAX_READERS`]
//! readers (their identical readers stay separate nodes: the same results, computed once per
//! reader), and in one round never merges away a node that was merged or kept as another's
//! replacement (the optimizer runs rounds until nothing changes, so chains of merges still
//! complete).

use std::collections::HashSet;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::optim::{Optimizer, OptimizerSession, TypedPass};

/// The most readers of one value whose identical readers are merged.
pub const MAX_READERS: usize = 64;

/// The name (its `Debug` form) of tract's pass that [`MergeIdenticalReaders`] replaces.
const PAIRWISE_PASS: &str = "PushSplitDown";

/// Declutters `model` as tract's `into_decluttered` does, with [`MergeIdenticalReaders`] in place
/// of tract's `PushSplitDown`.
pub fn declutter(mut model: TypedModel) -> TractResult<TypedModel> {
    let mut optimizer = Optimizer::declutter();
    for pass in &mut optimizer.passes {
        if format!("{pass:?}") == PAIRWISE_PASS {
            *pass = Box::new(MergeIdenticalReaders);
        }
    }
    optimizer.optimize(&mut model)?;
    Ok(model)
}

/// Merges the identical readers (same operator, same inputs) of each value of at most
/// [`MAX_READERS`] readers into the first of them, at most once per node and round.
#[derive(Clone, Debug)]
struct MergeIdenticalReaders;

impl TypedPass for MergeIdenticalReaders {
    fn reset(&mut self) -> TractResult<()> {
        Ok(())
    }

    fn next(&mut self, _: &mut OptimizerSession, model: &TypedModel) -> TractResult<Option<TypedModelPatch>> {
        let mut patch = TypedModelPatch::default();
        // This round's merges: nodes removed, and nodes kept in their place (neither is removed).
        let (mut removed, mut kept) = (HashSet::new(), HashSet::new());
        for id in model.eval_order()? {
            for output in &model.node(id).outputs {
                if output.successors.len() > MAX_READERS {
                    continue;
                }
                let mut readers: Vec<usize> = output.successors.iter().map(|s| s.node).collect();
                readers.dedup();
                for (i, &a) in readers.iter().enumerate() {
                    for &b in &readers[i + 1..] {
                        let outputs = model.outputs.contains(&a.into()) && model.outputs.contains(&b.into());
                        let taken = removed.contains(&a) || removed.contains(&b) || kept.contains(&b);
                        if a == b || outputs || taken || !model.node(a).same_as(model.node(b)) {
                            continue;
                        }
                        for slot in 0..model.node(b).outputs.len() {
                            let tap = patch.tap_model(model, OutletId::new(a, slot))?;
                            patch.shunt_outside(model, OutletId::new(b, slot), tap)?;
                        }
                        patch.obliterate(b)?;
                        removed.insert(b);
                        kept.insert(a);
                    }
                }
            }
        }
        Ok(Some(patch).filter(|p| !p.is_empty()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tract_onnx::pb;

    /// A float value of `shape` for a graph's inputs and outputs.
    fn value(name: &str, shape: &[i64]) -> pb::ValueInfoProto {
        use pb::tensor_shape_proto::{dimension::Value, Dimension};
        let dim = shape.iter().map(|&d| Dimension { value: Some(Value::DimValue(d)), ..Default::default() });
        let tensor = pb::type_proto::Tensor { elem_type: 1, shape: Some(pb::TensorShapeProto { dim: dim.collect() }) };
        let r#type = pb::TypeProto { value: Some(pb::type_proto::Value::TensorType(tensor)), ..Default::default() };
        pb::ValueInfoProto { name: name.into(), r#type: Some(r#type), ..Default::default() }
    }

    fn node(op: &str, inputs: &[&str], output: &str) -> pb::NodeProto {
        let transpose =
            pb::AttributeProto { name: "perm".into(), r#type: 7, ints: vec![0, 2, 1], ..Default::default() };
        pb::NodeProto {
            op_type: op.into(),
            name: output.into(),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec![output.into()],
            attribute: if op == "Transpose" { vec![transpose] } else { vec![] },
            ..Default::default()
        }
    }

    #[test]
    fn two_readers_identical_once_their_inputs_are_merged_become_one() {
        // Rewrite graph seed 186's start, reduced: `x * x^T` twice, each with its own transpose.
        // Once the transposes are merged, each product is the other's identical reader through
        // `x` and through the transpose (in the order these outputs give); tract's pass removed
        // both and left a `Dummy` for `m3`.
        let nodes = vec![
            node("Transpose", &["x"], "t1"),
            node("MatMul", &["x", "t1"], "m1"),
            node("Transpose", &["x"], "t3"),
            node("MatMul", &["x", "t3"], "m3"),
            node("Neg", &["t1"], "n"),
            node("Abs", &["m3"], "a"),
        ];
        let graph = pb::GraphProto {
            node: nodes,
            input: vec![value("x", &[2, 4, 7])],
            output: vec![value("n", &[2, 7, 4]), value("a", &[2, 4, 4]), value("m1", &[2, 4, 4])],
            ..Default::default()
        };
        let opset = pb::OperatorSetIdProto { domain: String::new(), version: 13 };
        let proto =
            pb::ModelProto { ir_version: 8, opset_import: vec![opset], graph: Some(graph), ..Default::default() };
        let graph = crate::import::import_proto(&proto, &[]).unwrap_or_else(|e| panic!("{e}"));
        let products = graph.nodes.iter().filter(|n| matches!(n.op, crate::ir::Op::MatMul(_))).count();
        assert_eq!(products, 1, "{:?}", graph.nodes.iter().map(|n| &n.op).collect::<Vec<_>>());
    }

    #[test]
    fn the_replaced_pass_is_one_of_tracts_declutter_passes() {
        // Pins the name: a tract that renames the pass would otherwise bring back both faults
        // without any test failing.
        let names: Vec<String> = Optimizer::declutter().passes.iter().map(|p| format!("{p:?}")).collect();
        assert!(names.iter().any(|n| n == PAIRWISE_PASS), "{names:?}");
    }
}
