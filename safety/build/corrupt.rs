//! Deliberately wrong plans, made after the verifier accepted the right one (the verifier is what
//! would refuse them), compiled in checked mode.
//!
//! Two kinds, chosen so that the wrong code stays free of aliasing slices (the damaged tensor is
//! never an input of the step that damages it), so the only observable effect is the one checked
//! mode must report:
//!
//! - *overlap*: buffer `b` is moved onto a buffer `a` that is live, but not read, at the step that
//!   writes `b`. Expected: `PlanViolation { step: that step, tensor: a }`.
//! - *short life*: buffer `a`'s lifetime ends at the step that writes it although a later step
//!   reads it (a liveness bug). Expected: `PlanViolation { step: its first reader, tensor: a }`.
//! - *displacement*: the input `x` of an overlapped step (its output over the input planes its
//!   kernel has read) moved one element towards the output, so output plane 0 would end inside
//!   input plane 0. Expected: `PlanViolation { step: that step, tensor: x }` (without checked mode
//!   the kernel refuses the region with a panic rather than write over unread input).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use sramfit_planner_core::compile;
use sramfit_planner_core::liveness::{BufferOwner, Storage};
use sramfit_planner_core::pipeline::Program;
use sramfit_planner_core::problem::Lifetime;
use sramfit_planner_core::request::Request;

use crate::out::{self, Out};

/// The models corrupted: all have branches (in a plain chain every live tensor but the output is
/// read by the step writing it, so there is no overlap corruption without aliasing slices); one
/// int8 model (float ports, integer steps inside).
const MODELS: &[&str] = &[
    "tests/models/resnet8.onnx",
    "tests/models/branch_merge.onnx",
    "tests/models/concat_branches.onnx",
    "tests/models/quant/resnet8_qdq_s8.onnx",
    "tests/models/mobilenetv2_block.onnx",
];

/// Overlap corruptions per model, spread over the schedule.
const OVERLAPS_PER_MODEL: usize = 3;

/// One wrong program and what checked mode must say about it.
struct Case {
    name: String,
    what: String,
    program: Program,
    step: usize,
    tensor: String,
}

