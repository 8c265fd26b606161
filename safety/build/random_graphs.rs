//! Random valid models: DAGs of supported operators over float tensors, built directly as ONNX
//! protobuf, compiled through `import_proto` -> `compile_graph` -> `codegen::emit` (checked mode,
//! so a wrong plan on a random graph is reported even when it would not change the outputs), and
//! written as modules that `tests/random_graphs.rs` runs against tract on the same `.onnx` file.
//!
//! `SRAMFIT_RANDOM_GRAPHS` sets how many (default [`DEFAULT_COUNT`]), `SRAMFIT_RANDOM_SEED` where
//! the generator starts (default 1): graph `i` comes from seed `SEED + i`, so any graph reproduces.

use proc_macro2::TokenStream;
use prost::Message;
use quote::{format_ident, quote};
use sramfit_planner_core::{import, pipeline};
use tract_onnx::pb::{self, attribute_proto::AttributeType, tensor_proto::DataType};

use crate::out::Out;

/// Graphs per build by default: enough to cover every operator kind, quick in CI.
const DEFAULT_COUNT: u64 = 16;
/// Most nodes in one graph.
const MAX_NODES: usize = 12;

/// Writes `random_graphs.rs`.
pub fn write(out: &Out) {
    let dir = model_dir(out, "random");
    let mut modules = TokenStream::new();
    let mut rows = Vec::new();
    for seed in seeds("SRAMFIT_RANDOM_GRAPHS", "SRAMFIT_RANDOM_SEED", DEFAULT_COUNT) {
        let model = generate(seed);
        let (file, ops) = save(&dir, &format!("g{seed}"), &model);
        let compiled = import::import_proto(&model, &[]).and_then(|g| pipeline::compile_graph(g, &Default::default()));
        let status = match compiled {
            Ok(program) => {
                let m = format_ident!("g{seed}");
                let items = out.module_items(&m.to_string(), &program, true);
                modules.extend(quote!(pub mod #m { #items }));
                quote!(Ok((#m::run_dyn, #m::INPUT_SHAPES, #m::OUTPUT_SHAPES)))
            }
            Err(e) => {
                let e = e.to_string();
                quote!(Err(#e))
            }
        };
        rows.push(quote!(Graph { seed: #seed, file: #file, ops: #ops, compiled: #status }));
    }
    out.write("random_graphs.rs", quote!(#modules pub static GRAPHS: &[Graph] = &[#(#rows),*];));
}

/// The seeds to generate: `$count_var` graphs (default `default_count`) from seed `$seed_var`
/// (default 1); the build reruns when either variable changes.
pub fn seeds(count_var: &str, seed_var: &str, default_count: u64) -> std::ops::Range<u64> {
    println!("cargo:rerun-if-env-changed={count_var}");
    println!("cargo:rerun-if-env-changed={seed_var}");
    let env = |k: &str, d: u64| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let (count, first) = (env(count_var, default_count), env(seed_var, 1));
    first..first + count
}

/// The folder `name` under the build's output folder, created.
pub fn model_dir(out: &Out, name: &str) -> std::path::PathBuf {
    let dir = out.dir().join(name);
    std::fs::create_dir_all(&dir).expect("create the model folder");
    dir
}

/// Writes `model` to `dir/NAME.onnx`; returns that path and the model's operators, space-separated.
pub fn save(dir: &std::path::Path, name: &str, model: &pb::ModelProto) -> (String, String) {
    let path = dir.join(format!("{name}.onnx"));
    std::fs::write(&path, model.encode_to_vec()).expect("write the model");
    let ops: Vec<&str> = model.graph.as_ref().unwrap().node.iter().map(|n| n.op_type.as_str()).collect();
    (path.display().to_string(), ops.join(" "))
}

/// xorshift64.
pub struct Rng(u64);

impl Rng {
    /// A number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    fn weights(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.below(2001) as f32 / 1000.0 - 1.0).collect()
    }
}

/// A value of the graph being built: its name and shape.
#[derive(Clone)]
pub struct Value {
    /// The ONNX name.
    pub name: String,
    /// Its shape.
    pub shape: Vec<usize>,
}

/// The graph being built.
pub struct Builder {
    /// The random source.
    pub rng: Rng,
    /// The input and every node output so far.
    pub values: Vec<Value>,
    used: Vec<bool>,
    /// The ONNX graph.
    pub graph: pb::GraphProto,
}

impl Builder {
    /// A new random constant of `shape`; its name.
    pub fn constant(&mut self, shape: &[usize]) -> String {
        let data = self.rng.weights(shape.iter().product());
        self.constant_of(shape, data)
    }

    /// A constant of `shape` holding `data`; its name.
    pub fn constant_of(&mut self, shape: &[usize], data: Vec<f32>) -> String {
        let name = format!("w{}", self.graph.initializer.len());
        self.graph.initializer.push(pb::TensorProto {
            name: name.clone(),
            dims: shape.iter().map(|&d| d as i64).collect(),
            data_type: DataType::Float as i32,
            float_data: data,
            ..Default::default()
        });
        name
    }

    /// Appends a node with one output of `shape`.
    pub fn node(&mut self, op: &str, inputs: Vec<String>, attrs: Vec<pb::AttributeProto>, shape: Vec<usize>) {
        let name = format!("t{}", self.values.len());
        for i in &inputs {
            if let Some(v) = self.values.iter().position(|v| &v.name == i) {
                self.used[v] = true;
            }
        }
        self.graph.node.push(pb::NodeProto {
            name: format!("{op}_{}", self.graph.node.len()),
            op_type: op.into(),
            input: inputs,
            output: vec![name.clone()],
            attribute: attrs,
            ..Default::default()
        });
        self.values.push(Value { name, shape });
        self.used.push(false);
    }

    /// A random existing value; recent ones are likelier, so graphs are deep as well as wide.
    pub fn pick(&mut self) -> Value {
        let n = self.values.len();
        let i = if self.rng.chance(60) { n - 1 - self.rng.below(n.min(3)) } else { self.rng.below(n) };
        self.values[i].clone()
    }

    /// A value of the same shape as `v` other than `v`, if any.
    pub fn partner(&mut self, v: &Value) -> Option<Value> {
        let same: Vec<Value> = self.values.iter().filter(|o| o.shape == v.shape && o.name != v.name).cloned().collect();
        (!same.is_empty()).then(|| same[self.rng.below(same.len())].clone())
    }
}

/// An `ints` attribute.
pub fn ints(name: &str, v: &[i64]) -> pb::AttributeProto {
    pb::AttributeProto { name: name.into(), r#type: AttributeType::Ints as i32, ints: v.to_vec(), ..Default::default() }
}

/// An `int` attribute.
pub fn int(name: &str, v: i64) -> pb::AttributeProto {
    pb::AttributeProto { name: name.into(), r#type: AttributeType::Int as i32, i: v, ..Default::default() }
}

fn value_info(v: &Value) -> pb::ValueInfoProto {
    use pb::tensor_shape_proto::{dimension, Dimension};
    let dim =
        v.shape.iter().map(|&d| Dimension { value: Some(dimension::Value::DimValue(d as i64)), ..Default::default() });
    pb::ValueInfoProto {
        name: v.name.clone(),
        r#type: Some(pb::TypeProto {
            value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor {
                elem_type: DataType::Float as i32,
                shape: Some(pb::TensorShapeProto { dim: dim.collect() }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// One random model: an NCHW input, then up to [`MAX_NODES`] nodes each reading earlier values;
/// every value nothing reads is an output, and sometimes an intermediate one is too.
fn generate(seed: u64) -> pb::ModelProto {
    let mut b = Builder::start(seed, "random");
    let nodes = 2 + b.rng.below(MAX_NODES - 1);
    while b.graph.node.len() < nodes {
        let v = b.pick();
        add_node(&mut b, v);
    }
    b.finish(13)
}

impl Builder {
    /// A graph named `{kind}_{seed}` with one NCHW input of random shape.
    pub fn start(seed: u64, kind: &str) -> Builder {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let input = Value { name: "x".into(), shape: vec![1, 1 + rng.below(4), 2 + rng.below(7), 2 + rng.below(7)] };
        let mut b = Builder { rng, values: vec![input.clone()], used: vec![false], graph: pb::GraphProto::default() };
        b.graph.name = format!("{kind}_{seed}");
        b.graph.input.push(value_info(&input));
        b
    }

    /// The model at `opset`: every value nothing reads is an output, and sometimes an
    /// intermediate one is too.
    pub fn finish(mut self, opset: i64) -> pb::ModelProto {
        let mut outputs: Vec<usize> = (1..self.values.len()).filter(|&i| !self.used[i]).collect();
        if self.rng.chance(30) {
            outputs.insert(0, 1 + self.rng.below(self.values.len() - 1));
            outputs.dedup();
        }
        self.graph.output = outputs.iter().map(|&i| value_info(&self.values[i])).collect();
        pb::ModelProto {
            ir_version: 8,
            opset_import: vec![pb::OperatorSetIdProto { domain: String::new(), version: opset }],
            producer_name: "sramfit-safety random_graphs".into(),
            graph: Some(self.graph),
            ..Default::default()
        }
    }
}

/// Appends one random node reading `v` (and maybe another value or a constant).
pub fn add_node(b: &mut Builder, v: Value) {
    let s = v.shape.clone();
    let four_d = s.len() == 4;
    match b.rng.below(9) {
        0 => {
            let op = ["Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Exp"][b.rng.below(6)];
            b.node(op, vec![v.name], vec![], s);
        }
        1 | 2 => {
            let op = ["Add", "Mul", "Sub", "Max", "Min"][b.rng.below(5)];
            let other = match b.partner(&v) {
                Some(o) if b.rng.chance(70) => o.name,
                _ => {
                    // A broadcast constant: per channel for NCHW, else a scalar-like one.
                    let shape: Vec<usize> = if four_d { vec![1, s[1], 1, 1] } else { vec![1] };
                    b.constant(&shape)
                }
            };
            let inputs = if b.rng.chance(50) { vec![v.name, other] } else { vec![other, v.name] };
            b.node(op, inputs, vec![], s);
        }
        3 | 4 if four_d => {
            let (c_out, k) = (1 + b.rng.below(4), [1, 3][b.rng.below(2)]);
            let w = b.constant(&[c_out, s[1], k, k]);
            let bias = b.constant(&[c_out]);
            let pad = (k / 2) as i64;
            let attrs = vec![ints("kernel_shape", &[k as i64; 2]), ints("pads", &[pad; 4])];
            b.node("Conv", vec![v.name, w, bias], attrs, vec![1, c_out, s[2], s[3]]);
        }
        5 if four_d && s[2] >= 2 && s[3] >= 2 => {
            let op = ["MaxPool", "AveragePool"][b.rng.below(2)];
            let attrs = vec![ints("kernel_shape", &[2, 2]), ints("strides", &[2, 2])];
            b.node(op, vec![v.name], attrs, vec![1, s[1], s[2] / 2, s[3] / 2]);
        }
        6 if four_d => {
            let same_hw: Vec<Value> =
                b.values.iter().filter(|o| o.shape.len() == 4 && o.shape[2..] == s[2..]).cloned().collect();
            let o = same_hw[b.rng.below(same_hw.len())].clone();
            let shape = vec![1, s[1] + o.shape[1], s[2], s[3]];
            b.node("Concat", vec![v.name, o.name], vec![int("axis", 1)], shape);
        }
        7 => {
            let axis = b.rng.below(s.len());
            b.node("Softmax", vec![v.name], vec![int("axis", axis as i64)], s);
        }
        8 if four_d => {
            let perm = [[0, 1, 3, 2], [0, 2, 3, 1], [0, 3, 1, 2]][b.rng.below(3)];
            let shape = perm.iter().map(|&p| s[p]).collect();
            b.node("Transpose", vec![v.name], vec![ints("perm", &perm.map(|p| p as i64))], shape);
        }
        _ => {
            // Flatten to 2-D: later nodes see a non-NCHW value.
            let shape = vec![1, s[1..].iter().product()];
            b.node("Flatten", vec![v.name], vec![int("axis", 1)], shape);
        }
    }
}
