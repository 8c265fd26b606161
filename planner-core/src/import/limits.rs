//! Build-time resource limits: what a model file may make the compiler allocate, checked before
//! anything is allocated.
//!
//! tract evaluates a node whose inputs are all constant while it analyses the model (and
//! `fold.rs` evaluates what tract leaves), so a 207-byte file whose `ConstantOfShape` asks for
//! `[1, 4096, 1024, 1024]` floats would make the compiler allocate 16 GiB. [`check_proto`] reads
//! the protobuf first, before tract sees it: it counts the nodes (subgraphs included), and follows
//! shapes and small integer values (shape vectors) through the graph with a small shape
//! inference of its own, so that the output of every constant node it can size (`ConstantOfShape`,
//! `Expand`, `Tile`, `Range`, `Resize` / `Upsample`, `Reshape`, `Pad`, `Concat`, `MatMul`, `Gemm`,
//! broadcasting arithmetic, `Gather`, `Slice`, `Transpose`, shape arithmetic) is compared with the
//! limits. Subgraphs (`Scan`, `Loop`, `If` bodies) are checked the same way. [`check_typed`]
//! then checks every shape tract inferred (before anything is decluttered or folded), and
//! [`FoldBudget`] charges every constant `fold.rs` materialises before evaluating it.
//!
//! The shape inference is deliberately partial: an operator it does not know gets no shape and
//! nothing is checked for it (nor, if its output is constant, downstream of it) until
//! [`check_typed`] sees tract's shapes; every operator that can make a small constant large is
//! covered.

use std::collections::HashMap;

use tract_onnx::pb::{self, AttributeProto, GraphProto, NodeProto, TensorProto};

use crate::error::CompileError;

/// One limit as the table below declares it: what every front end derives its option from
/// (`limits: { KEY: VALUE }` in `model!`, `Model::limit("KEY", VALUE)`, `--limit KEY=VALUE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitKey {
    /// The key: the [`Limits`] field.
    pub key: &'static str,
    /// What it bounds.
    pub doc: &'static str,
    /// Its default.
    pub default: u64,
    /// Whether it counts bytes (written with a unit, `64 MiB`) or things (`100_000`).
    pub bytes: bool,
}

