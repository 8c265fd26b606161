//! The graph IR: typed tensors with static shapes, and nodes in schedule order whose ops
//! ([`crate::ops`]) are already resolved to the kernel calls of `runtime-min`.
//!
//! [`crate::import`] builds it from ONNX; [`crate::liveness`] derives lifetimes from it;
//! [`crate::codegen`] emits one kernel call per node. It can be built by hand in tests.

pub use crate::ops::Op;
use crate::ops::Operands;
pub use crate::tensor::{strides_of, DType, Data, Quant, Tensor, TensorId, TensorKind};
use crate::weights::WeightAlign;

/// One step of the schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The ONNX node name this step comes from (tract may add a suffix).
    pub name: String,
    /// The source operator's name, as tract reports it (e.g. `Conv`, `EinSum`, `Add`).
    pub source_op: String,
    /// The computation.
    pub op: Op,
    /// Input tensors, in the order the op defines.
    pub inputs: Vec<TensorId>,
    /// The output tensor (every op here has exactly one).
    pub output: TensorId,
}

#[cfg(test)]
impl Node {
    /// A node whose source operator is named like the node (hand-built test graphs).
    pub(crate) fn new(name: &str, op: Op, inputs: Vec<TensorId>, output: TensorId) -> Node {
        Node { name: name.into(), source_op: name.into(), op, inputs, output }
    }
}

impl Node {
    /// The tensors this node reads and writes.
    pub fn operands<'a>(&self, tensors: &'a [Tensor]) -> Operands<'a> {
        Operands { inputs: self.inputs.iter().map(|&t| &tensors[t]).collect(), output: &tensors[self.output] }
    }

    /// The inputs whose bytes this node's kernel can overwrite with its output, best first (see
    /// [`crate::ops::OpKind::in_place_inputs`]).
    pub fn in_place_inputs(&self, tensors: &[Tensor]) -> Vec<usize> {
        self.op.kind().in_place_inputs(&self.operands(tensors))
    }
}

/// A model: tensors, and nodes in execution order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    /// All tensors.
    pub tensors: Vec<Tensor>,
    /// Nodes in schedule order; every input of a node is a graph input, a constant or the output
    /// of an earlier node.
    pub nodes: Vec<Node>,
    /// Graph inputs, in ONNX order.
    pub inputs: Vec<TensorId>,
    /// Graph outputs, in ONNX order.
    pub outputs: Vec<TensorId>,
    /// Where the graph inputs and outputs live.
    pub io: Io,
    /// With [`Io::Arena`], the graph inputs (indices into `inputs`, ascending) that stay in the
    /// caller's buffers all the same (a DMA target): passed to `run_in`, never in the arena.
    pub caller_inputs: Vec<usize>,
    /// Where the weight blob aligns each constant, for the target compiled for.
    pub weight_align: WeightAlign,
}

/// Where a graph's inputs and outputs live (`io:` in `model!`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Io {
    /// In the caller's buffers, passed to `run`: the arena holds only intermediate tensors.
    #[default]
    Caller,
    /// In the arena, planned like every other tensor: an input lives from the start of a run to
    /// its last reader (the caller writes it through the arena before the run), an output from
    /// the step that writes it to the end of the run (the caller reads it from the arena after).
    /// The arena is then the whole working memory of an inference.
    Arena,
}

impl Graph {
    /// Whether graph input `i` (an index into `inputs`) lives in the arena.
    pub fn input_in_arena(&self, i: usize) -> bool {
        self.io == Io::Arena && !self.caller_inputs.contains(&i)
    }

    /// Adds a tensor computed by a node or passed in by the caller, and returns its id.
    pub fn add_tensor(
        &mut self,
        name: impl Into<String>,
        shape: Vec<usize>,
        dtype: DType,
        kind: TensorKind,
    ) -> TensorId {
        self.tensors.push(Tensor { name: name.into(), shape, dtype, quant: None, kind });
        self.tensors.len() - 1
    }

    /// Adds a constant tensor (its element type is its data's) and returns its id.
    pub fn add_const(&mut self, name: impl Into<String>, shape: Vec<usize>, data: Data) -> TensorId {
        let dtype = data.dtype();
        self.add_tensor(name, shape, dtype, TensorKind::Const(data))
    }

    /// The node that writes each tensor, if any (indexed by [`TensorId`]).
    pub fn producers(&self) -> Vec<Option<usize>> {
        let mut p = vec![None; self.tensors.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            p[n.output] = Some(i);
        }
        p
    }

    /// How many times each tensor is read (indexed by [`TensorId`]): once per node input that
    /// names it, once more if it is a graph output.
    pub fn reads(&self) -> Vec<usize> {
        let mut reads = vec![0; self.tensors.len()];
        self.nodes.iter().flat_map(|n| &n.inputs).chain(&self.outputs).for_each(|&t| reads[t] += 1);
        reads
    }

    /// The node that writes `t`, if any. Linear in the nodes: use [`Graph::producers`] in loops.
    pub fn producer(&self, t: TensorId) -> Option<usize> {
        self.nodes.iter().position(|n| n.output == t)
    }

    /// For every tensor, the tensor that owns its bytes: views are followed back to the tensor
    /// they view (the root of the view chain); every other tensor is its own root.
    pub fn view_roots(&self) -> Vec<TensorId> {
        let mut roots: Vec<TensorId> = (0..self.tensors.len()).collect();
        // Nodes are in schedule order, so a view's input has its root already.
        for n in &self.nodes {
            if n.op.is_view() {
                roots[n.output] = roots[n.inputs[0]];
            }
        }
        roots
    }

    /// The tensor that owns `t`'s bytes (see [`Graph::view_roots`]). Linear in the nodes.
    pub fn root_of(&self, mut t: TensorId) -> TensorId {
        while let Some(n) = self.producer(t).map(|i| &self.nodes[i]) {
            if !n.op.is_view() {
                break;
            }
            t = n.inputs[0];
        }
        t
    }

    /// Total bytes of constant tensors.
    pub fn weight_bytes(&self) -> u64 {
        self.tensors.iter().filter(|t| matches!(t.kind, TensorKind::Const(_))).map(Tensor::bytes).sum()
    }
}
