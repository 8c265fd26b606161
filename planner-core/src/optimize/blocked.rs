//! Channel-blocked activations (for speed, not memory; x86-64 targets only,
//! [`super::Optimizations::for_target`]): a chain of convolutions `runtime_min::conv2d_blocked`
//! computes (pointwise, dense and 3x3 depthwise layers between whole blocks of 16 channels) runs
//! on tensors stored `[batch][channels / 16][h * w][16]`, converted from NCHW where the chain
//! starts and back where anything else reads it. Their vectors then need no transposes and no
//! masked tails: one layer each, KWS's pointwise layer takes 0.84-0.86 of the NCHW kernel's
//! time, its depthwise layer 0.75-0.85, ResNet-8's 3x3 layers 0.75-0.89, its first layer 0.79-0.81
//! and its strided 1x1 shortcuts 0.58-0.59, ResNet-18's 4x4 and 2x2 layers 0.49-0.82 with their
//! weights in panels ([`super::pack::pack_panels`], run after this pass)
//! (`runtime-min/src/blocked.rs`).
//!
//! Chains are the connected groups of such convolutions, of the `f32` elementwise functions of
//! same-shape tensors between them (a residual network's sum: the same function on blocked
//! tensors), of the 2-D max poolings of their outputs (`runtime_min::max_pool2d_blocked`, with
//! `max_pool2d`'s bits: MNIST's pooling, so that its chain converts the pooled tensor back, a
//! quarter of its input) and of their global poolings (`runtime_min::global_pool_blocked`, with
//! the bits of a global average pooling or of a sum over a plane of few values, writing their
//! NCHW output, whose bytes are the same blocked: the chain ends with no conversion; KWS's
//! pooling and the conversion before it took 1.9 us of 56), joined by the tensors one writes and
//! another reads blocked in one layout (a first layer of fewer than 16 channels reads its NCHW input as it is and writes
//! blocked); a group of fewer than two convolutions would pay its conversions for one layer's
//! gain and is left as it is. The pass runs last, on the order and bands the schedule and
//! tiling chose, and keeps a chain only where its conversions do not raise the arena's lower
//! bound: a speed rewrite that costs no memory (a first version without that check, run before
//! the schedule, gave VWW an arena of 288 KiB instead of 216: its first chain's input, 16
//! channels of 48x48, held in both layouts at once).
//!
//! In a kept group every convolution becomes an [`Op::ConvBlocked`] writing a new tensor
//! `NAME.blocked` of the same shape (a max pooling becomes an [`Op::PoolBlocked`]; an
//! elementwise step stays what it is, its tensors blocked; a global pooling becomes an
//! [`Op::GlobalPoolBlocked`] writing the tensor it wrote); a step of the group reading
//! another's output reads that tensor; an input from outside the group is converted once
//! ([`Way::ToBlocked`], right before its first reader of the group) and a blocked output that
//! something else reads, or that is a graph output, is converted back into its original tensor
//! ([`Way::FromBlocked`], right after the step), so every other node, and every port, reads
//! what it read before. No result changes: `conv2d_blocked`, `max_pool2d_blocked` and
//! `global_pool_blocked` give `conv2d`'s, `max_pool2d`'s and `avg_pool2d`'s or `reduce_sum`'s bits
//! (`runtime-min/tests/blocked.rs`).
//!
//! Blocked tensors are read only by blocked convolutions and poolings, conversions and those
//! elementwise steps. The storage passes, run again afterwards, never treat the first four as
//! plane-ordered (overlap) or elementwise (in place); an elementwise step may still write over an
//! input it reads last, which is as right for blocked tensors, all of the same layout, as for
//! NCHW ones.

use std::ops::Range;

use super::Optimizations;
use crate::ir::{DType, Graph, Node, Op, TensorId, TensorKind};
use crate::ops::binary::BinaryOp;
use crate::ops::conv_blocked::ConvBlocked;
use crate::ops::global_pool_blocked::GlobalPoolBlocked;
use crate::ops::pool::{Pool, PoolKind};
use crate::ops::pool_blocked::PoolBlocked;
use crate::ops::reduce::{ReduceOp, Reducer};
use crate::ops::reorder::{Reorder, Way};
use crate::plan;
use crate::tensor::strides_of;
use sramfit_runtime_min::{
    conv2d_blocked_applies, max_pool2d_blocked_applies, reads_nchw, Conv2d, ConvWeights, GlobalPool, CHANNEL_BLOCK,
};

/// The fewest convolutions a chain must have to run blocked.
pub const MIN_CHAIN: usize = 2;

