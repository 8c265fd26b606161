//! The driver: model file -> IR -> storage and lifetimes -> plan -> verified [`Program`].
//!
//! Every arrow is a plain data structure kept in the `Program`, so a report, a test or the CLI can
//! look at any stage.

use std::path::PathBuf;

use crate::boundary;
use crate::codegen::weights::{self, WeightLayout};
use crate::error::CompileError;
use crate::ir::Graph;
use crate::liveness::{self, Liveness};
use crate::plan::{self, Plan};
use crate::verify;

/// What to compile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelSpec {
    /// The ONNX file (already resolved against the user's crate directory).
    pub path: PathBuf,
    /// Shapes fixing the model's symbolic input dimensions.
    #[cfg(feature = "onnx")]
    pub inputs: Vec<crate::import::InputShape>,
}

/// A model ready for code generation: every stage's result, the plan verified.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The graph, with output copies added where the caller's buffers cannot be written directly.
    pub graph: Graph,
    /// Storage and lifetimes.
    pub live: Liveness,
    /// The arena plan, already checked by [`verify::verify`].
    pub plan: Plan,
    /// The weight blob layout.
    pub weights: WeightLayout,
}

impl Program {
    /// Total arena bytes if every buffer had its own region (the naive plan).
    pub fn naive_bytes(&self) -> u64 {
        self.live.problem.buffers.iter().map(|b| b.size.next_multiple_of(b.align)).sum()
    }
}

/// Imports, plans and verifies an ONNX model.
#[cfg(feature = "onnx")]
pub fn compile_model(spec: &ModelSpec) -> Result<Program, CompileError> {
    let graph = crate::import::import(&spec.path, &spec.inputs)?;
    compile_graph(graph)
}

/// Plans and verifies a graph (built by the importer or by hand).
pub fn compile_graph(mut graph: Graph) -> Result<Program, CompileError> {
    boundary::bind_outputs(&mut graph);
    let live = liveness::analyze(&graph);
    let plan = plan::plan(&live.problem);
    verify::verify(&live.problem, &plan.offsets, plan.arena_bytes, &[])
        .map_err(|v| CompileError::PlanRejected { message: v.describe(&live.problem) })?;
    let weights = weights::layout(&graph, &live);
    Ok(Program { graph, live, plan, weights })
}
