//! The human-readable parts of the expansion: the module summary, the schedule table on `run_in`,
//! one doc comment per step (with the plan fact its `unsafe` slices rely on), and the budget
//! assertion's message.

use std::fmt::Write;

use crate::liveness::Storage;
use crate::offline::PlanSource;
use crate::optimize::tile::SPEED_FIRST_MIN_GAIN_PERCENT;
use crate::pipeline::Program;

/// `[1, 3, 32, 32]`.
fn shape(s: &[usize]) -> String {
    format!("{s:?}")
}

/// Where tensor `t` lives, as `arena 0..4096 (live steps 2..5)`, `input 0`, `output 1` or `flash`.
pub fn location(p: &Program, t: usize) -> String {
    match p.live.storage[t] {
        Storage::Input(i) => format!("caller's input {i}"),
        Storage::Output(i) => format!("caller's output {i}"),
        Storage::Const(root) => {
            let off = p.weights.offsets[root].unwrap_or(0);
            format!("flash {}..{}", off, off as u64 + p.graph.tensors[t].bytes())
        }
        Storage::Arena(b) => {
            let buf = &p.live.problem.buffers[b];
            let at = region(p, b, p.live.offset_in_buffer[t], p.graph.tensors[t].bytes());
            format!("{at} (live steps {}..{})", buf.lifetime.first(), buf.lifetime.last())
        }
    }
}

/// `arena 0..4096`, or with pools `pool sram 0..4096`: bytes `within..within + bytes` of buffer
/// `b`, in the memory generated code reads them from.
pub fn region(p: &Program, b: usize, within: u64, bytes: u64) -> String {
    let combined = p.plan.offsets[b] + within;
    match &p.pools {
        None => format!("arena {combined}..{}", combined + bytes),
        Some(pools) => {
            let (k, off) = pools.locate(b, combined);
            format!("pool {} {off}..{}", pools.pools[k].spec.name, off + bytes)
        }
    }
}

/// One line per tensor: `name [shape] f32 @ location`.
fn tensor_line(p: &Program, t: usize) -> String {
    let tensor = &p.graph.tensors[t];
    format!("`{}` {} {} @ {}", tensor.name, shape(&tensor.shape), tensor.dtype, location(p, t))
}

/// The doc comment of step `i`.
pub fn step_doc(p: &Program, i: usize) -> String {
    let n = &p.graph.nodes[i];
    let mut s = format!(" Step {i}: `{}` ({} -> {})", n.name, n.source_op, n.op.kind().kernel_name());
    for &t in &n.inputs {
        let _ = write!(s, "\n - in:  {}", tensor_line(p, t));
    }
    let _ = write!(s, "\n - out: {}", tensor_line(p, n.output));
    if let Some(b) = p.live.scratch[i] {
        let _ = write!(s, "\n - scratch: {} (step {i} only)", region(p, b, 0, p.live.problem.buffers[b].size));
    }
    if let Some(k) = p.live.in_place[i] {
        let input = &p.graph.tensors[n.inputs[k]].name;
        let _ = write!(
            s,
            "\n - in place: the output overwrites `{input}`, whose last reader is this step \
             (checked by `verify_in_place`); the kernel gets that one `&mut` slice."
        );
    }
    if let Some(k) = p.live.overlap[i] {
        let input = &p.graph.tensors[n.inputs[k]].name;
        let _ = write!(
            s,
            "\n - overlapped: the output starts before `{input}` in one buffer and overwrites only \
             input planes this kernel has read (its plane order, checked plane by plane by \
             `verify_in_place`); the kernel gets that one `&mut` slice and splits it between the \
             planes it writes and the planes it still reads."
        );
    }
    let _ = write!(
        s,
        "\n\n SAFETY: every arena slice here is a buffer live at step {i}; the verified plan places \
         buffers whose lifetimes overlap in disjoint bytes, so these slices do not alias each other."
    );
    if p.pools.is_some() {
        let _ = write!(
            s,
            " Each pool was planned and verified on its own buffers, and each is a `static` of its \
             own: slices of different pools never share a byte."
        );
    }
    s
}