/// Declares the limits once: the [`Limits`] struct, its defaults and [`Limits::KEYS`].
macro_rules! limits {
    ($( $(#[doc = $doc:literal])* $key:ident: $default:expr, bytes $bytes:literal; )*) => {
        /// Build-time resource limits (see the module docs). The defaults are far above what any
        /// microcontroller model needs; a model that exceeds one fails to compile with an error
        /// naming the node, the quantity and the limit, which the user can raise.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct Limits {
            $( $(#[doc = $doc])* pub $key: u64, )*
        }

        impl Default for Limits {
            fn default() -> Self {
                Limits { $( $key: $default, )* }
            }
        }

        impl Limits {
            /// Every limit with its key, doc, default and kind.
            pub const KEYS: &'static [LimitKey] = &[
                $( LimitKey { key: stringify!($key), doc: concat!($($doc, "\n",)*), default: $default, bytes: $bytes }, )*
            ];

            /// Sets the limit `key`; `Err` lists the keys when there is no such limit.
            pub fn set(&mut self, key: &str, value: u64) -> Result<(), String> {
                match key {
                    $( stringify!($key) => self.$key = value, )*
                    _ => {
                        let keys: Vec<String> = Self::KEYS.iter().map(|k| format!("`{}`", k.key)).collect();
                        return Err(format!("unknown limit `{key}`; the limits are {}", keys.join(", ")));
                    }
                }
                Ok(())
            }

            /// The limit `key`'s [`LimitKey`], if there is one.
            pub fn key(key: &str) -> Option<&'static LimitKey> {
                Self::KEYS.iter().find(|k| k.key == key)
            }
        }
    };
}

limits! {
    /// Bytes of all the constants materialised while folding constant subgraphs at build time.
    fold_bytes: 1 << 30, bytes true;
    /// Bytes of any one constant materialised while folding.
    fold_tensor_bytes: 1 << 29, bytes true;
    /// Nodes of the ONNX graph, subgraphs included.
    nodes: 100_000, bytes false;
    /// Elements of any tensor shape: a weight, an input, or an intermediate tensor.
    tensor_elements: 1 << 28, bytes false;
}

/// Which limit an error is about, with what exceeded it.
fn exceeded(key: &'static str, node: &str, op: &str, what: String, amount: u64, limit: u64) -> CompileError {
    let bytes = Limits::key(key).is_some_and(|k| k.bytes);
    CompileError::Limit { key, node: node.to_owned(), op: op.to_owned(), what, amount, limit, bytes }
}

/// Counts every node of `graph`, subgraphs included.
fn count_nodes(graph: &GraphProto) -> u64 {
    graph.node.iter().map(|n| 1 + subgraphs(n).map(count_nodes).sum::<u64>()).sum()
}

/// The graphs a node's attributes hold (`Loop` / `Scan` bodies, `If` branches).
fn subgraphs(n: &NodeProto) -> impl Iterator<Item = &GraphProto> {
    n.attribute.iter().flat_map(|a| a.g.iter().chain(&a.graphs))
}

/// Checks the protobuf against `limits` before tract builds anything from it: the node count,
/// the declared size of every initializer and input, and the output of every node whose shape
/// follows from constants. `inputs` are the resolved shapes of the graph inputs (declared order).
pub fn check_proto(
    proto: &pb::ModelProto,
    inputs: &[(String, Vec<usize>)],
    limits: &Limits,
) -> Result<(), CompileError> {
    let Some(graph) = &proto.graph else { return Ok(()) };
    let nodes = count_nodes(graph);
    if nodes > limits.nodes {
        let what = format!("{nodes} nodes (subgraphs included)");
        return Err(exceeded("nodes", "", "", what, nodes, limits.nodes));
    }
    let mut scope = Scope { facts: HashMap::new(), limits, budget: FoldBudget::new(limits) };
    for (name, dims) in inputs {
        let shape: Vec<u64> = dims.iter().map(|&d| d as u64).collect();
        scope.activation(name, "graph input", &shape)?;
        scope.facts.insert(name.clone(), Fact { shape: Some(shape), values: None, constant: false, elem: 4 });
    }
    scope.graph(graph)
}

/// What the check knows of one tensor.
#[derive(Clone, Debug, Default)]
struct Fact {
    /// Its shape, when it follows from what is known.
    shape: Option<Vec<u64>>,
    /// Its values, for small tensors (shape vectors, scalars) whose values are known.
    values: Option<Vec<f64>>,
    /// Whether tract knows it as a constant (and so evaluates the nodes it feeds alone).
    constant: bool,
    /// Bytes per element.
    elem: u64,
}

/// Values are followed for tensors of at most this many elements (shape vectors and scalars).
const MAX_VALUES: u64 = 64;

/// The facts of one graph (a subgraph sees its parent's: outer-scope names are visible in it).
struct Scope<'l> {
    facts: HashMap<String, Fact>,
    limits: &'l Limits,
    /// The constants tract will materialise, charged as they are met.
    budget: FoldBudget,
}

impl Scope<'_> {
    fn graph(&mut self, graph: &GraphProto) -> Result<(), CompileError> {
        for t in &graph.initializer {
            let fact = tensor_fact(t);
            let shape = fact.shape.clone().unwrap_or_default();
            self.activation(&t.name, "initializer", &shape)?;
            self.facts.insert(t.name.clone(), fact);
        }
        for n in &graph.node {
            self.node(n)?;
        }
        Ok(())
    }

    fn node(&mut self, n: &NodeProto) -> Result<(), CompileError> {
        let inputs: Vec<Option<&Fact>> =
            n.input.iter().map(|i| if i.is_empty() { None } else { self.facts.get(i) }).collect();
        let present: Vec<&Fact> = inputs.iter().flatten().copied().collect();
        let all_given = n.input.iter().filter(|i| !i.is_empty()).count() == present.len();
        // tract knows a constant, and the shape of a tensor whose shape is known, as constants.
        let shape_of_known =
            matches!(n.op_type.as_str(), "Shape" | "Size") && present.first().is_some_and(|f| f.shape.is_some());
        let constant = n.op_type == "Constant"
            || shape_of_known
            || (!present.is_empty() && all_given && present.iter().all(|f| f.constant));
        let mut fact = infer(n, &inputs).unwrap_or_default();
        fact.constant = constant;
        if fact.elem == 0 {
            fact.elem = present.first().map_or(4, |f| f.elem.max(1));
        }
        let name = if n.name.is_empty() { n.output.first().cloned().unwrap_or_default() } else { n.name.clone() };
        if let Some(shape) = &fact.shape {
            match constant && n.op_type != "Constant" {
                true => self.budget.charge(&name, &n.op_type, shape, elements(shape).saturating_mul(fact.elem))?,
                false => self.activation(&name, &n.op_type, shape)?,
            }
        }
        for g in subgraphs(n) {
            // A body sees the outer names; what it defines stays inside.
            let mut inner = Scope { facts: self.facts.clone(), limits: self.limits, budget: self.budget.clone() };
            inner.graph(g)?;
            self.budget = inner.budget;
        }
        if let Some(first) = n.output.first() {
            self.facts.insert(first.clone(), fact);
        }
        Ok(())
    }

    /// Any other tensor of `shape`: a graph input, a weight, an intermediate result.
    fn activation(&self, node: &str, op: &str, shape: &[u64]) -> Result<(), CompileError> {
        check_elements(node, op, shape, self.limits)
    }
}

