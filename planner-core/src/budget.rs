//! The budget checks every front end runs ([`check`]) and the over-budget report: what a person
//! needs to act when a model does not fit its SRAM budget.

use std::fmt::Write;

use crate::error::CompileError;
use crate::liveness::BufferOwner;
use crate::pipeline::Program;
use crate::units::human;

/// Checks the planned arena against `sram` and the weights against `flash` (bytes; `None`: no
/// budget). Over budget is [`CompileError::SramBudget`] (with the report) or
/// [`CompileError::FlashBudget`].
pub fn check(p: &Program, sram: Option<u64>, flash: Option<u64>) -> Result<(), CompileError> {
    let needed = p.plan.arena_bytes;
    if let Some(budget) = sram.filter(|&b| needed > b) {
        return Err(CompileError::SramBudget { needed, budget, report: sram_overflow_report(p, budget) });
    }
    let needed = p.weights.bytes.len() as u64;
    match flash.filter(|&b| needed > b) {
        Some(budget) => Err(CompileError::FlashBudget { needed, budget }),
        None => Ok(()),
    }
}

/// The body of the compile error when `ARENA_BYTES > budget` (one screen; the error adds how to
/// fix it in the user's front end).
pub fn sram_overflow_report(p: &Program, budget: u64) -> String {
    let need = p.plan.arena_bytes;
    let lb = p.plan.lower_bound;
    let mut s = format!(
        "the model needs an arena of {need} bytes ({}), but the `sram` budget is {budget} bytes ({}): {} bytes over\n",
        human(need),
        human(budget),
        need - budget
    );
    let _ = writeln!(
        s,
        "  = note: the lower bound for this schedule is {} bytes at step {}: {}",
        lb.bytes,
        lb.step,
        if lb.bytes > budget {
            "no memory plan of this schedule can fit the budget"
        } else {
            "a tighter plan may exist but the planner did not find it"
        }
    );
    if let Some(node) = p.graph.nodes.get(lb.step as usize) {
        let _ = writeln!(
            s,
            "  = note: at the peak, step {} runs `{}` ({}); the largest tensors live there:",
            lb.step, node.name, node.source_op
        );
        let mut live: Vec<(u64, String)> = p
            .live
            .problem
            .buffers
            .iter()
            .zip(&p.live.owners)
            .filter(|(b, _)| b.lifetime.contains(lb.step))
            .map(|(b, o)| {
                let what = match o {
                    BufferOwner::Tensor(t) => format!("`{}` {:?}", p.graph.tensors[*t].name, p.graph.tensors[*t].shape),
                    BufferOwner::Scratch(i) => format!("scratch of `{}`", p.graph.nodes[*i].name),
                };
                (b.size, what)
            })
            .collect();
        live.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        for (size, what) in live.iter().take(4) {
            let _ = writeln!(s, "          {size:>10} bytes  {what}");
        }
    }
    let (o, applied) = &p.optimizations;
    let _ = write!(s, "  = note: memory-saving rewrites tried: {}", applied.memory_summary(o));
    s
}
