//! Bounded dynamic shapes: one named input dimension (`inputs: { "x": [1, "frames <= 98", 40] }`)
//! takes any length from `min` to `max` at run time.
//!
//! The model is compiled at every length of the range through the ordinary pipeline (import,
//! rewrites, liveness), and:
//!
//! - the arena is planned once, at `max`; at every other length each arena buffer must have the
//!   same lifetime and fit its slot (`size <= size at max`), and the plan at `max` passes the
//!   verifier against that length's buffers;
//! - the weights must be byte-identical at every length (nothing constant depends on it);
//! - each step's code at every length must be the same token stream up to integer literals, and
//!   every literal that varies must be `a * floor((n + c) / d) + b` of the length `n` at all of
//!   them ([`fit`]); [`template::merge`] puts those expressions in place of the literals.
//!
//! So the generated code, evaluated at a length `n`, is token for token the code sramfit emits for
//! the model compiled at exactly `n`: the exhaustive check over the range is the proof. Anything
//! else (a model that fails at some length, a float that depends on the length, a step whose
//! structure changes) is a [`CompileError::DynamicDim`] naming the dimension and the node.

pub mod emit;
pub mod fit;
pub mod template;

use proc_macro2::{Ident, TokenStream};

use crate::error::CompileError;
use crate::import::{self, InputShape};
use crate::offline::PlanSource;
use crate::pipeline::{self, Program};
use crate::problem::Problem;
use crate::request::{Bound, Request};
use crate::timings::phase;
use fit::Fit;

/// Lengths whose compiled graphs have the same structure (tract simplifies some graphs at some
/// lengths: at length 1 a division by the length disappears), with one plan and one code template.
#[derive(Clone, Debug)]
pub struct Class {
    /// The lengths of the class, increasing.
    pub lens: Vec<usize>,
    /// The model at the class's largest length, with the class's plan (planned at that length and
    /// verified at every length of the class).
    pub program: Program,
    /// Per node of `program.graph`: its code as an expression of the length (`None`: no code).
    pub steps: Vec<Option<TokenStream>>,
}

/// A model compiled for every length of its bound.
#[derive(Clone, Debug)]
pub struct DynamicProgram {
    /// The model at the largest length, its `plan.arena_bytes` raised to the largest arena of all
    /// classes: the module's constants, weights and `Arena` come from it.
    pub program: Program,
    /// The bounded dimension.
    pub bound: Bound,
    /// The variable the templates use for the run-time length.
    pub len: Ident,
    /// The classes of lengths, the one holding the largest length first.
    pub classes: Vec<Class>,
    /// Per graph input, its dimensions as expressions of the length.
    pub input_shapes: Vec<Vec<Fit>>,
    /// Per graph output, its dimensions as expressions of the length.
    pub output_shapes: Vec<Vec<Fit>>,
    /// Per graph input, its element count as an expression of the length.
    pub input_lens: Vec<Fit>,
    /// Per graph output, its element count as an expression of the length.
    pub output_lens: Vec<Fit>,
}

/// At most this many classes of lengths: more would multiply the code.
pub const MAX_CLASSES: usize = 8;

/// A class being built, from its largest length down.
struct Building {
    key: Key,
    lens: Vec<usize>,
    program: Program,
    bodies: Vec<Vec<Option<TokenStream>>>,
}

/// What must be equal for two lengths to share a plan and a code template: the steps (name,
/// source operator, whether they run code) and the arena buffers' lifetimes and alignments.
type Key = (Vec<(String, String, bool)>, Vec<(crate::problem::Lifetime, u64)>);

fn key(p: &pipeline::Prepared) -> Key {
    let g = &p.graph;
    let nodes = (g.nodes.iter().enumerate())
        .map(|(i, n)| (n.name.clone(), n.source_op.clone(), !n.op.is_view() && !p.live.elided[i]))
        .collect();
    let buffers = p.live.problem.buffers.iter().map(|b| (b.lifetime.clone(), b.align)).collect();
    (nodes, buffers)
}