/// Runs the chains of at least [`MIN_CHAIN`] convolutions `conv2d_blocked` computes (with the
/// elementwise steps and max poolings between them, [`Role`]) on channel-blocked tensors, each
/// chain only where its conversions do not raise the arena's lower bound under the storage
/// passes of `o` in the graph's order (the schedule's: this pass runs after it, converting right
/// before a chain's first reader and right after a writer); a chain that would is tried again
/// without its first step (split into the chains that leaves), until it has fewer than
/// [`MIN_CHAIN`] convolutions. Returns how many convolutions now run blocked. Each try costs one
/// run of the storage passes.
pub fn block_chains(g: &mut Graph, o: &Optimizations) -> usize {
    let members = members(g, o.pack_weights);
    let mut todo = chains(g, &members);
    if todo.is_empty() {
        return 0;
    }
    let bound = |g: &Graph| plan::lower_bound(&super::storage(g, o).problem).bytes;
    let unblocked = bound(g);
    let mut chosen = vec![false; g.nodes.len()];
    while let Some(chain) = todo.pop() {
        chain.iter().for_each(|&j| chosen[j] = true);
        let mut trial = g.clone();
        rewrite(&mut trial, &chosen, &members);
        if bound(&trial) <= unblocked {
            continue;
        }
        chain.iter().for_each(|&j| chosen[j] = false);
        let mut rest = vec![None; g.nodes.len()];
        chain[1..].iter().for_each(|&j| rest[j] = members[j]);
        todo.extend(chains(g, &rest));
    }
    rewrite(g, &chosen, &members)
}

/// What a node can be in a chain ([`role`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// A convolution `conv2d_blocked` computes, whose feature map is input `slot`, read blocked
    /// unless the convolution reads it as NCHW (`runtime_min::reads_nchw`: a first layer).
    Conv { slot: usize, blocked: bool },
    /// An elementwise function of tensors of its output's shape (no broadcast): the same on
    /// blocked tensors as on NCHW ones, every input read blocked (a residual network's sum).
    Elementwise,
    /// A 2-D max pooling `runtime_min::max_pool2d_blocked` computes, its input read blocked.
    Pool,
    /// A global pooling `runtime_min::global_pool_blocked` computes, its input read blocked, its
    /// output written as it is (one value per channel, the same bytes in either layout).
    Global(GlobalPool),
}

impl Role {
    /// The slots of the inputs of a node of `inputs` inputs read blocked in a chain.
    fn blocked_slots(self, inputs: usize) -> Range<usize> {
        match self {
            Role::Conv { slot, blocked: true } => slot..slot + 1,
            Role::Conv { blocked: false, .. } => 0..0,
            Role::Elementwise | Role::Pool | Role::Global(_) => 0..inputs,
        }
    }

    /// Whether its output is written blocked (a new `NAME.blocked` tensor).
    fn writes_blocked(self) -> bool {
        !matches!(self, Role::Global(_))
    }

    /// The inputs of `n` read blocked in a chain.
    fn blocked_inputs(self, n: &Node) -> &[TensorId] {
        &n.inputs[self.blocked_slots(n.inputs.len())]
    }
}

/// `(batch, channels, plane)`: how a blocked tensor is laid out (`runtime_min::blocked_index`).
type Dims = (usize, usize, usize);

/// A node's part in a chain: its [`Role`], the layout its blocked inputs are read in and the one
/// its output is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Member {
    role: Role,
    reads: Dims,
    writes: Dims,
}

/// Each node's [`Member`], where it can be one ([`role`]) and reads every tensor in the layout
/// the tensor's writer in a chain, or its first reader, uses. (A tensor has one blocked layout:
/// MNIST's first dense layer, a 1x1 convolution of 9216 channels at one position, reads its
/// pooling's output of 64 channels of 12x12, the same bytes in NCHW and laid out otherwise
/// blocked; it stays NCHW.) Nodes go in the graph's order, writers before readers.
fn members(g: &Graph, packed: bool) -> Vec<Option<Member>> {
    let mut layout: Vec<Option<Dims>> = vec![None; g.tensors.len()];
    let mut members = Vec::with_capacity(g.nodes.len());
    for (i, n) in g.nodes.iter().enumerate() {
        let member = role(g, i, packed)
            .filter(|m| m.role.blocked_inputs(n).iter().all(|&t| layout[t].is_none_or(|dims| dims == m.reads)));
        if let Some(m) = member {
            m.role.blocked_inputs(n).iter().for_each(|&t| layout[t] = Some(m.reads));
            if m.role.writes_blocked() {
                layout[n.output] = Some(m.writes);
            }
        }
        members.push(member);
    }
    members
}

/// The chains among the nodes with a part in `members` ([`members`]): groups joined by the tensors
/// one writes and another reads blocked, with at least [`MIN_CHAIN`] convolutions each (their
/// node indices, ascending; groups in the order of their first node). Linear in the graph, plus
/// a union-find.
fn chains(g: &Graph, members: &[Option<Member>]) -> Vec<Vec<usize>> {
    let producers = g.producers();
    let mut parent: Vec<usize> = (0..g.nodes.len()).collect();
    for (j, n) in g.nodes.iter().enumerate() {
        let Some(m) = members[j] else { continue };
        for &t in m.role.blocked_inputs(n) {
            if let Some(i) = producers[t].filter(|&i| members[i].is_some_and(|m| m.role.writes_blocked())) {
                let (a, b) = (find(&mut parent, i), find(&mut parent, j));
                parent[a.max(b)] = a.min(b);
            }
        }
    }
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); g.nodes.len()];
    for j in (0..g.nodes.len()).filter(|&j| members[j].is_some()) {
        groups[find(&mut parent, j)].push(j);
    }
    let is_conv = |j: usize| members[j].is_some_and(|m| matches!(m.role, Role::Conv { .. }));
    let convs = |group: &Vec<usize>| group.iter().filter(|&&j| is_conv(j)).count();
    groups.retain(|group| convs(group) >= MIN_CHAIN);
    groups
}

