//! The driver: model file -> IR -> storage and lifetimes -> plan -> verified [`Program`].
//!
//! Every front end (`model!`, `sramfit-build`, `sramfit inspect` / `plan`) builds one
//! [`Request`](crate::request::Request) and calls [`compile_model`], which returns the compiled
//! model ([`Compiled`]: fixed shapes, or a bounded dimension) or one [`CompileError`]; budgets,
//! limits and panics of the ONNX loader are handled here, once. Every arrow is a plain data
//! structure kept in the `Program`, so a report, a test or the CLI can look at any stage. Each
//! phase runs inside [`timings::phase`](crate::timings::phase), for `sramfit inspect --timings`.

use crate::boundary;
use crate::codegen::weights::{self, WeightLayout};
use crate::error::CompileError;
use crate::ir::Graph;
use crate::liveness::{self, Liveness};
use crate::offline::PlanSource;
use crate::optimize::{self, exact_schedule, schedule, Applied, Optimizations};
use crate::plan::{self, Plan};
use crate::timings::phase;
use crate::verify;

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

/// A model compiled for code generation.
#[cfg(feature = "onnx")]
#[derive(Clone, Debug)]
pub enum Compiled {
    /// Fixed input shapes.
    Fixed(Box<Program>),
    /// A bounded dimension: compiled at every length of its range.
    Bounded(Box<crate::dynamic::DynamicProgram>),
}

#[cfg(feature = "onnx")]
impl Compiled {
    /// The program at the planned shapes (a bounded dimension's largest length).
    pub fn program(&self) -> &Program {
        match self {
            Compiled::Fixed(p) => p,
            Compiled::Bounded(d) => &d.program,
        }
    }

    /// [`Compiled::program`], by value.
    pub fn into_program(self) -> Program {
        match self {
            Compiled::Fixed(p) => *p,
            Compiled::Bounded(d) => d.program,
        }
    }

    /// The items of the model module (to be placed inside `mod name { ... }`).
    pub fn emit(&self, options: &crate::codegen::CodegenOptions) -> proc_macro2::TokenStream {
        crate::timings::phase("codegen", || match self {
            Compiled::Fixed(p) => crate::codegen::emit(p, options),
            Compiled::Bounded(d) => crate::codegen::dynamic::emit(d, options),
        })
    }
}

/// Compiles the model of `request`: imports it within its limits, rewrites, plans (or reads the
/// offline plan file) and verifies it, at every length of a bounded dimension, and checks its
/// budgets. A panic inside a dependency (the ONNX loader) is caught and returned as
/// [`CompileError::InvalidModel`], so that no front end crashes on a hostile model. Paths in
/// errors are the path as the user wrote it ([`Request::shown_path`](crate::request::Request)).
#[cfg(feature = "onnx")]
pub fn compile_model(request: &crate::request::Request) -> Result<Compiled, CompileError> {
    let compile = || {
        let compiled = match request.bound()? {
            None => Compiled::Fixed(Box::new(compile_fixed(request, &request.planned_inputs())?)),
            Some(bound) => Compiled::Bounded(Box::new(crate::dynamic::compile(request, &bound)?)),
        };
        crate::budget::check(compiled.program(), request.sram, request.flash)?;
        Ok(compiled)
    };
    catching(&request.path, compile).map_err(|e| e.with_model_path(&request.shown_path))
}

/// Imports, plans and verifies the model of `request` at the fixed input shapes `inputs`.
#[cfg(feature = "onnx")]
pub(crate) fn compile_fixed(
    request: &crate::request::Request,
    inputs: &[crate::import::InputShape],
) -> Result<Program, CompileError> {
    let mut graph = crate::import::import_within(&request.path, inputs, &request.limits)?;
    graph.io = request.io;
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
        let applied = optimize::optimize(&mut graph, optimizations);
        boundary::bind_outputs(&mut graph);
        applied
    });
    let mut live = phase("liveness", || analyze(&graph, optimizations));
    if optimizations.schedule {
        // The schedule search (it computes liveness once per candidate order) is a rewrite.
        phase("rewrites", || {
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
        });
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
    applied.reduced_scratch = (graph.nodes.iter().zip(&live.scratch))
        .filter(|(n, s)| s.map_or(0, |b| live.problem.buffers[b].size / 4) < n.op.scratch_elems() as u64)
        .count();
    let weights = weights::layout(&graph, &live);
    Ok(Program { graph, live, plan, plan_source, optimizations: (optimizations, applied), weights })
}
