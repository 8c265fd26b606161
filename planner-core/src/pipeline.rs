//! One compilation at fixed shapes: IR -> rewrites -> storage and lifetimes -> plan -> verified
//! [`Program`]. Every arrow is a plain data structure kept in the `Program`, so a report, a test or
//! the CLI can look at any stage. Each phase runs inside
//! [`timings::phase`](crate::timings::phase), for `sramfit inspect --timings`. The driver
//! ([`compile`](crate::compile)) and the bounded-dimension compiler ([`dynamic`](crate::dynamic))
//! are built on it.

use crate::boundary;
use crate::error::CompileError;
use crate::ir::Graph;
use crate::liveness::Liveness;
use crate::offline::PlanSource;
use crate::optimize::{self, Applied, Optimizations};
use crate::plan::{self, Plan};
use crate::pools::{PoolSpec, Pools};
use crate::timings::phase;
use crate::verify;
use crate::weights::{self, WeightLayout};

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
    /// With `pools:`, every buffer's pool and each pool's own verified plan; [`Program::plan`] is
    /// then the pools laid end to end ([`crate::pools`]). `None`: one arena.
    pub pools: Option<Pools>,
}

impl Program {
    /// Total arena bytes if every buffer had its own region (the naive plan).
    pub fn naive_bytes(&self) -> u64 {
        self.live.problem.buffers.iter().map(|b| b.size.next_multiple_of(b.align)).sum()
    }
}

/// Imports, plans and verifies the model of `request` at the fixed input shapes `inputs`.
#[cfg(feature = "onnx")]
pub(crate) fn compile_fixed(
    request: &crate::request::Request,
    inputs: &[crate::import::InputShape],
) -> Result<Program, CompileError> {
    let mut graph = crate::import::import_within(&request.path, inputs, &request.limits)?;
    graph.io = request.io;
    graph.weight_align = weights::WeightAlign::for_target(&request.target);
    let names: Vec<&str> = graph.inputs.iter().map(|&t| graph.tensors[t].name.as_str()).collect();
    graph.caller_inputs = request.caller_input_indices(&names)?;
    if !request.pools.is_empty() {
        // A plan file holds a single-arena plan: pools are always planned afresh.
        return compile_pooled(graph, &request.optimizations, &request.pools);
    }
    if !request.use_plan_file {
        return compile_graph(graph, &request.optimizations);
    }
    let model_bytes = std::fs::read(&request.path)
        .map_err(|e| CompileError::Io { path: request.path.clone(), message: e.to_string() })?;
    let plan_file = crate::offline::plan_path(&request.path);
    compile_with(graph, &request.optimizations, |problem| {
        crate::offline::plan_or_load(&model_bytes, &plan_file, problem)
    })
}

/// Runs `f`, turning a panic (inside the ONNX loader) into [`CompileError::InvalidModel`] naming `path`.
#[cfg(feature = "onnx")]
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

/// Optimizes the graph and plans its buffers into the memory pools `pools` ([`crate::pools`]):
/// each pool planned and verified on its own, the combined plan verified like any other.
pub fn compile_pooled(
    graph: Graph,
    optimizations: &Optimizations,
    pools: &[PoolSpec],
) -> Result<Program, CompileError> {
    let prepared = prepare(graph, optimizations)?;
    let access = crate::pools::access_bytes(&prepared.graph, &prepared.live);
    let (plan, pools) = phase("plan", || crate::pools::plan_pools(&prepared.live.problem, &access, pools))?;
    phase("verify", || crate::pools::verify_pools(&prepared.live.problem, &pools))
        .map_err(|message| CompileError::PlanRejected { message })?;
    let mut program = finish(prepared, plan, PlanSource::Planner)?;
    program.pools = Some(pools);
    Ok(program)
}

/// Rewrites the graph, binds outputs, computes liveness, gets a plan from `planner`, and verifies
/// it: every plan, computed or read from a file, passes the same verifier before a `Program` exists.
pub(crate) fn compile_with(
    graph: Graph,
    optimizations: &Optimizations,
    planner: impl FnOnce(&crate::problem::Problem) -> Result<(Plan, PlanSource), CompileError>,
) -> Result<Program, CompileError> {
    let prepared = prepare(graph, optimizations)?;
    let (plan, plan_source) = phase("plan", || planner(&prepared.live.problem))?;
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
    let mut applied = phase("rewrites", || {
        let applied = optimize::rewrite_graph(&mut graph, optimizations);
        boundary::bind_outputs(&mut graph);
        applied
    });
    // The storage passes, once per candidate order of the schedule search.
    let (mut graph, mut live) = phase("liveness", || optimize::schedule(graph, optimizations, &mut applied));
    // In the order and bands chosen: chains run blocked where that costs no memory, so the
    // layout never takes a tiling's place or changes what the report says of tiling.
    if optimizations.blocked_layout {
        applied.blocked_convs = phase("rewrites", || optimize::blocked::block_chains(&mut graph, optimizations));
        if applied.blocked_convs > 0 {
            if optimizations.winograd {
                applied.winograd_convs = phase("rewrites", || optimize::winograd::winograd(&mut graph));
            }
            applied.panel_weights = phase("rewrites", || optimize::pack::pack_panels(&mut graph));
            live = phase("liveness", || optimize::storage(&graph, optimizations));
        }
    }
    phase("verify", || verify::verify_in_place(&graph, &live))
        .map_err(|message| CompileError::PlanRejected { message })?;
    Ok(Prepared { graph, live, optimizations: (*optimizations, applied) })
}

/// Verifies `plan` against the prepared graph's buffers and assembles the [`Program`].
pub(crate) fn finish(prepared: Prepared, plan: Plan, plan_source: PlanSource) -> Result<Program, CompileError> {
    let Prepared { graph, live, optimizations: (optimizations, mut applied) } = prepared;
    phase("verify", || verify::verify(&live.problem, &plan.offsets, plan.arena_bytes, &[])).map_err(|v| {
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
    (applied.overlapped_steps, applied.overlap_saved_bytes) = optimize::overlap::saved(&graph, &live);
    applied.reduced_scratch = (graph.nodes.iter().zip(&live.scratch))
        .filter(|(n, s)| {
            let need = n.op.kind().scratch();
            s.map_or(0, |b| live.problem.buffers[b].size) < (need.preferred * need.dtype.size()) as u64
        })
        .count();
    let weights = weights::layout(&graph, &live);
    Ok(Program { graph, live, plan, plan_source, optimizations: (optimizations, applied), weights, pools: None })
}
