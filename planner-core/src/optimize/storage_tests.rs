//! The storage passes on hand-built graphs: views, in-place chains, elided concatenations, `io:
//! arena`, and the storage verifier's rejections.

use super::{storage, Optimizations};
use crate::boundary::bind_outputs;
use crate::ir::Node;
use crate::ir::{Graph, Io, Op, TensorId, TensorKind};
use crate::liveness::{Liveness, Storage, ARENA_ALIGN};
use crate::ops::binary::{Binary, BinaryOp};
use crate::ops::copy::{Copies, StridedCopy};
use crate::ops::unary::Unary;
use crate::ops::view::View;
use crate::problem::Lifetime;
use crate::tensor::DType;

/// input -> relu a -> view b -> relu c -> relu d (output): `a` is read through the view at step 2.
fn chain_with_view() -> Graph {
    let mut g = Graph::default();
    let x = g.add_tensor("x", vec![2, 8], DType::F32, TensorKind::Input(0));
    let a = g.add_tensor("a", vec![2, 8], DType::F32, TensorKind::Activation);
    let b = g.add_tensor("b", vec![16], DType::F32, TensorKind::Activation);
    let c = g.add_tensor("c", vec![16], DType::F32, TensorKind::Activation);
    let d = g.add_tensor("d", vec![16], DType::F32, TensorKind::Activation);
    let node = |name: &str, op: Op, input: TensorId, output: TensorId| Node::new(name, op, vec![input], output);
    g.nodes = vec![
        node("relu_a", Op::Unary(Unary::Relu), x, a),
        node("view_b", Op::View(View), a, b),
        node("relu_c", Op::Unary(Unary::Relu), b, c),
        node("relu_d", Op::Unary(Unary::Relu), c, d),
    ];
    g.inputs = vec![x];
    g.outputs = vec![d];
    g
}

#[test]
fn with_io_in_the_arena_inputs_live_from_the_start_and_outputs_to_the_end() {
    let mut g = chain_with_view();
    g.io = Io::Arena;
    bind_outputs(&mut g);
    let life = |l: &Liveness, t: TensorId| match l.storage[t] {
        Storage::Arena(b) => l.problem.buffers[b].lifetime.clone(),
        other => panic!("tensor {t} is not in the arena: {other:?}"),
    };
    let l = storage(&g, &Optimizations::NONE);
    assert_eq!(life(&l, 0), Lifetime::new(0, 0), "x: written by the caller, read by step 0");
    assert_eq!(life(&l, 4), Lifetime::new(3, 3), "d: written by the last step, read by the caller after it");
    crate::verify::verify_in_place(&g, &l).expect("the storage verifier accepts it");

    // In place, the last relu may write the output over `c`, and the first may overwrite `x`:
    // the buffer then lives from step 0 (x) to the end (d).
    let l = storage(&g, &Optimizations { in_place: true, ..Optimizations::NONE });
    assert_eq!(l.in_place.iter().flatten().count(), 3, "{:?}", l.in_place);
    assert_eq!(l.storage[0], l.storage[4], "one buffer from the input to the output");
    assert_eq!(life(&l, 0), Lifetime::new(0, 3));
    crate::verify::verify_in_place(&g, &l).expect("the storage verifier accepts it");
}

#[test]
fn views_share_their_roots_buffer_and_extend_its_life() {
    let mut g = chain_with_view();
    bind_outputs(&mut g);
    let l = storage(&g, &Optimizations::NONE);
    assert_eq!(l.storage[0], Storage::Input(0));
    assert_eq!(l.storage[1], l.storage[2], "the view shares its root's bytes");
    assert_eq!(l.storage[4], Storage::Output(0), "the last node writes the caller's buffer");
    // Two arena buffers: `a` (written at step 0, read through the view at step 2) and `c`.
    assert_eq!(l.problem.buffers.len(), 2);
    assert_eq!(l.problem.buffers[0].lifetime, Lifetime::new(0, 2));
    assert_eq!(l.problem.buffers[1].lifetime, Lifetime::new(2, 3));
    assert!(l.problem.buffers.iter().all(|b| b.size == 64 && b.align == ARENA_ALIGN));
}

fn sub(shape: &[usize]) -> Op {
    let s = crate::ir::strides_of(shape);
    Op::Binary(BinaryOp::new(Binary::Sub, s.clone(), s))
}

const IN_PLACE: Optimizations = Optimizations { in_place: true, ..Optimizations::NONE };