/// Node `i`'s role in a chain, if it can have one: a convolution `conv2d_blocked` computes of an
/// `f32` activation (a convolution, feature map input 0; or, with packed weights (`packed`: a
/// blocked pointwise convolution reads them k-major), a matrix product of constant weights times
/// a feature map that is a pointwise convolution (tract's einsum of one, input 1;
/// [`super::fold_affine::pointwise_feature_map`]), which [`rewrite`] makes a 1x1 convolution
/// first); an `f32` elementwise function of two activations of its output's shape, whole
/// blocks of channels; a max pooling `runtime_min::max_pool2d_blocked` computes of an
/// activation; or a global pooling `runtime_min::global_pool_blocked` computes of one
/// ([`global`]). With the layouts it reads and writes: a convolution's and a pooling's from their
/// parameters (a matrix product's tensors are not all 4-D), an elementwise node's from its
/// output's shape, which its inputs share.
fn role(g: &Graph, i: usize, packed: bool) -> Option<Member> {
    if let Some(p) = global(g, i) {
        let (reads, writes) = ((p.batch, p.channels, p.plane), (p.batch, p.channels, 1));
        return Some(Member { role: Role::Global(p), reads, writes });
    }
    let (slot, p) = match &g.nodes[i].op {
        Op::Conv(p) => (0, *p),
        Op::MatMul(_) if packed => match super::fold_affine::pointwise_feature_map(g, i)? {
            // The weights first (`[out, in]` times the feature map): the matrix product sums
            // the k-ascending chains the convolution does. Not the other orientation (one
            // position, `[1, in]` times the weights): the rewrite property test found a product
            // of it (16 by 16, its weights read transposed) whose bits differ from the 1x1
            // convolution's, which lane-parallel dot products over a transposed operand explain.
            (1, p) => (1, Conv2d { weights: ConvWeights::KMajor, ..p }),
            _ => return None,
        },
        Op::Binary(b) => {
            if !elementwise(g, i, b) {
                return None;
            }
            let s = &g.tensors[g.nodes[i].output].shape;
            let dims = (s[0], s[1], s[2] * s[3]);
            return Some(Member { role: Role::Elementwise, reads: dims, writes: dims });
        }
        Op::Pool(Pool { kind, params: p }) => {
            let x = &g.tensors[g.nodes[i].inputs[0]];
            let max = *kind == PoolKind::Max && max_pool2d_blocked_applies(p);
            let pooled = max && p.batch > 0 && x.dtype == DType::F32 && !matches!(x.kind, TensorKind::Const(_));
            let (reads, writes) = ((p.batch, p.channels, p.in_h * p.in_w), (p.batch, p.channels, p.out_h * p.out_w));
            return pooled.then_some(Member { role: Role::Pool, reads, writes });
        }
        _ => return None,
    };
    let x = &g.tensors[g.nodes[i].inputs[slot]];
    let blocked = conv2d_blocked_applies(&p) && p.batch > 0;
    let role = Role::Conv { slot, blocked: !reads_nchw(&p) };
    let (reads, writes) = ((p.batch, p.in_channels, p.in_h * p.in_w), (p.batch, p.out_channels, p.out_h * p.out_w));
    (blocked && !matches!(x.kind, TensorKind::Const(_))).then_some(Member { role, reads, writes })
}

/// The global pooling `runtime_min::global_pool_blocked` computes with the bits of node `i`, if
/// it has one: an `f32` activation's global average pooling (`GlobalPool::of_avg_pool2d`), or
/// its sum or mean over the plane of a contiguous `[batch, channels, h, w]` or `[channels, h, w]`
/// tensor (a pointwise convolution's einsum writes the latter), that plane's values added in
/// order (`GlobalPool::of_reduce`: VWW's and MobileNetV2's 3x3).
fn global(g: &Graph, i: usize) -> Option<GlobalPool> {
    let x = &g.tensors[g.nodes[i].inputs[0]];
    if x.dtype != DType::F32 || matches!(x.kind, TensorKind::Const(_)) || x.shape.first() == Some(&0) {
        return None;
    }
    match &g.nodes[i].op {
        Op::Pool(Pool { kind: PoolKind::Avg, params }) => GlobalPool::of_avg_pool2d(params),
        Op::Reduce(ReduceOp { kind, out_in_strides, red_shape, red_strides }) => {
            let mean = match kind {
                Reducer::Sum => false,
                Reducer::Mean => true,
                _ => return None,
            };
            let (lead, &[h, w]) = x.shape.split_last_chunk::<2>()?;
            let (batch, channels) = match *lead {
                [channels] => (1, channels),
                [batch, channels] => (batch, channels),
                _ => return None,
            };
            let mut kept = strides_of(&x.shape);
            kept[lead.len()..].fill(0);
            let over_plane = *out_in_strides == kept && *red_shape == [h, w] && *red_strides == [w, 1];
            over_plane.then(|| GlobalPool::of_reduce(batch, channels, h * w, mean)).flatten()
        }
        _ => None,
    }
}