/// The table of every step, for the doc comment of `run_in`.
pub fn schedule_doc(p: &Program) -> String {
    let mut s = String::from(
        " Runs the model in a caller-owned arena.\n\n # Schedule\n\n | step | node | op | kernel | output | at |\n |---|---|---|---|---|---|\n",
    );
    for (i, n) in p.graph.nodes.iter().enumerate() {
        let t = &p.graph.tensors[n.output];
        let kernel = if n.op.is_view() {
            "(view: no code)"
        } else if p.live.elided[i] {
            "(concat elided: its inputs were written into place, no code)"
        } else {
            n.op.kind().kernel_name()
        };
        let _ = writeln!(
            s,
            " | {i} | `{}` | {} | {kernel} | `{}` {} | {} |",
            n.name,
            n.source_op,
            t.name,
            shape(&t.shape),
            location(p, n.output)
        );
    }
    s
}

/// One sentence on where the plan came from: the planner (empty), or a plan file used or ignored.
pub fn plan_source_note(p: &Program) -> String {
    let name = |f: &std::path::Path| f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    match &p.plan_source {
        PlanSource::Planner => String::new(),
        PlanSource::File(f) => format!("Plan read from `{}` and verified.", name(f)),
        PlanSource::Stale { file, reason } => {
            format!("Note: `{}` was ignored ({reason}); re-run `sramfit plan` on the model to refresh it.", name(file))
        }
    }
}

/// The module summary doc.
pub fn module_doc(p: &Program) -> String {
    let note = plan_source_note(p);
    let note = if note.is_empty() { note } else { format!("\n\n {note}") };
    format!(
        " Generated by `sramfit::model!`.\n\n | | bytes |\n |---|---|\n | arena (`ARENA_BYTES`) | {} |\n | lower bound (`LOWER_BOUND_BYTES`, peak at step {}) | {} |\n | naive, no reuse (`NAIVE_BYTES`) | {} |\n | weights in flash (`WEIGHT_BYTES`) | {} |\n\n Planner: {}{}. Steps: {}. Rewrites: {}. See [`run_in`] for the schedule.{note}",
        p.plan.arena_bytes,
        p.plan.lower_bound.step,
        p.plan.lower_bound.bytes,
        p.naive_bytes(),
        p.weights.bytes.len(),
        p.plan.algorithm,
        if p.plan.optimal { " (proven optimal)" } else { "" },
        p.graph.nodes.len(),
        p.optimizations.1.summary(&p.optimizations.0),
    ) + &pools_doc(p)
}

/// With pools, the module docs' table of them and the cost model that filled them.
fn pools_doc(p: &Program) -> String {
    let Some(pools) = &p.pools else { return String::new() };
    let mut s = String::from(
        "\n\n # Memory pools\n\n Every arena buffer is in one pool, each its own `static` (`POOL_<NAME>`), planned and verified on its own; \
         `ARENA_BYTES` is their sum. Buffers were taken hottest first (bytes the steps read and write through a buffer per byte of it), \
         then smallest, into each pool in turn while its plan fits.\n\n | pool | bytes | size | buffers | section |\n |---|---|---|---|---|\n",
    );
    for pool in &pools.pools {
        let section = pool.spec.section.as_deref().map_or("-".to_string(), |sec| format!("`{sec}`"));
        let _ = writeln!(
            s,
            " | `{}` (`{}`) | {} | {} | {} | {section} |",
            pool.spec.name,
            super::pool_bytes_ident(&pool.spec.name),
            pool.bytes(),
            pool.spec.bytes,
            pool.buffers.len()
        );
    }
    s
}

/// The message of the const assertion `ARENA_BYTES <= sram` (a budget the macro could not
/// evaluate, so the planner did not see it): names a tiling declined for its small gain, which a
/// budget the planner sees would have taken.
pub fn sram_assert_message(p: &Program) -> String {
    let a = &p.optimizations.1;
    let declined = a.tile_declined.map_or(String::new(), |t| match a.tile_min_gain_percent {
        gain if gain >= SPEED_FIRST_MIN_GAIN_PERCENT => format!(
            "; patch-based execution would lower the bound to {} bytes, which this target (speed first) takes only for a budget: write `sram` as a literal so that the build can take it, or ask for it with `tile: true` among the `optimize` switches",
            t.lower_bounds.1
        ),
        gain => format!(
            "; patch-based execution would lower the bound to {} bytes, a gain under the {gain}% it takes unasked: write `sram` as a literal so that the build can take it",
            t.lower_bounds.1
        ),
    });
    format!(
        "sramfit: the model needs an arena of {} bytes, more than the `sram` budget (lower bound for this schedule: {} bytes, peak at step {}{declined})",
        p.plan.arena_bytes, p.plan.lower_bound.bytes, p.plan.lower_bound.step
    )
}
