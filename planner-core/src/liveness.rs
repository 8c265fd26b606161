//! Lifetimes of the arena-resident tensors over the schedule, as a planning [`Problem`].
//!
//! Convention (seed 000 section 4): a tensor is live from the step that writes it through the step
//! that reads it last, inclusive, so a node's inputs and its output always conflict. A view extends
//! the life of the tensor it views to its own last use. A kernel's scratch buffer lives for its one
//! step. Constants live in read-only memory. Graph inputs and outputs live in the caller's buffers
//! ([`Io::Caller`]), or in the arena ([`Io::Arena`]): an input from the start of the run through its
//! last reader, an output from the step that writes it through the end of the run; an input the
//! caller places itself ([`Graph::caller_inputs`]) stays in its buffer with [`Io::Arena`] too.
//!
//! Which tensors share a buffer beyond views is decided before this module runs, by the storage
//! passes of [`crate::optimize`] (in-place execution, concat elision, overlapped steps), and handed over as
//! [`Sharing`]; scratch sizes are decided after it, from the live bytes it computes
//! ([`Liveness::add_scratch`]). This module only turns those decisions into buffers and lifetimes;
//! [`crate::verify::verify_in_place`] checks them independently. Everything here is linear in the
//! nodes, tensors and buffer spans.

use crate::ir::{Graph, Io, TensorId, TensorKind};
use crate::problem::{Buffer, Lifetime, Problem};
use crate::tensor::DType;

/// Alignment of every arena buffer, in bytes (enough for 128-bit SIMD loads).
pub const ARENA_ALIGN: u64 = 16;

/// Where a tensor's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    /// The caller's input buffer `i`.
    Input(usize),
    /// The caller's output buffer `i`.
    Output(usize),
    /// Read-only constant data of tensor `t` (the root of the view chain).
    Const(TensorId),
    /// Arena buffer `b` (an index into [`Liveness::problem`]).
    Arena(usize),
}

/// What an arena buffer holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferOwner {
    /// A tensor (the root of its views).
    Tensor(TensorId),
    /// The scratch space of the node at this schedule step.
    Scratch(usize),
}

/// The result of liveness analysis: where every tensor lives, and the arena buffers to plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Liveness {
    /// Storage of every tensor, indexed by [`TensorId`]; views share their root's storage.
    pub storage: Vec<Storage>,
    /// The arena buffers to place, with their lifetimes in schedule steps (node indices).
    pub problem: Problem,
    /// What each arena buffer holds, indexed like `problem.buffers`.
    pub owners: Vec<BufferOwner>,
    /// The scratch buffer of each node, if it needs one.
    pub scratch: Vec<Option<usize>>,
    /// For each step, the input (index into the node's inputs) whose bytes its output overwrites.
    pub in_place: Vec<Option<usize>>,
    /// Byte offset of each tensor inside its arena buffer: 0, except for the inputs of an elided
    /// concatenation, which live in their slice of its output, and the input of an overlapped
    /// step, which starts that many bytes after its output.
    pub offset_in_buffer: Vec<u64>,
    /// For each step, whether it is an elided concatenation: its inputs were written straight into
    /// their slices of its output, so it runs no code.
    pub elided: Vec<bool>,
    /// For each step, the input (index into the node's inputs) that shares one buffer with its
    /// output, the output starting before it and overwriting what the kernel has consumed
    /// ([`crate::optimize::overlap`]).
    pub overlap: Vec<Option<usize>>,
}

/// Who reads what: the facts every storage decision starts from, in one pass over the nodes.
#[derive(Clone, Debug)]
pub struct Uses {
    /// The tensor owning each tensor's bytes (views followed back).
    pub roots: Vec<TensorId>,
    /// The step writing each tensor.
    pub producer: Vec<Option<usize>>,
    /// The last step (not a view) reading each root, through any view.
    pub last_use: Vec<Option<usize>>,
    /// How many steps read each root, through any view (views count as readers).
    pub root_readers: Vec<usize>,
    /// Whether each root holds a graph output (through any view).
    pub holds_output: Vec<bool>,
}

