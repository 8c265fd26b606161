//! Checked mode ([`super::CodegenOptions::checked`]): the tables and calls that make the generated
//! code check the plan at run time through `sramfit::__private::checked` (see that module for what
//! is checked). Emitted only in checked mode, so the default expansion is unchanged.
//!
//! The tables are computed from the [`Program`] being emitted, offsets included: they describe
//! what the generated code really does, so a wrong plan that reached code generation is caught.

use proc_macro2::TokenStream;
use quote::quote;

use super::{regions, Region};
use crate::liveness::Storage;
use crate::pipeline::Program;

/// The module items of checked mode: the table of arena buffers (with pools, one per pool, in
/// which the other pools' buffers are empty, so that one checker per pool checks its own bytes
/// against the same step tables).
pub fn items(p: &Program) -> TokenStream {
    let tables = regions(p).into_iter().map(|Region { table, pool, .. }| {
        let buffers = p.live.problem.buffers.iter().enumerate().map(|(b, buf)| {
            let (off, len) = match (&p.pools, pool) {
                (Some(pools), Some(k)) if pools.pool_of[b] != k => (0, 0),
                (Some(pools), _) => (pools.locate(b, p.plan.offsets[b]).1 as usize, buf.size as usize),
                (None, _) => (p.plan.offsets[b] as usize, buf.size as usize),
            };
            let name = &buf.name;
            quote!(::sramfit::__private::checked::Buffer { name: #name, offset: #off, len: #len })
        });
        let doc = match pool.zip(p.pools.as_ref()) {
            None => " Checked mode: every arena buffer of the plan (name, offset, bytes).".to_string(),
            Some((k, pools)) => format!(
                " Checked mode: every arena buffer of the plan, those of pool `{}` at their offsets in it, the others empty.",
                pools.pools[k].spec.name
            ),
        };
        quote! {
            #[doc = #doc]
            const #table: &[::sramfit::__private::checked::Buffer] = &[#(#buffers),*];
        }
    });
    quote!(#(#tables)*)
}

/// The statement that starts a checked run (fills the arena with the canary, around the graph
/// inputs when they live in the arena).
pub fn start(p: &Program) -> TokenStream {
    let n = p.live.problem.buffers.len();
    let mut inputs: Vec<usize> = (p.graph.inputs.iter())
        .filter_map(|&t| match p.live.storage[t] {
            Storage::Arena(b) => Some(b),
            _ => None,
        })
        .collect();
    inputs.sort_by_key(|&b| p.plan.offsets[b]);
    let starts = regions(p).into_iter().map(|Region { base, bytes, checker, table, .. }| {
        quote! {
            // SAFETY: `base` points to the whole arena, no slice of it is alive, and every buffer of the
            // table is inside it.
            let mut #checker = unsafe {
                ::sramfit::__private::checked::Checker::<#n>::start(#base, #bytes, #table, &[#(#inputs),*])
            };
        }
    });
    quote!(#(#starts)*)
}

/// The non-empty arena buffers live at each step, in buffer order (linear in the buffers' lives).
pub fn live_buffers(p: &Program) -> Vec<Vec<usize>> {
    let mut at = vec![Vec::new(); p.graph.nodes.len()];
    for (b, buf) in p.live.problem.buffers.iter().enumerate().filter(|(_, b)| b.size > 0) {
        for s in buf.lifetime.spans() {
            for step in s.first as usize..=(s.last as usize).min(at.len().saturating_sub(1)) {
                at[step].push(b);
            }
        }
    }
    at
}

/// Step `i`'s body wrapped in its checks; `live` lists the buffers live at step `i`
/// ([`live_buffers`]).
pub fn wrap(p: &Program, i: usize, live: &[usize], body: TokenStream) -> TokenStream {
    let step = step_table(p, i, live);
    let overlap = overlap_check(p, i);
    let regions = regions(p);
    let before = regions.iter().map(|Region { base, checker, table, .. }| {
        quote! {
            // SAFETY: every buffer of the table is inside the arena and no slice is alive between steps.
            unsafe { #checker.before(#base, #table, &STEP)? };
        }
    });
    let after = regions.iter().map(|Region { base, checker, table, .. }| {
        quote! {
            // SAFETY: as above; the step's slices ended with its block.
            unsafe { #checker.after(#base, #table, &STEP)? };
        }
    });
    quote! {
        {
            const STEP: ::sramfit::__private::checked::Step = #step;
            #(#before)*
            #overlap
            { #body }
            #(#after)*
        }
    }
}

/// For an overlapped step `i`, the check that the element offsets its kernel call uses (the same
/// as code generation's) keep every output plane before the first input plane it reads.
fn overlap_check(p: &Program, i: usize) -> TokenStream {
    let node = &p.graph.nodes[i];
    let (Some(k), Some(order)) = (p.live.overlap[i], node.op.kind().plane_order()) else { return TokenStream::new() };
    let (x_at, y_at) = super::overlap_offsets(p, node, k);
    let (op, tensor) = (&node.name, &p.graph.tensors[node.inputs[k]].name);
    let (planes, in_plane, out_plane) = (order.planes, order.in_plane, order.out_plane);
    let (stride, before) = (order.stride, order.before);
    quote! {
        ::sramfit::__private::checked::overlap(&::sramfit::__private::checked::Overlap {
            step: #i, op: #op, tensor: #tensor, planes: #planes, stride: #stride, before: #before,
            in_plane: #in_plane, out_plane: #out_plane, x_at: #x_at, y_at: #y_at,
        })?;
    }
}

/// The `Step` literal of step `i`, whose live buffers are `live`.
fn step_table(p: &Program, i: usize, live: &[usize]) -> TokenStream {
    let node = &p.graph.nodes[i];
    let buffers = &p.live.problem.buffers;
    let mut reads: Vec<usize> = node
        .inputs
        .iter()
        .filter_map(|&t| match p.live.storage[t] {
            Storage::Arena(b) if buffers[b].size > 0 => Some(b),
            _ => None,
        })
        .collect();
    reads.sort_unstable();
    reads.dedup();
    let step = i as u32;
    // The step writes its output's buffer (a new one, or, in place, the buffer of the input it
    // overwrites) and its scratch.
    let output = match p.live.storage[node.output] {
        Storage::Arena(b) => Some(b),
        _ => None,
    };
    let written_here = |b: &usize| output == Some(*b) || p.live.scratch[i] == Some(*b);
    let writes: Vec<usize> = live.iter().copied().filter(written_here).collect();
    let keeps: Vec<usize> = live.iter().copied().filter(|b| !written_here(b)).collect();
    // Nothing runs after the last step, and what is live then may be an output the caller reads
    // from the arena (`io: arena`): only buffers that die before another step are refilled.
    let last_step = i + 1 == p.graph.nodes.len();
    let dies: Vec<usize> =
        live.iter().copied().filter(|&b| !last_step && !buffers[b].lifetime.contains(step + 1)).collect();
    let name = &node.name;
    quote! {
        ::sramfit::__private::checked::Step {
            step: #i, op: #name, reads: &[#(#reads),*], writes: &[#(#writes),*], keeps: &[#(#keeps),*], dies: &[#(#dies),*],
        }
    }
}
