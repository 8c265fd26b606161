//! Build-time evaluation of the constant subgraphs tract leaves in the graph.
//!
//! tract folds a node whose inputs are all constant only while its result stays within 4 MiB (or
//! the size of its inputs), so weights a model computes from small constants — low-rank factors
//! multiplied out, `ConstantOfShape` splats in files from older exporters — would otherwise reach the
//! lowering as run-time operators, cost arena bytes and block tract's own rewrites (BatchNorm into
//! Conv, 1x1 Conv into GEMM). sramfit compiles at build time, so whatever is computable then is a
//! weight: this pass evaluates every such node with tract's own kernels and declutters again, until
//! nothing is left to fold.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::dummy::Dummy;
use tract_onnx::tract_core::ops::konst::Const;
use tract_onnx::tract_core::ops::source::TypedSource;

/// The largest constant the pass materialises: beyond it a model is not a microcontroller model, and
/// a hostile file must not make the compiler allocate without bound. A larger computed constant
/// stays a node, which the lowering then reports.
const MAX_FOLD_BYTES: i64 = 1 << 31;

/// Replaces every node whose inputs are all constant by the constant it evaluates to, and
/// declutters the result; repeats until a round folds nothing. A node tract cannot evaluate out of
/// a plan is left for the lowering to report.
pub fn fold_constants(mut model: TypedModel) -> TractResult<TypedModel> {
    loop {
        let mut patch = TypedModelPatch::default();
        let mut folded = 0;
        for node in model.nodes() {
            if !foldable(&model, node)? {
                continue;
            }
            let inputs: TVec<TValue> = model
                .node_input_facts(node.id)?
                .iter()
                .filter_map(|f| f.konst.clone())
                .map(|k| k.into_tvalue())
                .collect();
            let Ok(Some(values)) = node.op.eval_out_of_plan(inputs) else { continue };
            for (slot, value) in values.into_iter().enumerate() {
                let name = if slot == 0 { node.name.clone() } else { format!("{}.{slot}", node.name) };
                let wire = patch.wire_node(name, Const::new(value.into_arc_tensor())?, &[])?[0];
                patch.shunt_outside(&model, OutletId::new(node.id, slot), wire)?;
            }
            folded += 1;
        }
        if folded == 0 {
            return Ok(model);
        }
        patch.apply(&mut model)?;
        model = model.into_decluttered()?;
    }
}

/// A computing node whose inputs are all known constants and whose outputs are not yet (and not
/// larger than [`MAX_FOLD_BYTES`] together).
fn foldable(model: &TypedModel, node: &TypedNode) -> TractResult<bool> {
    if node.op_is::<Const>() || node.op_is::<TypedSource>() || node.op_is::<Dummy>() || node.inputs.is_empty() {
        return Ok(false);
    }
    let inputs_known = model.node_input_facts(node.id)?.iter().all(|f| f.konst.is_some());
    let outputs_unknown = node.outputs.iter().all(|o| o.fact.konst.is_none());
    let bytes =
        node.outputs.iter().map(|o| o.fact.mem_size().as_i64().unwrap_or(i64::MAX)).try_fold(0i64, i64::checked_add);
    Ok(inputs_known && outputs_unknown && bytes.is_some_and(|b| b <= MAX_FOLD_BYTES))
}
