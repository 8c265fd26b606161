//! The over-budget report: what a person needs to act when a model does not fit its SRAM budget.

use std::fmt::Write;

use crate::compile::Program;
use crate::liveness::BufferOwner;

/// The message of the compile error when `ARENA_BYTES > budget` (one screen).
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
    let _ = writeln!(s, "  = note: memory-saving rewrites tried: {}", applied.memory_summary(o));
    let _ = write!(
        s,
        "  = help: raise `sram` to at least {need}, or shrink the activations: fix smaller input shapes with `inputs: {{ \"name\": [..] }}`, or reduce the widest layers at the peak"
    );
    s
}

/// `64 KiB`-style rendering for messages.
pub fn human(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.2} MiB", bytes as f64 / (1u64 << 20) as f64)
    } else if bytes >= 1 << 10 {
        format!("{:.2} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} B")
    }
}
