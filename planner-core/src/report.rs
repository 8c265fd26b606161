//! The plan made visible: a serialisable [`PlanReport`] of a compiled [`Program`], with the schedule
//! (what runs at each step, its multiply-accumulates, the arena bytes live there), every tensor's
//! place (arena offset and lifetime, caller buffer, or flash), and a device map of what occupies SRAM
//! and flash around the arena.
//!
//! `sramfit inspect` prints it as a table and writes it as JSON, SVG and HTML. The JSON form is the
//! serde serialisation of [`PlanReport`]; field names are stable.

use serde::{Deserialize, Serialize};

use crate::liveness::{BufferOwner, Storage};
use crate::pipeline::Program;
use crate::plan::Algorithm;
use crate::tensor::Quant;

/// Everything a person needs to see how a model's memory was planned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanReport {
    /// The model's name (as given by the caller, e.g. the file stem).
    pub model: String,
    /// Bytes of the planned arena (`ARENA_BYTES`).
    pub arena_bytes: u64,
    /// The live-bytes lower bound of this schedule: no plan can use less (`LOWER_BOUND_BYTES`).
    pub lower_bound_bytes: u64,
    /// The first step where the lower bound is reached (the peak).
    pub lower_bound_step: u32,
    /// Arena bytes without any reuse (`NAIVE_BYTES`).
    pub naive_bytes: u64,
    /// Bytes of the weight blob in flash, alignment padding included (`WEIGHT_BYTES`).
    pub weight_bytes: u64,
    /// The planner that produced the offsets.
    pub algorithm: Algorithm,
    /// Whether no smaller arena exists for this schedule.
    pub optimal: bool,
    /// Where the plan came from: empty when planned now, else which plan file was used or ignored.
    pub plan_source: String,
    /// The graph rewrites that ran before planning, and what they did.
    pub optimizations: crate::optimize::Applied,
    /// Which rewrites were enabled.
    pub rewrites_enabled: crate::optimize::Optimizations,
    /// One entry per schedule step, in execution order (views included: they run no code).
    pub steps: Vec<StepReport>,
    /// Every tensor of the graph, then one entry per kernel scratch buffer.
    pub tensors: Vec<TensorReport>,
    /// What occupies the device's SRAM and flash.
    pub device: DeviceMap,
}

/// One step of the schedule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepReport {
    /// The source operator, as tract names it (`Conv`, `EinSum`, `Add`, ...).
    pub op: String,
    /// The ONNX node name (tract may add a suffix).
    pub node: String,
    /// The `runtime-min` kernel this step calls (`view` for views, which run no code).
    pub kernel: String,
    /// The tensor the step writes.
    pub output: String,
    /// Multiply-accumulates of the step: convolutions `out_elems * kernel_h * kernel_w * in_channels /
    /// groups`, transposed convolutions `in_elems * kernel_h * kernel_w * out_channels / groups`,
    /// matrix products `batch * m * n * k`, every other kernel 0 (elementwise ops, pooling,
    /// reductions, normalisations, copies, resize and softmax are not counted as MACs).
    pub macs: u64,
    /// Sum of the sizes of the arena buffers (tensors and scratch) live at this step, in bytes,
    /// without alignment padding. Its maximum over steps never exceeds `lower_bound_bytes`.
    pub live_bytes: u64,
}

/// Where a tensor's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StorageKind {
    /// A buffer of the planned arena.
    Arena,
    /// The caller's input buffer.
    Input,
    /// The caller's output buffer.
    Output,
    /// Read-only weights.
    Flash,
    /// A kernel's scratch buffer in the arena (live for its one step).
    Scratch,
}