/// Whether binary node `i` (`b`) is an `f32` function of two activations of its output's shape,
/// `[batch, channels, h, w]` with whole blocks of channels, read without broadcast.
fn elementwise(g: &Graph, i: usize, b: &BinaryOp) -> bool {
    let n = &g.nodes[i];
    let y = &g.tensors[n.output];
    let whole = y.shape.len() == 4 && y.shape[1].is_multiple_of(CHANNEL_BLOCK) && y.dtype == DType::F32;
    // Read in place: each input's strides those of the output, on every axis longer than one
    // (an axis of one may have any stride).
    let dense = strides_of(&y.shape);
    let in_place = |strides: &[usize]| {
        strides.len() == dense.len() && (0..dense.len()).all(|a| y.shape[a] == 1 || strides[a] == dense[a])
    };
    let same = |t: TensorId| {
        let x = &g.tensors[t];
        x.shape == y.shape && x.dtype == DType::F32 && !matches!(x.kind, TensorKind::Const(_))
    };
    whole && in_place(&b.a_strides) && in_place(&b.b_strides) && n.inputs.iter().all(|&t| same(t))
}

/// The representative of `i`'s group (path halving).
fn find(parent: &mut [usize], mut i: usize) -> usize {
    while parent[i] != i {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    i
}

/// Rewrites the `chosen` nodes (each with its part in `members`) onto blocked tensors, with the
/// conversions their groups need (module docs); returns how many convolutions it rewrote. A
/// chosen matrix product becomes its 1x1 convolution first, its weights packed k-major (one
/// whose weights cannot be read as such stays as it is, unchosen).
fn rewrite(g: &mut Graph, chosen: &[bool], members: &[Option<Member>]) -> usize {
    let mut members: Vec<Option<Member>> = members.iter().zip(chosen).map(|(&m, &c)| m.filter(|_| c)).collect();
    let products: Vec<usize> =
        (0..g.nodes.len()).filter(|&i| members[i].is_some() && matches!(g.nodes[i].op, Op::MatMul(_))).collect();
    for &i in &products {
        // The convolution's feature map is its input 0.
        let conv = |m: Member| match m.role {
            Role::Conv { blocked, .. } => Member { role: Role::Conv { slot: 0, blocked }, ..m },
            _ => m,
        };
        members[i] = members[i].filter(|_| super::fold_affine::as_pointwise_conv(g, i)).map(conv);
    }
    if !products.is_empty() {
        // Packs the new convolutions' weights (the others are packed already): renumbers the
        // tensors, not the nodes.
        super::pack::pack_conv_weights(g);
    }
    let producers = g.producers();
    let writes_blocked: Vec<bool> = members.iter().map(|m| m.is_some_and(|m| m.role.writes_blocked())).collect();
    // Whether each tensor is read by a node that is not chosen, or is a graph output (a chosen
    // convolution's weights and bias are read as they are, and a first layer's NCHW input).
    let mut read_as_nchw = vec![false; g.tensors.len()];
    for (n, m) in g.nodes.iter().zip(&members) {
        let blocked = m.map_or(0..0, |m| m.role.blocked_slots(n.inputs.len()));
        let nchw = n.inputs.iter().enumerate().filter(|(slot, _)| !blocked.contains(slot));
        nchw.for_each(|(_, &t)| read_as_nchw[t] = true);
    }
    g.outputs.iter().for_each(|&t| read_as_nchw[t] = true);
    // The blocked copy of each tensor a chosen node reads or writes, once made.
    let mut blocked: Vec<Option<TensorId>> = vec![None; g.tensors.len()];
    let mut convs = 0;
    let old = std::mem::take(&mut g.nodes);
    for (mut n, m) in old.into_iter().zip(members) {
        let Some(m) = m else {
            g.nodes.push(n);
            continue;
        };
        for slot in m.role.blocked_slots(n.inputs.len()) {
            let x = n.inputs[slot];
            if !producers[x].is_some_and(|i| writes_blocked[i]) && blocked[x].is_none() {
                let xb = blocked_copy(g, x);
                g.nodes.push(reorder(g, Way::ToBlocked, m.reads, x, xb));
                blocked[x] = Some(xb);
            }
            n.inputs[slot] = blocked[x].expect("a chain's input is converted, or written blocked, before it is read");
        }
        match (&n.op, m.role) {
            (_, Role::Global(p)) => {
                // Its output stays the tensor it wrote.
                n.op = Op::GlobalPoolBlocked(GlobalPoolBlocked(p));
                g.nodes.push(n);
                continue;
            }
            (Op::Conv(p), _) => {
                n.op = Op::ConvBlocked(ConvBlocked(*p));
                convs += 1;
            }
            (Op::Pool(pool), _) => n.op = Op::PoolBlocked(PoolBlocked(pool.params)),
            _ => {}
        }
        let y = n.output;
        let yb = blocked_copy(g, y);
        blocked[y] = Some(yb);
        n.output = yb;
        g.nodes.push(n);
        if read_as_nchw[y] {
            g.nodes.push(reorder(g, Way::FromBlocked, m.writes, yb, y));
        }
    }
    super::remove_unused_tensors(g);
    convs
}

/// A new tensor `NAME.blocked` of `t`'s shape and type, computed by a node.
fn blocked_copy(g: &mut Graph, t: TensorId) -> TensorId {
    let (name, shape, dtype) =
        (format!("{}.blocked", g.tensors[t].name), g.tensors[t].shape.clone(), g.tensors[t].dtype);
    g.add_tensor(name, shape, dtype, TensorKind::Activation)
}

/// The conversion node of `x` into `y`.
fn reorder(g: &Graph, way: Way, (batch, channels, plane): (usize, usize, usize), x: TensorId, y: TensorId) -> Node {
    debug_assert!(channels.is_multiple_of(CHANNEL_BLOCK), "only whole blocks of channels run blocked");
    let (source_op, of) = match way {
        Way::ToBlocked => ("ToBlocked", x),
        Way::FromBlocked => ("FromBlocked", y),
    };
    Node {
        name: format!("{}.{}", g.tensors[of].name, source_op),
        source_op: source_op.into(),
        op: Op::Reorder(Reorder { way, batch, channels, plane }),
        inputs: vec![x],
        output: y,
    }
}

#[cfg(test)]
mod tests {
    use sramfit_runtime_min::{self as rt, Activation, Conv2d, ConvInput, ConvWeights};

    use super::*;
    use crate::ops::unary::Unary;
    use crate::tensor::{DType, Data};

    /// A convolution of `[1, in_channels, size, size]`: pointwise (k-major weights), or 3x3
    /// depthwise with padding 1 at `stride`.
    fn conv(in_channels: usize, out_channels: usize, size: usize, depthwise_stride: Option<usize>) -> Conv2d {
        let (k, s) = depthwise_stride.map_or((1, 1), |s| (3, s));
        Conv2d {
            batch: 1,
            in_channels,
            in_h: size,
            in_w: size,
            out_channels,
            out_h: size / s,
            out_w: size / s,
            kernel_h: k,
            kernel_w: k,
            stride_h: s,
            stride_w: s,
            dilation_h: 1,
            dilation_w: 1,
            pad_top: k / 2,
            pad_left: k / 2,
            groups: if k == 3 { in_channels } else { 1 },
            act: Activation::Relu,
            weights: if k == 3 { ConvWeights::Oihw } else { ConvWeights::KMajor },
            input: ConvInput::Nchw,
        }
    }

    /// A dense 3x3 convolution of `[1, channels, size, size]`, padding 1, stride 1 (k-major
    /// weights).
    fn dense3x3(channels: usize, size: usize) -> Conv2d {
        let p = conv(channels, channels, size, Some(1));
        Conv2d { groups: 1, weights: ConvWeights::KMajor, ..p }
    }

    /// Appends the sum of `a` and `b` (both `[1, channels, size, size]`), named `name`.
    fn add(g: &mut Graph, name: &str, a: TensorId, b: TensorId) -> TensorId {
        let shape = g.tensors[a].shape.clone();
        let strides = crate::tensor::strides_of(&shape);
        let y = g.add_tensor(name, shape, DType::F32, TensorKind::Activation);
        let op = BinaryOp::new(crate::ops::binary::Binary::Add, strides.clone(), strides);
        g.nodes.push(Node::new(name, Op::Binary(op), vec![a, b], y));
        y
    }

    /// A 2-D pooling of `[1, channels, size, size]` by `kernel x kernel` windows at stride
    /// `kernel`, without padding.
    fn pool2d(channels: usize, size: usize, kernel: usize) -> rt::Pool2d {
        let out = size / kernel;
        rt::Pool2d {
            batch: 1,
            channels,
            in_d: 1,
            out_d: 1,
            kernel_d: 1,
            stride_d: 1,
            dilation_d: 1,
            pad_front: 0,
            pad_back: 0,
            in_h: size,
            in_w: size,
            out_h: out,
            out_w: out,
            kernel_h: kernel,
            kernel_w: kernel,
            stride_h: kernel,
            stride_w: kernel,
            dilation_h: 1,
            dilation_w: 1,
            pad_top: 0,
            pad_left: 0,
            pad_bottom: 0,
            pad_right: 0,
            count_include_pad: false,
        }
    }

    /// Appends a step of `p` reading `x`; returns its output, `name`.
    fn push(g: &mut Graph, name: &str, p: Conv2d, x: TensorId) -> TensorId {
        let w_len = p.out_channels * p.in_channels / p.groups * p.kernel_h * p.kernel_w;
        let w = g.add_const(format!("{name}.w"), vec![w_len], Data::F32(vec![0.5; w_len]));
        let y = g.add_tensor(name, vec![1, p.out_channels, p.out_h, p.out_w], DType::F32, TensorKind::Activation);
        g.nodes.push(Node::new(name, Op::Conv(p), vec![x, w], y));
        y
    }

    /// A graph of the input `x` (`[1, channels, size, size]`).
    fn graph(channels: usize, size: usize) -> (Graph, TensorId) {
        let mut g = Graph::default();
        let x = g.add_tensor("x", vec![1, channels, size, size], DType::F32, TensorKind::Input(0));
        g.inputs.push(x);
        (g, x)
    }

    /// `(source operator, output name, input names)` per step.
    fn steps(g: &Graph) -> Vec<(String, String, Vec<String>)> {
        let name = |t: TensorId| g.tensors[t].name.clone();
        let kind = |n: &Node| match &n.op {
            Op::Conv(_) => "Conv".to_string(),
            Op::ConvBlocked(_) => "ConvBlocked".to_string(),
            Op::PoolBlocked(_) => "PoolBlocked".to_string(),
            Op::GlobalPoolBlocked(_) => "GlobalPoolBlocked".to_string(),
            _ => n.source_op.clone(),
        };
        g.nodes.iter().map(|n| (kind(n), name(n.output), n.inputs.iter().take(1).map(|&t| name(t)).collect())).collect()
    }

    fn step(op: &str, output: &str, input: &str) -> (String, String, Vec<String>) {
        (op.into(), output.into(), vec![input.into()])
    }

    #[test]
    fn a_chain_runs_blocked_converted_where_it_starts_and_where_others_read_it() {
        let (mut g, x) = graph(16, 8);
        let a = push(&mut g, "a", conv(16, 32, 8, None), x);
        let b = push(&mut g, "b", conv(32, 32, 8, Some(1)), a);
        // `b` is also read by an elementwise step, and `c` is a graph output.
        let r = g.add_tensor("r", vec![1, 32, 8, 8], DType::F32, TensorKind::Activation);
        g.nodes.push(Node::new("r", Op::Unary(Unary::Relu), vec![b], r));
        let c = push(&mut g, "c", conv(32, 16, 8, None), b);
        g.outputs.extend([c, r]);
        // Without overlap, which would let `b` overwrite `a` as it goes and so make the
        // conversions cost bytes (a blocked step never overlaps).
        let o = Optimizations { overlap: false, ..Default::default() };
        assert_eq!(block_chains(&mut g, &o), 3);
        assert_eq!(
            steps(&g),
            [
                step("ToBlocked", "x.blocked", "x"),
                step("ConvBlocked", "a.blocked", "x.blocked"),
                step("ConvBlocked", "b.blocked", "a.blocked"),
                step("FromBlocked", "b", "b.blocked"),
                step("r", "r", "b"),
                step("ConvBlocked", "c.blocked", "b.blocked"),
                step("FromBlocked", "c", "c.blocked"),
            ]
        );
        let Op::Reorder(to) = g.nodes[0].op else { panic!("a conversion") };
        assert_eq!(to, Reorder { way: Way::ToBlocked, batch: 1, channels: 16, plane: 64 });
        let Op::Reorder(from) = g.nodes[3].op else { panic!("a conversion") };
        assert_eq!(from, Reorder { way: Way::FromBlocked, batch: 1, channels: 32, plane: 64 });
        // The ports are the tensors they were; `a` itself is gone (only the chain read it).
        assert_eq!((g.tensors[g.outputs[0]].name.as_str(), g.tensors[g.outputs[1]].name.as_str()), ("c", "r"));
        assert!(g.tensors.iter().all(|t| t.name != "a"));
    }

    #[test]
    fn a_residual_block_runs_blocked_sum_included() {
        // `c`, then a residual block on it: `s = c + b(a(c))`. (Not on the graph input `x`:
        // its blocked copy would be in the arena, `x` is not.)
        let (mut g, x) = graph(16, 8);
        let c = push(&mut g, "c", conv(16, 16, 8, None), x);
        let a = push(&mut g, "a", dense3x3(16, 8), c);
        let b = push(&mut g, "b", dense3x3(16, 8), a);
        let s = add(&mut g, "s", c, b);
        g.outputs.push(s);
        let o = Optimizations { overlap: false, ..Default::default() };
        assert_eq!(block_chains(&mut g, &o), 3);
        let add_inputs = |g: &Graph| {
            let n = g.nodes.iter().find(|n| matches!(n.op, Op::Binary(_))).unwrap();
            n.inputs.iter().map(|&t| g.tensors[t].name.clone()).collect::<Vec<_>>()
        };
        assert_eq!(add_inputs(&g), ["c.blocked", "b.blocked"]);
        assert_eq!(
            steps(&g),
            [
                step("ToBlocked", "x.blocked", "x"),
                step("ConvBlocked", "c.blocked", "x.blocked"),
                step("ConvBlocked", "a.blocked", "c.blocked"),
                step("ConvBlocked", "b.blocked", "a.blocked"),
                step("s", "s.blocked", "c.blocked"),
                step("FromBlocked", "s", "s.blocked"),
            ]
        );
    }

    #[test]
    fn a_first_layer_reads_its_nchw_input_and_writes_blocked() {
        let (mut g, x) = graph(3, 8);
        let first = Conv2d { in_channels: 3, ..dense3x3(16, 8) };
        let a = push(&mut g, "a", first, x);
        let b = push(&mut g, "b", conv(16, 16, 8, None), a);
        // `c` too: the conversion of a graph output costs its blocked copy in the arena.
        let c = push(&mut g, "c", conv(16, 16, 8, None), b);
        g.outputs.push(c);
        assert_eq!(block_chains(&mut g, &Optimizations::default()), 3);
        assert_eq!(
            steps(&g),
            [
                step("ConvBlocked", "a.blocked", "x"),
                step("ConvBlocked", "b.blocked", "a.blocked"),
                step("ConvBlocked", "c.blocked", "b.blocked"),
                step("FromBlocked", "c", "c.blocked")
            ]
        );
    }

    #[test]
    fn a_max_pooling_joins_its_chain_which_converts_the_pooled_tensor() {
        // MNIST's front: a first layer, a dense 3x3 layer, a 2x2 max pooling.
        let (mut g, x) = graph(1, 12);
        let first = Conv2d { in_channels: 1, ..dense3x3(16, 12) };
        let a = push(&mut g, "a", first, x);
        let b = push(&mut g, "b", dense3x3(16, 12), a);
        let params = pool2d(16, 12, 2);
        let p = g.add_tensor("p", vec![1, 16, 6, 6], DType::F32, TensorKind::Activation);
        g.nodes.push(Node::new("p", Op::Pool(Pool { kind: PoolKind::Max, params }), vec![b], p));
        // A dense layer reading the pooled tensor as 576 channels at one position (MNIST's
        // first one): laid out otherwise blocked, so it stays NCHW.
        let dense = Conv2d { weights: ConvWeights::KMajor, ..Conv2d::pointwise(576, 16, 1) };
        let fc = push(&mut g, "fc", dense, p);
        g.outputs.push(fc);
        let o = Optimizations { overlap: false, ..Default::default() };
        assert_eq!(block_chains(&mut g, &o), 2);
        assert_eq!(
            steps(&g),
            [
                step("ConvBlocked", "a.blocked", "x"),
                step("ConvBlocked", "b.blocked", "a.blocked"),
                step("PoolBlocked", "p.blocked", "b.blocked"),
                step("FromBlocked", "p", "p.blocked"),
                step("Conv", "fc", "p"),
            ]
        );
        let Op::PoolBlocked(PoolBlocked(pooled)) = g.nodes[2].op else { panic!("a blocked pooling") };
        assert_eq!(pooled, params);
        let Op::Reorder(from) = g.nodes[3].op else { panic!("a conversion") };
        assert_eq!(from, Reorder { way: Way::FromBlocked, batch: 1, channels: 16, plane: 36 });
        // An average pooling stays NCHW: the chain ends before it.
        let mut avg = g.clone();
        avg.nodes[2].op = Op::Pool(Pool { kind: PoolKind::Avg, params });
        assert_eq!(role(&avg, 2, false), None);
    }

    /// Appends `op` reading `x`, writing `name` of `[1, channels, 1, 1]`; returns it.
    fn pooled(g: &mut Graph, name: &str, op: Op, x: TensorId) -> TensorId {
        let channels = g.tensors[x].shape[1];
        let y = g.add_tensor(name, vec![1, channels, 1, 1], DType::F32, TensorKind::Activation);
        g.nodes.push(Node::new(name, op, vec![x], y));
        y
    }

    /// The sum over the `h x w` plane of a `[1, channels, h, w]` tensor, as tract lowers it.
    fn plane_sum(channels: usize, h: usize, w: usize) -> Op {
        let plane = h * w;
        Op::Reduce(ReduceOp {
            kind: Reducer::Sum,
            out_in_strides: vec![channels * plane, plane, 0, 0],
            red_shape: vec![h, w],
            red_strides: vec![w, 1],
        })
    }

    #[test]
    fn a_global_pooling_ends_its_chain_without_a_conversion() {
        // KWS's end: two layers, a global average pooling, a dense layer reading it.
        let (mut g, x) = graph(16, 5);
        let a = push(&mut g, "a", conv(16, 32, 5, None), x);
        let b = push(&mut g, "b", conv(32, 32, 5, Some(1)), a);
        let params = pool2d(32, 5, 5);
        let p = pooled(&mut g, "p", Op::Pool(Pool { kind: PoolKind::Avg, params }), b);
        // Two 1x1 layers on the pooled channels (a squeeze-and-excitation block's): a chain of
        // their own, which converts the pooled tensor, written NCHW.
        let e = push(&mut g, "e", Conv2d { weights: ConvWeights::KMajor, ..Conv2d::pointwise(32, 16, 1) }, p);
        let f = push(&mut g, "f", Conv2d { weights: ConvWeights::KMajor, ..Conv2d::pointwise(16, 32, 1) }, e);
        g.outputs.push(f);
        let o = Optimizations { overlap: false, ..Default::default() };
        assert_eq!(block_chains(&mut g, &o), 4);
        assert_eq!(
            steps(&g),
            [
                step("ToBlocked", "x.blocked", "x"),
                step("ConvBlocked", "a.blocked", "x.blocked"),
                step("ConvBlocked", "b.blocked", "a.blocked"),
                step("GlobalPoolBlocked", "p", "b.blocked"),
                step("ToBlocked", "p.blocked", "p"),
                step("ConvBlocked", "e.blocked", "p.blocked"),
                step("ConvBlocked", "f.blocked", "e.blocked"),
                step("FromBlocked", "f", "f.blocked"),
            ]
        );
        let Op::GlobalPoolBlocked(GlobalPoolBlocked(global)) = g.nodes[3].op else { panic!("a global pooling") };
        assert_eq!(global, GlobalPool { batch: 1, channels: 32, plane: 25, mean: true });

        // VWW's end: a sum over a 3x3 plane, the mean's division a step of its own.
        let (mut g, x) = graph(16, 3);
        let a = push(&mut g, "a", conv(16, 16, 3, None), x);
        let b = push(&mut g, "b", conv(16, 16, 3, None), a);
        let s = pooled(&mut g, "s", plane_sum(16, 3, 3), b);
        g.outputs.push(s);
        assert_eq!(block_chains(&mut g, &o), 2);
        assert_eq!(steps(&g)[3], step("GlobalPoolBlocked", "s", "b.blocked"));
        let Op::GlobalPoolBlocked(GlobalPoolBlocked(global)) = g.nodes[3].op else { panic!("a global pooling") };
        assert_eq!(global, GlobalPool { batch: 1, channels: 16, plane: 9, mean: false });
        // Over 16 positions `reduce_sum` adds in interleaved chains: the sum stays NCHW.
        let (mut g, x) = graph(16, 4);
        let a = push(&mut g, "a", conv(16, 16, 4, None), x);
        pooled(&mut g, "s", plane_sum(16, 4, 4), a);
        assert_eq!(role(&g, 1, false), None);
        // Nor is a sum over anything but the plane of its input one.
        g.nodes[1].op = plane_sum(16, 3, 5);
        assert_eq!(role(&g, 1, false), None);
        // A pointwise convolution's einsum writes `[channels, h, w]` (VWW's last layer).
        let mut g = Graph::default();
        let x = g.add_tensor("x", vec![32, 3, 3], DType::F32, TensorKind::Activation);
        let sum = Op::Reduce(ReduceOp {
            kind: Reducer::Sum,
            out_in_strides: vec![9, 0, 0],
            red_shape: vec![3, 3],
            red_strides: vec![3, 1],
        });
        let y = g.add_tensor("s", vec![32, 1, 1], DType::F32, TensorKind::Activation);
        g.nodes.push(Node::new("s", sum, vec![x], y));
        let global = GlobalPool { batch: 1, channels: 32, plane: 9, mean: false };
        assert_eq!(role(&g, 0, false).map(|m| m.role), Some(Role::Global(global)));
    }

    #[test]
    fn dense_convolutions_of_narrow_rows_and_broadcast_sums_stay_nchw() {
        // Rows 2 wide: the blocked kernel would read the weights once per row.
        let (mut g, x) = graph(16, 2);
        let a = push(&mut g, "a", dense3x3(16, 2), x);
        let b = push(&mut g, "b", dense3x3(16, 2), a);
        g.outputs.push(b);
        assert_eq!(block_chains(&mut g, &Optimizations::default()), 0);
        // A sum broadcasting one operand joins no chain: the pointwise convolutions `c`
        // and `d` around it are one each.
        let (mut g, x) = graph(16, 8);
        let c = push(&mut g, "c", conv(16, 16, 8, None), x);
        let bias = g.add_tensor("bias", vec![1, 16, 1, 1], DType::F32, TensorKind::Input(1));
        g.inputs.push(bias);
        let y = g.add_tensor("y", vec![1, 16, 8, 8], DType::F32, TensorKind::Activation);
        let op = BinaryOp::new(crate::ops::binary::Binary::Add, vec![1024, 64, 8, 1], vec![16, 1, 0, 0]);
        g.nodes.push(Node::new("y", Op::Binary(op), vec![c, bias], y));
        let d = push(&mut g, "d", conv(16, 16, 8, None), y);
        g.outputs.push(d);
        assert_eq!(block_chains(&mut g, &Optimizations::default()), 0);
    }

    #[test]
    fn lone_convolutions_and_partial_blocks_stay_nchw() {
        let (mut g, x) = graph(16, 8);
        let a = push(&mut g, "a", conv(16, 16, 8, None), x);
        let r = g.add_tensor("r", vec![1, 16, 8, 8], DType::F32, TensorKind::Activation);
        g.nodes.push(Node::new("r", Op::Unary(Unary::Relu), vec![a], r));
        // 24 channels: not whole blocks, so `b` joins nothing and `c` is alone too.
        let b = push(&mut g, "b", conv(16, 24, 8, None), r);
        let c = push(&mut g, "c", conv(24, 24, 8, Some(2)), b);
        g.outputs.push(c);
        let before = g.clone();
        assert_eq!(block_chains(&mut g, &Optimizations::default()), 0);
        assert_eq!(g, before);
    }

    #[test]
    fn a_chain_whose_first_conversion_would_raise_the_bound_starts_later() {
        // `a` (32 channels of 16x16) is read by the stride-2 depthwise `b` and by `r` after the
        // chain: converting it for `b` would hold it twice. Without `b`, the chain `c`, `d`
        // converts `b`'s quarter-size output instead.
        let (mut g, x) = graph(16, 16);
        let a = push(&mut g, "a", conv(16, 32, 16, None), x);
        let r0 = g.add_tensor("r0", vec![1, 32, 16, 16], DType::F32, TensorKind::Activation);
        g.nodes.push(Node::new("r0", Op::Unary(Unary::Relu), vec![a], r0));
        let b = push(&mut g, "b", conv(32, 32, 16, Some(2)), r0);
        let c = push(&mut g, "c", conv(32, 32, 8, None), b);
        let d = push(&mut g, "d", conv(32, 32, 8, Some(1)), c);
        g.outputs.push(d);
        let o = Optimizations::default();
        let bound = |g: &Graph| plan::lower_bound(&super::super::storage(g, &o).problem).bytes;
        let unblocked = bound(&g);
        assert_eq!(block_chains(&mut g, &o), 2);
        let ops: Vec<String> = steps(&g).into_iter().map(|(op, out, _)| format!("{op} {out}")).collect();
        assert_eq!(
            ops,
            [
                "Conv a",
                "r0 r0",
                "Conv b",
                "ToBlocked b.blocked",
                "ConvBlocked c.blocked",
                "ConvBlocked d.blocked",
                "FromBlocked d"
            ]
        );
        assert!(bound(&g) <= unblocked);
    }
}