#[test]
fn an_elementwise_chain_runs_in_one_buffer() {
    let mut g = chain_with_view();
    bind_outputs(&mut g);
    let l = storage(&g, &IN_PLACE);
    // relu_c overwrites `a` (through the view), which it reads last; relu_d writes the output.
    assert_eq!(l.in_place, [None, None, Some(0), None]);
    assert_eq!(l.problem.buffers.len(), 1);
    assert_eq!(l.problem.buffers[0].lifetime, Lifetime::new(0, 3));
    assert_eq!(l.storage[1], l.storage[3]);
    crate::verify::verify_in_place(&g, &l).unwrap();
}

#[test]
fn an_input_read_later_or_owned_by_the_caller_is_not_overwritten() {
    // a = relu(x); b = x - a; c = b - a; d = c - b (the output).
    let mut g = Graph::default();
    let x = g.add_tensor("x", vec![8], DType::F32, TensorKind::Input(0));
    let a = g.add_tensor("a", vec![8], DType::F32, TensorKind::Activation);
    let b = g.add_tensor("b", vec![8], DType::F32, TensorKind::Activation);
    let c = g.add_tensor("c", vec![8], DType::F32, TensorKind::Activation);
    let d = g.add_tensor("d", vec![8], DType::F32, TensorKind::Activation);
    g.nodes = vec![
        Node::new("a", Op::Unary(Unary::Relu), vec![x], a),
        Node::new("b", sub(&[8]), vec![x, a], b),
        Node::new("c", sub(&[8]), vec![b, a], c),
        Node::new("d", sub(&[8]), vec![c, b], d),
    ];
    (g.inputs, g.outputs) = (vec![x], vec![d]);
    bind_outputs(&mut g);
    let l = storage(&g, &IN_PLACE);
    // a: x is the caller's. b: reads x (caller's) and a (read again at step 2); Sub cannot
    // overwrite its second operand anyway. c: overwrites b? b is read at step 3: no; a (its
    // last reader) is Sub's second operand: no. d: overwrites c, its first operand, read last.
    assert_eq!(l.in_place, [None, None, None, None]);
    assert_eq!(l.storage[d], Storage::Output(0), "the output is the caller's buffer");
    crate::verify::verify_in_place(&g, &l).unwrap();
    // With e = relu(d) as the output instead, d overwrites c (its first operand, read last);
    // e writes the caller's buffer.
    let e = g.add_tensor("e", vec![8], DType::F32, TensorKind::Activation);
    g.nodes.push(Node::new("e", Op::Unary(Unary::Relu), vec![d], e));
    g.outputs = vec![e];
    let l = storage(&g, &IN_PLACE);
    assert_eq!(l.in_place, [None, None, None, Some(0), None]);
    assert_eq!(l.storage[c], l.storage[d]);
    crate::verify::verify_in_place(&g, &l).unwrap();
}

/// x -> relu a, x -> relu b, c = concat(a, b) on the outer axis, d = relu(c) (the output).
fn concat_graph() -> Graph {
    let mut g = Graph::default();
    let x = g.add_tensor("x", vec![4], DType::F32, TensorKind::Input(0));
    let a = g.add_tensor("a", vec![4], DType::F32, TensorKind::Activation);
    let b = g.add_tensor("b", vec![4], DType::F32, TensorKind::Activation);
    let c = g.add_tensor("c", vec![2, 4], DType::F32, TensorKind::Activation);
    let d = g.add_tensor("d", vec![2, 4], DType::F32, TensorKind::Activation);
    let part = |input: usize| StridedCopy {
        input,
        shape: vec![1, 4],
        src_offset: 0,
        src_strides: vec![4, 1],
        dst_offset: input * 4,
        dst_strides: vec![4, 1],
    };
    g.nodes = vec![
        Node::new("a", Op::Unary(Unary::Relu), vec![x], a),
        Node::new("b", Op::Unary(Unary::Relu), vec![x], b),
        Node::new("concat", Op::Copy(Copies(vec![part(0), part(1)])), vec![a, b], c),
        Node::new("d", Op::Unary(Unary::Relu), vec![c], d),
    ];
    (g.inputs, g.outputs) = (vec![x], vec![d]);
    g
}

