//! Patch-based (tiled) execution: a chain of row-local layers (convolutions, depthwise
//! convolutions, pooling, same-shape elementwise steps) runs one band of output rows at a time, so
//! that its intermediate tensors exist only at band size (MCUNetV2's patch-based inference, with
//! the overlapping halo rows recomputed per band, or copied from the band before).
//!
//! The rewrite reuses the existing machinery instead of new kernels. For each band, every layer
//! of the chain is instantiated again with its shape literals changed (input rows, output rows,
//! top padding on the first band only, bottom padding, implied or explicit, on the last band only),
//! reading a strided copy of the rows of the chain's input it needs and writing its rows of the
//! chain's output; one concatenation along the row axis assembles the output, which
//! [`super::elide_concat`] elides where the bands are contiguous bytes (NHWC, batch 1). Each output
//! element is then computed by the same kernel from the same input values with the same padding
//! taps, so the bits are the untiled program's (checked by `tests/tiling.rs` and the random
//! graphs of `safety/tests/rewrite_graphs.rs`). The bands introduce no sharing beyond copies and
//! concat elision, which the storage verifier already proves.
//!
//! The rows neighbouring bands share (a 3x3 layer's halo) are recomputed by each band, or, with
//! [`Optimizations::tile_cache`], cached as StreamNet does: a band computes only the rows of an
//! intermediate tensor the band before did not, and a copy of the others, taken right after the
//! band before wrote them (so only the shared rows stay alive between bands), is concatenated with
//! them. No extra multiply-accumulates; the cost is the copies (in NCHW the concatenation copies
//! the band's rows too, in NHWC it is elided) and the shared rows' bytes between bands. The same
//! kernel computes every row from the same inputs, so both ways give the untiled bits.
//!
//! The search ([`tile_chains`]) is over the chain's first and last step (around the peak step of
//! the current schedule), the number of bands and whether the bands cache rows, minimising the
//! lower bound of the arena with the bands in band-major order, under a bound on the extra
//! multiply-accumulates; it repeats on the result while the bound falls. It runs once
//! recomputing only and once caching too, and keeps the lower bound (an early cached chain can
//! end worse). Deterministic: a fixed enumeration order, ties to fewer extra MACs, then to the
//! earlier candidate.

use crate::ir::{Graph, Node, TensorId, TensorKind};
use crate::liveness::Liveness;
use crate::ops::copy::{Copies, StridedCopy};
use crate::ops::pool::PoolKind;
use crate::ops::Op;
use crate::plan;
use crate::tensor::strides_of;
use sramfit_runtime_min::quant::{self as rtq, ImageStrides};

use super::Optimizations;

/// The default bound on the multiply-accumulates tiling may add, in percent of the model's.
pub const DEFAULT_EXTRA_MACS_PERCENT: u32 = 10;
/// The largest bound a user may set: tiling that doubles the work is not worth its memory.
pub const MAX_EXTRA_MACS_PERCENT: u32 = 100;

/// The least share of the arena's lower bound, in percent, a tiling must save to be kept by
/// default: below it the band copies and the shorter kernel calls cost more than the bytes are
/// worth (a DS-CNN on a Cortex-M0 saved 4% for 1.67x the instructions at no extra MAC).
pub const MIN_GAIN_PERCENT: u32 = 10;

/// The least gain where speed comes first ([`crate::target::Target::memory_first`] false): a
/// tiling never saves the whole lower bound, so none is kept unless the `sram` budget or the pools
/// need it (the model is then compiled again keeping any gain).
pub const SPEED_FIRST_MIN_GAIN_PERCENT: u32 = 100;

/// The band counts the search tries for each chain.
const BAND_COUNTS: [usize; 9] = [2, 3, 4, 5, 6, 8, 10, 12, 16];

/// How many chains are tiled at most (each round of the search tiles one holding the peak).
const MAX_CHAINS: usize = 8;

/// How many tiled graphs each round of the search keeps.
const BEAM: usize = 4;