/// Elements of a shape, saturating.
fn elements(shape: &[u64]) -> u64 {
    shape.iter().fold(1u64, |a, &d| a.saturating_mul(d))
}

/// `[1, 4096, 1024, 1024]`.
fn render(shape: &[u64]) -> String {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    format!("[{}]", dims.join(", "))
}

/// Bytes per element of an ONNX data type (4 when unknown).
fn elem_bytes(data_type: i32) -> u64 {
    match data_type {
        2 | 3 | 9 => 1,
        4 | 5 | 10 | 16 => 2,
        7 | 11 | 13 | 14 => 8,
        15 => 16,
        _ => 4,
    }
}

/// What a tensor literal (initializer, `Constant` value) declares.
fn tensor_fact(t: &TensorProto) -> Fact {
    let shape: Option<Vec<u64>> = t.dims.iter().map(|&d| u64::try_from(d).ok()).collect();
    let n = shape.as_deref().map_or(u64::MAX, elements);
    let values = (n <= MAX_VALUES).then(|| tensor_values(t, n as usize)).flatten();
    Fact { shape, values, constant: true, elem: elem_bytes(t.data_type) }
}

/// The values of a small tensor literal, as `f64`.
fn tensor_values(t: &TensorProto, n: usize) -> Option<Vec<f64>> {
    let from_raw = |size: usize, f: &dyn Fn(&[u8]) -> f64| {
        (t.raw_data.len() == n * size).then(|| t.raw_data.chunks(size).map(f).collect::<Vec<f64>>())
    };
    let v: Vec<f64> = match t.data_type {
        7 if !t.int64_data.is_empty() => t.int64_data.iter().map(|&x| x as f64).collect(),
        7 => from_raw(8, &|b| i64::from_le_bytes(b.try_into().unwrap_or_default()) as f64)?,
        6 if !t.int32_data.is_empty() => t.int32_data.iter().map(|&x| x as f64).collect(),
        6 => from_raw(4, &|b| i32::from_le_bytes(b.try_into().unwrap_or_default()) as f64)?,
        1 if !t.float_data.is_empty() => t.float_data.iter().map(|&x| x as f64).collect(),
        1 => from_raw(4, &|b| f32::from_le_bytes(b.try_into().unwrap_or_default()) as f64)?,
        11 if !t.double_data.is_empty() => t.double_data.clone(),
        11 => from_raw(8, &|b| f64::from_le_bytes(b.try_into().unwrap_or_default()))?,
        _ => return None,
    };
    (v.len() == n).then_some(v)
}

fn attr<'a>(n: &'a NodeProto, name: &str) -> Option<&'a AttributeProto> {
    n.attribute.iter().find(|a| a.name == name)
}

fn attr_i(n: &NodeProto, name: &str, default: i64) -> i64 {
    attr(n, name).map_or(default, |a| a.i)
}

/// A fact with a known shape (and no values).
fn shaped(shape: Vec<u64>, elem: u64) -> Fact {
    Fact { shape: Some(shape), elem, ..Fact::default() }
}

/// A fact with known values (a vector, or a scalar when `shape` is empty).
fn valued(values: Vec<f64>, shape: Vec<u64>, elem: u64) -> Fact {
    Fact { shape: Some(shape), values: Some(values), elem, ..Fact::default() }
}

/// Values as dimensions (`None` if any is negative or not an integer).
fn dims(values: &[f64]) -> Option<Vec<u64>> {
    values.iter().map(|&v| (v >= 0.0 && v.fract() == 0.0).then_some(v as u64)).collect()
}

