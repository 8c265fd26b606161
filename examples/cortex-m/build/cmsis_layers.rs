//! The CMSIS-NN driver of a `.tflite` model: its layer list as Rust (`NAME.cmsis.rs`), generated
//! from planner-core's import of the same file (the integer IR holds every operator's weights,
//! multipliers, shifts, zero points and clamps, as TFLite's file gives them), for
//! `src/cmsis.rs` to run through CMSIS-NN's kernels.
//!
//! The parameters are mapped onto CMSIS-NN's calls as TensorFlow Lite Micro's CMSIS-NN kernels do
//! (`tensorflow/lite/micro/kernels/cmsis_nn/{conv,depthwise_conv,fully_connected,pooling,softmax,
//! add}.cc`: `input_offset = -input zero point`, `output_offset = output zero point`, OHWI / 1HWO
//! filters, per-channel `multiplier` / `shift`, `activation` the output clamp). The one value the
//! IR holds differently is the bias: sramfit's kernels take it folded with the input zero point
//! (`bias - x_zero_point * sum(w)`, `runtime_min::quant::fold_bias`), so the file's bias is
//! recovered here by adding that sum back (exact, in wrapping `i32` arithmetic).
//!
//! Activations get one region each in a flat arena (no reuse: the driver measures instructions,
//! not memory); views (RESHAPE) share their root's region; the graph input and output are the
//! caller's buffers.

use std::fmt::Write as _;

use planner_core::ir::Graph;
use planner_core::ops::Op;
use planner_core::ops::pool::PoolKind;
use planner_core::ops::qbinary::QBinaryKind;
use planner_core::ops::qsoftmax::QSoftmax;
use planner_core::pipeline::Program;
use planner_core::tensor::{Data, Quant, TensorKind};

/// Where a layer's operand is, as the generated `Buf` literal.
fn buf(g: &Graph, regions: &[Option<(usize, usize)>], t: usize) -> String {
    if g.outputs.contains(&t) {
        return "Buf::Output".into();
    }
    let root = g.root_of(t);
    match g.tensors[root].kind {
        TensorKind::Input(_) => "Buf::Input".into(),
        _ => {
            let (offset, len) = regions[root].unwrap_or_else(|| panic!("tensor {} has no region", g.tensors[t].name));
            format!("Buf::Arena {{ offset: {offset}, len: {len} }}")
        }
    }
}

/// The zero point of a per-tensor quantized activation.
fn zero_point(g: &Graph, t: usize) -> i32 {
    match g.tensors[t].quant {
        Some(Quant::PerTensor { zero_point, .. }) => zero_point,
        ref q => panic!("{}: not a per-tensor quantized activation: {q:?}", g.tensors[t].name),
    }
}

fn constant(g: &Graph, t: usize) -> &Data {
    match &g.tensors[t].kind {
        TensorKind::Const(d) => d,
        _ => panic!("{}: a constant was expected", g.tensors[t].name),
    }
}

fn i8s(g: &Graph, t: usize) -> &[i8] {
    match constant(g, t) {
        Data::I8(v) => v,
        d => panic!("{}: int8 weights expected, got {d:?}", g.tensors[t].name),
    }
}

fn i32s(g: &Graph, t: usize) -> &[i32] {
    match constant(g, t) {
        Data::I32(v) => v,
        d => panic!("{}: int32 constants expected, got {d:?}", g.tensors[t].name),
    }
}

/// The file's bias from sramfit's folded one: `folded[o] + x_zero_point * sum_k w(o, k)`, the
/// weights of channel `o` given by `weights(o)` (TFLite's weight zero point is 0).
fn unfold(folded: &[i32], x_zero_point: i32, weights: impl Fn(usize) -> Vec<i8>) -> Vec<i32> {
    let sum = |o: usize| weights(o).iter().fold(0i32, |s, &v| s.wrapping_add(v.into()));
    folded.iter().enumerate().map(|(o, &b)| b.wrapping_add(x_zero_point.wrapping_mul(sum(o)))).collect()
}

/// The statics of one layer's constants and the field list that names them.
struct Constants<'a> {
    out: &'a mut String,
    layer: usize,
}

impl Constants<'_> {
    fn array<T: std::fmt::Debug>(&mut self, name: &str, ty: &str, values: &[T]) -> String {
        let ident = format!("L{}_{}", self.layer, name.to_uppercase());
        writeln!(self.out, "static {ident}: [{ty}; {}] = {values:?};", values.len()).unwrap();
        format!("&{ident}")
    }

    /// `weights, bias, multipliers, shifts` fields of a convolution or fully connected layer.
    fn quantized(&mut self, weights: &[i8], bias: &[i32], multipliers: &[i32], shifts: &[i32]) -> String {
        let w = self.array("weights", "i8", weights);
        let b = self.array("bias", "i32", bias);
        let m = self.array("multipliers", "i32", multipliers);
        let s = self.array("shifts", "i32", shifts);
        format!("weights: {w}, bias: {b}, multipliers: {m}, shifts: {s}")
    }
}