/// What tiling did: the figures of the report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tiled {
    /// Chains tiled.
    pub chains: usize,
    /// Chains among them whose bands copy the rows the band before computed instead of computing
    /// them again.
    #[serde(default)]
    pub cached_chains: usize,
    /// Bands over all tiled chains.
    pub bands: usize,
    /// Multiply-accumulates of the untiled graph.
    pub macs: u64,
    /// Multiply-accumulates the recomputed halos add.
    pub extra_macs: u64,
    /// Lower bound of the arena before and after.
    pub lower_bounds: (u64, u64),
}

impl Tiled {
    /// Whether the tiling lowers the lower bound by at least `percent` percent of it (any gain
    /// for 0).
    pub fn saves(&self, percent: u32) -> bool {
        let (before, after) = self.lower_bounds;
        after < before && (before - after) * 100 >= before * u64::from(percent)
    }
}

/// A half-open range of rows.
type Span = (usize, usize);

/// How a node's output rows read the rows of its banded inputs: output row `r` reads input rows
/// `r * stride - pad_top ..` through `extent` rows (1, 1, 0 for elementwise steps).
#[derive(Clone, Copy, Debug)]
struct Window {
    extent: usize,
    stride: usize,
    pad_top: usize,
}

/// A row-local node: its window, the inputs read in bands (the others are constants), and the
/// row axis of those inputs and of the output, counted from the last axis (NCHW: 2, NHWC: 3; 0:
/// the input's, for elementwise steps).
#[derive(Clone, Debug)]
struct Local {
    window: Window,
    banded: Vec<usize>,
    in_axis: usize,
    out_axis: usize,
}

/// The row axis, from the last, of a dense batch-1 image in `strides` (NHWC: 3, NCHW: 2).
fn image_axis(s: ImageStrides) -> Option<usize> {
    match (s.c, s.w) {
        (1, _) => Some(3),
        (_, 1) => Some(2),
        _ => None,
    }
}

/// `s` for an image of `rows` rows (dense NHWC or NCHW, as `s` is).
fn restride(s: ImageStrides, channels: usize, rows: usize, width: usize) -> ImageStrides {
    match s.c {
        1 => ImageStrides::nhwc(channels, rows, width),
        _ => ImageStrides::nchw(channels, rows, width),
    }
}

/// Whether `s` are the dense NHWC or NCHW strides of an image of that shape.
fn dense_image(s: ImageStrides, channels: usize, rows: usize, width: usize) -> bool {
    s == ImageStrides::nhwc(channels, rows, width) || s == ImageStrides::nchw(channels, rows, width)
}

