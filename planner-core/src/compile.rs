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
use crate::offline::PlanSource;
use crate::optimize::{self, exact_schedule, schedule, Applied, Optimizations};
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
    /// Use the offline plan beside the model (`MODEL.plan.json`, see [`crate::offline`]) when it
    /// matches. `model!` and `sramfit-build` do; `sramfit plan`, which writes those files, does not.
    pub use_plan_file: bool,
    /// Graph rewrites to run before planning (all on by default).
    pub optimizations: Optimizations,
    /// Where the graph inputs and outputs live (the caller's buffers by default).
    pub io: crate::ir::Io,
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
    /// Whether the plan was computed now or read from a plan file.
    pub plan_source: PlanSource,
    /// The rewrites that ran, and what they did.
    pub optimizations: (Optimizations, Applied),
    /// The weight blob layout.
    pub weights: WeightLayout,
}

impl Program {
    /// Total arena bytes if every buffer had its own region (the naive plan).
    pub fn naive_bytes(&self) -> u64 {
        self.live.problem.buffers.iter().map(|b| b.size.next_multiple_of(b.align)).sum()
    }
}

/// Imports, plans and verifies an ONNX model. A panic inside a dependency (the ONNX loader) is
/// caught and returned as [`CompileError::InvalidModel`] naming the file, so that neither the
/// macro nor a build script crashes on a hostile model.
#[cfg(feature = "onnx")]
pub fn compile_model(spec: &ModelSpec) -> Result<Program, CompileError> {
    let compile = || {
        let mut graph = crate::import::import(&spec.path, &spec.inputs)?;
        graph.io = spec.io;
        if !spec.use_plan_file {
            return compile_graph(graph, &spec.optimizations);
        }
        let model_bytes = std::fs::read(&spec.path)
            .map_err(|e| CompileError::Io { path: spec.path.clone(), message: e.to_string() })?;
        let plan_file = crate::offline::plan_path(&spec.path);
        compile_with(graph, &spec.optimizations, |problem| {
            crate::offline::plan_or_load(&model_bytes, &plan_file, problem)
        })
    };
    catching(&spec.path, compile)
}

/// Runs `f`, turning a panic (inside the ONNX loader) into [`CompileError::InvalidModel`] naming `path`.
pub(crate) fn catching<T>(
    path: &std::path::Path,
    f: impl FnOnce() -> Result<T, CompileError>,
) -> Result<T, CompileError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".into());
        Err(CompileError::InvalidModel { path: path.to_owned(), message: format!("the ONNX loader panicked: {what}") })
    })
}

/// Optimizes, plans and verifies a graph (built by the importer or by hand).
pub fn compile_graph(graph: Graph, optimizations: &Optimizations) -> Result<Program, CompileError> {
    compile_with(graph, optimizations, |problem| Ok((plan::plan(problem), PlanSource::Planner)))
}

/// Orders to try instead of ONNX's: the greedy one, and the exact search's when it finishes
/// within its budget (the flag).
fn schedule_candidates(graph: &Graph, optimizations: &Optimizations) -> (Vec<Vec<usize>>, bool) {
    let greedy = schedule::memory_aware_order(graph);
    let onnx: Vec<usize> = (0..graph.nodes.len()).collect();
    let bound = exact_schedule::peak_of(graph, optimizations, &onnx).min(exact_schedule::peak_of(
        graph,
        optimizations,
        &greedy,
    ));
    match exact_schedule::exact_order(graph, optimizations, bound) {
        Some(exact) => (vec![greedy, exact.order], true),
        None => (vec![greedy], false),
    }
}

