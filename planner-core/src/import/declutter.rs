//! tract's declutter with a bound on its one pass that is quadratic in a node's fan-out.
//!
//! `PushSplitDown` merges identical readers of one value by comparing every pair of its readers,
//! on every optimizer round: a value read by thousands of nodes (a weight shared along a long
//! chain, a shape constant every reshape reads) costs millions of node comparisons per round (a
//! 20,000-convolution chain spent 11 of its 13 s there). Graphs where no value has more than
//! [`MAX_READERS`] readers get tract's declutter unchanged; the others get it without that pass,
//! so identical readers of such a value stay separate nodes (the same results, computed once
//! per reader).

use tract_onnx::prelude::*;
use tract_onnx::tract_core::optim::Optimizer;

/// The most readers of one value for which `PushSplitDown` runs.
pub const MAX_READERS: usize = 64;

/// The name (its `Debug` form) of the pass that is skipped on graphs with a wider fan-out.
const PAIRWISE_PASS: &str = "PushSplitDown";

/// Declutters `model` as tract's `into_decluttered` does, without `PushSplitDown` when some value
/// has more than [`MAX_READERS`] readers.
pub fn declutter(mut model: TypedModel) -> TractResult<TypedModel> {
    let mut optimizer = Optimizer::declutter();
    let fan_out = model.nodes().iter().flat_map(|n| &n.outputs).map(|o| o.successors.len()).max();
    if fan_out.unwrap_or(0) > MAX_READERS {
        optimizer.passes.retain(|p| format!("{p:?}") != PAIRWISE_PASS);
    }
    optimizer.optimize(&mut model)?;
    Ok(model)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_skipped_pass_is_one_of_tracts_declutter_passes() {
        // Pins the name: a tract that renames the pass would otherwise make wide graphs quadratic
        // again without any test failing.
        let names: Vec<String> = Optimizer::declutter().passes.iter().map(|p| format!("{p:?}")).collect();
        assert!(names.iter().any(|n| n == PAIRWISE_PASS), "{names:?}");
    }
}