/// The row geometry of node `n`, when it is row-local on batch-1 images (`[1, C, H, W]` or
/// `[C, H, W]`, or channels last).
fn local(g: &Graph, n: &Node) -> Option<Local> {
    let image = |t: TensorId| {
        let s = &g.tensors[t].shape;
        s.len() >= 3 && s[..s.len() - 3].iter().all(|&d| d == 1)
    };
    if !image(n.output) || !image(*n.inputs.first()?) {
        return None;
    }
    let window = |kernel: usize, dilation: usize, stride: usize, pad_top: usize| Window {
        extent: (kernel - 1) * dilation + 1,
        stride,
        pad_top,
    };
    let one = |window: Window, in_axis: usize, out_axis: usize| Local { window, banded: vec![0], in_axis, out_axis };
    let same = Window { extent: 1, stride: 1, pad_top: 0 };
    let out_shape = &g.tensors[n.output].shape;
    let same_shape = |strides: [&Vec<usize>; 2]| {
        n.inputs.len() == 2
            && n.inputs.iter().all(|&t| g.tensors[t].shape == *out_shape)
            && strides.iter().all(|s| **s == strides_of(out_shape))
    };
    match &n.op {
        Op::Conv(c) if c.batch == 1 && c.kernel_h >= 1 => {
            let in_axis = match c.input {
                sramfit_runtime_min::ConvInput::Nchw => 2,
                sramfit_runtime_min::ConvInput::Nhwc => 3,
            };
            let rows = out_shape[out_shape.len() - 2];
            // A pointwise convolution that was a matrix product sees the image as one row.
            let plain = c.out_h == rows && c.out_w == out_shape[out_shape.len() - 1];
            (plain || flattened(c, out_shape)).then_some(())?;
            Some(one(window(c.kernel_h, c.dilation_h, c.stride_h, c.pad_top), in_axis, 2))
        }
        Op::QConv(q) => {
            let p = &q.params;
            let dense = dense_image(p.x_strides, p.in_channels, p.in_h, p.in_w)
                && dense_image(p.y_strides, p.out_channels, p.out_h, p.out_w);
            (p.batch == 1 && dense).then_some(())?;
            let w = window(p.kernel_h, p.dilation_h, p.stride_h, p.pad_top);
            Some(one(w, image_axis(p.x_strides)?, image_axis(p.y_strides)?))
        }
        // An average whose divisor counts padding would count the band's rows differently.
        Op::Pool(p)
            if p.params.batch == 1 && p.params.in_d == 1 && pads_not_counted(p.kind, p.params.count_include_pad) =>
        {
            let q = &p.params;
            Some(one(window(q.kernel_h, q.dilation_h, q.stride_h, q.pad_top), 2, 2))
        }
        Op::QPool(p) if pads_not_counted(p.kind, p.params.count_include_pad) => {
            let q = &p.params;
            let dense = dense_image(q.x_strides, q.channels, q.in_h, q.in_w)
                && dense_image(q.y_strides, q.channels, q.out_h, q.out_w);
            (q.batch == 1 && dense).then_some(())?;
            let w = window(q.kernel_h, q.dilation_h, q.stride_h, q.pad_top);
            Some(one(w, image_axis(q.x_strides)?, image_axis(q.y_strides)?))
        }
        Op::Unary(_) if g.tensors[n.inputs[0]].shape == *out_shape => {
            Some(Local { window: same, banded: vec![0], in_axis: 0, out_axis: 0 })
        }
        Op::Binary(b) if same_shape([&b.a_strides, &b.b_strides]) => {
            Some(Local { window: same, banded: vec![0, 1], in_axis: 0, out_axis: 0 })
        }
        Op::QBinary(b) if same_shape([&b.a_strides, &b.b_strides]) => {
            Some(Local { window: same, banded: vec![0, 1], in_axis: 0, out_axis: 0 })
        }
        _ => None,
    }
}

/// Whether `c` is a pointwise convolution of an NCHW image of shape `out_shape` (its output's)
/// seen as one row of all its positions (`Conv2d::pointwise`).
fn flattened(c: &sramfit_runtime_min::Conv2d, out_shape: &[usize]) -> bool {
    let positions = out_shape[out_shape.len() - 2] * out_shape[out_shape.len() - 1];
    (c.in_h, c.out_h, c.kernel_h, c.kernel_w, c.stride_w, c.pad_left, c.pad_top) == (1, 1, 1, 1, 1, 0, 0)
        && c.input == sramfit_runtime_min::ConvInput::Nchw
        && c.in_w == positions
        && c.out_w == positions
}

/// Whether a pooling's result never depends on how many padding taps its window covers.
fn pads_not_counted(kind: PoolKind, count_include_pad: bool) -> bool {
    kind == PoolKind::Max || !count_include_pad
}

/// `n`'s op computing `out` rows from `in_rows` input rows with `pads` (top, bottom) rows of
/// padding; `shapes` the band's input and output shapes.
fn banded_op(op: &Op, in_rows: usize, out_rows: usize, (top, bottom): (usize, usize), out_shape: &[usize]) -> Op {
    match op {
        Op::Conv(c) if c.out_w != out_shape[out_shape.len() - 1] => {
            // `flattened`: in and out rows are the same, all in one row of the kernel's.
            let positions = out_rows * out_shape[out_shape.len() - 1];
            Op::Conv(sramfit_runtime_min::Conv2d { in_w: positions, out_w: positions, ..*c })
        }
        Op::Conv(c) => Op::Conv(sramfit_runtime_min::Conv2d { in_h: in_rows, out_h: out_rows, pad_top: top, ..*c }),
        Op::QConv(q) => {
            let p = q.params;
            let (x_strides, y_strides) = (
                restride(p.x_strides, p.in_channels, in_rows, p.in_w),
                restride(p.y_strides, p.out_channels, out_rows, p.out_w),
            );
            let params = rtq::Conv2d { in_h: in_rows, out_h: out_rows, pad_top: top, x_strides, y_strides, ..p };
            Op::QConv(crate::ops::qconv::QConv { params, ..q.clone() })
        }
        Op::Pool(p) => {
            let params = sramfit_runtime_min::Pool2d {
                in_h: in_rows,
                out_h: out_rows,
                pad_top: top,
                pad_bottom: bottom,
                ..p.params
            };
            Op::Pool(crate::ops::pool::Pool { params, ..p.clone() })
        }
        Op::QPool(p) => {
            let (q, c) = (p.params, p.params.channels);
            let (x_strides, y_strides) =
                (restride(q.x_strides, c, in_rows, q.in_w), restride(q.y_strides, c, out_rows, q.out_w));
            let rows = rtq::Pool2d { in_h: in_rows, out_h: out_rows, pad_top: top, pad_bottom: bottom, ..q };
            Op::QPool(crate::ops::qpool::QPool { params: rtq::Pool2d { x_strides, y_strides, ..rows }, ..p.clone() })
        }
        Op::Binary(b) => {
            let s = strides_of(out_shape);
            Op::Binary(crate::ops::binary::BinaryOp { kind: b.kind, a_strides: s.clone(), b_strides: s, act: b.act })
        }
        Op::QBinary(b) => {
            let s = strides_of(out_shape);
            Op::QBinary(crate::ops::qbinary::QBinary { a_strides: s.clone(), b_strides: s, ..b.clone() })
        }
        other => other.clone(),
    }
}