/// NumPy broadcasting of shapes.
fn broadcast(shapes: &[&[u64]]) -> Option<Vec<u64>> {
    let rank = shapes.iter().map(|s| s.len()).max()?;
    (0..rank)
        .map(|i| {
            let mut out = 1u64;
            for s in shapes {
                let d = match (i + s.len()).checked_sub(rank) {
                    Some(k) => s[k],
                    None => 1,
                };
                match (out, d) {
                    (_, 1) => {}
                    (1, d) => out = d,
                    (a, d) if a == d => {}
                    _ => return None,
                }
            }
            Some(out)
        })
        .collect()
}

/// An axis attribute (possibly negative) resolved against `rank`.
fn axis(a: i64, rank: usize) -> Option<usize> {
    let a = if a < 0 { a + rank as i64 } else { a };
    (0..rank as i64).contains(&a).then_some(a as usize)
}

/// Elementwise arithmetic on small known values, with scalar broadcasting.
fn arithmetic(op: &str, a: &[f64], b: &[f64]) -> Option<Vec<f64>> {
    let f = |x: f64, y: f64| match op {
        "Add" => Some(x + y),
        "Sub" => Some(x - y),
        "Mul" => Some(x * y),
        "Div" if y != 0.0 => Some(x / y),
        "Max" => Some(x.max(y)),
        "Min" => Some(x.min(y)),
        _ => None,
    };
    match (a.len(), b.len()) {
        (n, m) if n == m => a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect(),
        (1, _) => b.iter().map(|&y| f(a[0], y)).collect(),
        (_, 1) => a.iter().map(|&x| f(x, b[0])).collect(),
        _ => None,
    }
}

