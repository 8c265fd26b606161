//! Random models shaped for the memory-saving rewrites, each compiled twice through the real
//! code generation path: with every rewrite on but scratch fitting (the direct convolution it may
//! pick sums in another order) and scale/shift folding (it rounds differently), and with
//! `Optimizations::NONE`; and a third time with scale/shift folding on too where it folds
//! something. `tests/rewrite_graphs.rs` runs them on the same random inputs and compares the
//! first two bit for bit, the folded one within a float tolerance. The folded build runs the
//! Winograd convolutions too (`optimize::winograd`, which rounds differently), where there are
//! any.
//!
//! The generator ([`generate`]) mixes the plain random nodes of [`crate::random_graphs`] with the
//! patterns the rewrites look for: an activation after a convolution or matrix product (fusion),
//! chains of elementwise steps (in place), concatenations of branches read only by them (concat
//! elision), values read by several branches that join again (what must *not* be rewritten),
//! transposed matrix-product operands, chains of convolutions, depthwise convolutions and
//! pooling around a channel expansion (what patch-based execution tiles), and chains of
//! pointwise and 3x3 depthwise convolutions between whole blocks of 16 channels (what runs on
//! channel-blocked tensors).
//!
//! `SRAMFIT_REWRITE_GRAPHS` sets how many (default [`DEFAULT_COUNT`]), `SRAMFIT_REWRITE_SEED`
//! where the generator starts (default 1): graph `i` comes from seed `SEED + i`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use sramfit_planner_core::import;
use sramfit_planner_core::optimize::{Applied, Optimizations};
use sramfit_planner_core::pipeline::{self, Program};
use tract_onnx::pb::{self, attribute_proto::AttributeType};

use crate::out::Out;
use crate::random_graphs::{add_node, int, ints, model_dir, save, seeds, Builder, Value};

/// Graphs per build by default: a few seconds in a debug build.
const DEFAULT_COUNT: u64 = 24;
/// Most patterns in one graph (a pattern is one to five nodes).
const MAX_PATTERNS: usize = 8;