/// The input rows `w` reads for output rows `out` of an input of `in_h` rows, and the padding
/// rows (top, bottom) the band then has.
fn need(w: Window, out: Span, in_h: usize) -> (Span, (usize, usize)) {
    let first = (out.0 * w.stride) as isize - w.pad_top as isize;
    let end = ((out.1 - 1) * w.stride + w.extent) as isize - w.pad_top as isize;
    let start = first.max(0) as usize;
    let stop = (end.max(0) as usize).min(in_h);
    ((start, stop.max(start)), ((start as isize - first) as usize, (end - stop as isize).max(0) as usize))
}

/// A chain: the steps `first..=last` of the schedule, their row geometry, the chain's input `x`,
/// and the row axis of every tensor it touches (an index into its shape).
struct Chain {
    first: usize,
    last: usize,
    locals: Vec<Local>,
    x: TensorId,
    axis: Vec<Option<usize>>,
}

/// The row axis of a tensor (0: inherit the producer's), checked consistent.
fn set_axis(axis: &mut [Option<usize>], t: TensorId, a: usize) -> Option<()> {
    if a == 0 {
        return axis[t].map(|_| ());
    }
    match axis[t] {
        Some(b) if b != a => None,
        _ => {
            axis[t] = Some(a);
            Some(())
        }
    }
}

/// The chain of steps `first..=last` of `g`, when it can be tiled: every step row-local, one
/// activation input from outside, every intermediate tensor read only inside the chain, the row
/// axis consistent.
fn chain(g: &Graph, readers: &[Vec<usize>], locals: &[Option<Local>], (first, last): (usize, usize)) -> Option<Chain> {
    let inside = |i: usize| (first..=last).contains(&i);
    let mut axis = vec![None; g.tensors.len()];
    let mut produced = vec![false; g.tensors.len()];
    let mut x = None;
    let mut chain_locals = Vec::with_capacity(last + 1 - first);
    for (n, l) in g.nodes[first..=last].iter().zip(&locals[first..=last]) {
        let l = l.clone()?;
        for (k, &t) in n.inputs.iter().enumerate() {
            match (l.banded.contains(&k), &g.tensors[t].kind) {
                (true, _) if produced[t] => {}
                (true, TensorKind::Const(_)) => return None,
                (true, _) => match x {
                    None => x = Some(t),
                    Some(u) if u == t => {}
                    Some(_) => return None,
                },
                (false, TensorKind::Const(_)) => {}
                (false, _) => return None,
            }
            if l.banded.contains(&k) {
                // Elementwise inputs inherit the row axis; a chain input read only elementwise has none.
                set_axis(&mut axis, t, l.in_axis)?;
            }
        }
        let inherited = axis[n.inputs[l.banded[0]]]?;
        set_axis(&mut axis, n.output, if l.out_axis == 0 { inherited } else { l.out_axis })?;
        produced[n.output] = true;
        if n.output != g.nodes[last].output
            && (g.outputs.contains(&n.output) || readers[n.output].iter().any(|&r| !inside(r)))
        {
            return None;
        }
        chain_locals.push(l);
    }
    // From the last axis to an index into each tensor's shape.
    let axis = (axis.iter().zip(&g.tensors)).map(|(a, t)| a.and_then(|a| t.shape.len().checked_sub(a))).collect();
    Some(Chain { first, last, locals: chain_locals, x: x?, axis })
}