/// Compiles the model of `request` at every length of `bound` (its inputs' bounded dimension).
/// The memory-aware schedule is off (its order could change with the length).
pub fn compile(request: &Request, bound: &Bound) -> Result<DynamicProgram, CompileError> {
    let fail = |node: Option<String>, message: String| CompileError::DynamicDim {
        symbol: bound.symbol.clone(),
        node,
        message,
    };
    if bound.min == 0 || bound.min > bound.max {
        return Err(fail(None, format!("its range {}..={} is empty or starts at 0", bound.min, bound.max)));
    }
    if !request.caller_inputs.is_empty() {
        let message = "caller-placed inputs are not supported with a bounded dimension; keep the input in the arena (its accessor takes the length) or fix the dimension".into();
        return Err(CompileError::BadOption { option: "io", message });
    }
    let mut spec = request.clone();
    spec.optimizations.schedule = false;
    let inputs = shapes_at(&spec.planned_inputs(), bound, bound.max);
    let mut program = pipeline::compile_fixed(&spec, &inputs)?;
    let proto = import::read_proto(&spec.path)?;
    let mut classes: Vec<Building> = Vec::new();
    let mut shapes: Vec<Vec<Vec<usize>>> = Vec::new();
    for n in (bound.min..=bound.max).rev() {
        let at = |m: String| format!("at {} = {n}, {m}", bound.symbol);
        let import_at_n = || import::import_proto_within(&proto, &shapes_at(&inputs, bound, n), &spec.limits);
        let mut graph = pipeline::catching(&spec.path, import_at_n).map_err(|e| {
            let message = match e {
                CompileError::InvalidModel { message, .. } => message,
                other => other.to_string(),
            };
            let node = failing_node(&message);
            let what = node
                .as_ref()
                .map_or(String::new(), |(name, op)| format!(": node `{name}` ({op}) cannot take that length"));
            fail(node.map(|(name, _)| name), at(format!("the model does not compile{what} ({message})")))
        })?;
        graph.io = spec.io;
        graph.weight_align = crate::weights::WeightAlign::for_target(&spec.target);
        let prepared = pipeline::prepare(graph, &spec.optimizations)?;
        let k = key(&prepared);
        let class = match classes.iter().position(|c| c.key == k) {
            Some(c) => c,
            None if classes.len() == MAX_CLASSES => {
                let lens: Vec<String> = classes.iter().map(|c| format!("{}", c.lens[0])).collect();
                let m = format!(
                    "the model's structure changes at more than {MAX_CLASSES} lengths (classes from {} down)",
                    lens.join(", ")
                );
                return Err(fail(None, at(m)));
            }
            None => {
                let (plan, source) = if n == bound.max {
                    (program.plan.clone(), program.plan_source.clone())
                } else {
                    (phase("plan", || crate::plan::plan(&prepared.live.problem)), PlanSource::Planner)
                };
                let rep = pipeline::finish(prepared.clone(), plan, source)?;
                classes.push(Building { key: k.clone(), lens: Vec::new(), program: rep, bodies: Vec::new() });
                classes.len() - 1
            }
        };
        let c = &mut classes[class];
        fits(&prepared.live.problem, &c.program.live.problem).map_err(|(node, m)| fail(Some(node), at(m)))?;
        let at_n = pipeline::finish(prepared, c.program.plan.clone(), PlanSource::Planner)?;
        if at_n.weights.bytes != program.weights.bytes {
            let (node, m) = differing_constant(&at_n, &program);
            return Err(fail(node, at(m)));
        }
        let g = &at_n.graph;
        shapes.push(g.inputs.iter().chain(&g.outputs).map(|&t| g.tensors[t].shape.clone()).collect());
        c.lens.push(n);
        c.bodies.push(phase("codegen", || crate::codegen::step_bodies(&at_n)));
    }
    shapes.reverse();
    let ns: Vec<usize> = (bound.min..=bound.max).collect();
    let len = len_ident(&bound.symbol, &program);
    let classes = classes
        .into_iter()
        .map(|mut c| {
            c.lens.reverse();
            c.bodies.reverse();
            let steps = phase("codegen", || merge_steps(&c.program, &c.bodies, &c.lens, &len))
                .map_err(|(node, m)| fail(Some(node), m))?;
            Ok(Class { lens: c.lens, program: c.program, steps })
        })
        .collect::<Result<Vec<_>, CompileError>>()?;
    program.plan.arena_bytes = classes.iter().map(|c| c.program.plan.arena_bytes).max().unwrap_or(0);
    let n_in = program.graph.inputs.len();
    let port_fits = fit_ports(&program, &shapes, &ns).map_err(|(node, m)| fail(Some(node), m))?;
    let (in_fits, out_fits) = port_fits.split_at(n_in);
    let lens = |fits: &[PortFit]| fits.iter().map(|f| f.len).collect();
    let dims = |fits: &[PortFit]| fits.iter().map(|f| f.dims.clone()).collect();
    Ok(DynamicProgram {
        input_lens: lens(in_fits),
        output_lens: lens(out_fits),
        input_shapes: dims(in_fits),
        output_shapes: dims(out_fits),
        program,
        bound: bound.clone(),
        len,
        classes,
    })
}

/// The node (name, operator) a tract analysis error names (`... node #4 "fc" Gemm: ...`).
fn failing_node(message: &str) -> Option<(String, String)> {
    let rest = &message[message.find("node #")?..];
    let mut quoted = rest.splitn(3, '"');
    let (_, name, after) = (quoted.next()?, quoted.next()?, quoted.next()?);
    let op = after.split(|c: char| c == ':' || c.is_whitespace()).find(|s| !s.is_empty())?;
    Some((name.to_string(), op.to_string()))
}

/// `inputs` with every axis of the bound set to `n`.
fn shapes_at(inputs: &[InputShape], bound: &Bound, n: usize) -> Vec<InputShape> {
    let mut shapes = inputs.to_vec();
    for (name, axis) in &bound.axes {
        for s in shapes.iter_mut().filter(|s| &s.name == name) {
            if let Some(d) = s.dims.get_mut(*axis) {
                *d = n;
            }
        }
    }
    shapes
}