/// Writes `rewrite_graphs.rs`.
pub fn write(out: &Out) {
    let dir = model_dir(out, "rewrites");
    let optimized = Optimizations {
        fit_scratch: false,
        fold_scale_shift: false,
        winograd: false,
        // Every tiling the search finds, however small its gain, so that the bands are exercised.
        tile_min_gain_percent: Some(0),
        ..Default::default()
    };
    let folding = Optimizations { fold_scale_shift: true, winograd: true, ..optimized };
    let mut modules = TokenStream::new();
    let mut rows = Vec::new();
    for seed in seeds("SRAMFIT_REWRITE_GRAPHS", "SRAMFIT_REWRITE_SEED", DEFAULT_COUNT) {
        let model = generate(seed);
        let (file, ops) = save(&dir, &format!("r{seed}"), &model);
        let build = |o: &Optimizations| import::import_proto(&model, &[]).and_then(|g| pipeline::compile_graph(g, o));
        let status = match (build(&optimized), build(&Optimizations::NONE)) {
            (Ok(opt), Ok(plain)) => {
                let m = format_ident!("r{seed}");
                // Checked mode on the optimised side: a wrong aliasing decision is reported even
                // where it happens not to change an output.
                let opt_items = out.module_items(&format!("r{seed}_opt"), &opt, true);
                let plain_items = out.module_items(&format!("r{seed}_plain"), &plain, false);
                // The folded build, where folding or Winograd changes something (checked mode too).
                let changed = |a: &Applied| a.folded_scale_shifts + a.winograd_convs > 0;
                let folded = build(&folding).ok().filter(|f| changed(&f.optimizations.1));
                let (folded_items, folded_run, folds) = match &folded {
                    Some(f) => {
                        let items = out.module_items(&format!("r{seed}_folded"), f, true);
                        (
                            quote!(pub mod folded { #items }),
                            quote!(Some(#m::folded::run_dyn)),
                            (f.optimizations.1.folded_scale_shifts, f.optimizations.1.winograd_convs),
                        )
                    }
                    None => (quote!(), quote!(None), (0, 0)),
                };
                modules.extend(
                    quote!(pub mod #m { pub mod opt { #opt_items } pub mod plain { #plain_items } #folded_items }),
                );
                let applied = applied(&opt, folds);
                quote!(Ok(Pair {
                    opt: #m::opt::run_dyn,
                    plain: #m::plain::run_dyn,
                    folded: #folded_run,
                    inputs: #m::opt::INPUT_SHAPES,
                    outputs: #m::opt::OUTPUT_SHAPES,
                    arenas: (#m::opt::ARENA_BYTES, #m::plain::ARENA_BYTES),
                    applied: #applied,
                }))
            }
            (Err(e), _) | (_, Err(e)) => {
                let e = e.to_string();
                quote!(Err(#e))
            }
        };
        rows.push(quote!(RewriteGraph { seed: #seed, file: #file, ops: #ops, compiled: #status }));
    }
    out.write("rewrite_graphs.rs", quote!(#modules pub static GRAPHS: &[RewriteGraph] = &[#(#rows),*];));
}

/// `Applied` as a literal of the test's own `Applied` struct (`folds` and `winograd`: of the
/// folded build).
fn applied(p: &Program, (folds, winograd): (usize, usize)) -> TokenStream {
    let a = &p.optimizations.1;
    let (fused, in_place, elided, transposes, subsampled, packed, tiled, overlapped, blocked) = (
        a.fused_activations,
        a.in_place_steps,
        a.elided_concats,
        a.folded_transposes,
        a.folded_subsamplings,
        a.packed_weights,
        a.tiled.map_or(0, |t| t.chains),
        a.overlapped_steps,
        a.blocked_convs,
    );
    let reordered = a.schedule_lower_bounds.is_some_and(|(onnx, aware)| aware < onnx);
    quote!(Applied {
        fused: #fused, in_place: #in_place, elided: #elided, transposes: #transposes, subsampled: #subsampled,
        packed: #packed, reordered: #reordered, tiled: #tiled, overlapped: #overlapped, folds: #folds,
        blocked: #blocked, winograd: #winograd,
    })
}

/// One random model: an NCHW input, then up to [`MAX_PATTERNS`] patterns or plain random nodes.
fn generate(seed: u64) -> pb::ModelProto {
    let mut b = Builder::start(seed, "rewrites");
    for _ in 0..2 + b.rng.below(MAX_PATTERNS - 1) {
        let v = b.pick();
        match b.rng.below(8) {
            0 | 1 => producer_then_activation(&mut b, v),
            2 => elementwise_chain(&mut b, v),
            3 => concat_of_branches(&mut b, v),
            4 => fork_and_join(&mut b, v),
            5 => transposed_product(&mut b, v),
            6 if v.shape.len() == 4 => blocked_chain(&mut b, v),
            _ => add_node(&mut b, v),
        }
    }
    // Every other graph ends with a chain to tile (after the other patterns, which stay those of
    // the seed).
    if seed.is_multiple_of(2) {
        let v = b.pick();
        if v.shape.len() == 4 {
            expanded_chain(&mut b, v);
        }
    }
    // Every third graph ends with a 3x3 layer the Winograd kernel computes (after the others).
    if seed.is_multiple_of(3) {
        let v = b.pick();
        if v.shape.len() == 4 {
            winograd_layer(&mut b, v);
        }
    }
    // HardSwish needs opset 14.
    b.finish(14)
}

/// The value the last node wrote.
fn last(b: &Builder) -> Value {
    b.values.last().expect("the input at least").clone()
}

/// A `float` attribute.
fn float(name: &str, f: f32) -> pb::AttributeProto {
    pb::AttributeProto { name: name.into(), r#type: AttributeType::Float as i32, f, ..Default::default() }
}

/// An activation the fusion knows (Relu, Clip, LeakyRelu, HardSwish, Sigmoid, Tanh) applied to `v`.
fn activation(b: &mut Builder, v: Value) {
    let s = v.shape.clone();
    match b.rng.below(6) {
        0 => b.node("Relu", vec![v.name], vec![], s),
        1 => {
            let (lo, hi) = ([-0.5, 0.0][b.rng.below(2)], [0.5, 6.0][b.rng.below(2)]);
            let (lo, hi) = (b.constant_of(&[], vec![lo]), b.constant_of(&[], vec![hi]));
            b.node("Clip", vec![v.name, lo, hi], vec![], s)
        }
        2 => b.node("LeakyRelu", vec![v.name], vec![float("alpha", 0.1)], s),
        3 => b.node("HardSwish", vec![v.name], vec![], s),
        4 => b.node("Sigmoid", vec![v.name], vec![], s),
        _ => b.node("Tanh", vec![v.name], vec![], s),
    }
}

/// A convolution of an NCHW value keeping its height and width, or (`strided`) a 1x1 one at
/// stride 2 (which tract imports as subsampling copies and a matrix product: the subsampling
/// fold); `c_out` channels.
fn conv(b: &mut Builder, v: &Value, c_out: usize, strided: bool) {
    let s = &v.shape;
    let (k, stride) = if strided { (1, 2) } else { ([1, 3][b.rng.below(2)], 1) };
    let w = b.constant(&[c_out, s[1], k, k]);
    let mut inputs = vec![v.name.clone(), w];
    if b.rng.chance(70) {
        inputs.push(b.constant(&[c_out]));
    }
    let pad = (k / 2) as i64;
    let attrs =
        vec![ints("kernel_shape", &[k as i64; 2]), ints("pads", &[pad; 4]), ints("strides", &[stride as i64; 2])];
    let shape = vec![1, c_out, s[2].div_ceil(stride), s[3].div_ceil(stride)];
    b.node("Conv", inputs, attrs, shape);
}

/// A matrix product of `v` (any rank >= 2) with a constant `[k, n]`, by MatMul (+ Add bias) or,
/// for a 2-D `v`, Gemm.
fn product(b: &mut Builder, v: &Value, n: usize) {
    let k = *v.shape.last().unwrap();
    let mut shape = v.shape.clone();
    *shape.last_mut().unwrap() = n;
    if v.shape.len() == 2 && b.rng.chance(50) {
        let trans_b = b.rng.below(2);
        let w = b.constant(&if trans_b == 1 { [n, k] } else { [k, n] });
        let bias = b.constant(&[n]);
        b.node("Gemm", vec![v.name.clone(), w, bias], vec![int("transB", trans_b as i64)], shape);
        return;
    }
    let w = b.constant(&[k, n]);
    b.node("MatMul", vec![v.name.clone(), w], vec![], shape.clone());
    if b.rng.chance(50) {
        let (prod, bias) = (last(b).name, b.constant(&[n]));
        b.node("Add", vec![prod, bias], vec![], shape);
    }
}

/// Conv or matrix product, then one or two activations (two clamps compose into one epilogue).
fn producer_then_activation(b: &mut Builder, v: Value) {
    if v.shape.len() == 4 && b.rng.chance(60) {
        let c_out = 1 + b.rng.below(4);
        let strided = b.rng.chance(25);
        conv(b, &v, c_out, strided);
    } else {
        let n = 1 + b.rng.below(6);
        product(b, &v, n);
    }
    for _ in 0..1 + b.rng.below(2) {
        let p = last(b);
        activation(b, p);
    }
}

/// Two to four elementwise steps in a row: unary functions, a per-channel scale and shift (an
/// unfolded BatchNormalization) and Add/Mul with a same-shaped value.
fn elementwise_chain(b: &mut Builder, v: Value) {
    let mut v = v;
    for _ in 0..2 + b.rng.below(3) {
        let s = v.shape.clone();
        match b.rng.below(4) {
            0 => activation(b, v),
            1 => {
                let op = ["Abs", "Neg", "Exp"][b.rng.below(3)];
                b.node(op, vec![v.name], vec![], s);
            }
            2 => {
                let c: Vec<usize> = if s.len() == 4 { vec![1, s[1], 1, 1] } else { vec![*s.last().unwrap()] };
                let (scale, shift) = (b.constant(&c), b.constant(&c));
                b.node("Mul", vec![v.name, scale], vec![], s.clone());
                let scaled = last(b).name;
                b.node("Add", vec![scaled, shift], vec![], s);
            }
            _ => {
                let other = b.partner(&v).map_or_else(|| v.name.clone(), |o| o.name);
                let op = ["Add", "Mul", "Sub", "Max"][b.rng.below(4)];
                let inputs = if b.rng.chance(50) { vec![v.name, other] } else { vec![other, v.name] };
                b.node(op, inputs, vec![], s);
            }
        }
        v = last(b);
    }
}

/// One branch from `v` keeping its NCHW height and width: a convolution (maybe activated), an
/// elementwise function, or a chain.
fn branch(b: &mut Builder, v: &Value) -> Value {
    match b.rng.below(3) {
        0 => {
            let c_out = 1 + b.rng.below(4);
            conv(b, v, c_out, false);
            if b.rng.chance(50) {
                let c = last(b);
                activation(b, c);
            }
        }
        1 => activation(b, v.clone()),
        _ => elementwise_chain(b, v.clone()),
    }
    last(b)
}

/// Two or three branches from `v`, concatenated: along channels of NCHW values (contiguous slices
/// for batch 1), or along the outermost axis of 2-D values.
fn concat_of_branches(b: &mut Builder, v: Value) {
    let (count, n) = (2 + b.rng.below(2), 1 + b.rng.below(6));
    let parts: Vec<Value> = (0..count)
        .map(|_| match v.shape.len() {
            4 => branch(b, &v),
            _ => {
                product(b, &v, n);
                last(b)
            }
        })
        .collect();
    let axis = if v.shape.len() == 4 { 1 } else { 0 };
    let mut shape = parts[0].shape.clone();
    shape[axis] = parts.iter().map(|p| p.shape[axis]).sum();
    b.node("Concat", parts.into_iter().map(|p| p.name).collect(), vec![int("axis", axis as i64)], shape);
    // A reader, so that the concatenation is usually in the arena rather than the caller's output.
    if b.rng.chance(80) {
        let c = last(b);
        activation(b, c);
    }
}

/// `v` read by two branches that join again, by Add (same shape) or by a channel concatenation
/// that also reads `v` itself (its input has another reader, as in DenseNet).
fn fork_and_join(b: &mut Builder, v: Value) {
    if v.shape.len() != 4 {
        let s = v.shape.clone();
        activation(b, v.clone());
        let a = last(b).name;
        b.node("Add", vec![a, v.name], vec![], s);
        return;
    }
    let a = branch(b, &v);
    if b.rng.chance(50) {
        let c = branch(b, &v);
        let shape = vec![1, v.shape[1] + a.shape[1] + c.shape[1], v.shape[2], v.shape[3]];
        b.node("Concat", vec![v.name, a.name, c.name], vec![int("axis", 1)], shape);
    } else {
        let c_out = a.shape[1];
        conv(b, &v, c_out, false);
        let c = last(b);
        b.node("Add", vec![a.name, c.name], vec![], a.shape);
    }
}

/// A matrix product with a transposed operand: `v` with its last two axes swapped times a
/// constant, or `v` times its own transpose (an attention score shape).
fn transposed_product(b: &mut Builder, v: Value) {
    let r = v.shape.len();
    let mut perm: Vec<i64> = (0..r as i64).collect();
    perm.swap(r - 2, r - 1);
    let mut t_shape = v.shape.clone();
    t_shape.swap(r - 2, r - 1);
    b.node("Transpose", vec![v.name.clone()], vec![ints("perm", &perm)], t_shape);
    let t = last(b);
    if b.rng.chance(50) {
        let n = 1 + b.rng.below(6);
        product(b, &t, n);
    } else {
        let mut shape = v.shape.clone();
        shape[r - 1] = v.shape[r - 2];
        b.node("MatMul", vec![v.name, t.name], vec![], shape);
    }
}

/// A 3x3 convolution of the NCHW value `x` at `stride`, padding 1, as many channels out as in:
/// depthwise, or dense with a bias half the time.
fn conv3x3(b: &mut Builder, x: &Value, stride: usize, depthwise: bool) {
    let (c, h, w) = (x.shape[1], x.shape[2], x.shape[3]);
    let mut inputs = vec![x.name.clone(), b.constant(&[c, if depthwise { 1 } else { c }, 3, 3])];
    let mut attrs = vec![ints("kernel_shape", &[3, 3]), ints("pads", &[1; 4]), ints("strides", &[stride as i64; 2])];
    match depthwise {
        true => attrs.insert(0, int("group", c as i64)),
        false if b.rng.chance(50) => inputs.push(b.constant(&[c])),
        false => {}
    }
    b.node("Conv", inputs, attrs, vec![1, c, (h - 1) / stride + 1, (w - 1) / stride + 1]);
}

/// A layer the Winograd kernel computes once blocked: a pointwise convolution to 32 or 48
/// channels whose zero padding grows the map to at least 8x8, then a 3x3 convolution at stride 1
/// (maybe with a bias, maybe with padding, maybe followed by an activation or a pointwise
/// convolution, so that the chain goes on blocked).
fn winograd_layer(b: &mut Builder, v: Value) {
    let (c, h, w) = (16 * (2 + b.rng.below(2)), v.shape[2], v.shape[3]);
    let (pad_h, pad_w) = (4 + b.rng.below(4), 4 + b.rng.below(4));
    let w1 = b.constant(&[c, v.shape[1], 1, 1]);
    let attrs =
        vec![ints("kernel_shape", &[1, 1]), ints("pads", &[pad_h as i64, pad_w as i64, pad_h as i64, pad_w as i64])];
    b.node("Conv", vec![v.name, w1], attrs, vec![1, c, h + 2 * pad_h, w + 2 * pad_w]);
    let x = last(b);
    let pad = b.rng.below(2);
    let (oh, ow) = (x.shape[2] + 2 * pad - 2, x.shape[3] + 2 * pad - 2);
    let out = 16 * (1 + b.rng.below(3));
    let mut inputs = vec![x.name.clone(), b.constant(&[out, c, 3, 3])];
    if b.rng.chance(50) {
        inputs.push(b.constant(&[out]));
    }
    let attrs = vec![ints("kernel_shape", &[3, 3]), ints("pads", &[pad as i64; 4])];
    b.node("Conv", inputs, attrs, vec![1, out, oh, ow]);
    let y = last(b);
    match b.rng.below(3) {
        0 => activation(b, y),
        1 => {
            let pw = b.constant(&[16, out, 1, 1]);
            b.node("Conv", vec![y.name, pw], vec![ints("kernel_shape", &[1, 1])], vec![1, 16, oh, ow]);
        }
        _ => {}
    }
}

/// A chain patch-based execution tiles: a pointwise expansion to many channels whose zero padding
/// grows the rows (so that bands exist), a 3x3 depthwise convolution (maybe strided), a pooling or
/// a residual add, and a convolution to few channels: the expanded tensors are the peak, which
/// bands of rows lower.
fn expanded_chain(b: &mut Builder, v: Value) {
    let (c, h, w) = (v.shape[1], v.shape[2], v.shape[3]);
    let pad = 6 + b.rng.below(8);
    let rows = h + 2 * pad;
    let wide = 8 + b.rng.below(17);
    let w1 = b.constant(&[wide, c, 1, 1]);
    let attrs = vec![ints("kernel_shape", &[1, 1]), ints("pads", &[pad as i64, 0, pad as i64, 0])];
    b.node("Conv", vec![v.name, w1], attrs, vec![1, wide, rows, w]);
    let e = last(b);
    activation(b, e);
    let e = last(b);
    let stride = 1 + b.rng.below(2);
    conv3x3(b, &e, stride, true);
    let d = last(b);
    if b.rng.chance(50) {
        let attrs = vec![ints("kernel_shape", &[3, 3]), ints("pads", &[1; 4]), ints("strides", &[1, 1])];
        b.node("MaxPool", vec![d.name], attrs, d.shape.clone());
    } else {
        activation(b, d.clone());
        let a = last(b).name;
        b.node("Add", vec![a, d.name], vec![], d.shape);
    }
    let p = last(b);
    let narrow = 1 + b.rng.below(3);
    conv(b, &p, narrow, false);
}

/// A chain of two to four convolutions that run on channel-blocked tensors, after a pointwise
/// convolution of `v` to 16 or 32 channels: pointwise convolutions between whole blocks,
/// alternating with 3x3 depthwise ones (stride 1 or 2, padding 1), dense 3x3 ones (stride 1 or
/// 2, padding 1) or residual blocks (a dense 3x3 convolution, stride 1, added to its input),
/// some activated; the first one's
/// output read once more by an elementwise step after the chain, half the time (a conversion
/// back from inside the chain). The chain starts with a pointwise convolution, whose input
/// conversion costs no more bytes than the convolution itself holds.
fn blocked_chain(b: &mut Builder, v: Value) {
    let blocks = |b: &mut Builder| 16 * (1 + b.rng.below(2));
    let mut c = blocks(b);
    let w = b.constant(&[c, v.shape[1], 1, 1]);
    b.node("Conv", vec![v.name, w], vec![ints("kernel_shape", &[1, 1])], vec![1, c, v.shape[2], v.shape[3]]);
    let mut inner = None;
    for i in 0..2 + b.rng.below(3) {
        let x = last(b);
        let (h, w) = (x.shape[2], x.shape[3]);
        if i % 2 == 0 {
            let out = blocks(b);
            let pw = b.constant(&[out, c, 1, 1]);
            let mut inputs = vec![x.name, pw];
            if b.rng.chance(50) {
                inputs.push(b.constant(&[out]));
            }
            b.node("Conv", inputs, vec![ints("kernel_shape", &[1, 1])], vec![1, out, h, w]);
            c = out;
        } else {
            let stride = 1 + b.rng.below(2);
            match b.rng.below(3) {
                0 => conv3x3(b, &x, stride, true),
                1 => conv3x3(b, &x, stride, false),
                _ => {
                    conv3x3(b, &x, 1, false);
                    let y = last(b);
                    b.node("Add", vec![x.name, y.name], vec![], y.shape);
                }
            }
        }
        if b.rng.chance(50) {
            let y = last(b);
            activation(b, y);
        }
        inner.get_or_insert(last(b));
    }
    if let Some(inner) = inner.filter(|_| b.rng.chance(50)) {
        let s = inner.shape.clone();
        b.node("Abs", vec![inner.name], vec![], s);
    }
}