#[test]
fn an_elided_concat_has_its_inputs_written_into_its_output() {
    let mut g = concat_graph();
    bind_outputs(&mut g);
    let o = Optimizations { elide_concat: true, ..Optimizations::NONE };
    let l = storage(&g, &o);
    assert_eq!(l.elided, [false, false, true, false]);
    assert_eq!(l.problem.buffers.len(), 1, "one buffer: the concatenation's");
    assert_eq!((l.storage[1], l.storage[2]), (l.storage[3], l.storage[3]));
    assert_eq!((l.offset_in_buffer[1], l.offset_in_buffer[2]), (0, 16));
    assert_eq!(l.problem.buffers[0].lifetime, Lifetime::new(0, 3), "born with its first input");
    crate::verify::verify_in_place(&g, &l).unwrap();

    // Placing `b` over `a` is caught: both are needed until the concatenation.
    let mut bad = l.clone();
    bad.offset_in_buffer[2] = 0;
    let err = crate::verify::verify_in_place(&g, &bad).unwrap_err();
    assert!(err.contains("tensors `a` (steps 0..=2) and `b` (steps 1..=2) share buffer `c`"), "{err}");

    // Without elision: three buffers, the concatenation copies.
    let l = storage(&g, &Optimizations::NONE);
    assert_eq!((l.elided.iter().filter(|&&e| e).count(), l.problem.buffers.len()), (0, 3));
}

/// `concat_graph`'s concatenation `c = concat(a, b)` as the first input of an outer one, `f =
/// concat(c, e)` with `e = relu(x)` computed between them, and `d = relu(f)` the output (what
/// patch-based execution makes when it tiles a band again): `a`, `b` and `e` are then parts of
/// `f`, `a` and `b` through `c`.
fn nested_concat_graph() -> Graph {
    let mut g = concat_graph();
    let (x, c, d) = (0, 3, 4);
    let e = g.add_tensor("e", vec![8], DType::F32, TensorKind::Activation);
    let f = g.add_tensor("f", vec![16], DType::F32, TensorKind::Activation);
    g.tensors[d].shape = vec![16];
    // `c`'s 8 elements first, `e`'s 8 after them.
    let whole = |input: usize| StridedCopy {
        input,
        shape: vec![8],
        src_offset: 0,
        src_strides: vec![1],
        dst_offset: input * 8,
        dst_strides: vec![1],
    };
    g.nodes.truncate(3);
    g.nodes.push(Node::new("e", Op::Unary(Unary::Relu), vec![x], e));
    g.nodes.push(Node::new("f", Op::Copy(Copies(vec![whole(0), whole(1)])), vec![c, e], f));
    g.nodes.push(Node::new("d", Op::Unary(Unary::Relu), vec![f], d));
    g
}

#[test]
fn a_part_of_an_elided_part_is_placed_at_the_sum_of_its_offsets() {
    let mut g = nested_concat_graph();
    bind_outputs(&mut g);
    let o = Optimizations { elide_concat: true, ..Optimizations::NONE };
    let l = storage(&g, &o);
    let (a, b, c, e, f) = (1, 2, 3, 5, 6);
    assert_eq!(l.elided, [false, false, true, false, true, false]);
    assert_eq!(l.problem.buffers.len(), 1, "one buffer: the outer concatenation's");
    assert!([a, b, c, e].iter().all(|&t| l.storage[t] == l.storage[f]));
    // a at 0 and b at 16 inside c, which is at 0 inside f; e at 32.
    let at = [a, b, c, e, f].map(|t| l.offset_in_buffer[t]);
    assert_eq!(at, [0, 16, 0, 32, 0]);
    assert_eq!(l.problem.buffers[0].size, 64);
    assert_eq!(l.problem.buffers[0].lifetime, Lifetime::new(0, 5), "born with a, the first part of a part");
    crate::verify::verify_in_place(&g, &l).unwrap();

    // `b` placed where `c` says but not where `f` puts `c` is caught.
    let mut bad = l.clone();
    (bad.offset_in_buffer[c], bad.offset_in_buffer[a], bad.offset_in_buffer[b]) = (32, 0, 16);
    assert!(crate::verify::verify_in_place(&g, &bad).is_err());
}

#[test]
fn the_storage_verifier_rejects_sharing_that_is_not_in_place() {
    let mut g = chain_with_view();
    bind_outputs(&mut g);
    let mut l = storage(&g, &IN_PLACE);
    // Forget the decision: `a` and `c` still share a buffer, and both are needed at step 2.
    l.in_place[2] = None;
    let err = crate::verify::verify_in_place(&g, &l).unwrap_err();
    assert!(err.contains("tensors `a` (steps 0..=2) and `c` (steps 2..=3) share buffer `a`"), "{err}");
    // A buffer whose planned life is shorter than its tensors'.
    let mut l = storage(&g, &IN_PLACE);
    l.problem.buffers[0].lifetime = Lifetime::new(0, 2);
    let err = crate::verify::verify_in_place(&g, &l).unwrap_err();
    assert!(err.contains("planned for steps 0..=2 but holds tensors live over steps 0..=3"), "{err}");
}