impl Uses {
    /// The uses in `g`'s schedule order.
    pub fn of(g: &Graph) -> Uses {
        let n = g.tensors.len();
        let (roots, producer) = (g.view_roots(), g.producers());
        let (mut last_use, mut root_readers) = (vec![None; n], vec![0; n]);
        for (i, node) in g.nodes.iter().enumerate() {
            let mut seen: Vec<TensorId> = Vec::with_capacity(node.inputs.len());
            for &t in &node.inputs {
                let r = roots[t];
                if !node.op.is_view() {
                    last_use[r] = Some(last_use[r].map_or(i, |l: usize| l.max(i)));
                }
                if !seen.contains(&r) {
                    seen.push(r);
                    root_readers[r] += 1;
                }
            }
        }
        let mut holds_output = vec![false; n];
        g.outputs.iter().for_each(|&o| holds_output[roots[o]] = true);
        Uses { roots, producer, last_use, root_readers, holds_output }
    }
}

/// The sharing the storage passes decided (beyond views), which [`analyze`] turns into buffers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sharing {
    /// For each step, the input whose bytes its output overwrites (in-place execution).
    pub in_place: Vec<Option<usize>>,
    /// For each step, whether it is an elided concatenation.
    pub elided: Vec<bool>,
    /// For each tensor stored inside another tensor's buffer: that tensor and the byte offset
    /// (an elided concatenation's input in its slice of the output, or an overlapped step's
    /// input, after the start of the step's output).
    pub part_of: Vec<Option<(TensorId, u64)>>,
    /// For each step, the input whose buffer it shares with its output (an overlapped step).
    pub overlap: Vec<Option<usize>>,
}

impl Sharing {
    /// No sharing in `g` (every step computes into its own buffer).
    pub fn none(g: &Graph) -> Sharing {
        Sharing {
            in_place: vec![None; g.nodes.len()],
            elided: vec![false; g.nodes.len()],
            part_of: vec![None; g.tensors.len()],
            overlap: vec![None; g.nodes.len()],
        }
    }

    /// Where each tensor's bytes are, following [`Sharing::part_of`] to the end: the tensor at
    /// the top of its chain of links and the byte offset from that tensor's start. A part of a
    /// part (an elided concatenation's input whose output is itself an input of an elided
    /// concatenation, as when patch-based execution tiles a band again) adds up the offsets.
    /// Linear: each link is followed once.
    pub fn placement(&self) -> Vec<(TensorId, u64)> {
        let mut placed: Vec<Option<(TensorId, u64)>> = vec![None; self.part_of.len()];
        let mut path = Vec::new();
        for t in 0..self.part_of.len() {
            // Up the links to a tensor already placed or stored in no other one.
            let mut top = t;
            while placed[top].is_none() {
                match self.part_of[top] {
                    Some((whole, _)) => {
                        path.push(top);
                        top = whole;
                    }
                    None => {
                        placed[top] = Some((top, 0));
                        break;
                    }
                }
            }
            let (owner, mut offset) = placed[top].expect("placed above");
            // Back down, nearest the top first.
            while let Some(p) = path.pop() {
                offset += self.part_of[p].map_or(0, |(_, off)| off);
                placed[p] = Some((owner, offset));
            }
        }
        placed.into_iter().map(|p| p.expect("every tensor placed")).collect()
    }

    /// The tensor owning each view root's buffer: the input an in-place chain started from, an
    /// elided concatenation's output for its parts (the outermost one for parts of parts), an
    /// overlapped step's output for its input. Linear: each decision points a fresh root at an
    /// owner that is already final.
    pub fn owners(&self, g: &Graph, uses: &Uses) -> Vec<TensorId> {
        self.owners_at(&self.placement(), g, uses)
    }

    /// [`Sharing::owners`] from this sharing's [`Sharing::placement`], already computed.
    fn owners_at(&self, placement: &[(TensorId, u64)], g: &Graph, uses: &Uses) -> Vec<TensorId> {
        let mut owner: Vec<TensorId> = placement.iter().map(|&(o, _)| o).collect();
        for (i, n) in g.nodes.iter().enumerate() {
            if let Some(k) = self.in_place[i] {
                owner[uses.roots[n.output]] = owner[uses.roots[n.inputs[k]]];
            }
        }
        owner
    }
}