/// `g` with the chain `c` run in `bands` bands of its output rows, or `None` when a band would
/// be empty. With `cache`, the rows of an intermediate tensor that the band before computed are
/// copied from it instead of computed again (StreamNet's row caching).
fn tile_chain(g: &Graph, c: &Chain, bands: usize, cache: bool) -> Option<Graph> {
    let y = g.nodes[c.last].output;
    let y_axis = c.axis[y]?;
    let rows = g.tensors[y].shape[y_axis];
    if bands > rows {
        return None;
    }
    let mut out = Graph { tensors: g.tensors.clone(), nodes: g.nodes[..c.first].to_vec(), ..g.clone() };
    let mut parts = Vec::with_capacity(bands);
    let mut before: Computed = vec![None; g.tensors.len()];
    for b in 0..bands {
        let span = (b * rows / bands, (b + 1) * rows / bands);
        parts.push((band(g, c, &mut out, (b, span), (cache, &mut before))?, span.0));
    }
    let y_strides = strides_of(&g.tensors[y].shape);
    let copies = parts
        .iter()
        .enumerate()
        .map(|(k, &(t, row))| {
            let shape = out.tensors[t].shape.clone();
            StridedCopy {
                input: k,
                src_offset: 0,
                src_strides: dense(&shape),
                dst_offset: row * y_strides[y_axis],
                dst_strides: dense(&g.tensors[y].shape),
                shape,
            }
        })
        .collect();
    let last = &g.nodes[c.last];
    out.nodes.push(Node {
        name: format!("{}.bands", last.name),
        source_op: "Concat".into(),
        op: Op::Copy(Copies(copies)),
        inputs: parts.iter().map(|&(t, _)| t).collect(),
        output: y,
    });
    out.nodes.extend_from_slice(&g.nodes[c.last + 1..]);
    super::remove_unused_tensors(&mut out);
    Some(out)
}

/// Dense strides as the copy kernel takes them.
fn dense(shape: &[usize]) -> Vec<isize> {
    strides_of(shape).into_iter().map(|s| s as isize).collect()
}

/// Per tensor of the untiled graph, what the band before computed of it: its rows, the band's
/// tensor holding them, and the index in the tiled graph's nodes of the step writing it.
type Computed = Vec<Option<(Span, TensorId, usize)>>;