/// One tensor (or scratch buffer).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorReport {
    /// The tensor's name (`NODE.scratch` for a scratch buffer).
    pub name: String,
    /// Static shape, row-major (a scratch buffer's is its element count).
    pub shape: Vec<usize>,
    /// Element type (`f32`, `i8`, `u8`, `i16`, `i32`).
    #[serde(default = "f32_name")]
    pub dtype: String,
    /// Quantization of an integer tensor standing for real numbers (`scale S, zero point Z`, or
    /// per axis), else `null`.
    #[serde(default)]
    pub quant: Option<String>,
    /// Size in bytes.
    pub size: u64,
    /// Byte offset of its arena buffer (in its pool, with pools); `null` outside the arena.
    pub offset: Option<u64>,
    /// With pools, the pool its arena buffer is in; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// First step its arena buffer is live (inclusive index into `steps`); `null` outside the arena.
    pub first_step: Option<u32>,
    /// Last step its arena buffer is live (inclusive); `null` outside the arena.
    pub last_step: Option<u32>,
    /// The tensor whose bytes this one views (the root of the view chain), or `null`.
    pub alias_of: Option<String>,
    /// Where the bytes are.
    pub storage: StorageKind,
    /// Index of the arena buffer in the planning problem (shared by views); `null` outside the arena.
    pub buffer: Option<usize>,
}

/// One occupant of SRAM or flash.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceEntry {
    /// What it is (`arena`, ``input `x` ``, ``output `y` ``, `busy flag`, `stack`, `weights`, `code`).
    pub name: String,
    /// Its size in bytes; `null` when unknown at this level (code size).
    pub bytes: Option<u64>,
    /// Whether `bytes` is an estimate rather than an exact figure.
    pub estimate: bool,
    /// One line on where the figure comes from.
    pub note: String,
}

/// What occupies the device: the arena and what the generated module needs around it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceMap {
    /// RAM: the arena, the caller's input and output buffers, the busy flag, the kernels' stack.
    pub sram: Vec<DeviceEntry>,
    /// Read-only memory: the weights, and the code (unknown here).
    pub flash: Vec<DeviceEntry>,
    /// Sum of the known `sram` entries (the stack estimate included).
    pub sram_total_bytes: u64,
}

impl PlanReport {
    /// Builds the report of a compiled program.
    pub fn from_program(p: &Program, model_name: &str, target: &crate::target::Target) -> PlanReport {
        let g = &p.graph;
        let problem = &p.live.problem;
        let live_bytes = problem.live_bytes_per_step(g.nodes.len(), |b| b.size);
        let steps = g
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| StepReport {
                op: n.source_op.clone(),
                node: n.name.clone(),
                kernel: n.op.kind().kernel_name().to_owned(),
                output: g.tensors[n.output].name.clone(),
                macs: n.op.kind().macs(&n.operands(&g.tensors)),
                live_bytes: live_bytes[i],
            })
            .collect();

        // (byte offset in the arena, first step, last step, buffer) of something at byte `within` of
        // buffer `b`, and its pool (the offset is then in the pool).
        let arena_fields = |b: usize, within: u64| {
            let buf = &problem.buffers[b];
            let (pool, offset) = match &p.pools {
                None => (None, p.plan.offsets[b] + within),
                Some(pools) => {
                    let (k, off) = pools.locate(b, p.plan.offsets[b] + within);
                    (Some(pools.pools[k].spec.name.clone()), off)
                }
            };
            ((Some(offset), Some(buf.lifetime.first()), Some(buf.lifetime.last()), Some(b)), pool)
        };
        let roots = g.view_roots();
        let producers = g.producers();
        let mut elided_into: Vec<Option<usize>> = vec![None; g.tensors.len()];
        for (i, n) in g.nodes.iter().enumerate().filter(|&(i, _)| p.live.elided[i]) {
            for &t in &n.inputs {
                elided_into[t].get_or_insert(i);
            }
        }
        let mut tensors: Vec<TensorReport> = g
            .tensors
            .iter()
            .enumerate()
            .map(|(t, tensor)| {
                let root = roots[t];
                // A view names the tensor it views; an in-place output the input it overwrote; an
                // input of an elided concatenation the concatenation's output.
                let alias_of = if root != t {
                    Some(g.tensors[root].name.clone())
                } else if let Some(c) = elided_into[t] {
                    Some(g.tensors[g.nodes[c].output].name.clone())
                } else {
                    producers[t].and_then(|s| p.live.in_place[s].map(|k| g.tensors[g.nodes[s].inputs[k]].name.clone()))
                };
                let none = ((None, None, None, None), None);
                let (storage, ((offset, first_step, last_step, buffer), pool)) = match p.live.storage[t] {
                    Storage::Arena(b) => (StorageKind::Arena, arena_fields(b, p.live.offset_in_buffer[t])),
                    Storage::Input(_) => (StorageKind::Input, none),
                    Storage::Output(_) => (StorageKind::Output, none),
                    Storage::Const(_) => (StorageKind::Flash, none),
                };
                TensorReport {
                    name: tensor.name.clone(),
                    shape: tensor.shape.clone(),
                    dtype: tensor.dtype.to_string(),
                    quant: tensor.quant.as_ref().map(quant_str),
                    size: tensor.bytes(),
                    offset,
                    pool,
                    first_step,
                    last_step,
                    alias_of,
                    storage,
                    buffer,
                }
            })
            .collect();
        for (b, owner) in p.live.owners.iter().enumerate() {
            if let BufferOwner::Scratch(step) = *owner {
                let buf = &problem.buffers[b];
                let ((offset, first_step, last_step, buffer), pool) = arena_fields(b, 0);
                let dtype = g.nodes[step].op.kind().scratch().dtype;
                tensors.push(TensorReport {
                    name: buf.name.clone(),
                    shape: vec![(buf.size / dtype.size() as u64) as usize],
                    dtype: dtype.to_string(),
                    quant: None,
                    size: buf.size,
                    offset,
                    pool,
                    first_step,
                    last_step,
                    alias_of: None,
                    storage: StorageKind::Scratch,
                    buffer,
                });
            }
        }