/// Computes storage and lifetimes of the tensors of `g` under the storage passes' `sharing` (no
/// scratch yet: see [`Liveness::add_scratch`]). Expects [`crate::boundary::bind_outputs`] to have
/// run.
pub fn analyze(g: &Graph, uses: &Uses, sharing: &Sharing) -> Liveness {
    let n = g.tensors.len();
    let placement = sharing.placement();
    let owner = sharing.owners_at(&placement, g, uses);
    let output_index = {
        let mut index = vec![None; n];
        for (j, &o) in g.outputs.iter().enumerate() {
            index[uses.roots[o]].get_or_insert(j);
        }
        index
    };
    // Each buffer owner's life: from the first birth to the last use of the tensors it holds.
    let mut born: Vec<Option<usize>> = vec![None; n];
    let mut last: Vec<Option<usize>> = vec![None; n];
    let mut holds_output = vec![false; n];
    // Each owner's buffer reaches to the end of the furthest tensor it holds.
    let mut extent: Vec<u64> = vec![0; n];
    for (t, &o) in owner.iter().enumerate() {
        if uses.roots[t] != t {
            continue;
        }
        let offset = placement[t].1;
        extent[o] = extent[o].max(offset + g.tensors[t].bytes());
        if let Some(p) = uses.producer[t] {
            born[o] = Some(born[o].map_or(p, |b: usize| b.min(p)));
        }
        if let Some(l) = uses.last_use[t] {
            last[o] = Some(last[o].map_or(l, |x: usize| x.max(l)));
        }
        holds_output[o] |= uses.holds_output[t];
    }
    let mut storage = vec![Storage::Arena(usize::MAX); n];
    let mut problem = Problem::default();
    let mut owners = Vec::new();
    let end = g.nodes.len().saturating_sub(1) as u32;
    for t in 0..n {
        if uses.roots[t] != t || owner[t] != t {
            continue;
        }
        storage[t] = match (&g.tensors[t].kind, output_index[t], g.io) {
            (TensorKind::Input(i), _, _) if !g.input_in_arena(*i) => Storage::Input(*i),
            (TensorKind::Const(_), _, _) => Storage::Const(t),
            (TensorKind::Activation, Some(j), Io::Caller) => Storage::Output(j),
            // In the arena, an input is written by the caller before step 0 and an output is read
            // by the caller after the last step.
            (kind, _, _) => {
                let first = if matches!(kind, TensorKind::Input(_)) { 0 } else { born[t].unwrap_or(0) as u32 };
                let last = match holds_output[t] {
                    true => end,
                    false => last[t].map_or(first, |l| l as u32),
                };
                problem.buffers.push(Buffer {
                    name: g.tensors[t].name.clone(),
                    size: extent[t],
                    align: ARENA_ALIGN,
                    lifetime: Lifetime::new(first, last.max(first)),
                });
                owners.push(BufferOwner::Tensor(t));
                Storage::Arena(problem.buffers.len() - 1)
            }
        };
    }
    for t in 0..n {
        storage[t] = storage[owner[uses.roots[t]]];
    }
    let offset_in_buffer = (0..n).map(|t| placement[uses.roots[t]].1).collect();
    Liveness {
        storage,
        problem,
        owners,
        scratch: vec![None; g.nodes.len()],
        in_place: sharing.in_place.clone(),
        offset_in_buffer,
        elided: sharing.elided.clone(),
        overlap: sharing.overlap.clone(),
    }
}

impl Liveness {
    /// Arena bytes of the buffers live at each of `steps` steps, sizes rounded to their alignment.
    pub fn live_bytes_per_step(&self, steps: usize) -> Vec<u64> {
        self.problem.live_bytes_per_step(steps, |b| b.size.next_multiple_of(b.align))
    }

    /// The first of `steps` steps at which the live bytes peak ([`Liveness::live_bytes_per_step`]).
    pub fn peak_step(&self, steps: usize) -> usize {
        let bytes = self.live_bytes_per_step(steps);
        let max = bytes.iter().copied().max().unwrap_or(0);
        bytes.iter().position(|&b| b == max).unwrap_or(0)
    }

    /// Adds a one-step scratch buffer of `elems[i]` elements of `dtypes[i]` for every step `i`
    /// with `elems[i] > 0`.
    pub fn add_scratch(&mut self, g: &Graph, elems: &[usize], dtypes: &[DType]) {
        for (i, n) in g.nodes.iter().enumerate() {
            if elems[i] == 0 {
                continue;
            }
            self.problem.buffers.push(Buffer {
                name: format!("{}.scratch", n.name),
                size: (elems[i] * dtypes[i].size()) as u64,
                align: ARENA_ALIGN,
                lifetime: Lifetime::new(i as u32, i as u32),
            });
            self.owners.push(BufferOwner::Scratch(i));
            self.scratch[i] = Some(self.problem.buffers.len() - 1);
        }
    }
}
