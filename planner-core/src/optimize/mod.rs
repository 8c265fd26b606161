//! Graph rewrites between import and liveness that make the plan smaller without changing any
//! result bit: each is switchable ([`Optimizations`]) and what it did is reported ([`Applied`]),
//! in the module docs of the expansion and in `sramfit inspect`.
//!
//! Graph passes rewrite the graph ([`rewrite_graph`]); storage passes decide which tensors share
//! bytes and how much scratch each kernel gets ([`storage`]), recording every decision in
//! [`crate::liveness::Sharing`] / [`Liveness`] for the storage verifier to check:
//!
//! - [`in_place`]: an elementwise step overwrites an input nobody reads later (checked by
//!   [`crate::verify::verify_in_place`]);
//! - [`elide_concat`]: a concatenation's inputs are written into their slices of its output;
//! - [`fit_scratch`]: a convolution whose preferred im2col scratch would raise the peak gets
//!   smaller tiles or none (direct convolution);
//! - [`schedule`] and [`exact_schedule`]: memory-aware execution orders (greedy, and exact for
//!   small graphs), kept when their lower bound is smaller;
//! - [`fuse`]: an activation (Relu, Clip, LeakyRelu, HardSwish, Sigmoid, Tanh) that is the only
//!   reader of a convolution's or matrix product's output becomes that kernel's epilogue, so the
//!   intermediate tensor never exists;
//! - [`transpose`]: a copy that only transposes a matrix product's operand becomes that product's
//!   strides, so the transposed tensor never exists;
//! - [`pack`] (for speed, not memory): convolution weights are stored in the layout the GEMM
//!   kernels read in place, so nothing is repacked at run time.

pub mod elide_concat;
pub mod exact_schedule;
pub mod fit_scratch;
pub mod fuse;
pub mod in_place;
pub mod pack;
pub mod schedule;
#[cfg(test)]
mod storage_tests;
pub mod transpose;

use serde::{Deserialize, Serialize};

use crate::ir::{Graph, TensorId};
use crate::liveness::{self, Liveness, Sharing, Uses};
use crate::plan;

/// Which rewrites to run. All are on by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Optimizations {
    /// Fuse activations into the preceding convolution or matrix product ([`fuse`]).
    pub fuse_activations: bool,
    /// Let elementwise steps write over an input they read last (see [`crate::liveness`]).
    pub in_place: bool,
    /// Give a kernel less scratch than it prefers (smaller im2col tiles, or the direct convolution
    /// without any) where its preferred scratch would raise the arena above the activation peak.
    pub fit_scratch: bool,
    /// Try a memory-aware execution order and keep it when it lowers the lower bound ([`schedule`]).
    pub schedule: bool,
    /// Let the inputs of a concatenation be written straight into their slices of its output, so
    /// that the concatenation costs no copy and no extra bytes (see [`crate::liveness`]).
    pub elide_concat: bool,
    /// Let a matrix product read a transposed operand through its strides instead of a copy
    /// ([`transpose`]).
    pub transpose: bool,
    /// Store convolution weights in the layout the GEMM kernels read ([`pack`]).
    #[serde(default)]
    pub pack_weights: bool,
}

impl Optimizations {
    /// Every rewrite off: the graph exactly as imported.
    pub const NONE: Optimizations = Optimizations {
        fuse_activations: false,
        in_place: false,
        fit_scratch: false,
        schedule: false,
        elide_concat: false,
        transpose: false,
        pack_weights: false,
    };
}

impl Default for Optimizations {
    fn default() -> Self {
        Optimizations {
            fuse_activations: true,
            in_place: true,
            fit_scratch: true,
            schedule: true,
            elide_concat: true,
            transpose: true,
            pack_weights: true,
        }
    }
}

/// What the rewrites did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// Activation nodes folded into a kernel epilogue.
    pub fused_activations: usize,
    /// Steps that write their output over an input.
    pub in_place_steps: usize,
    /// Kernels given less scratch than they prefer, so that it fits under the activation peak.
    pub reduced_scratch: usize,
    /// The lower bound in ONNX order and in the memory-aware order (when scheduling ran); the
    /// smaller one's order is the schedule.
    pub schedule_lower_bounds: Option<(u64, u64)>,
    /// Concatenations elided (their inputs written in place into the output).
    pub elided_concats: usize,
    /// Transposing copies folded into a matrix product's strides.
    pub folded_transposes: usize,
    /// Convolutions whose weights were packed at build time.
    #[serde(default)]
    pub packed_weights: usize,
    /// Whether the exact schedule search ([`exact_schedule`]) finished within its budget: then no
    /// order has a smaller peak of live bytes (its cost model leaves out scratch and concat
    /// elision); otherwise only the greedy order was tried.
    pub exact_schedule: bool,
}

impl Applied {
    /// One line for reports, e.g. `3 activation(s) fused into the preceding kernel, 5 step(s) in
    /// place, ...`: the memory-saving rewrites, then weight packing.
    pub fn summary(&self, o: &Optimizations) -> String {
        let pack = match o.pack_weights {
            true => format!("{} convolution(s) with weights packed for the GEMM kernels", self.packed_weights),
            false => "weight packing off".into(),
        };
        format!("{}, {pack}", self.memory_summary(o))
    }