        PlanReport {
            model: model_name.to_owned(),
            arena_bytes: p.plan.arena_bytes,
            lower_bound_bytes: p.plan.lower_bound.bytes,
            lower_bound_step: p.plan.lower_bound.step,
            naive_bytes: p.naive_bytes(),
            weight_bytes: p.weights.bytes.len() as u64,
            algorithm: p.plan.algorithm,
            optimal: p.plan.optimal,
            plan_source: crate::codegen::plan_source_note(p),
            optimizations: p.optimizations.1,
            rewrites_enabled: p.optimizations.0,
            steps,
            tensors,
            device: device_map(p, target),
        }
    }

    /// The steps' maximum `live_bytes` and the first step reaching it (`(0, 0)` without steps).
    pub fn peak_live(&self) -> (u64, usize) {
        let mut best = (0, 0);
        for (i, s) in self.steps.iter().enumerate() {
            if s.live_bytes > best.0 {
                best = (s.live_bytes, i);
            }
        }
        best
    }
}

fn entry(name: String, bytes: Option<u64>, estimate: bool, note: impl Into<String>) -> DeviceEntry {
    DeviceEntry { name, bytes, estimate, note: note.into() }
}

fn f32_name() -> String {
    "f32".into()
}

/// `scale S, zero point Z`, or `per axis A: N scales in [lo, hi], zero points [..]`.
fn quant_str(q: &Quant) -> String {
    match q {
        Quant::PerTensor { scale, zero_point } => format!("scale {scale}, zero point {zero_point}"),
        Quant::PerAxis { axis, scales, zero_points } => {
            let lo = scales.iter().copied().fold(f32::INFINITY, f32::min);
            let hi = scales.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let zero = zero_points.iter().all(|&z| z == 0);
            let zp = if zero { "0".to_string() } else { format!("{zero_points:?}") };
            format!("per axis {axis}: {} scales in [{lo}, {hi}], zero points {zp}", scales.len())
        }
    }
}

fn shape_str(s: &[usize]) -> String {
    format!("{s:?}")
}

