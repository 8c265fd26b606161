"""Shared helpers for the sramfit fixture generators.

Used by gen_models.py, gen_op_tests.py and check_fixtures.py. Nothing in here
is random by itself: every RNG is created from an explicit seed by the caller.

Conventions (the Rust tests are written against these):
  * models are built with onnx.helper, opset 13 (17 with LayerNormalization), ir_version 8, float32,
    producer_name "sramfit-scripts", every node named;
  * graph inputs are `input` (or `input_0`, `input_1`, ...), graph outputs are
    `output` (or `output_0`, `output_1`, ...); all shapes fully static;
  * weights come from numpy.random.default_rng(seed); the test inputs come from
    a separate stream numpy.random.default_rng([seed, 1]);
  * NAME.ref.json holds the inputs and the onnxruntime (CPU, 1 thread, graph
    optimizations disabled) outputs, floats written so they round-trip exactly
    as float32.
"""

import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
# LayerNormalization exists from opset 17 on; models using it declare this opset instead.
LAYERNORM_OPSET = 17
IR_VERSION = 8
PRODUCER = "sramfit-scripts"

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --------------------------------------------------------------------------- #
# Graph building
# --------------------------------------------------------------------------- #
class GraphBuilder:
    """Small imperative builder on top of onnx.helper.

    Tensor naming: a node called `conv1` produces the tensor `conv1_out`
    unless an explicit output name is given; its parameters are initializers
    named `conv1.weight`, `conv1.bias`, `bn1.scale`, ... (PyTorch-like).
    """

    def __init__(self, name, seed, doc="", opset=OPSET, factor_above=None, rank=8):
        """factor_above: float weights with more elements than this are not stored but computed
        inside the graph (see `init`), so that a large architecture stays a small file."""
        self.name = name
        self.seed = seed
        self.doc = doc
        self.opset = opset
        self.factor_above = factor_above
        self.rank = rank
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.initializers = []
        self.inputs = []  # (name, shape, kind)
        self.outputs = []
        self._tensor_names = set()
        self._node_names = set()

    # -- declarations ------------------------------------------------------ #
    def input(self, name, shape, kind="normal"):
        """Declare a graph input. kind selects the test-data distribution:
        'normal' (standard normal), 'uniform' ([0,1)), or ('uniform', lo, hi)."""
        self._claim_tensor(name)
        self.inputs.append((name, list(shape), kind))
        return name

    def output(self, name):
        self.outputs.append(name)
        return name

    def init(self, name, array, dtype=np.float32):
        arr = np.asarray(array, dtype=dtype)
        if self.factor_above is not None and dtype == np.float32 and arr.ndim >= 2 \
                and arr.size > self.factor_above:
            return self._factored(name, arr)
        return self._store(name, arr)

    def _store(self, name, arr):
        self._claim_tensor(name)
        self.initializers.append(numpy_helper.from_array(arr, name))
        return name

    def _factored(self, name, arr):
        """A weight of `arr`'s shape and standard deviation, computed in the graph as
        Reshape(MatMul(U, V)) with U [rows, rank] and V [rank, cols] stored (rows = first dim).
        All inputs are constants, so an importer that folds constants (tract does) sees a plain
        full-size, non-uniform weight; the file holds (rows + cols) * rank floats."""
        rows = arr.shape[0]
        cols = arr.size // rows
        r = self.rank
        u = self.rng.standard_normal(size=(rows, r))
        v = self.rng.normal(0.0, float(np.std(arr)) / np.sqrt(r), size=(r, cols))
        uu = self._store(f"{name}.u", u.astype(np.float32))
        vv = self._store(f"{name}.v", v.astype(np.float32))
        shape = self.init_i64(f"{name}.shape", list(arr.shape))
        flat = self.node("MatMul", [uu, vv], f"{name}.matmul")
        return self.node("Reshape", [flat, shape], f"{name}.reshape", out=name)

    def init_i64(self, name, values):
        return self.init(name, np.asarray(values, dtype=np.int64), dtype=np.int64)

    def node(self, op, inputs, name, out=None, n_out=1, **attrs):
        """Add a node; returns its output tensor name (or list if n_out > 1)."""
        assert name not in self._node_names, f"duplicate node name {name}"
        self._node_names.add(name)
        if out is None:
            outs = [f"{name}_out"] if n_out == 1 else [f"{name}_out{i}" for i in range(n_out)]
        else:
            outs = [out] if isinstance(out, str) else list(out)
        for o in outs:
            self._claim_tensor(o)
        self.nodes.append(helper.make_node(op, list(inputs), outs, name=name, **attrs))
        return outs[0] if len(outs) == 1 else outs

    def _claim_tensor(self, name):
        assert name not in self._tensor_names, f"duplicate tensor name {name}"
        self._tensor_names.add(name)

    # -- parameter initialisation --------------------------------------------- #
    def he(self, shape, fan_in, gain=2.0):
        return self.rng.normal(0.0, np.sqrt(gain / fan_in), size=shape)

    def small_bias(self, n, scale=0.1):
        return self.rng.uniform(-scale, scale, size=n)

    # -- layer helpers ---------------------------------------------------------- #
    def conv(self, x, cin, cout, k, name, stride=1, pads=None, group=1,
             dilation=1, bias=True, gain=2.0, out=None):
        """2-D (k = int or (kh, kw)) or 1-D (k = (kw,)) convolution."""
        ks = (k, k) if isinstance(k, int) else tuple(k)
        nd = len(ks)
        strides = [stride] * nd if isinstance(stride, int) else list(stride)
        dil = [dilation] * nd if isinstance(dilation, int) else list(dilation)
        if pads is None:
            pads = [0] * (2 * nd)
        elif isinstance(pads, int):
            pads = [pads] * (2 * nd)
        fan_in = (cin // group) * int(np.prod(ks))
        w = self.init(f"{name}.weight", self.he((cout, cin // group) + ks, fan_in, gain))
        ins = [x, w]
        if bias:
            ins.append(self.init(f"{name}.bias", self.small_bias(cout)))
        return self.node("Conv", ins, name, out=out, kernel_shape=list(ks),
                         strides=strides, pads=list(pads), dilations=dil, group=group)

    def bn(self, x, c, name, eps=1e-5, out=None):
        """BatchNormalization (inference) with non-trivial running stats."""
        scale = self.rng.uniform(0.6, 1.4, size=c)
        beta = self.rng.uniform(-0.2, 0.2, size=c)
        mean = self.rng.normal(0.0, 0.2, size=c)
        var = self.rng.uniform(0.6, 1.6, size=c)
        ins = [x,
               self.init(f"{name}.scale", scale),
               self.init(f"{name}.bias", beta),
               self.init(f"{name}.mean", mean),
               self.init(f"{name}.var", var)]
        return self.node("BatchNormalization", ins, name, out=out, epsilon=eps)

    def gemm(self, x, k, n, name, trans_b=1, gain=2.0, bias=True, out=None):
        w = self.he((n, k) if trans_b else (k, n), k, gain)
        ins = [x, self.init(f"{name}.weight", w)]
        if bias:
            ins.append(self.init(f"{name}.bias", self.small_bias(n)))
        return self.node("Gemm", ins, name, out=out, transB=trans_b)

    def relu(self, x, name, out=None):
        return self.node("Relu", [x], name, out=out)

    # -- finishing ----------------------------------------------------------------- #
    def build(self):
        assert self.outputs, "no graph outputs declared"
        g_inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                    for n, s, _ in self.inputs]
        g_outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                     for n in self.outputs]
        graph = helper.make_graph(self.nodes, self.name, g_inputs, g_outputs,
                                  initializer=self.initializers, doc_string=self.doc)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                  ir_version=IR_VERSION, producer_name=PRODUCER)
        # Give the graph outputs their (static) shapes via ONNX shape inference,
        # but do not keep intermediate value_info in the committed model.
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        out_types = {o.name: o.type for o in inferred.graph.output}
        for o in model.graph.output:
            t = out_types[o.name]
            dims = t.tensor_type.shape.dim
            assert t.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in dims), \
                f"{self.name}: output {o.name} has no static shape"
            o.type.CopyFrom(t)
        onnx.checker.check_model(model, full_check=True)
        return model

    def input_kinds(self):
        return {n: kind for n, _, kind in self.inputs}