/// Appends to `out` the steps of band `b` (output rows `span` of the chain `c` of `g`): the
/// copy of the rows of the chain's input it reads, then every step of the chain on its rows.
/// With `cache`, a step computes only the rows the band before did not (`before`, updated to
/// this band's), and its band tensor is the concatenation of a copy of the others, taken right
/// after the band before wrote them, and its own. Returns the band's output tensor.
fn band(
    g: &Graph,
    c: &Chain,
    out: &mut Graph,
    (b, span): (usize, Span),
    (cache, before): (bool, &mut Computed),
) -> Option<TensorId> {
    // Backwards: the rows of every tensor the band needs (the hull over its readers), and the
    // rows each step computes.
    let mut spans: Vec<Option<Span>> = vec![None; g.tensors.len()];
    spans[g.nodes[c.last].output] = Some(span);
    let mut pads = vec![(0, 0); c.locals.len()];
    let mut needs: Vec<Vec<Span>> = vec![Vec::new(); c.locals.len()];
    let mut computed = vec![(0, 0); c.locals.len()];
    for (j, l) in c.locals.iter().enumerate().rev() {
        let n = &g.nodes[c.first + j];
        let o = spans[n.output]?;
        if o.1 <= o.0 {
            return None;
        }
        computed[j] = match before[n.output] {
            Some((done, ..)) if cache && o.0 < done.1 => (done.0 <= o.0 && done.1 < o.1).then_some((done.1, o.1))?,
            _ => o,
        };
        for &k in &l.banded {
            let t = n.inputs[k];
            let (s, p) = need(l.window, computed[j], g.tensors[t].shape[c.axis[t]?]);
            pads[j] = p;
            needs[j].push(s);
            spans[t] = Some(spans[t].map_or(s, |h: Span| (h.0.min(s.0), h.1.max(s.1))));
        }
    }
    // The cached rows: copies inserted right after the steps of the band before that wrote
    // them (in order, each insertion moving the later steps by one).
    let mut cached: Vec<Option<TensorId>> = vec![None; c.locals.len()];
    let mut inserted = 0;
    for (j, cached) in cached.iter_mut().enumerate() {
        let t = g.nodes[c.first + j].output;
        let (o, new) = (spans[t]?, computed[j]);
        if new.0 > o.0 {
            let (done, from, at) = before[t]?;
            let (copy, node) = row_copy(out, c.axis[t]?, (from, done), (o.0, new.0), b)?;
            out.nodes.insert(at + 1 + inserted, node);
            inserted += 1;
            *cached = Some(copy);
        }
    }
    // Forwards: the band's tensors, with a copy wherever a step needs fewer rows than exist.
    let mut band_of: Vec<Option<TensorId>> = vec![None; g.tensors.len()];
    let x_span = spans[c.x]?;
    let mut have: Vec<Option<Span>> = vec![None; g.tensors.len()];
    have[c.x] = Some((0, g.tensors[c.x].shape[c.axis[c.x]?]));
    let x_band = rows_of(out, c.axis[c.x]?, (c.x, have[c.x]?), x_span, b)?;
    band_of[c.x] = Some(x_band);
    have[c.x] = Some(x_span);
    for (j, l) in c.locals.iter().enumerate() {
        let n = &g.nodes[c.first + j];
        let mut inputs = n.inputs.clone();
        for (&k, &s) in l.banded.iter().zip(&needs[j]) {
            let t = n.inputs[k];
            inputs[k] = rows_of(out, c.axis[t]?, (band_of[t]?, have[t]?), s, b)?;
        }
        let (o, new) = (spans[n.output]?, computed[j]);
        let axis = c.axis[n.output]?;
        let mut t = g.tensors[n.output].clone();
        t.shape[axis] = new.1 - new.0;
        t.name = format!("{}@band{b}", t.name);
        let in_rows = needs[j][0].1 - needs[j][0].0;
        let op = banded_op(&n.op, in_rows, new.1 - new.0, pads[j], &t.shape);
        out.tensors.push(t);
        let mut y = out.tensors.len() - 1;
        out.nodes.push(Node {
            name: format!("{}@band{b}", n.name),
            source_op: n.source_op.clone(),
            op,
            inputs,
            output: y,
        });
        if let Some(copy) = cached[j] {
            y = concat_rows(out, axis, (copy, y), o.1 - o.0, b);
        }
        band_of[n.output] = Some(y);
        have[n.output] = Some(o);
        before[n.output] = Some((o, y, out.nodes.len() - 1));
    }
    band_of[g.nodes[c.last].output]
}

/// Appends to `out` the concatenation along `axis` of the cached rows `copy` and the computed
/// rows `computed` (`rows` in all), a tensor named after the computed one; returns it.
fn concat_rows(
    out: &mut Graph,
    axis: usize,
    (copy, computed): (TensorId, TensorId),
    rows: usize,
    b: usize,
) -> TensorId {
    let part = out.tensors[computed].clone();
    let mut shape = part.shape.clone();
    shape[axis] = rows;
    let copies = [copy, computed]
        .iter()
        .enumerate()
        .scan(0, |row, (input, &t)| {
            let s = out.tensors[t].shape.clone();
            let at = *row;
            *row += s[axis];
            Some(StridedCopy {
                input,
                src_offset: 0,
                src_strides: dense(&s),
                dst_offset: at * strides_of(&shape)[axis],
                dst_strides: dense(&shape),
                shape: s,
            })
        })
        .collect();
    let name = format!("{}.cached", part.name);
    out.tensors.push(crate::tensor::Tensor { name: name.clone(), shape, ..part });
    let y = out.tensors.len() - 1;
    out.nodes.push(Node {
        name: format!("{name}@band{b}"),
        source_op: "Concat".into(),
        op: Op::Copy(Copies(copies)),
        inputs: vec![copy, computed],
        output: y,
    });
    y
}