/// Liveness of `graph`. Concat elision makes a concatenation's buffer live from its first input
/// on, which can raise the peak when that input is computed long before the others (found by the
/// random graphs of `safety/tests/rewrite_graphs.rs`): it is kept only when its lower bound is not
/// larger than without it.
fn analyze(graph: &Graph, optimizations: &Optimizations) -> Liveness {
    let live = liveness::analyze(graph, optimizations);
    if !optimizations.elide_concat || !live.elided.contains(&true) {
        return live;
    }
    let copying = liveness::analyze(graph, &Optimizations { elide_concat: false, ..*optimizations });
    match plan::lower_bound(&copying.problem).bytes < plan::lower_bound(&live.problem).bytes {
        true => copying,
        false => live,
    }
}

/// Rewrites the graph, binds outputs, computes liveness, gets a plan from `planner`, and verifies
/// it: every plan, computed or read from a file, passes the same verifier before a `Program` exists.
pub(crate) fn compile_with(
    graph: Graph,
    optimizations: &Optimizations,
    planner: impl FnOnce(&crate::problem::Problem) -> Result<(Plan, PlanSource), CompileError>,
) -> Result<Program, CompileError> {
    let prepared = prepare(graph, optimizations)?;
    let (plan, plan_source) = planner(&prepared.live.problem)?;
    finish(prepared, plan, plan_source)
}

/// A graph rewritten and analysed, waiting for its plan.
#[derive(Clone)]
pub(crate) struct Prepared {
    pub(crate) graph: Graph,
    pub(crate) live: Liveness,
    pub(crate) optimizations: (Optimizations, Applied),
}

/// Rewrites the graph, binds outputs and computes liveness (checking the in-place decisions).
pub(crate) fn prepare(mut graph: Graph, optimizations: &Optimizations) -> Result<Prepared, CompileError> {
    let mut applied = optimize::optimize(&mut graph, optimizations);
    boundary::bind_outputs(&mut graph);
    let mut live = analyze(&graph, optimizations);
    if optimizations.schedule {
        let before = plan::lower_bound(&live.problem).bytes;
        let (orders, exact) = schedule_candidates(&graph, optimizations);
        let mut best = before;
        // Every order indexes the nodes as imported: reorder that graph, not the best one so far.
        let imported = graph.clone();
        for order in orders {
            let mut reordered = imported.clone();
            schedule::reorder(&mut reordered, &order);
            let reordered_live = analyze(&reordered, optimizations);
            let bound = plan::lower_bound(&reordered_live.problem).bytes;
            if bound < best {
                (graph, live, best) = (reordered, reordered_live, bound);
            }
        }
        applied.schedule_lower_bounds = Some((before, best));
        applied.exact_schedule = exact;
    }
    verify::verify_in_place(&graph, &live).map_err(|message| CompileError::PlanRejected { message })?;
    Ok(Prepared { graph, live, optimizations: (*optimizations, applied) })
}

/// Verifies `plan` against the prepared graph's buffers and assembles the [`Program`].
pub(crate) fn finish(prepared: Prepared, plan: Plan, plan_source: PlanSource) -> Result<Program, CompileError> {
    let Prepared { graph, live, optimizations: (optimizations, mut applied) } = prepared;
    verify::verify(&live.problem, &plan.offsets, plan.arena_bytes, &[]).map_err(|v| {
        let message = v.describe(&live.problem);
        match &plan_source {
            PlanSource::File(path) => CompileError::PlanFile {
                path: path.clone(),
                message: format!("its plan fails verification: {message}"),
            },
            _ => CompileError::PlanRejected { message },
        }
    })?;
    applied.in_place_steps = live.in_place.iter().flatten().count();
    applied.elided_concats = live.elided.iter().filter(|&&e| e).count();
    applied.reduced_scratch = (graph.nodes.iter().zip(&live.scratch))
        .filter(|(n, s)| {
            let need = n.op.kind().scratch();
            s.map_or(0, |b| live.problem.buffers[b].size) < (need.preferred * need.dtype.size()) as u64
        })
        .count();
    let weights = weights::layout(&graph, &live);
    Ok(Program { graph, live, plan, plan_source, optimizations: (optimizations, applied), weights })
}