/// Whether the buffers at some length fit the plan made at the bound: same buffers, same
/// lifetimes and alignments, each at most its size at the bound. `Err((buffer, why))`.
fn fits(at_n: &Problem, at_max: &Problem) -> Result<(), (String, String)> {
    if at_n.buffers.len() != at_max.buffers.len() {
        let m = format!("the arena holds {} buffers instead of {}", at_n.buffers.len(), at_max.buffers.len());
        return Err((String::from("?"), m));
    }
    for (b, m) in at_n.buffers.iter().zip(&at_max.buffers) {
        if b.lifetime != m.lifetime || b.align != m.align {
            return Err((b.name.clone(), format!("buffer `{}` lives over other steps than at the bound", b.name)));
        }
        if b.size > m.size {
            let why =
                format!("buffer `{}` needs {} bytes, more than the {} planned at the bound", b.name, b.size, m.size);
            return Err((b.name.clone(), why));
        }
    }
    Ok(())
}

/// The constant whose values differ between a length and its class's largest length, and why
/// that is an error.
fn differing_constant(at_n: &Program, at_max: &Program) -> (Option<String>, String) {
    let is_const = |t: &&crate::ir::Tensor| matches!(t.kind, crate::ir::TensorKind::Const(_));
    let at_max: Vec<&crate::ir::Tensor> = at_max.graph.tensors.iter().filter(is_const).collect();
    let differs = at_n.graph.tensors.iter().filter(is_const).find(|a| !at_max.contains(a));
    let name = differs.map(|a| a.name.clone());
    let what = name.as_deref().map(|n| format!("constant `{n}`")).unwrap_or_else(|| "a constant".into());
    (name, format!("{what} has other values than at the bound (a weight computed from the length)"))
}

/// Every node's code merged over the lengths. `Err((node, why))`.
fn merge_steps(
    p: &Program,
    bodies: &[Vec<Option<TokenStream>>],
    ns: &[usize],
    len: &Ident,
) -> Result<Vec<Option<TokenStream>>, (String, String)> {
    (0..p.graph.nodes.len())
        .map(|i| {
            let node = &p.graph.nodes[i];
            let why = |m: String| (node.name.clone(), format!("{} step: {m}", node.source_op));
            let streams: Option<Vec<TokenStream>> = bodies.iter().map(|b| b[i].clone()).collect();
            match streams {
                Some(s) => template::merge(&s, ns, len).map(Some).map_err(why),
                None if bodies.iter().all(|b| b[i].is_none()) => Ok(None),
                None => Err(why("it runs code at some lengths and none at others".into())),
            }
        })
        .collect()
}

/// A graph input's or output's dimensions and element count as expressions of the length.
struct PortFit {
    dims: Vec<Fit>,
    len: Fit,
}

/// Each graph input's and output's dimensions and element count as expressions of the length.
fn fit_ports(p: &Program, shapes: &[Vec<Vec<usize>>], ns: &[usize]) -> Result<Vec<PortFit>, (String, String)> {
    let g = &p.graph;
    let ports: Vec<usize> = g.inputs.iter().chain(&g.outputs).copied().collect();
    ports
        .iter()
        .enumerate()
        .map(|(k, &t)| {
            let name = g.tensors[t].name.clone();
            let not_fit = || (name.clone(), "its shape is no integer expression of the length".to_string());
            let rank = g.tensors[t].shape.len();
            let dims = (0..rank)
                .map(|axis| {
                    let v: Vec<i64> = shapes.iter().map(|s| s[k][axis] as i64).collect();
                    fit::fit(ns, &v).ok_or_else(not_fit)
                })
                .collect::<Result<Vec<_>, _>>()?;
            let lens: Vec<i64> = shapes.iter().map(|s| s[k].iter().product::<usize>() as i64).collect();
            Ok(PortFit { dims, len: fit::fit(ns, &lens).ok_or_else(not_fit)? })
        })
        .collect()
}

/// The run-time length's variable in generated code: the dimension's own name when it is free
/// (not a port name or a name generated code uses), else `__len`.
fn len_ident(symbol: &str, p: &Program) -> Ident {
    let (inputs, outputs) = crate::codegen::port_idents(&p.graph);
    let reserved = ["base", "arena", "checker", "inputs", "outputs", "STEP"];
    let taken =
        inputs.iter().chain(&outputs).any(|i| i == symbol) || reserved.contains(&symbol) || symbol.starts_with("__");
    match syn_ident(symbol) {
        Some(id) if !taken => id,
        _ => quote::format_ident!("__len"),
    }
}

/// `symbol` as an identifier, if it is one (and not a keyword).
fn syn_ident(symbol: &str) -> Option<Ident> {
    let ok = symbol.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && symbol.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    (ok && !KEYWORDS.contains(&symbol)).then(|| Ident::new(symbol, proc_macro2::Span::call_site()))
}

/// Rust keywords, which cannot name the length variable.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false", "fn",
    "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self",
    "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "abstract", "become",
    "box", "do", "final", "gen", "macro", "override", "priv", "try", "typeof", "unsized", "virtual", "yield",
];