fn dims(n: usize, h: usize, w: usize, c: usize) -> String {
    format!("Dims {{ n: {n}, h: {h}, w: {w}, c: {c} }}")
}

fn activation(min: i32, max: i32) -> String {
    format!("Activation {{ min: {min}, max: {max} }}")
}

fn tile(w: usize, h: usize) -> String {
    format!("Tile {{ w: {w}, h: {h} }}")
}

/// Bytes of scratch CMSIS-NN may ask for a convolution with `depth` input values per tap window
/// row set (`in_channels * kernel_h * kernel_w`): its im2col of two columns of `int16` (the
/// largest `*_get_buffer_size` of the DSP paths), rounded up; `src/cmsis.rs` checks every layer's
/// real request against it before running.
fn conv_scratch(depth: usize) -> usize {
    (4 * depth * 2).next_multiple_of(16)
}

/// `NAME.cmsis.rs`: `LAYERS`, `ARENA_BYTES`, `SCRATCH_BYTES` and the layers' constants.
pub fn driver_rs(name: &str, program: &Program) -> String {
    let g = &program.graph;
    // One region per activation root, in order of production.
    let mut regions = vec![None; g.tensors.len()];
    let mut arena = 0usize;
    for n in &g.nodes {
        let t = n.output;
        if n.op.is_view() || g.outputs.contains(&t) {
            continue;
        }
        let len = g.tensors[t].bytes() as usize;
        regions[t] = Some((arena, len));
        arena = (arena + len).next_multiple_of(16);
    }
    let mut statics = String::new();
    let mut layers = Vec::new();
    let mut scratch = 16usize;
    for (i, n) in g.nodes.iter().enumerate() {
        let mut c = Constants { out: &mut statics, layer: i };
        let label = format!("{:?}", n.name);
        let x = |k: usize| buf(g, &regions, n.inputs[k]);
        let y = buf(g, &regions, n.output);
        let layer = match &n.op {
            Op::View(_) => continue,
            Op::QConv(q) if !q.accumulate => {
                let p = &q.params;
                let (w, folded, m, s) =
                    (i8s(g, n.inputs[1]), i32s(g, n.inputs[2]), i32s(g, n.inputs[3]), i32s(g, n.inputs[4]));
                let (oc, taps) = (p.out_channels, p.kernel_h * p.kernel_w);
                let input = dims(p.batch, p.in_h, p.in_w, p.in_channels);
                let output = dims(p.batch, p.out_h, p.out_w, oc);
                let common = format!(
                    "stride: {}, padding: {}, dilation: {}, activation: {}",
                    tile(p.stride_w, p.stride_h),
                    tile(p.pad_left, p.pad_top),
                    tile(p.dilation_w, p.dilation_h),
                    activation(p.act_min, p.act_max)
                );
                let (xo, yo) = (-p.x_zero_point, p.y_zero_point);
                scratch = scratch.max(conv_scratch(p.in_channels / p.groups * taps));
                if q.depthwise {
                    // 1HWO: channel o's taps at stride oc.
                    let bias = unfold(folded, p.x_zero_point, |o| w.iter().skip(o).step_by(oc).copied().collect());
                    let filter = dims(1, p.kernel_h, p.kernel_w, oc);
                    let fields = c.quantized(w, &bias, m, s);
                    format!(
                        "Call::Depthwise(Weighted {{ params: DwConvParams {{ input_offset: {xo}, output_offset: {yo}, ch_mult: {}, {common} }}, input: {input}, filter: {filter}, output: {output}, {fields}, x: {}, y: {y} }})",
                        oc / p.in_channels,
                        x(0)
                    )
                } else {
                    assert_eq!(p.groups, 1, "{}: grouped convolution", n.name);
                    let depth = p.in_channels * taps;
                    let bias = unfold(folded, p.x_zero_point, |o| w[o * depth..(o + 1) * depth].to_vec());
                    let filter = dims(oc, p.kernel_h, p.kernel_w, p.in_channels);
                    let fields = c.quantized(w, &bias, m, s);
                    format!(
                        "Call::Conv(Weighted {{ params: ConvParams {{ input_offset: {xo}, output_offset: {yo}, {common} }}, input: {input}, filter: {filter}, output: {output}, {fields}, x: {}, y: {y} }})",
                        x(0)
                    )
                }
            }
            Op::QFullyConnected(f) => {
                let p = &f.params;
                assert_eq!(p.w_zero_point, 0, "{}: TFLite weights are symmetric", n.name);
                let (w, folded, m, s) =
                    (i8s(g, n.inputs[1]), i32s(g, n.inputs[2]), i32s(g, n.inputs[3]), i32s(g, n.inputs[4]));
                let xz = zero_point(g, n.inputs[0]);
                let k = p.in_features;
                let bias = unfold(folded, xz, |o| w[o * k..(o + 1) * k].to_vec());
                let fields = c.quantized(w, &bias, m, s);
                format!(
                    "Call::FullyConnected(Weighted {{ params: FcParams {{ input_offset: {}, filter_offset: 0, output_offset: {}, activation: {} }}, input: {}, filter: {}, output: {}, {fields}, x: {}, y: {y} }})",
                    -xz,
                    p.y_zero_point,
                    activation(p.act_min, p.act_max),
                    dims(p.batch, 1, 1, k),
                    dims(k, 1, 1, p.out_features),
                    dims(p.batch, 1, 1, p.out_features),
                    x(0)
                )
            }
            Op::QPool(q) if q.kind == PoolKind::Avg && !q.half_even => {
                let p = &q.params;
                assert!(!p.count_include_pad, "{}: TFLite excludes padding from the mean", n.name);
                scratch = scratch.max((4 * p.out_w * p.channels).next_multiple_of(16));
                format!(
                    "Call::AvgPool(AvgPool {{ params: PoolParams {{ stride: {}, padding: {}, activation: {} }}, input: {}, filter: {}, output: {}, x: {}, y: {y} }})",
                    tile(p.stride_w, p.stride_h),
                    tile(p.pad_left, p.pad_top),
                    activation(p.act_min, p.act_max),
                    dims(p.batch, p.in_h, p.in_w, p.channels),
                    dims(1, p.kernel_h, p.kernel_w, 1),
                    dims(p.batch, p.out_h, p.out_w, p.channels),
                    x(0)
                )
            }
            Op::QSoftmax(QSoftmax::S8(p)) => {
                assert_eq!(p.inner, 1, "{}: softmax over the last axis", n.name);
                // CMSIS-NN's output stage is TFLite's int8 one: scale 1/256, zero point -128.
                let out = g.tensors[n.output].quant.clone();
                assert_eq!(
                    out,
                    Some(Quant::PerTensor { scale: 1.0 / 256.0, zero_point: -128 }),
                    "{}: output quantization",
                    n.name
                );
                format!(
                    "Call::Softmax(Softmax {{ rows: {}, row_size: {}, mult: {}, shift: {}, diff_min: {}, x: {}, y: {y} }})",
                    p.outer,
                    p.axis,
                    p.scaling.input_multiplier,
                    p.scaling.input_left_shift,
                    p.scaling.diff_min,
                    x(0)
                )
            }
            Op::QBinary(b) => {
                let QBinaryKind::Add(p) = b.kind else { panic!("{}: only ADD of the binary operators", n.name) };
                let contiguous = |s: &[usize]| s.last() == Some(&1) || s.is_empty();
                assert!(b.a_strides == b.b_strides && contiguous(&b.a_strides), "{}: broadcasting add", n.name);
                let s = p.scaling;
                format!(
                    "Call::Add(Add {{ a_offset: {}, a_mult: {}, a_shift: {}, b_offset: {}, b_mult: {}, b_shift: {}, left_shift: {}, y_offset: {}, y_mult: {}, y_shift: {}, activation: {}, len: {}, a: {}, b: {}, y: {y} }})",
                    -p.a_zero_point,
                    s.a.multiplier,
                    s.a.shift,
                    -p.b_zero_point,
                    s.b.multiplier,
                    s.b.shift,
                    s.left_shift,
                    p.y_zero_point,
                    s.output.multiplier,
                    s.output.shift,
                    activation(p.act_min, p.act_max),
                    g.tensors[n.output].len(),
                    x(0),
                    x(1)
                )
            }
            op => panic!("{name}: node {} ({}): no CMSIS-NN mapping for {op:?}", n.name, n.source_op),
        };
        layers.push(format!("Layer {{ step: {i}, name: {label}, call: {layer} }}"));
    }
    let mut s = format!(
        "// CMSIS-NN layer list of {name}, written by build.rs (build/cmsis_layers.rs) from planner-core's import of the same .tflite file.\n\
         #[allow(unused_imports)] // not every network has every kind of layer\n\
         use sramfit_cmsis_oracle::{{Activation, ConvParams, Dims, DwConvParams, FcParams, PoolParams, Tile}};\n\
         #[allow(unused_imports)]\n\
         use sramfit_cortex_m::cmsis::{{Add, AvgPool, Buf, Call, Layer, Softmax, Weighted}};\n\
         /// Bytes of the activation arena (one region per activation).\npub const ARENA_BYTES: usize = {arena};\n\
         /// Bytes of scratch (an upper bound of every layer's request, checked before each call).\npub const SCRATCH_BYTES: usize = {scratch};\n"
    );
    s += &statics;
    writeln!(
        s,
        "/// The layers, in order.\npub static LAYERS: [Layer; {}] = [\n{}\n];",
        layers.len(),
        layers.join(",\n")
    )
    .unwrap();
    s
}