/// The output (first one) of node `n` as far as it follows from its inputs' facts.
fn infer(n: &NodeProto, inputs: &[Option<&Fact>]) -> Option<Fact> {
    let input = |i: usize| inputs.get(i).copied().flatten();
    let shape = |i: usize| input(i).and_then(|f| f.shape.clone());
    let values = |i: usize| input(i).and_then(|f| f.values.clone());
    let elem = input(0).map_or(4, |f| f.elem);
    Some(match n.op_type.as_str() {
        "Constant" => match attr(n, "value").and_then(|a| a.t.as_ref()) {
            Some(t) => tensor_fact(t),
            None => {
                let a = attr(n, "value_ints").or(attr(n, "value_int"))?;
                match a.ints.is_empty() {
                    true => valued(vec![a.i as f64], vec![], 8),
                    false => valued(a.ints.iter().map(|&v| v as f64).collect(), vec![a.ints.len() as u64], 8),
                }
            }
        },
        "Identity"
        | "Dropout"
        | "Relu"
        | "Sigmoid"
        | "Tanh"
        | "Exp"
        | "Log"
        | "Neg"
        | "Abs"
        | "Sqrt"
        | "Floor"
        | "Ceil"
        | "Round"
        | "Sin"
        | "Cos"
        | "Erf"
        | "Not"
        | "Softmax"
        | "LogSoftmax"
        | "Clip"
        | "LeakyRelu"
        | "HardSwish"
        | "HardSigmoid"
        | "Elu"
        | "Selu"
        | "Softplus"
        | "Reciprocal"
        | "Sign"
        | "BatchNormalization"
        | "LayerNormalization"
        | "InstanceNormalization"
        | "LRN" => {
            let mut f = input(0)?.clone();
            if n.op_type != "Identity" {
                f.values = None;
            }
            f
        }
        "Cast" => {
            let to = attr_i(n, "to", 1) as i32;
            let mut f = input(0)?.clone();
            f.elem = elem_bytes(to);
            if !matches!(to, 1 | 10 | 11 | 16) {
                f.values = f.values.map(|v| v.iter().map(|x| x.trunc()).collect());
            }
            f
        }
        "Shape" => {
            let s = shape(0)?;
            let r = s.len() as i64;
            let clamp = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
            let (start, end) = (clamp(attr_i(n, "start", 0)), clamp(attr_i(n, "end", r)));
            let v: Vec<f64> = s.get(start..end.max(start))?.iter().map(|&d| d as f64).collect();
            let len = v.len() as u64;
            valued(v, vec![len], 8)
        }
        "Size" => valued(vec![elements(&shape(0)?) as f64], vec![], 8),
        "Add" | "Sub" | "Mul" | "Div" | "Pow" | "Max" | "Min" | "Mod" | "And" | "Or" | "Xor" | "Equal" | "Less"
        | "Greater" | "LessOrEqual" | "GreaterOrEqual" | "PRelu" | "Where" | "Sum" | "Mean" => {
            let shapes: Vec<Vec<u64>> = (0..n.input.len()).map(shape).collect::<Option<_>>()?;
            let refs: Vec<&[u64]> = shapes.iter().map(Vec::as_slice).collect();
            let out = broadcast(&refs)?;
            let vals = match (values(0), values(1), n.input.len()) {
                (Some(a), Some(b), 2) => arithmetic(&n.op_type, &a, &b),
                _ => None,
            };
            let elem = if matches!(n.op_type.as_str(), "Where") { input(1).map_or(4, |f| f.elem) } else { elem };
            Fact { shape: Some(out), values: vals, elem, ..Fact::default() }
        }
        "ConstantOfShape" => {
            let s = dims(&values(0)?)?;
            let elem = attr(n, "value").and_then(|a| a.t.as_ref()).map_or(4, |t| elem_bytes(t.data_type));
            shaped(s, elem)
        }
        "Expand" => shaped(broadcast(&[&shape(0)?, &dims(&values(1)?)?])?, elem),
        "Tile" => {
            let (s, r) = (shape(0)?, dims(&values(1)?)?);
            (s.len() == r.len()).then(|| shaped(s.iter().zip(&r).map(|(a, b)| a.saturating_mul(*b)).collect(), elem))?
        }
        "Range" => {
            let scalar = |i: usize| values(i).and_then(|v| v.first().copied());
            let (start, limit, delta) = (scalar(0)?, scalar(1)?, scalar(2)?);
            let count = if delta == 0.0 { 0.0 } else { ((limit - start) / delta).ceil().max(0.0) };
            let count = if count.is_finite() && count < u64::MAX as f64 { count as u64 } else { u64::MAX };
            match count <= MAX_VALUES {
                true => valued((0..count).map(|i| start + i as f64 * delta).collect(), vec![count], elem),
                false => shaped(vec![count], elem),
            }
        }
        "Resize" | "Upsample" => {
            let s = shape(0)?;
            let (scales, sizes) = match (n.op_type.as_str(), n.input.len()) {
                ("Upsample", _) | (_, 2) => (
                    values(1).or_else(|| attr(n, "scales").map(|a| a.floats.iter().map(|&f| f as f64).collect())),
                    None,
                ),
                _ => (values(2).filter(|v| !v.is_empty()), values(3).filter(|v| !v.is_empty())),
            };
            match (sizes, scales) {
                (Some(sizes), _) if sizes.len() == s.len() => shaped(dims(&sizes)?, elem),
                (_, Some(scales)) if scales.len() == s.len() => shaped(
                    s.iter()
                        .zip(&scales)
                        .map(|(&d, &k)| (d as f64 * k).floor().clamp(0.0, u64::MAX as f64) as u64)
                        .collect(),
                    elem,
                ),
                _ => return None,
            }
        }
        "Reshape" => {
            let target = values(1)?;
            let input_shape = shape(0);
            let known: Vec<u64> = target
                .iter()
                .enumerate()
                .map(|(i, &v)| match v {
                    0.0 => input_shape.as_ref().and_then(|s| s.get(i).copied()).unwrap_or(1),
                    v if v < 0.0 => 1,
                    v => v as u64,
                })
                .collect();
            let infer_at = target.iter().position(|&v| v < 0.0);
            let mut out = known.clone();
            if let (Some(k), Some(s)) = (infer_at, &input_shape) {
                let rest = elements(&known).max(1);
                out[k] = elements(s) / rest;
            }
            let vals = (target.len() as u64 <= MAX_VALUES).then(|| values(0)).flatten();
            Fact { shape: Some(out), values: vals, elem, ..Fact::default() }
        }
        "Unsqueeze" | "Squeeze" => {
            let s = shape(0)?;
            let axes: Vec<i64> = match attr(n, "axes") {
                Some(a) => a.ints.clone(),
                None => values(1).map(|v| v.iter().map(|&x| x as i64).collect()).unwrap_or_default(),
            };
            let out: Vec<u64> = if n.op_type == "Unsqueeze" {
                let rank = s.len() + axes.len();
                let mut at: Vec<usize> = axes.iter().map(|&a| axis(a, rank)).collect::<Option<_>>()?;
                at.sort_unstable();
                let mut rest = s.iter();
                (0..rank)
                    .map(|i| if at.contains(&i) { Some(1) } else { rest.next().copied() })
                    .collect::<Option<_>>()?
            } else if axes.is_empty() {
                s.iter().copied().filter(|&d| d != 1).collect()
            } else {
                let at: Vec<usize> = axes.iter().map(|&a| axis(a, s.len())).collect::<Option<_>>()?;
                s.iter().enumerate().filter(|(i, _)| !at.contains(i)).map(|(_, &d)| d).collect()
            };
            Fact { shape: Some(out), values: values(0), elem, ..Fact::default() }
        }
        "Flatten" => {
            let s = shape(0)?;
            let k = axis(attr_i(n, "axis", 1), s.len() + 1)?;
            shaped(vec![elements(&s[..k]), elements(&s[k..])], elem)
        }
        "Concat" => {
            let shapes: Vec<Vec<u64>> = (0..n.input.len()).map(shape).collect::<Option<_>>()?;
            let first = shapes.first()?.clone();
            let k = axis(attr_i(n, "axis", 0), first.len())?;
            let mut out = first;
            out[k] = shapes.iter().map(|s| s.get(k).copied().unwrap_or(0)).fold(0u64, u64::saturating_add);
            let vals: Option<Vec<f64>> = match out.len() {
                1 => (0..n.input.len()).map(values).collect::<Option<Vec<_>>>().map(|v| v.concat()),
                _ => None,
            };
            Fact { shape: Some(out), values: vals, elem, ..Fact::default() }
        }
        "Gather" => {
            let (s, idx) = (shape(0)?, shape(1)?);
            let k = axis(attr_i(n, "axis", 0), s.len())?;
            let out: Vec<u64> = s[..k].iter().chain(&idx).chain(&s[k + 1..]).copied().collect();
            let vals = match (values(0), values(1), s.len()) {
                (Some(v), Some(i), 1) => i
                    .iter()
                    .map(|&j| {
                        let j = if j < 0.0 { j + v.len() as f64 } else { j };
                        v.get(j as usize).copied()
                    })
                    .collect(),
                _ => None,
            };
            Fact { shape: Some(out), values: vals, elem, ..Fact::default() }
        }
        "Slice" => {
            let s = shape(0)?;
            let (starts, ends) = (values(1)?, values(2)?);
            let axes: Vec<f64> = values(3).unwrap_or_else(|| (0..starts.len()).map(|i| i as f64).collect());
            let steps: Vec<f64> = values(4).unwrap_or_else(|| vec![1.0; starts.len()]);
            let mut out = s.clone();
            let mut range = None;
            for (((&b, &e), &a), &st) in starts.iter().zip(&ends).zip(&axes).zip(&steps) {
                let k = axis(a as i64, s.len())?;
                let d = s[k] as f64;
                let clamp = |v: f64| (if v < 0.0 { v + d } else { v }).clamp(0.0, d);
                if st != 1.0 {
                    return None;
                }
                let (b, e) = (clamp(b), clamp(e));
                out[k] = (e - b).max(0.0) as u64;
                range = Some((b as usize, e.max(b) as usize));
            }
            let vals = match (values(0), range, s.len()) {
                (Some(v), Some((b, e)), 1) => v.get(b..e).map(<[f64]>::to_vec),
                _ => None,
            };
            Fact { shape: Some(out), values: vals, elem, ..Fact::default() }
        }
        "Transpose" => {
            let s = shape(0)?;
            let perm: Vec<usize> = match attr(n, "perm") {
                Some(a) => a.ints.iter().map(|&p| axis(p, s.len())).collect::<Option<_>>()?,
                None => (0..s.len()).rev().collect(),
            };
            shaped(perm.iter().map(|&p| s.get(p).copied()).collect::<Option<_>>()?, elem)
        }
        "Pad" => {
            let s = shape(0)?;
            let pads: Vec<f64> =
                values(1).or_else(|| attr(n, "pads").map(|a| a.ints.iter().map(|&p| p as f64).collect()))?;
            (pads.len() == 2 * s.len()).then(|| {
                let r = s.len();
                let out = (0..r).map(|i| (s[i] as f64 + pads[i] + pads[i + r]).max(0.0) as u64).collect();
                shaped(out, elem)
            })?
        }
        "MatMul" => {
            let (a, b) = (shape(0)?, shape(1)?);
            let (a, b) = (if a.len() == 1 { vec![1, a[0]] } else { a }, if b.len() == 1 { vec![b[0], 1] } else { b });
            if a.len() < 2 || b.len() < 2 {
                return None;
            }
            let batch = broadcast(&[&a[..a.len() - 2], &b[..b.len() - 2]])?;
            shaped(batch.into_iter().chain([a[a.len() - 2], b[b.len() - 1]]).collect(), elem)
        }
        "Gemm" => {
            let (a, b) = (shape(0)?, shape(1)?);
            let m = if attr_i(n, "transA", 0) == 0 { a.first()? } else { a.get(1)? };
            let k = if attr_i(n, "transB", 0) == 0 { b.get(1)? } else { b.first()? };
            shaped(vec![*m, *k], elem)
        }
        _ => return None,
    })
}