fn device_map(p: &Program, target: &crate::target::Target) -> DeviceMap {
    let g = &p.graph;
    let io_arena = g.io == crate::ir::Io::Arena;
    let arena_note = match io_arena {
        true => "the inputs, the outputs, every intermediate activation and scratch buffer, at planned offsets (`Arena`, 16-byte aligned)",
        false => "every intermediate activation and scratch buffer, at planned offsets (`Arena`, 16-byte aligned)",
    };
    let mut sram = match &p.pools {
        None => vec![entry("arena".into(), Some(p.plan.arena_bytes), false, arena_note)],
        Some(pools) => (pools.pools.iter())
            .map(|pool| {
                let section = pool.spec.section.as_deref().map_or(String::new(), |s| format!(" in section `{s}`"));
                let note = format!(
                    "{} buffers at planned offsets of pool `{}` (declared {} bytes, its own static{section}, 16-byte aligned)",
                    pool.buffers.len(),
                    pool.spec.name,
                    pool.spec.bytes
                );
                entry(format!("pool `{}`", pool.spec.name), Some(pool.bytes()), false, note)
            })
            .collect(),
    };
    // With `io: arena` the inputs and outputs are inside the arena, so the caller keeps no buffers
    // but those of the inputs it places itself.
    for (_, &t) in g.inputs.iter().enumerate().filter(|&(i, _)| !g.input_in_arena(i)) {
        let tensor = &g.tensors[t];
        let note = format!("the caller's input buffer {} (read in place, not copied)", shape_str(&tensor.shape));
        let placed = if io_arena { " placed by the caller" } else { "" };
        sram.push(entry(format!("input `{}`{placed}", tensor.name), Some(tensor.bytes()), false, note));
    }
    if !io_arena {
        for &t in &g.outputs {
            let tensor = &g.tensors[t];
            let note = format!("the caller's output buffer {} (written in place)", shape_str(&tensor.shape));
            sram.push(entry(format!("output `{}`", tensor.name), Some(tensor.bytes()), false, note));
        }
    }
    sram.push(entry(
        "busy flag".into(),
        Some(1),
        false,
        "`AtomicBool` guarding the module's static arena (`run`, `run_dyn`)",
    ));
    // The first of the deepest kernels (`max_by_key` keeps the last maximum, hence `rev`).
    let target = target.kernels();
    let deepest = g.nodes.iter().rev().max_by_key(|n| n.op.kind().stack_bytes(target));
    let (stack, note) = match deepest {
        Some(n) => (
            n.op.kind().stack_bytes(target),
            format!(
                "estimate: local arrays of the deepest kernel, `{}` (step `{}`); frames and interrupts not counted",
                n.op.kind().kernel_name(),
                n.name
            ),
        ),
        None => (0, "estimate: no kernel runs".to_owned()),
    };
    sram.push(entry("stack".into(), Some(stack), true, note));
    let sram_total_bytes = sram.iter().filter_map(|e| e.bytes).sum();
    let flash = vec![
        entry(
            "weights".into(),
            Some(p.weights.bytes.len() as u64),
            false,
            "constant tensors the schedule reads, one 16-byte aligned blob",
        ),
        entry("code".into(), None, false, "kernels and the generated `run` function: unknown before linking"),
    ];
    DeviceMap { sram, flash, sram_total_bytes }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Graph, Node, Op, TensorId, TensorKind};
    use crate::ops::unary::Unary;
    use crate::ops::view::View;
    use crate::pipeline::compile_graph;
    use crate::tensor::{DType, Data};
    use sramfit_runtime_min as rt;

    /// x -> conv a (3x3, 2->4 channels) -> relu b -> view c -> matmul d (output), weights in flash.
    fn conv_view_matmul() -> Graph {
        let mut g = Graph::default();
        let x = g.add_tensor("x", vec![1, 2, 6, 6], DType::F32, TensorKind::Input(0));
        let w = g.add_const("w", vec![4, 2, 3, 3], Data::F32(vec![0.5; 72]));
        let a = g.add_tensor("a", vec![1, 4, 4, 4], DType::F32, TensorKind::Activation);
        let b = g.add_tensor("b", vec![1, 4, 4, 4], DType::F32, TensorKind::Activation);
        let c = g.add_tensor("c", vec![1, 64], DType::F32, TensorKind::Activation);
        let m = g.add_const("m", vec![64, 10], Data::F32(vec![0.25; 640]));
        let d = g.add_tensor("d", vec![1, 10], DType::F32, TensorKind::Activation);
        let conv = rt::Conv2d {
            batch: 1,
            in_channels: 2,
            in_h: 6,
            in_w: 6,
            out_channels: 4,
            out_h: 4,
            out_w: 4,
            kernel_h: 3,
            kernel_w: 3,
            stride_h: 1,
            stride_w: 1,
            dilation_h: 1,
            dilation_w: 1,
            pad_top: 0,
            pad_left: 0,
            groups: 1,
            act: rt::Activation::None,
            weights: rt::ConvWeights::Oihw,
            input: rt::ConvInput::Nchw,
        };
        let mm = rt::MatMul::row_major(1, 10, 64);
        let node = |name: &str, op: Op, inputs: Vec<TensorId>, output: TensorId| Node {
            name: name.into(),
            source_op: name.to_uppercase(),
            op,
            inputs,
            output,
        };
        g.nodes = vec![
            node("conv", Op::Conv(conv), vec![x, w], a),
            node("relu", Op::Unary(Unary::Relu), vec![a], b),
            node("flatten", Op::View(View), vec![b], c),
            node("fc", Op::MatMul(mm), vec![c, m], d),
        ];
        g.inputs = vec![x];
        g.outputs = vec![d];
        g
    }

    fn find<'a>(r: &'a PlanReport, name: &str) -> &'a TensorReport {
        r.tensors.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("no tensor `{name}`"))
    }

    #[test]
    fn report_of_a_hand_built_graph() {
        let p = compile_graph(conv_view_matmul(), &crate::optimize::Optimizations::NONE).unwrap();
        // A Cortex-M4F: the portable kernels, 4-byte pointers.
        let r = PlanReport::from_program(&p, "hand", &crate::target::Target::new("thumbv7em-none-eabihf"));
        assert_eq!(r.model, "hand");
        assert_eq!(r.steps.len(), 4);
        assert_eq!(
            r.steps.iter().map(|s| s.kernel.as_str()).collect::<Vec<_>>(),
            ["conv2d", "unary", "view", "matmul"]
        );
        assert_eq!(r.steps[0].op, "CONV");
        assert_eq!(r.steps[0].node, "conv");
        assert_eq!(r.steps[0].output, "a");
        // conv: 64 outputs * 3*3*2; matmul: 1*10*64; others none.
        assert_eq!(r.steps.iter().map(|s| s.macs).collect::<Vec<_>>(), [64 * 18, 0, 0, 640]);

        assert_eq!(find(&r, "x").storage, StorageKind::Input);
        assert_eq!(find(&r, "w").storage, StorageKind::Flash);
        assert_eq!(find(&r, "d").storage, StorageKind::Output);
        assert_eq!(find(&r, "d").offset, None);
        let (a, b, c) = (find(&r, "a"), find(&r, "b"), find(&r, "c"));
        assert_eq!(
            (a.storage, a.first_step, a.last_step, a.alias_of.as_deref()),
            (StorageKind::Arena, Some(0), Some(1), None)
        );
        // The view shares its root's buffer, whose life extends to the matmul that reads it.
        assert_eq!((b.first_step, b.last_step), (Some(1), Some(3)));
        assert_eq!(c.alias_of.as_deref(), Some("b"));
        assert_eq!((c.offset, c.first_step, c.last_step, c.buffer), (b.offset, b.first_step, b.last_step, b.buffer));
        assert_eq!(c.storage, StorageKind::Arena);
        // The 3x3 conv has an im2col scratch buffer: 2*3*3 * 16 positions floats, step 0 only.
        let scratch = find(&r, "conv.scratch");
        assert_eq!(scratch.storage, StorageKind::Scratch);
        assert_eq!((scratch.size, scratch.first_step, scratch.last_step), (18 * 16 * 4, Some(0), Some(0)));
        assert_eq!(r.tensors.len(), 8);

        // Live bytes: step 0 holds a + scratch, 1 holds a + b, 2 and 3 hold b.
        assert_eq!(r.steps.iter().map(|s| s.live_bytes).collect::<Vec<_>>(), [256 + 1152, 512, 256, 256]);
        assert_eq!(r.peak_live(), (1408, 0));
        assert!(r.peak_live().0 <= r.lower_bound_bytes && r.lower_bound_bytes <= r.arena_bytes);
        for t in r.tensors.iter().filter(|t| t.offset.is_some()) {
            assert!(t.offset.unwrap() + t.size <= r.arena_bytes, "{t:?}");
        }

        // Device map: arena, input, output, busy flag, stack (estimate: the deepest kernel's local
        // arrays on the target, the conv's GEMM panels plus its direct path's row of taps).
        let names: Vec<&str> = r.device.sram.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["arena", "input `x`", "output `d`", "busy flag", "stack"]);
        assert_eq!(r.device.sram[1].bytes, Some(2 * 36 * 4));
        assert_eq!(r.device.sram[3].bytes, Some(1));
        let cortex_m = rt::Target::Portable { pointer_bytes: 4 };
        let Op::Conv(conv) = &p.graph.nodes.iter().find(|n| n.name == "conv").unwrap().op else { panic!("conv") };
        let stack = rt::conv2d_stack_bytes(conv, cortex_m) as u64;
        assert!(stack > rt::matmul_stack_bytes(&rt::MatMul::row_major(1, 10, 64), cortex_m) as u64);
        assert!(r.device.sram[4].estimate && r.device.sram[4].bytes == Some(stack));
        assert!(r.device.sram[4].note.contains("`conv2d` (step `conv`)"), "{}", r.device.sram[4].note);
        assert_eq!(r.device.sram_total_bytes, r.arena_bytes + 288 + 40 + 1 + stack);
        // The host's figure covers every x86-64 kernel path, at least the portable one.
        let host = PlanReport::from_program(&p, "hand", &crate::target::Target::new("x86_64-unknown-linux-gnu"));
        assert!(host.device.sram[4].bytes.unwrap() >= stack);
        assert_eq!(r.device.flash[0].bytes, Some(r.weight_bytes));
        assert!(r.weight_bytes >= (72 + 640) * 4);
        assert_eq!(r.device.flash[1].bytes, None);

        // JSON round trip with the documented field names.
        let json = serde_json::to_value(&r).unwrap();
        for key in ["arena_bytes", "lower_bound_bytes", "lower_bound_step", "naive_bytes", "weight_bytes"] {
            assert!(json[key].is_u64(), "{key}");
        }
        assert_eq!(json["algorithm"], serde_json::json!(r.algorithm.name()));
        assert_eq!(json["tensors"][0]["storage"], "input");
        assert_eq!(json["tensors"][0]["offset"], serde_json::Value::Null);
        assert_eq!(serde_json::from_value::<PlanReport>(json).unwrap(), r);
    }

    #[cfg(feature = "onnx")]
    #[test]
    fn report_of_the_kws_fixture() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/models/kws_dscnn.onnx");
        let p = crate::compile::compile_model(&crate::request::Request::new(path)).unwrap().into_program();
        let r = PlanReport::from_program(&p, "kws_dscnn", &crate::target::Target::host());
        assert_eq!(r.steps.len(), p.graph.nodes.len());
        assert_eq!(r.arena_bytes, p.plan.arena_bytes);
        assert!(r.lower_bound_bytes <= r.arena_bytes && r.arena_bytes <= r.naive_bytes);
        assert!(r.peak_live().0 <= r.lower_bound_bytes);
        assert!(r.steps.iter().map(|s| s.macs).sum::<u64>() > 1_000_000, "a DS-CNN does millions of MACs");
        assert!(r.steps.iter().any(|s| s.kernel == "conv2d" && s.macs > 0));
        let arena: Vec<&TensorReport> =
            r.tensors.iter().filter(|t| matches!(t.storage, StorageKind::Arena | StorageKind::Scratch)).collect();
        assert!(!arena.is_empty());
        for t in &arena {
            assert!(t.offset.unwrap() + t.size <= r.arena_bytes, "{t:?}");
            assert!(t.first_step.unwrap() <= t.last_step.unwrap());
        }
        // Every arena buffer appears exactly once as a non-view entry.
        let mut roots: Vec<usize> = arena.iter().filter(|t| t.alias_of.is_none()).map(|t| t.buffer.unwrap()).collect();
        roots.sort_unstable();
        assert_eq!(roots, (0..p.live.problem.buffers.len()).collect::<Vec<_>>());
        assert_eq!(r.tensors.iter().filter(|t| t.storage == StorageKind::Flash).count() > 0, r.weight_bytes > 0);
    }
}