    /// The memory-saving rewrites' part of [`Applied::summary`] (what a budget error lists).
    pub fn memory_summary(&self, o: &Optimizations) -> String {
        let fuse = match o.fuse_activations {
            true => format!("{} activation(s) fused into the preceding kernel", self.fused_activations),
            false => "activation fusion off".into(),
        };
        let in_place = match o.in_place {
            true => format!("{} step(s) in place", self.in_place_steps),
            false => "in-place execution off".into(),
        };
        let scratch = match o.fit_scratch {
            true => format!("{} kernel(s) with reduced scratch", self.reduced_scratch),
            false => "scratch fitting off".into(),
        };
        let search = match self.exact_schedule {
            true => "exact search",
            false => "greedy search; the exact one exceeded its budget",
        };
        let schedule = match self.schedule_lower_bounds {
            Some((onnx, aware)) if aware < onnx => {
                format!("memory-aware order (lower bound {onnx} -> {aware} bytes, {search})")
            }
            Some((onnx, _)) => format!("ONNX order kept (lower bound {onnx} bytes, no better order found by {search})"),
            None => "scheduling off".into(),
        };
        let concat = match o.elide_concat {
            true => format!("{} concat(s) elided", self.elided_concats),
            false => "concat elision off".into(),
        };
        let transpose = match o.transpose {
            true => format!("{} transpose(s) folded into matrix product strides", self.folded_transposes),
            false => "transpose folding off".into(),
        };
        format!("{fuse}, {in_place}, {concat}, {transpose}, {scratch}, {schedule}")
    }
}

/// Runs the enabled graph passes on `g`, in place.
pub fn rewrite_graph(g: &mut Graph, o: &Optimizations) -> Applied {
    let mut applied = Applied::default();
    if o.fuse_activations {
        applied.fused_activations = fuse::fuse_activations(g);
    }
    if o.transpose {
        applied.folded_transposes = transpose::fold_transposes(g);
    }
    if o.pack_weights {
        applied.packed_weights = pack::pack_conv_weights(g);
    }
    applied
}

/// Runs the enabled storage passes on `g` (concat elision, then in-place execution), computes
/// liveness under their decisions, and fits each kernel's scratch.
///
/// Concat elision makes a concatenation's buffer live from its first input on, which can raise the
/// peak when that input is computed long before the others (found by the random graphs of
/// `safety/tests/rewrite_graphs.rs`): it is kept only when its lower bound is not larger than
/// without it.
pub fn storage(g: &Graph, o: &Optimizations) -> Liveness {
    let uses = Uses::of(g);
    let with = |elide: bool| {
        let mut sharing = Sharing::none(g);
        if elide {
            elide_concat::elide_concats(g, &uses, &mut sharing);
        }
        if o.in_place {
            in_place::choose_in_place(g, &uses, &mut sharing);
        }
        let mut live = liveness::analyze(g, &uses, &sharing);
        fit_scratch::add_scratch(g, &mut live, o.fit_scratch);
        live
    };
    let live = with(o.elide_concat);
    if !live.elided.contains(&true) {
        return live;
    }
    let copying = with(false);
    match plan::lower_bound(&copying.problem).bytes < plan::lower_bound(&live.problem).bytes {
        true => copying,
        false => live,
    }
}

/// With scheduling on, the execution order of `g` with the smallest lower bound among ONNX's, the
/// greedy memory-aware one and the exact search's (when it finishes within its budget), and its
/// liveness; records the bounds and whether the exact search finished in `applied`.
pub fn schedule(g: Graph, o: &Optimizations, applied: &mut Applied) -> (Graph, Liveness) {
    let live = storage(&g, o);
    if !o.schedule {
        return (g, live);
    }
    let before = plan::lower_bound(&live.problem).bytes;
    let greedy = schedule::memory_aware_order(&g);
    let onnx: Vec<usize> = (0..g.nodes.len()).collect();
    let bound = exact_schedule::peak_of(&g, o, &onnx).min(exact_schedule::peak_of(&g, o, &greedy));
    let exact = exact_schedule::exact_order(&g, o, bound);
    applied.exact_schedule = exact.is_some();
    let orders = std::iter::once(greedy).chain(exact.map(|e| e.order));
    let (mut best, mut best_bound) = ((g.clone(), live), before);
    // Every order indexes the nodes as imported: reorder that graph, not the best one so far.
    for order in orders {
        let mut reordered = g.clone();
        schedule::reorder(&mut reordered, &order);
        let live = storage(&reordered, o);
        let bound = plan::lower_bound(&live.problem).bytes;
        if bound < best_bound {
            (best, best_bound) = ((reordered, live), bound);
        }
    }
    applied.schedule_lower_bounds = Some((before, best_bound));
    best
}

/// Drops tensors no node and no graph port refers to, renumbering the rest (order kept).
pub(crate) fn remove_unused_tensors(g: &mut Graph) {
    let mut used = vec![false; g.tensors.len()];
    for n in &g.nodes {
        n.inputs.iter().chain([&n.output]).for_each(|&t| used[t] = true);
    }
    g.inputs.iter().chain(&g.outputs).for_each(|&t| used[t] = true);
    let mut new_id: Vec<Option<TensorId>> = vec![None; g.tensors.len()];
    let mut next = 0;
    for (t, u) in used.iter().enumerate() {
        if *u {
            new_id[t] = Some(next);
            next += 1;
        }
    }
    let old = std::mem::take(&mut g.tensors);
    g.tensors = old.into_iter().zip(&used).filter(|(_, u)| **u).map(|(t, _)| t).collect();
    let map = |t: &mut TensorId| *t = new_id[*t].expect("a used tensor keeps an id");
    for n in &mut g.nodes {
        n.inputs.iter_mut().for_each(map);
        map(&mut n.output);
    }
    g.inputs.iter_mut().for_each(map);
    g.outputs.iter_mut().for_each(map);
}