def param_count(model):
    return int(sum(int(np.prod(t.dims)) if len(t.dims) else 1
                   for t in model.graph.initializer
                   if t.data_type == TensorProto.FLOAT))


# --------------------------------------------------------------------------- #
# Running and writing fixtures
# --------------------------------------------------------------------------- #
def make_session(model_or_path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 2  # warnings and errors only
    src = model_or_path if isinstance(model_or_path, str) else model_or_path.SerializeToString()
    return ort.InferenceSession(src, sess_options=so, providers=["CPUExecutionProvider"])


def static_shape(value_info):
    return [d.dim_value for d in value_info.type.tensor_type.shape.dim]


def draw_inputs(model, seed, kinds):
    """Test inputs from default_rng([seed, 1]), in graph-input order."""
    rng = np.random.default_rng([seed, 1])
    feeds = {}
    for vi in model.graph.input:
        shape = static_shape(vi)
        kind = kinds.get(vi.name, "normal")
        if kind == "normal":
            a = rng.standard_normal(size=shape)
        elif kind == "uniform":
            a = rng.random(size=shape)
        elif isinstance(kind, tuple) and kind[0] == "uniform":
            a = rng.uniform(kind[1], kind[2], size=shape)
        else:
            raise ValueError(kind)
        feeds[vi.name] = a.astype(np.float32)
    return feeds


def _floats(a):
    a = np.asarray(a, dtype=np.float32).reshape(-1)
    assert np.all(np.isfinite(a)), "non-finite value in fixture"
    # float(np.float32) is the exact value; json writes the shortest float64
    # repr equal to it, which parses back (as f64 then f32) to the same bits.
    return [float(v) for v in a]


def run_ort(model_or_path, feeds):
    sess = make_session(model_or_path)
    names = [o.name for o in sess.get_outputs()]
    return names, sess.run(names, feeds)


def write_fixture(model, out_dir, name, generator, seed, kinds):
    """Write NAME.onnx and NAME.ref.json into out_dir. Returns a summary dict."""
    os.makedirs(out_dir, exist_ok=True)
    onnx_path = os.path.join(out_dir, f"{name}.onnx")
    data = model.SerializeToString()
    with open(onnx_path, "wb") as f:
        f.write(data)

    feeds = draw_inputs(model, seed, kinds)
    out_names, outs = run_ort(onnx_path, feeds)
    declared = {o.name: static_shape(o) for o in model.graph.output}
    for n, o in zip(out_names, outs):
        assert list(o.shape) == declared[n], f"{name}: {n} shape {o.shape} != {declared[n]}"
        assert o.dtype == np.float32

    ref = {
        "model": f"{name}.onnx",
        "inputs": [{"name": vi.name, "shape": static_shape(vi), "data": _floats(feeds[vi.name])}
                   for vi in model.graph.input],
        "outputs": [{"name": n, "shape": list(o.shape), "data": _floats(o)}
                    for n, o in zip(out_names, outs)],
        "generator": generator,
        "seed": seed,
    }
    ref_path = os.path.join(out_dir, f"{name}.ref.json")
    with open(ref_path, "w", encoding="utf-8") as f:
        json.dump(ref, f, sort_keys=True, separators=(",", ":"), allow_nan=False)
        f.write("\n")

    return {
        "name": name,
        "dir": os.path.relpath(out_dir, REPO_ROOT),
        "inputs": [(vi.name, static_shape(vi)) for vi in model.graph.input],
        "outputs": [(n, list(o.shape)) for n, o in zip(out_names, outs)],
        "params": param_count(model),
        "onnx_bytes": len(data),
        "ref_bytes": os.path.getsize(ref_path),
        "ops": sorted({n.op_type for n in model.graph.node}),
        "out_stats": [(float(np.std(o)), float(np.max(np.abs(o)))) for o in outs],
    }


def print_summary(rows, file=sys.stdout):
    for r in rows:
        ins = " ".join(f"{n}{s}" for n, s in r["inputs"])
        outs = " ".join(f"{n}{s}" for n, s in r["outputs"])
        print(f"{r['dir']}/{r['name']}: in {ins} -> out {outs}; params {r['params']}; "
              f"onnx {r['onnx_bytes']} B; ref {r['ref_bytes']} B; ops {','.join(r['ops'])}",
              file=file)


def generate(models, out_dir, generator, argv, copies=None):
    """The main loop of a fixture script: builds each `(name, builder_fn, seed)` of `models` (only
    those named in `argv`, if any), writes its fixture to `out_dir` (and to the extra
    `(dir, name)` places `copies[name]` lists), prints per-node activation statistics with
    `--stats`, and the summary."""
    stats = "--stats" in argv
    only = [a for a in argv if not a.startswith("--")]
    rows = []
    for name, fn, seed in models:
        if only and name not in only:
            continue
        b = fn(seed)
        model = b.build()
        for d, n in [(out_dir, name)] + (copies or {}).get(name, []):
            rows.append(write_fixture(model, d, n, generator, seed, b.input_kinds()))
        if stats:
            print(f"== {name}")
            for n, op, sd, mx in activation_stats(model, draw_inputs(model, seed, b.input_kinds())):
                print(f"   {n:24s} {op:20s} std {sd:9.4f} max|x| {mx:9.4f}")
    print_summary(rows)


def activation_stats(model, feeds):
    """Debug helper: (node name, op, std, max|x|) for every node output."""
    m = onnx.shape_inference.infer_shapes(model)
    vis = {vi.name: vi for vi in m.graph.value_info}
    existing = {o.name for o in m.graph.output}
    for n in m.graph.node:
        for o in n.output:
            if o not in existing and o in vis:
                m.graph.output.append(vis[o])
    sess = make_session(m)
    names = [o.name for o in sess.get_outputs()]
    vals = dict(zip(names, sess.run(names, feeds)))
    rows = []
    for n in m.graph.node:
        v = vals.get(n.output[0])
        if v is not None:
            rows.append((n.name, n.op_type, float(np.std(v)), float(np.max(np.abs(v)))))
    return rows
