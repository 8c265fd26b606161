//! Build-time evaluation of the constant subgraphs tract leaves in the graph.
//!
//! tract folds a node whose inputs are all constant only while its result stays within 4 MiB (or
//! the size of its inputs), so weights a model computes from small constants — low-rank factors
//! multiplied out, `ConstantOfShape` splats in files from older exporters — would otherwise reach the
//! lowering as run-time operators, cost arena bytes and block tract's own rewrites (BatchNorm into
//! Conv, 1x1 Conv into GEMM). sramfit compiles at build time, so whatever is computable then is a
//! weight: this pass evaluates every such node with tract's own kernels and declutters again, until
//! nothing is left to fold. Every constant is charged to the build's [`FoldBudget`] before it is
//! evaluated, so a hostile file cannot make the compiler allocate beyond the user's limits.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::dummy::Dummy;
use tract_onnx::tract_core::ops::konst::Const;
use tract_onnx::tract_core::ops::source::TypedSource;

use super::internal;
use super::limits::FoldBudget;
use crate::error::CompileError;

/// Replaces every node whose inputs are all constant by the constant it evaluates to, and
/// declutters the result; repeats until a round folds nothing. A node tract cannot evaluate out of
/// a plan is left for the lowering to report; one whose output would exceed the budget is a
/// [`CompileError::Limit`].
pub fn fold_constants(mut model: TypedModel, budget: &mut FoldBudget) -> Result<TypedModel, CompileError> {
    loop {
        let mut patch = TypedModelPatch::default();
        let mut folded = 0;
        for node in model.nodes() {
            if !foldable(&model, node).map_err(internal)? {
                continue;
            }
            for o in &node.outputs {
                let shape: Vec<u64> =
                    o.fact.shape.as_concrete().unwrap_or_default().iter().map(|&d| d as u64).collect();
                let bytes = (shape.iter().product::<u64>()).saturating_mul(o.fact.datum_type.size_of() as u64);
                budget.charge(&node.name, &node.op.name(), &shape, bytes)?;
            }
            let inputs: TVec<TValue> = model
                .node_input_facts(node.id)
                .map_err(internal)?
                .iter()
                .filter_map(|f| f.konst.clone())
                .map(|k| k.into_tvalue())
                .collect();
            let Ok(Some(values)) = node.op.eval_out_of_plan(inputs) else { continue };
            for (slot, value) in values.into_iter().enumerate() {
                let name = if slot == 0 { node.name.clone() } else { format!("{}.{slot}", node.name) };
                let wire = patch
                    .wire_node(name, Const::new(value.into_arc_tensor()).map_err(internal)?, &[])
                    .map_err(internal)?[0];
                patch.shunt_outside(&model, OutletId::new(node.id, slot), wire).map_err(internal)?;
            }
            folded += 1;
        }
        if folded == 0 {
            return Ok(model);
        }
        patch.apply(&mut model).map_err(internal)?;
        model = super::declutter::declutter(model).map_err(internal)?;
    }
}

/// A computing node whose inputs are all known constants and whose outputs are not yet, with
/// concrete shapes.
fn foldable(model: &TypedModel, node: &TypedNode) -> TractResult<bool> {
    if node.op_is::<Const>() || node.op_is::<TypedSource>() || node.op_is::<Dummy>() || node.inputs.is_empty() {
        return Ok(false);
    }
    let inputs_known = model.node_input_facts(node.id)?.iter().all(|f| f.konst.is_some());
    let outputs_unknown = node.outputs.iter().all(|o| o.fact.konst.is_none() && o.fact.shape.is_concrete());
    Ok(inputs_known && outputs_unknown)
}