/// Checks every output shape tract inferred (the typed model, before it is decluttered or folded)
/// against [`Limits::tensor_elements`].
pub fn check_typed(model: &tract_onnx::prelude::TypedModel, limits: &Limits) -> Result<(), CompileError> {
    for node in model.nodes() {
        for o in &node.outputs {
            let Some(shape) = o.fact.shape.as_concrete() else { continue };
            let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
            check_elements(&node.name, &node.op.name(), &shape, limits)?;
        }
    }
    Ok(())
}

/// A tensor of `shape` made by `node` against [`Limits::tensor_elements`]; a count past `u64`
/// is reported as such (no limit can allow it).
fn check_elements(node: &str, op: &str, shape: &[u64], limits: &Limits) -> Result<(), CompileError> {
    let n = elements(shape);
    if n <= limits.tensor_elements {
        return Ok(());
    }
    let what = match n {
        u64::MAX => format!("a tensor of more than 2^64 elements {}", render(shape)),
        _ => format!("a tensor of {n} elements {}", render(shape)),
    };
    Err(exceeded("tensor_elements", node, op, what, n, limits.tensor_elements))
}

/// What folding may still materialise: every constant is charged before it is evaluated (by
/// `fold.rs`, and by [`check_proto`] for what tract evaluates while analysing).
#[derive(Clone, Debug)]
pub struct FoldBudget {
    limits: Limits,
    folded: u64,
}