#[test]
fn an_output_that_is_an_input_gets_a_copy() {
    let mut g = Graph::default();
    let x = g.add_tensor("x", vec![4], DType::F32, TensorKind::Input(0));
    g.inputs = vec![x];
    g.outputs = vec![x, x];
    bind_outputs(&mut g);
    assert_eq!(g.nodes.len(), 2, "each output gets its own copy");
    let l = storage(&g, &Optimizations::NONE);
    assert_eq!(l.storage[g.outputs[0]], Storage::Output(0));
    assert_eq!(l.storage[g.outputs[1]], Storage::Output(1));
    assert!(l.problem.buffers.is_empty());
}

/// input -> relu a `[1, 4, 4, 4]` -> 3x3 depthwise convolution b (stride 1, padding 1) -> relu c:
/// the peak is the convolution's step, where `a` and `b` are both live.
fn depthwise_graph() -> Graph {
    let mut g = Graph::default();
    let shape = vec![1, 4, 4, 4];
    let x = g.add_tensor("x", shape.clone(), DType::F32, TensorKind::Input(0));
    let a = g.add_tensor("a", shape.clone(), DType::F32, TensorKind::Activation);
    let w = g.add_const("w", vec![4, 1, 3, 3], crate::tensor::Data::F32(vec![0.5; 36]));
    let b = g.add_tensor("b", shape.clone(), DType::F32, TensorKind::Activation);
    let c = g.add_tensor("c", shape, DType::F32, TensorKind::Activation);
    let conv = sramfit_runtime_min::Conv2d {
        kernel_h: 3,
        kernel_w: 3,
        pad_top: 1,
        pad_left: 1,
        ..super::pack::tests::conv(4, 4, 4)
    };
    g.nodes = vec![
        Node::new("a", Op::Unary(Unary::Relu), vec![x], a),
        Node::new("b", Op::Conv(conv), vec![a, w], b),
        Node::new("c", Op::Unary(Unary::Relu), vec![b], c),
    ];
    (g.inputs, g.outputs) = (vec![x], vec![c]);
    g
}

#[test]
fn an_overlapped_depthwise_step_starts_its_output_one_plane_before_its_input() {
    let mut g = depthwise_graph();
    bind_outputs(&mut g);
    let l = storage(&g, &Optimizations { overlap: true, ..Optimizations::NONE });
    assert_eq!(l.overlap, [None, Some(0), None]);
    assert_eq!(l.storage[1], l.storage[3], "a and b share one buffer");
    // One plane is 16 floats, 64 bytes: b at 0, a at 64, 64 + 256 bytes instead of 2 * 256.
    assert_eq!((l.offset_in_buffer[3], l.offset_in_buffer[1]), (0, 64));
    let Storage::Arena(buf) = l.storage[1] else { panic!("a is in the arena") };
    assert_eq!(l.problem.buffers[buf].size, 320);
    assert_eq!(crate::plan::lower_bound(&l.problem).bytes, 320);
    assert_eq!(super::overlap::saved(&g, &l), (1, 192));
    crate::verify::verify_in_place(&g, &l).expect("the storage verifier accepts it");

    // One element closer and output plane 0 would overwrite input plane 0 before it is read.
    let mut bad = l.clone();
    bad.offset_in_buffer[1] = 60;
    let err = crate::verify::verify_in_place(&g, &bad).unwrap_err();
    assert!(err.contains("tensors `a` (steps 0..=1) and `b` (steps 1..=2) share buffer `b`"), "{err}");
    // The output after the input (a displacement the plane order never allows).
    let mut bad = l.clone();
    (bad.offset_in_buffer[1], bad.offset_in_buffer[3]) = (0, 64);
    assert!(crate::verify::verify_in_place(&g, &bad).is_err());
    // Forgetting the decision leaves two tensors in one buffer while both are needed.
    let mut bad = l.clone();
    bad.overlap[1] = None;
    assert!(crate::verify::verify_in_place(&g, &bad).is_err());
    // A buffer too small for the input at its offset.
    let mut bad = l;
    bad.problem.buffers[buf].size = 256;
    let err = crate::verify::verify_in_place(&g, &bad).unwrap_err();
    assert!(err.contains("does not fit in its buffer `b` of 256 bytes"), "{err}");

    // Off, two buffers.
    let l = storage(&g, &Optimizations::NONE);
    assert_eq!((l.overlap.iter().flatten().count(), crate::plan::lower_bound(&l.problem).bytes), (0, 512));
}