/// Writes `corrupted.rs`: per model one correct checked module, and the corrupted ones.
pub fn write(out: &Out) {
    let mut modules = TokenStream::new();
    let mut rows = Vec::new();
    for model in MODELS {
        let path = out::workspace_file(model);
        let program =
            compile::compile_model(&Request::new(&path)).unwrap_or_else(|e| panic!("{model}: {e}")).into_program();
        let stem = out::stem(&path);
        let m = format_ident!("{stem}_checked");
        let items = out.module_items(&m.to_string(), &program, true);
        modules.extend(quote!(pub mod #m { #items }));
        let checked_row = quote!(Checked {
            model: #model, run: #m::run_dyn, run_typed: #m::run_typed,
            output_types: #m::OUTPUT_TYPES, output_shapes: #m::OUTPUT_SHAPES,
        });
        let mut cases = overlaps(&stem, &program);
        cases.extend(short_life(&stem, &program));
        cases.extend(displacement(&stem, &program));
        assert!(cases.len() >= 2, "{model}: no overlap or no short-life corruption found");
        let corrupted = cases.iter().map(|c| {
            let m = format_ident!("{}", c.name);
            let items = out.module_items(&c.name, &c.program, true);
            modules.extend(quote!(pub mod #m { #items }));
            let (name, what, step, tensor) = (&c.name, &c.what, c.step, &c.tensor);
            let op = &c.program.graph.nodes[c.step].name;
            quote! {
                Corrupted {
                    name: #name, what: #what, run: #m::run_dyn, output_shapes: #m::OUTPUT_SHAPES,
                    expected: ::sramfit::Error::PlanViolation { step: #step, op: #op, tensor: #tensor },
                }
            }
        });
        let corrupted: Vec<TokenStream> = corrupted.collect();
        rows.push(quote!(Model { checked: #checked_row, corrupted: &[#(#corrupted),*] }));
    }
    out.write(
        "corrupted.rs",
        quote! {
            #modules
            /// Every model: its correct checked module and its corrupted ones.
            pub static MODELS: &[Model] = &[#(#rows),*];
        },
    );
}

/// Buffers `b` that can be moved onto a buffer `a` live but not read at `b`'s first step, without
/// touching any other buffer that must stay intact there. `b` is a tensor, never a scratch buffer:
/// whether a kernel writes its scratch depends on the target (the x86 FMA kernels run most
/// convolutions without their im2col scratch), and the expected report must not.
fn overlaps(stem: &str, p: &Program) -> Vec<Case> {
    let buffers = &p.live.problem.buffers;
    let offsets = &p.plan.offsets;
    let is_tensor = |b: usize| matches!(p.live.owners[b], BufferOwner::Tensor(_));
    let mut found = Vec::new();
    for (b, bb) in buffers.iter().enumerate().filter(|&(b, x)| x.size > 0 && is_tensor(b)) {
        let step = written_at(p, b);
        let reads = arena_reads(p, step);
        let kept = |a: usize| {
            a != b && buffers[a].size > 0 && buffers[a].lifetime.contains(step as u32) && written_at(p, a) != step
        };
        for a in (0..buffers.len()).filter(|&a| kept(a) && !reads.contains(&a)) {
            let (start, end) = (offsets[a], offsets[a] + bb.size);
            let hit = |c: usize| kept(c) && offsets[c] < end && start < offsets[c] + buffers[c].size;
            if end <= p.plan.arena_bytes && (0..buffers.len()).filter(|&c| hit(c)).eq([a]) {
                found.push((b, a, step));
                break;
            }
        }
    }
    let mut picks: Vec<usize> = match found.len() {
        0 => vec![],
        n => (0..OVERLAPS_PER_MODEL).map(|k| k * (n - 1) / (OVERLAPS_PER_MODEL - 1)).collect(),
    };
    picks.dedup();
    let mut cases = Vec::new();
    for (k, &i) in picks.iter().enumerate() {
        let (b, a, step) = found[i];
        let mut program = p.clone();
        program.plan.offsets[b] = offsets[a];
        cases.push(Case {
            name: format!("{stem}_overlap_{k}"),
            what: format!("`{}` moved onto `{}` (offset {})", buffers[b].name, buffers[a].name, offsets[a]),
            program,
            step,
            tensor: buffers[a].name.clone(),
        });
    }
    cases
}

/// The first tensor buffer read after the step that writes it, with its life cut to that step.
fn short_life(stem: &str, p: &Program) -> Option<Case> {
    let buffers = &p.live.problem.buffers;
    (0..buffers.len()).filter(|&a| buffers[a].size > 0).find_map(|a| {
        let first = written_at(p, a);
        let reader = (first + 1..p.graph.nodes.len()).find(|&s| arena_reads(p, s).contains(&a))?;
        let mut program = p.clone();
        program.live.problem.buffers[a].lifetime = Lifetime::new(first as u32, first as u32);
        Some(Case {
            name: format!("{stem}_short_life"),
            what: format!("`{}` dies at step {first}, though step {reader} reads it", buffers[a].name),
            program,
            step: reader,
            tensor: buffers[a].name.clone(),
        })
    })
}

/// The first overlapped step with the input (and its views) one element nearer its output.
fn displacement(stem: &str, p: &Program) -> Option<Case> {
    let step = p.live.overlap.iter().position(Option::is_some)?;
    let node = &p.graph.nodes[step];
    let x = node.inputs[p.live.overlap[step]?];
    let roots = p.graph.view_roots();
    let es = p.graph.tensors[x].dtype.size() as u64;
    let mut program = p.clone();
    for t in (0..roots.len()).filter(|&t| roots[t] == roots[x]) {
        program.live.offset_in_buffer[t] -= es;
    }
    let name = &p.graph.tensors[x].name;
    Some(Case {
        name: format!("{stem}_displacement"),
        what: format!("`{name}` one element nearer the output of the overlapped step {step}"),
        program,
        step,
        tensor: name.clone(),
    })
}

/// The step that writes buffer `b`.
fn written_at(p: &Program, b: usize) -> usize {
    match p.live.owners[b] {
        BufferOwner::Tensor(_) => p.live.problem.buffers[b].lifetime.first() as usize,
        BufferOwner::Scratch(s) => s,
    }
}

/// The arena buffers step `s` reads.
fn arena_reads(p: &Program, s: usize) -> Vec<usize> {
    let node = &p.graph.nodes[s];
    node.inputs
        .iter()
        .filter_map(|&t| match p.live.storage[t] {
            Storage::Arena(b) => Some(b),
            _ => None,
        })
        .collect()
}