impl FoldBudget {
    /// A budget with nothing folded yet.
    pub fn new(limits: &Limits) -> FoldBudget {
        FoldBudget { limits: *limits, folded: 0 }
    }

    /// Charges a constant of `bytes` that node `node` (operator `op`) is about to produce.
    pub fn charge(&mut self, node: &str, op: &str, shape: &[u64], bytes: u64) -> Result<(), CompileError> {
        let l = &self.limits;
        if bytes > l.fold_tensor_bytes {
            let what = format!("a constant of {bytes} bytes {}", render(shape));
            return Err(exceeded("fold_tensor_bytes", node, op, what, bytes, l.fold_tensor_bytes));
        }
        self.folded = self.folded.saturating_add(bytes);
        if self.folded > l.fold_bytes {
            let what = format!("constants of {} bytes in all, up to its output {}", self.folded, render(shape));
            return Err(exceeded("fold_bytes", node, op, what, self.folded, l.fold_bytes));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int64s(name: &str, v: &[i64]) -> TensorProto {
        TensorProto {
            name: name.into(),
            dims: vec![v.len() as i64],
            data_type: 7,
            int64_data: v.to_vec(),
            ..Default::default()
        }
    }

    fn node(op: &str, inputs: &[&str], output: &str) -> NodeProto {
        NodeProto {
            op_type: op.into(),
            name: output.into(),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec![output.into()],
            ..Default::default()
        }
    }

    fn model(initializers: Vec<TensorProto>, nodes: Vec<NodeProto>) -> pb::ModelProto {
        pb::ModelProto {
            graph: Some(GraphProto { initializer: initializers, node: nodes, ..Default::default() }),
            ..Default::default()
        }
    }

    fn check(m: &pb::ModelProto) -> Result<(), CompileError> {
        check_proto(m, &[("x".into(), vec![1])], &Limits::default())
    }

    fn key(r: Result<(), CompileError>) -> (&'static str, String, u64) {
        match r {
            Err(CompileError::Limit { key, node, amount, .. }) => (key, node, amount),
            other => panic!("expected a limit error, got {other:?}"),
        }
    }

    #[test]
    fn constant_of_shape_is_sized_from_its_constant_shape() {
        let m = model(vec![int64s("s", &[1, 4096, 1024, 1024])], vec![node("ConstantOfShape", &["s"], "big")]);
        assert_eq!(key(check(&m)), ("fold_tensor_bytes", "big".into(), 4 << 32));
        let small = model(vec![int64s("s", &[1, 16])], vec![node("ConstantOfShape", &["s"], "c")]);
        assert_eq!(check(&small), Ok(()));
    }

    #[test]
    fn expand_tile_range_follow_shapes_through_constants() {
        let c = node("ConstantOfShape", &["one"], "c");
        let expand = model(
            vec![int64s("one", &[1]), int64s("s", &[1 << 20, 1 << 20])],
            vec![c.clone(), node("Expand", &["c", "s"], "e")],
        );
        assert_eq!(key(check(&expand)), ("fold_tensor_bytes", "e".into(), 4 << 40));
        let tile = model(
            vec![int64s("one", &[1024]), int64s("r", &[1 << 30])],
            vec![c.clone(), node("Tile", &["c", "r"], "t")],
        );
        assert_eq!(key(check(&tile)).0, "fold_tensor_bytes");
        let range = model(
            vec![int64s("a", &[0]), int64s("b", &[1 << 40]), int64s("d", &[1])],
            vec![node("Range", &["a", "b", "d"], "r")],
        );
        assert_eq!(key(check(&range)), ("fold_tensor_bytes", "r".into(), 8 << 40));
    }

    #[test]
    fn shape_arithmetic_is_followed() {
        // Shape(x) * 2^20, concatenated with itself: a [2^20, 2^20] splat.
        let m = model(
            vec![int64s("k", &[1 << 20])],
            vec![
                node("Shape", &["x"], "s"),
                node("Mul", &["s", "k"], "big"),
                node("Concat", &["big", "big"], "dims"),
                node("ConstantOfShape", &["dims"], "splat"),
            ],
        );
        let mut m = m;
        m.graph.as_mut().unwrap().node[2].attribute.push(AttributeProto {
            name: "axis".into(),
            i: 0,
            ..Default::default()
        });
        assert_eq!(key(check(&m)), ("fold_tensor_bytes", "splat".into(), 4 << 40));
    }

    #[test]
    fn activations_over_the_element_limit() {
        // An activation (it reads the graph input) of 2^40 elements: no constant, but too large.
        let m = model(vec![int64s("s", &[1 << 20, 1 << 20])], vec![node("Expand", &["x", "s"], "e")]);
        assert_eq!(key(check(&m)), ("tensor_elements", "e".into(), 1 << 40));
        let huge_input =
            check_proto(&model(vec![], vec![]), &[("x".into(), vec![1 << 20, 1 << 20])], &Limits::default());
        assert_eq!(key(huge_input).0, "tensor_elements");
    }

    #[test]
    fn node_count_includes_subgraphs_and_limits_are_raisable() {
        let body = GraphProto { node: vec![node("Relu", &["a"], "b"); 3], ..Default::default() };
        let mut scan = node("Scan", &["x"], "y");
        scan.attribute.push(AttributeProto { name: "body".into(), g: Some(body), ..Default::default() });
        let m = model(vec![], vec![scan, node("Relu", &["y"], "z")]);
        let mut limits = Limits { nodes: 4, ..Limits::default() };
        assert_eq!(key(check_proto(&m, &[], &limits)), ("nodes", String::new(), 5));
        limits.set("nodes", 5).unwrap();
        assert_eq!(check_proto(&m, &[], &limits), Ok(()));
        assert!(limits.set("node", 5).unwrap_err().contains("`fold_bytes`, `fold_tensor_bytes`, `nodes`"));
    }

    #[test]
    fn total_folded_bytes_are_charged() {
        let mut budget = FoldBudget::new(&Limits { fold_bytes: 100, fold_tensor_bytes: 60, ..Limits::default() });
        budget.charge("a", "Mul", &[10], 40).unwrap();
        let Err(CompileError::Limit { key, amount, .. }) = budget.charge("b", "Mul", &[16], 64) else { panic!() };
        assert_eq!((key, amount), ("fold_tensor_bytes", 64));
        budget.charge("c", "Mul", &[10], 40).unwrap();
        let Err(CompileError::Limit { key, node, amount, .. }) = budget.charge("d", "Add", &[10], 40) else { panic!() };
        assert_eq!((key, node.as_str(), amount), ("fold_bytes", "d", 120));
    }
}