/// The tensor holding rows `want` of a tensor whose band `t` of `out` holds rows `have`:
/// `t` itself when they are the same rows, else a new copy of those rows (appended to `out`).
fn rows_of(out: &mut Graph, axis: usize, (t, have): (TensorId, Span), want: Span, b: usize) -> Option<TensorId> {
    if want == have {
        return Some(t);
    }
    let (y, node) = row_copy(out, axis, (t, have), want, b)?;
    out.nodes.push(node);
    Some(y)
}

/// A copy of rows `want` of the tensor `t` of `out` holding rows `have`: its output tensor
/// (appended to `out`) and the step, for the caller to place.
fn row_copy(
    out: &mut Graph,
    axis: usize,
    (t, have): (TensorId, Span),
    want: Span,
    b: usize,
) -> Option<(TensorId, Node)> {
    (have.0 <= want.0 && want.1 <= have.1 && want.0 < want.1).then_some(())?;
    let src = out.tensors[t].clone();
    let mut shape = src.shape.clone();
    shape[axis] = want.1 - want.0;
    let copy = StridedCopy {
        input: 0,
        src_offset: (want.0 - have.0) * strides_of(&src.shape)[axis],
        src_strides: dense(&src.shape),
        dst_offset: 0,
        dst_strides: dense(&shape),
        shape: shape.clone(),
    };
    let name = format!("{}.rows{}_{}@band{b}", src.name.split('@').next().unwrap_or(&src.name), want.0, want.1);
    out.tensors.push(crate::tensor::Tensor { name: name.clone(), shape, kind: TensorKind::Activation, ..src });
    let y = out.tensors.len() - 1;
    let node = Node { name, source_op: "Slice".into(), op: Op::Copy(Copies(vec![copy])), inputs: vec![t], output: y };
    Some((y, node))
}

/// Multiply-accumulates of every step of `g`.
pub fn macs(g: &Graph) -> u64 {
    g.nodes.iter().map(|n| n.op.kind().macs(&n.operands(&g.tensors))).sum()
}

/// Tiles chains of the scheduled graph `g` (whose storage is `live`) while that lowers the arena's
/// lower bound, within `max_extra_percent` percent extra MACs in all; `None` when no chain does.
///
/// A beam search over rounds: each round tiles one more chain of each of the [`BEAM`] best graphs
/// so far (the best tiling per chain end, so that a chain ending at a small tensor, whose
/// neighbour is tiled in the next round, competes with one that lowers the bound most at once).
pub fn tile_chains(g: &Graph, live: &Liveness, o: &Optimizations, max_extra_percent: u32) -> Option<(Graph, Tiled)> {
    let budget = macs(g) * u64::from(max_extra_percent) / 100;
    let recomputed = search(g, live, (o, false), budget);
    if !o.tile_cache {
        return recomputed;
    }
    // Caching too: a chain cached early can leave a worse bound after the later rounds than
    // recomputing throughout, so both searches run and the lower bound (then fewer MACs) wins.
    let cached = search(g, live, (o, true), budget);
    let key = |r: &Option<(Graph, Tiled)>| r.as_ref().map(|(_, t)| (t.lower_bounds.1, t.extra_macs));
    match (key(&recomputed), key(&cached)) {
        (Some(r), Some(c)) if r < c => recomputed,
        (_, None) => recomputed,
        _ => cached,
    }
}