/// input -> int8 convolutions of NHWC `[1, 16, 4, 8]` images (rows of 32 bytes, 512 bytes each):
/// 1x1 a, 3x3 b (padding 1), 1x1 c, 1x1 d (output): a chain of equal layers, two tensors live at
/// steps 1 and 2.
fn nhwc_chain_graph() -> Graph {
    use sramfit_runtime_min::quant::{self as rtq, ImageStrides};
    let mut g = Graph::default();
    let shape = vec![1, 16, 4, 8];
    let x = g.add_tensor("x", shape.clone(), DType::I8, TensorKind::Input(0));
    let mut previous = x;
    for (name, k) in [("a", 1), ("b", 3), ("c", 1), ("d", 1)] {
        let y = g.add_tensor(name, shape.clone(), DType::I8, TensorKind::Activation);
        let w = g.add_const(format!("{name}.w"), vec![8, k, k, 8], crate::tensor::Data::I8(vec![1; 64 * k * k]));
        let consts: Vec<TensorId> = ["bias", "multipliers", "shifts"]
            .iter()
            .map(|c| g.add_const(format!("{name}.{c}"), vec![8], crate::tensor::Data::I32(vec![1; 8])))
            .collect();
        let params = rtq::Conv2d {
            batch: 1,
            in_channels: 8,
            in_h: 16,
            in_w: 4,
            out_channels: 8,
            out_h: 16,
            out_w: 4,
            kernel_h: k,
            kernel_w: k,
            stride_h: 1,
            stride_w: 1,
            dilation_h: 1,
            dilation_w: 1,
            pad_top: k / 2,
            pad_left: k / 2,
            groups: 1,
            x_strides: ImageStrides::nhwc(8, 16, 4),
            y_strides: ImageStrides::nhwc(8, 16, 4),
            x_zero_point: 0,
            w_zero_point: 0,
            y_zero_point: 0,
            act_min: -128,
            act_max: 127,
        };
        let op = crate::ops::qconv::QConv {
            params,
            depthwise: false,
            dtype: DType::I8,
            accumulate: false,
            rounding: rtq::RequantRounding::Double,
        };
        g.nodes.push(Node::new(name, Op::QConv(op), [vec![previous, w], consts].concat(), y));
        previous = y;
    }
    (g.inputs, g.outputs) = (vec![x], vec![previous]);
    g
}

#[test]
fn a_chain_of_nhwc_convolutions_overlaps_row_by_row_in_one_buffer() {
    let mut g = nhwc_chain_graph();
    bind_outputs(&mut g);
    // Off by default: NHWC layers overlap row by row only with `overlap_rows`.
    let l = storage(&g, &Optimizations { overlap: true, ..Optimizations::NONE });
    assert_eq!((l.overlap.iter().flatten().count(), crate::plan::lower_bound(&l.problem).bytes), (0, 1024));
    let l = storage(&g, &Optimizations { overlap: true, overlap_rows: true, ..Optimizations::NONE });
    // Overlapping b alone lowers nothing (the shared buffer meets c at step 2); b and c together
    // hold a, b and c in one buffer: c at 0, b one row (c is 1x1) after it, a two rows (b's
    // windows start one row above its output row) after b.
    assert_eq!(l.overlap, [None, Some(0), Some(0), None]);
    let (a, b, c) = (1, 6, 11);
    assert_eq!((l.storage[a], l.storage[b]), (l.storage[c], l.storage[c]));
    assert_eq!((l.offset_in_buffer[c], l.offset_in_buffer[b], l.offset_in_buffer[a]), (0, 32, 96));
    assert_eq!(crate::plan::lower_bound(&l.problem).bytes, 608, "instead of 1024");
    crate::verify::verify_in_place(&g, &l).expect("the storage verifier accepts it");
    // b's output row q reads a's rows from q - 1: with a one row after b (what a layer whose
    // output plane q reads input plane q only would allow), b's row q would overwrite a's row
    // q - 1 before b's row q reads it.
    let mut bad = l.clone();
    bad.offset_in_buffer[a] = 64;
    let err = crate::verify::verify_in_place(&g, &bad).unwrap_err();
    assert!(err.contains("tensors `a` (steps 0..=1) and `b` (steps 1..=2)"), "{err}");

    let l = storage(&g, &Optimizations::NONE);
    assert_eq!((l.overlap.iter().flatten().count(), crate::plan::lower_bound(&l.problem).bytes), (0, 1024));
}