/// [`tile_chains`]'s beam search, within `budget` extra MACs, each chain's bands caching rows or
/// recomputing them if `caching` (else recomputing).
fn search(g: &Graph, live: &Liveness, (o, caching): (&Optimizations, bool), budget: u64) -> Option<(Graph, Tiled)> {
    let macs0 = macs(g);
    let before = plan::lower_bound(&live.problem).bytes;
    let untiled = Tiled { macs: macs0, lower_bounds: (before, before), ..Tiled::default() };
    let mut beam: Vec<(Option<Graph>, Tiled)> = vec![(None, untiled)];
    let mut best: Option<(Graph, Tiled)> = None;
    for _ in 0..MAX_CHAINS {
        let mut next: Vec<(Option<Graph>, Tiled)> = Vec::new();
        for (graph, t) in &beam {
            let (current, live) = match graph {
                None => (g, live.clone()),
                Some(b) => (b, super::storage(b, o)),
            };
            let spent = t.extra_macs;
            for f in best_chains(current, &live, (o, caching), budget - spent.min(budget)) {
                if f.bound < t.lower_bounds.1 {
                    let extra = macs(&f.graph).saturating_sub(macs0);
                    let t = Tiled {
                        chains: t.chains + 1,
                        cached_chains: t.cached_chains + usize::from(f.cache),
                        bands: t.bands + f.bands,
                        extra_macs: extra,
                        lower_bounds: (before, f.bound),
                        macs: macs0,
                    };
                    next.push((Some(f.graph), t));
                }
            }
        }
        if next.is_empty() {
            break;
        }
        next.sort_by_key(|(_, t)| (t.lower_bounds.1, t.extra_macs));
        next.truncate(BEAM);
        if best.as_ref().is_none_or(|(_, b)| next[0].1.lower_bounds.1 < b.lower_bounds.1) {
            best = next[0].0.clone().map(|graph| (graph, next[0].1));
        }
        beam = next;
    }
    best
}

/// For each end of a chain holding the peak step of `live` (its steps row-local), the tiling of
/// `g` with the lowest lower bound within `budget` extra MACs: the graph, its bound and its bands;
/// the [`BEAM`] best, lowest bound first.
fn best_chains(g: &Graph, live: &Liveness, (o, caching): (&Optimizations, bool), budget: u64) -> Vec<Found> {
    let steps = g.nodes.len();
    let peak = live.peak_step(steps);
    let locals: Vec<Option<Local>> = g.nodes.iter().map(|n| local(g, n)).collect();
    if locals.get(peak).is_none_or(Option::is_none) {
        return Vec::new();
    }
    let mut readers = vec![Vec::new(); g.tensors.len()];
    for (i, n) in g.nodes.iter().enumerate() {
        n.inputs.iter().for_each(|&t| readers[t].push(i));
    }
    let macs0 = macs(g);
    // The best per chain end, recomputing and caching apart (the better one now may lead to a
    // worse one after the next rounds).
    let mut best: Vec<Option<Found>> = vec![None; 2 * steps];
    let first_local = (0..=peak).rev().take_while(|&i| locals[i].is_some()).last().unwrap_or(peak);
    for first in first_local..=peak {
        'last: for last in peak..steps {
            if locals[last].is_none() {
                break;
            }
            let Some(c) = chain(g, &readers, &locals, (first, last)) else { continue };
            // Recomputing: more bands, or a longer chain, only recompute more rows.
            let mut recompute = true;
            for (k, bands) in BAND_COUNTS.into_iter().enumerate() {
                for cache in [false, true] {
                    if (cache && !caching) || !(cache || recompute) {
                        continue;
                    }
                    let Some(t) = tile_chain(g, &c, bands, cache) else { continue };
                    let extra = macs(&t).saturating_sub(macs0);
                    if extra > budget {
                        match (cache, k) {
                            (false, 0) if !caching => break 'last,
                            (false, _) => recompute = false,
                            (true, _) => {}
                        }
                        continue;
                    }
                    let bound = plan::lower_bound(&super::storage(&t, o).problem).bytes;
                    let slot = &mut best[2 * last + usize::from(cache)];
                    if slot.as_ref().is_none_or(|b| (bound, extra) < (b.bound, b.extra)) {
                        *slot = Some(Found { graph: t, bound, extra, bands, cache });
                    }
                }
                if !(recompute || caching) {
                    break;
                }
            }
        }
    }
    let mut found: Vec<Found> = best.into_iter().flatten().collect();
    found.sort_by_key(|f| (f.bound, f.extra));
    found.truncate(BEAM);
    found
}

/// One tiling the search found: the tiled graph, its lower bound, its extra MACs, the bands of
/// the chain it tiled and whether they cache rows instead of recomputing them.
#[derive(Clone)]
struct Found {
    graph: Graph,
    bound: u64,
    extra: u64,
    bands: usize,
    cache: bool,
}
