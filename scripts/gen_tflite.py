#!/usr/bin/env python3
"""Generate the .tflite fixtures and the NHWC (Keras -> tf2onnx) ONNX fixtures (issue 17).

Three parts, each a sub-command (default: all three):

  mlperf   tests/models/tflite/mlperf/NAME.ref.json for every .tflite file of ../shared/mlperf-tiny/
           (the files themselves are never copied: the fixture names the file by its path from the
           repository root, "model_path", and its sha256). SAMPLES random inputs each: int8 files get
           integers uniform over the whole int8 range; float files get floats uniform over the range
           the int8 twin's input quantization covers (KWS [-123.3, 25.7], VWW [0, 1], ResNet-8
           [0, 255], AD [-85.6, 14.1]) on a grid of a power of two (at most 1/16 of the range: VWW
           k/16, ResNet-8 multiples of 8, KWS of 8, AD of 4) so the JSON stays small. Outputs from TensorFlow Lite Micro's Python interpreter
           (package tflite-micro). kws_ref_model_float32.tflite is a hybrid file (int8 weights,
           float activations) that TFLM refuses to prepare: its outputs come from TensorFlow Lite's
           interpreter with the reference kernels (OpResolverType.BUILTIN_REF), said in "engine".
  keras    tests/models/tflite/keras/NAME_VARIANT.{tflite,ref.json}: small Keras models (random
           weights from numpy, seeded) converted with tf.lite.TFLiteConverter as float32 ("f32") and
           full-integer int8 ("int8": per-channel weights, int8 ports, representative dataset of
           CALIB_SAMPLES inputs); a few also with uint8 ports ("int8_u8io"), float ports
           ("int8_fio") or TFLite's 16x8 mode ("a16w8": int16 activations, int8 weights, int16
           ports; "a16w8_fio": float ports). SAMPLES inputs each, drawn from the calibration distribution (quantized with the
           input port's parameters for integer ports); outputs from TFLM.
  nhwc     tests/models/nhwc/NAME.{onnx,ref.json}: an MLPerf-Tiny-style VWW (MobileNetV1-0.25,
           96x96x3) and ResNet-8 (32x32x3) built in Keras (NHWC) and exported to ONNX with tf2onnx
           (opset 13); outputs from onnxruntime (CPU, 1 thread, optimizations off), as for the f32
           fixtures.

Every tensor entry has "dtype", and ports of quantized models their "quant" (scale, zero point).
A .tflite ref.json also has "engine", "ops" (TFLite operator counts), "tflm_arena" (head, tail,
total bytes from TFLM's RecordingMicroAllocator) and "tflite_ref_differing" (elements where
TensorFlow Lite's reference-kernel interpreter disagrees with TFLM, over all samples).

    python3 scripts/gen_tflite.py               # all (a few minutes: TensorFlow's converter is slow)
    python3 scripts/gen_tflite.py keras ds_cnn  # Keras models whose name contains 'ds_cnn'

Needs the virtualenv of scripts/requirements-tflite.txt. Deterministic: rerunning gives
byte-identical files (the converter's output is deterministic for fixed weights).
"""

import collections
import contextlib
import io
import os
import sys
import zlib

sys.dont_write_bytecode = True  # keep scripts/ free of __pycache__
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402

import fixture_json as fj  # noqa: E402
import tflm_lib  # noqa: E402
from fixture_lib import REPO_ROOT  # noqa: E402

GENERATOR = "scripts/gen_tflite.py"
SHARED = os.path.join(os.path.dirname(REPO_ROOT), "shared", "mlperf-tiny")
MLPERF_DIR = os.path.join(REPO_ROOT, "tests", "models", "tflite", "mlperf")
KERAS_DIR = os.path.join(REPO_ROOT, "tests", "models", "tflite", "keras")
NHWC_DIR = os.path.join(REPO_ROOT, "tests", "models", "nhwc")
SAMPLES = 20
CALIB_SAMPLES = 32

# float file -> (int8 twin, seed); the float inputs cover the twin's input range
MLPERF = {
    "kws_ref_model.tflite": (None, 401),
    "kws_ref_model_float32.tflite": ("kws_ref_model.tflite", 402),
    "vww_96_int8.tflite": (None, 403),
    "vww_96_float.tflite": ("vww_96_int8.tflite", 404),
    "pretrainedResnet_quant.tflite": (None, 405),
    "pretrainedResnet.tflite": ("pretrainedResnet_quant.tflite", 406),
    "ad01_int8.tflite": (None, 407),
    "ad01_fp32.tflite": ("ad01_int8.tflite", 408),
    "str_ww_ref_model.tflite": (None, 409),
}


def tf_modules():
    import tensorflow as tf
    import keras
    return tf, keras


def quiet(fn, *a, **kw):
    """Runs fn with Python-level stdout silenced (Keras' export prints its signature)."""
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*a, **kw)


# --------------------------------------------------------------------------- #
# Reference runs
# --------------------------------------------------------------------------- #
def tflite_ref_run(model_bytes, samples):
    """TensorFlow Lite's interpreter with the reference kernels (BUILTIN_REF), the cross-check."""
    tf, _ = tf_modules()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        it = tf.lite.Interpreter(model_content=model_bytes,
                                 experimental_op_resolver_type=tf.lite.experimental.OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    ins = it.get_input_details()
    outs = it.get_output_details()
    res = []
    for s in samples:
        for d, a in zip(ins, s):
            it.set_tensor(d["index"], a)
        it.invoke()
        res.append([np.array(it.get_tensor(d["index"])) for d in outs])
    return res


def tflite_fixture(model_bytes, model_path_rel, samples, seed, out_path, extra):
    """Runs TFLM (or, if TFLM refuses the file, TFLite's reference kernels) and writes the ref.json."""
    desc = tflm_lib.describe(model_bytes)
    ref_outs = tflite_ref_run(model_bytes, samples)
    try:
        outs = tflm_lib.run(model_bytes, samples)
        arena = tflm_lib.arena(model_bytes)
        engine = f"tflite-micro {tflm_lib.tflm_version()} (TFLM's Python interpreter, reference kernels)"
        engine_name, refused = "tflm", None
    except RuntimeError as e:
        tf, _ = tf_modules()
        outs, arena = ref_outs, None
        engine = (f"tensorflow {tf.__version__} tf.lite.Interpreter, OpResolverType.BUILTIN_REF "
                  f"(TFLM refuses this file)")
        engine_name, refused = "tflite_builtin_ref", str(e)
    differing = int(sum(int(np.sum(a != b)) for o, r in zip(outs, ref_outs) for a, b in zip(o, r)))
    float_rel = 0.0
    for o, r in zip(outs, ref_outs):
        for a, b in zip(o, r):
            if a.dtype == np.float32:
                float_rel = max(float_rel, float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-6))))

    def entries(ports, arrays):
        res = []
        for p, a in zip(ports, arrays):
            e = fj.tensor(p["name"], a, index=p["index"])
            assert e["dtype"] == p["dtype"] and e["shape"] == p["shape"], (e["dtype"], p)
            if "quant" in p:
                e["quant"] = p["quant"]
            res.append(e)
        return res

    samples_json = [{"inputs": entries(desc["inputs"], s), "outputs": entries(desc["outputs"], o)}
                    for s, o in zip(samples, outs)]
    ref = {"model": os.path.basename(model_path_rel), "model_path": model_path_rel,
           "model_sha256": fj.sha256(os.path.join(REPO_ROOT, model_path_rel)),
           "generator": GENERATOR, "seed": seed, "engine": engine, "engine_name": engine_name,
           "ops": desc["op_counts"], "tflm_arena": arena, "tflite_ref_differing": differing,
           "inputs": samples_json[0]["inputs"], "outputs": samples_json[0]["outputs"],
           "extra_samples": samples_json[1:]}
    if float_rel:
        ref["tflite_ref_max_rel_diff"] = fj.rounded(float_rel)
    if refused:
        ref["tflm_refuses"] = refused
    ref.update(extra)
    fj.dump(ref, out_path)
    return ref


# --------------------------------------------------------------------------- #
# MLPerf Tiny files
# --------------------------------------------------------------------------- #
def input_range(port):
    q = port["quant"]
    lo, hi = np.iinfo(fj.DTYPES[port["dtype"]]).min, np.iinfo(fj.DTYPES[port["dtype"]]).max
    return (lo - q["zero_point"]) * q["scale"], (hi - q["zero_point"]) * q["scale"]


def gen_mlperf(filters):
    if not os.path.isdir(SHARED):
        print(f"skipped: {SHARED} not found (the MLPerf Tiny files live in ../shared/mlperf-tiny/)")
        return
    os.makedirs(MLPERF_DIR, exist_ok=True)
    for fname, (twin, seed) in MLPERF.items():
        stem = fname[: -len(".tflite")]
        if filters and not any(f in stem for f in filters):
            continue
        path = os.path.join(SHARED, fname)
        data = open(path, "rb").read()
        desc = tflm_lib.describe(data)
        rng = np.random.default_rng([seed, 1])
        samples = []
        for _ in range(SAMPLES):
            s = []
            for p in desc["inputs"]:
                if p["dtype"] == "float32":
                    tdesc = tflm_lib.describe(open(os.path.join(SHARED, twin), "rb").read())
                    lo, hi = input_range(tdesc["inputs"][0])
                    step = 2.0 ** np.floor(np.log2((hi - lo) / 16))
                    k = rng.integers(int(np.ceil(lo / step)), int(np.floor(hi / step)) + 1, size=p["shape"])
                    s.append((k * step).astype(np.float32))
                else:
                    info = np.iinfo(fj.DTYPES[p["dtype"]])
                    s.append(rng.integers(info.min, info.max + 1, size=p["shape"]).astype(fj.DTYPES[p["dtype"]]))
            samples.append(s)
        extra = {"input_distribution": (f"uniform over the multiples of a power of two (1/16 of the range or "
                                        f"less) inside the int8 twin's input range ({twin})" if twin
                                        else "uniform over the whole integer range")}
        rel = os.path.relpath(path, REPO_ROOT)
        ref = tflite_fixture(data, rel, samples, seed, os.path.join(MLPERF_DIR, f"{stem}.ref.json"), extra)
        print(f"mlperf/{stem}: {ref['engine_name']}; arena {ref['tflm_arena']}; ops {ref['ops']}; "
              f"TFLite BUILTIN_REF differs in {ref['tflite_ref_differing']} elements"
              + (f" (max rel {ref.get('tflite_ref_max_rel_diff')})" if ref.get("tflite_ref_max_rel_diff") else ""))


# --------------------------------------------------------------------------- #
# Keras models
# --------------------------------------------------------------------------- #
def set_weights(model, seed):
    """Deterministic weights from numpy (not Keras' initializers): He-normal kernels, small biases,
    non-trivial BatchNormalization statistics."""
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        ws = layer.get_weights()
        if not ws:
            continue
        names = [w.path.split("/")[-1] for w in layer.weights]
        new = []
        for n, w in zip(names, ws):
            if n in ("kernel", "depthwise_kernel"):
                if n == "depthwise_kernel":
                    fan_in = int(np.prod(w.shape[:-2]))
                else:
                    fan_in = int(np.prod(w.shape[:-1]))
                gain = getattr(layer, "_sramfit_gain", 2.0)
                new.append(rng.normal(0.0, np.sqrt(gain / fan_in), size=w.shape))
            elif n == "bias":
                new.append(rng.uniform(-0.1, 0.1, size=w.shape))
            elif n == "gamma":
                new.append(rng.uniform(0.6, 1.4, size=w.shape))
            elif n == "beta":
                new.append(rng.uniform(-0.2, 0.2, size=w.shape))
            elif n == "moving_mean":
                new.append(rng.normal(0.0, 0.2, size=w.shape))
            elif n == "moving_variance":
                new.append(rng.uniform(0.6, 1.6, size=w.shape))
            else:
                raise ValueError(f"{layer.name}: weight {n}")
        layer.set_weights([np.asarray(a, np.float32) for a in new])


def keras_models():
    """name -> (builder, input kind, variants). Input kinds: 'uniform' [0, 1), 'normal'."""
    _, keras = tf_modules()
    L = keras.layers
    ops = keras.ops

    def head(x, classes, gain=6.0):
        d = L.Dense(classes)
        d._sramfit_gain = gain
        return L.Softmax()(d(x))

    def mobilenet_v1():
        # MobileNetV1 at width 0.25, 32x32, as keras.applications builds it (ZeroPadding2D + valid
        # convolution for stride 2, BatchNormalization, ReLU6).
        i = keras.Input((32, 32, 3), batch_size=1)
        x = L.ZeroPadding2D(((0, 1), (0, 1)))(i)
        x = L.ReLU(6.0)(L.BatchNormalization()(L.Conv2D(8, 3, strides=2, use_bias=False)(x)))
        for cout, s in [(16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2), (128, 1)]:
            if s == 2:
                x = L.ZeroPadding2D(((0, 1), (0, 1)))(x)
            x = L.DepthwiseConv2D(3, strides=s, padding="same" if s == 1 else "valid", use_bias=False)(x)
            x = L.ReLU(6.0)(L.BatchNormalization()(x))
            x = L.ReLU(6.0)(L.BatchNormalization()(L.Conv2D(cout, 1, use_bias=False)(x)))
        x = L.GlobalAveragePooling2D()(x)
        return keras.Model(i, head(x, 10))

    def mobilenet_v2():
        # MobileNetV2 at width 0.35, 32x32: inverted residuals (expansion 6), linear bottlenecks, Add.
        i = keras.Input((32, 32, 3), batch_size=1)
        x = L.ReLU(6.0)(L.BatchNormalization()(L.Conv2D(16, 3, strides=2, padding="same", use_bias=False)(i)))
        cin = 16
        for cout, s, t in [(8, 1, 1), (8, 2, 6), (8, 1, 6), (16, 2, 6), (16, 1, 6), (24, 2, 6), (24, 1, 6), (40, 1, 6)]:
            y = x
            if t != 1:
                y = L.ReLU(6.0)(L.BatchNormalization()(L.Conv2D(cin * t, 1, use_bias=False)(y)))
            y = L.ReLU(6.0)(L.BatchNormalization()(L.DepthwiseConv2D(3, strides=s, padding="same", use_bias=False)(y)))
            y = L.BatchNormalization()(L.Conv2D(cout, 1, use_bias=False)(y))
            x = L.Add()([x, y]) if s == 1 and cin == cout else y
            cin = cout
        x = L.ReLU(6.0)(L.BatchNormalization()(L.Conv2D(128, 1, use_bias=False)(x)))
        x = L.GlobalAveragePooling2D()(x)
        return keras.Model(i, head(x, 10))

    def ds_cnn():
        # keyword spotting DS-CNN (MLPerf Tiny KWS layout at 32 channels), 49x10 MFCC input
        i = keras.Input((49, 10, 1), batch_size=1)
        x = L.ReLU()(L.BatchNormalization()(L.Conv2D(32, (10, 4), strides=2, padding="same")(i)))
        for _ in range(3):
            x = L.ReLU()(L.BatchNormalization()(L.DepthwiseConv2D(3, padding="same")(x)))
            x = L.ReLU()(L.BatchNormalization()(L.Conv2D(32, 1)(x)))
        x = L.Flatten()(L.AveragePooling2D((25, 5))(x))
        return keras.Model(i, head(x, 12))

    def resnet():
        # ResNet-8 layout (MLPerf Tiny IC) at 8/16/32 filters, 32x32x3
        i = keras.Input((32, 32, 3), batch_size=1)
        x = L.ReLU()(L.BatchNormalization()(L.Conv2D(8, 3, padding="same")(i)))
        cin = 8
        for cout, s in [(8, 1), (16, 2), (32, 2)]:
            y = L.ReLU()(L.BatchNormalization()(L.Conv2D(cout, 3, strides=s, padding="same")(x)))
            y = L.BatchNormalization()(L.Conv2D(cout, 3, padding="same")(y))
            sc = x if s == 1 and cin == cout else L.Conv2D(cout, 1, strides=s)(x)
            x = L.ReLU()(L.Add()([y, sc]))
            cin = cout
        x = L.Flatten()(L.AveragePooling2D(8)(x))
        return keras.Model(i, head(x, 10))

    def fc_autoencoder():
        # anomaly-detection autoencoder (MLPerf Tiny AD layout at 128/64/8 widths)
        i = keras.Input((128,), batch_size=1)
        x = i
        for w in [64, 64, 8, 64, 64]:
            x = L.ReLU()(L.BatchNormalization()(L.Dense(w)(x)))
        return keras.Model(i, L.Dense(128)(x))

    def branches():
        # Inception-style Concatenate of three branches, a residual Add, standalone RELU and RELU6
        # (after a Concatenate: the converter fuses activations into CONV_2D/ADD but not there)
        i = keras.Input((16, 16, 4), batch_size=1)
        a = L.Conv2D(8, 1, activation="relu")(i)
        b = L.Conv2D(8, 3, padding="same", activation="relu")(i)
        c = L.Conv2D(4, 1)(L.MaxPooling2D(3, strides=1, padding="same")(i))
        x = L.ReLU()(L.Concatenate()([a, b, c]))
        y = L.Conv2D(20, 3, padding="same")(x)
        x = L.ReLU()(L.Add()([x, y]))
        x = L.ReLU(6.0)(L.Concatenate()([L.MaxPooling2D(2)(x), L.AveragePooling2D(2)(y)]))
        x = L.Conv2D(16, 3, strides=2, padding="same", activation="relu")(x)
        return keras.Model(i, head(L.Flatten()(x), 6))

    def audio_conv1d():
        # 1-D convolutions over time (98 frames x 20 features): strided, dilated, pooled
        i = keras.Input((98, 20), batch_size=1)
        x = L.Conv1D(24, 5, strides=2, padding="same", activation="relu")(i)
        x = L.Conv1D(24, 3, dilation_rate=2, padding="same", activation="relu")(x)
        x = L.MaxPooling1D(2)(x)
        x = L.Conv1D(32, 3, padding="same", activation="relu")(x)
        x = L.AveragePooling1D(2)(x)
        x = L.GlobalAveragePooling1D()(x)
        return keras.Model(i, head(x, 8))

    def gating():
        # hard-swish activations and squeeze-and-excitation sigmoid gating (MobileNetV3 style)
        i = keras.Input((24, 24, 3), batch_size=1)
        x = L.Activation("hard_swish")(L.Conv2D(16, 3, strides=2, padding="same")(i))
        x = L.Activation("hard_swish")(L.DepthwiseConv2D(3, padding="same")(x))
        s = L.GlobalAveragePooling2D(keepdims=True)(x)
        s = L.Conv2D(8, 1, activation="relu")(s)
        s = L.Conv2D(16, 1, activation="sigmoid")(s)
        x = L.Multiply()([x, s])
        x = L.Conv2D(24, 1)(x)
        g = L.Conv2D(24, 1, activation="sigmoid")(x)
        x = L.Multiply()([L.Activation("tanh")(x), g])
        x = L.GlobalAveragePooling2D()(x)
        return keras.Model(i, head(x, 5))

    def attention():
        # one self-attention head: Dense projections, Q K^T (BATCH_MATMUL, TRANSPOSE), Softmax,
        # x V, a residual Sub, Tanh, a strided slice over the sequence
        i = keras.Input((8, 16), batch_size=1)
        q = L.Dense(16)(i)
        k = L.Dense(16)(i)
        v = L.Dense(16)(i)
        kt = L.Permute((2, 1))(k)
        a = L.Lambda(lambda t: ops.matmul(t[0], t[1]) * 0.25)([q, kt])
        a = L.Softmax(axis=-1)(a)
        y = L.Lambda(lambda t: ops.matmul(t[0], t[1]))([a, v])
        y = L.Subtract()([i, y])
        y = L.Activation("tanh")(L.Dense(16)(y))
        y = L.Lambda(lambda t: t[:, ::2, :])(y)
        return keras.Model(i, L.Flatten()(y))

    def misc_ops():
        # explicit Pad, LeakyReLU, average pool, STRIDED_SLICE, TRANSPOSE (Permute), Reshape,
        # SQUEEZE, Sub, Tanh, Mul
        i = keras.Input((12, 12, 4), batch_size=1)
        x = L.ZeroPadding2D(((1, 2), (2, 1)))(i)
        x = L.LeakyReLU(negative_slope=0.2)(L.Conv2D(8, 3)(x))
        x = L.AveragePooling2D(2)(x)
        x = L.Lambda(lambda t: t[:, 1:5, 0:6:2, :])(x)
        x = L.Permute((3, 1, 2))(x)
        x = L.Reshape((8, 12, 1))(x)
        x = L.Lambda(lambda t: ops.squeeze(t, axis=-1))(x)
        x = L.Dense(6)(x)
        y = L.Activation("tanh")(x)
        x = L.Multiply()([L.Subtract()([x, y]), y])
        return keras.Model(i, L.Flatten()(x))

    def lenet():
        # LeNet-5 style: tanh convolutions, max pooling, dense layers
        i = keras.Input((28, 28, 1), batch_size=1)
        x = L.MaxPooling2D(2)(L.Conv2D(6, 5, padding="same", activation="tanh")(i))
        x = L.MaxPooling2D(2)(L.Conv2D(16, 5, activation="tanh")(x))
        x = L.Dense(32, activation="tanh")(L.Flatten()(x))
        return keras.Model(i, head(x, 10))

    def arith():
        # SUB and MUL of two activations, LEAKY_RELU, PAD, STRIDED_SLICE, TRANSPOSE (Permute) and
        # RESHAPE without LOGISTIC / TANH, so that its 16x8 variant stays within sramfit's int16
        # operators
        i = keras.Input((12, 12, 4), batch_size=1)
        x = L.ZeroPadding2D(((1, 2), (2, 1)))(i)
        a = L.Conv2D(8, 3)(x)
        b = L.Conv2D(8, 3, activation="relu")(x)
        x = L.LeakyReLU(negative_slope=0.2)(L.Multiply()([L.Subtract()([a, b]), b]))
        x = L.AveragePooling2D(2)(x)
        x = L.Lambda(lambda t: t[:, 1:5, 0:6:2, :])(x)
        x = L.Permute((3, 1, 2))(x)
        x = L.Reshape((8, 12))(x)
        return keras.Model(i, L.Flatten()(L.Dense(6)(x)))

    return {
        "mobilenet_v1_025": (mobilenet_v1, "uniform", ["f32", "int8", "int8_u8io", "a16w8"], 501),
        "mobilenet_v2_035": (mobilenet_v2, "uniform", ["f32", "int8", "a16w8"], 502),
        "ds_cnn": (ds_cnn, "normal", ["f32", "int8", "a16w8"], 503),
        "resnet": (resnet, "uniform", ["f32", "int8", "a16w8"], 504),
        "fc_autoencoder": (fc_autoencoder, "normal", ["f32", "int8", "int8_fio", "a16w8", "a16w8_fio"], 505),
        "branches": (branches, "normal", ["f32", "int8", "a16w8"], 506),
        "audio_conv1d": (audio_conv1d, "normal", ["f32", "int8", "a16w8"], 507),
        "gating": (gating, "uniform", ["f32", "int8"], 508),
        "attention": (attention, "normal", ["f32", "int8"], 509),
        "misc_ops": (misc_ops, "normal", ["f32", "int8"], 510),
        "lenet": (lenet, "uniform", ["f32", "int8"], 511),
        "arith": (arith, "normal", ["f32", "int8", "a16w8"], 512),
    }


def draw(kind, shape, rng):
    """Test and calibration inputs, on a grid of 1/32 so their JSON text stays short: uniform over
    the multiples of 1/32 in [0, 1], or a standard normal draw rounded to a multiple of 1/32."""
    if kind == "uniform":
        return (rng.integers(0, 33, size=shape) / 32).astype(np.float32)
    return (np.round(rng.standard_normal(size=shape) * 32) / 32).astype(np.float32)


def convert(model, variant, calib):
    tf, _ = tf_modules()
    c = tf.lite.TFLiteConverter.from_keras_model(model)
    if variant != "f32":
        c.optimizations = [tf.lite.Optimize.DEFAULT]
        c.representative_dataset = lambda: ([x] for x in calib)
        if variant.startswith("a16w8"):
            c.target_spec.supported_ops = [tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
            io_type = {"a16w8": tf.int16, "a16w8_fio": tf.float32}[variant]
            c.inference_input_type = c.inference_output_type = io_type
        else:
            c.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
            io_type = {"int8": tf.int8, "int8_u8io": tf.uint8, "int8_fio": tf.float32}[variant]
            c.inference_input_type = c.inference_output_type = io_type
    return quiet(c.convert)


def quantize_input(a, port):
    if port["dtype"] == "float32":
        return a
    q = port["quant"]
    info = np.iinfo(fj.DTYPES[port["dtype"]])
    return np.clip(np.round(a / q["scale"]) + q["zero_point"], info.min, info.max).astype(fj.DTYPES[port["dtype"]])


def gen_keras(filters):
    tf, keras = tf_modules()
    os.makedirs(KERAS_DIR, exist_ok=True)
    rows = []
    for name, (build, kind, variants, seed) in keras_models().items():
        if filters and not any(f in name for f in filters):
            continue
        keras.backend.clear_session()  # layer names (and so tensor names) independent of earlier models
        keras.utils.set_random_seed(seed)
        model = build()
        set_weights(model, seed)
        shape = [int(d) for d in model.inputs[0].shape]
        calib_rng = np.random.default_rng([seed, 2])
        calib = [draw(kind, shape, calib_rng) for _ in range(CALIB_SAMPLES)]
        test_rng = np.random.default_rng([seed, 1])
        floats = [draw(kind, shape, test_rng) for _ in range(SAMPLES)]
        keras_out = [np.asarray(model(x, training=False)) for x in floats]
        for v in variants:
            stem = f"{name}_{v}"
            data = convert(model, v, calib)
            path = os.path.join(KERAS_DIR, f"{stem}.tflite")
            with open(path, "wb") as f:
                f.write(data)
            desc = tflm_lib.describe(data)
            samples = [[quantize_input(x, desc["inputs"][0])] for x in floats]
            extra = {"keras": {"name": name, "variant": v, "input_distribution":
                               "uniform over k/32 in [0, 1]" if kind == "uniform" else "standard normal rounded to k/32",
                               "tensorflow": tf.__version__, "keras": keras.__version__,
                               "calibration_samples": CALIB_SAMPLES if v != "f32" else 0}}
            ref = tflite_fixture(data, os.path.relpath(path, REPO_ROOT), samples, seed,
                                 os.path.join(KERAS_DIR, f"{stem}.ref.json"), extra)
            # how far the converted model is from Keras (float: rounding; quantized: in output steps)
            outs = [[fj.array(e) for e in s["outputs"]] for s in [ref] + ref["extra_samples"]]
            port = desc["outputs"][0]
            dev = 0.0
            for o, k in zip(outs, keras_out):
                o = o[0].astype(np.float64)
                if port["dtype"] != "float32":
                    o = (o - port["quant"]["zero_point"]) * port["quant"]["scale"]
                    dev = max(dev, float(np.max(np.abs(o - k)) / port["quant"]["scale"]))
                else:
                    dev = max(dev, float(np.max(np.abs(o - k))))
            rows.append((stem, len(data), ref["ops"], ref["tflm_arena"], ref["tflite_ref_differing"], dev,
                         port["dtype"]))
            print(f"keras/{stem}: {len(data)} B; ops {ref['ops']}; TFLM arena {ref['tflm_arena']}; "
                  f"BUILTIN_REF differs in {ref['tflite_ref_differing']}; vs Keras max "
                  f"{dev:.3g} {'steps' if port['dtype'] != 'float32' else 'abs'}")
    if rows:
        print_op_table(rows)


def print_op_table(rows):
    all_ops = sorted({op for r in rows for op in r[2]})
    print("\n| model | bytes | " + " | ".join(all_ops) + " |")
    print("|---|--:|" + "--:|" * len(all_ops))
    for stem, size, ops, *_ in rows:
        print(f"| {stem} | {size} | " + " | ".join(str(ops.get(o, "")) for o in all_ops) + " |")


# --------------------------------------------------------------------------- #
# NHWC ONNX through tf2onnx
# --------------------------------------------------------------------------- #
def nhwc_models():
    _, keras = tf_modules()
    L = keras.layers

    def bn_relu(x):
        return L.ReLU()(L.BatchNormalization()(x))

    def vww():
        # MLPerf Tiny VWW reference: MobileNetV1 alpha 0.25 at 96x96x3, 2 classes
        i = keras.Input((96, 96, 3), batch_size=1)
        x = bn_relu(L.Conv2D(8, 3, strides=2, padding="same", use_bias=False)(i))
        blocks = [(16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2),
                  (128, 1), (128, 1), (128, 1), (128, 1), (128, 1), (256, 2), (256, 1)]
        for cout, s in blocks:
            x = bn_relu(L.DepthwiseConv2D(3, strides=s, padding="same", use_bias=False)(x))
            x = bn_relu(L.Conv2D(cout, 1, use_bias=False)(x))
        x = L.GlobalAveragePooling2D()(x)
        d = L.Dense(2)
        d._sramfit_gain = 6.0
        return keras.Model(i, L.Softmax()(d(x)))

    def resnet8():
        # MLPerf Tiny IC reference: ResNet-8 at 16/32/64 filters, 32x32x3, 10 classes
        i = keras.Input((32, 32, 3), batch_size=1)
        x = bn_relu(L.Conv2D(16, 3, padding="same")(i))
        cin = 16
        for cout, s in [(16, 1), (32, 2), (64, 2)]:
            y = bn_relu(L.Conv2D(cout, 3, strides=s, padding="same")(x))
            y = L.BatchNormalization()(L.Conv2D(cout, 3, padding="same")(y))
            sc = x if s == 1 and cin == cout else L.Conv2D(cout, 1, strides=s)(x)
            x = L.ReLU()(L.Add()([y, sc]))
            cin = cout
        x = L.Flatten()(L.AveragePooling2D(8)(x))
        d = L.Dense(10)
        d._sramfit_gain = 6.0
        return keras.Model(i, L.Softmax()(d(x)))

    return {"vww_mobilenetv1_keras": (vww, 601), "resnet8_keras": (resnet8, 602)}


def canonical_names(proto):
    """tf2onnx's names carry process-wide counters (Keras layer uids, its own suffixes), so the same
    model exported twice gets other names. Rename: graph input `input`, output `output`, node k
    `OpType_k` with outputs `OpType_k_out[j]`, initializers `OpType_k.in[j]` after their first
    reader (file order is topological), sorted by name."""
    g = proto.graph
    ren = {g.input[0].name: "input", g.output[0].name: "output"}
    inits = {t.name for t in g.initializer}
    for k, n in enumerate(g.node):
        n.name = f"{n.op_type}_{k}"
        for j, i in enumerate(n.input):
            if i in inits and i not in ren:
                ren[i] = f"{n.name}.in{j}"
        for j, o in enumerate(n.output):
            if o not in ren:
                ren[o] = f"{n.name}_out" if len(n.output) == 1 else f"{n.name}_out{j}"
    for n in g.node:
        n.input[:] = [ren.get(i, i) for i in n.input]
        n.output[:] = [ren.get(o, o) for o in n.output]
    for t in g.initializer:
        t.name = ren.get(t.name, t.name)
    inits_sorted = sorted(g.initializer, key=lambda t: t.name)  # tf2onnx's order varies too
    del g.initializer[:]
    g.initializer.extend(inits_sorted)
    for v in list(g.input) + list(g.output):
        v.name = ren.get(v.name, v.name)
    del g.value_info[:]
    g.name = "tf2onnx"


def gen_nhwc(filters):
    tf, keras = tf_modules()
    import onnx
    import tf2onnx
    from fixture_lib import make_session, static_shape

    os.makedirs(NHWC_DIR, exist_ok=True)
    for name, (build, seed) in nhwc_models().items():
        if filters and not any(f in name for f in filters):
            continue
        keras.backend.clear_session()
        keras.utils.set_random_seed(seed)
        model = build()
        set_weights(model, seed)
        shape = [int(d) for d in model.inputs[0].shape]
        spec = [tf.TensorSpec(shape, tf.float32, name="input")]
        fn = tf.function(lambda x: {"output": model(x, training=False)}, input_signature=spec)
        proto, _ = quiet(tf2onnx.convert.from_function, fn, input_signature=spec, opset=13)
        canonical_names(proto)
        proto.doc_string = (f"{name}: Keras {keras.__version__} (TensorFlow {tf.__version__}) model, NHWC, "
                            f"exported by tf2onnx {tf2onnx.__version__} at opset 13; {GENERATOR}")
        onnx.checker.check_model(proto, full_check=True)
        path = os.path.join(NHWC_DIR, f"{name}.onnx")
        data = proto.SerializeToString()
        with open(path, "wb") as f:
            f.write(data)
        x = np.random.default_rng([seed, 1]).random(size=shape).astype(np.float32)
        sess = make_session(path)
        names = [o.name for o in sess.get_outputs()]
        outs = dict(zip(names, sess.run(names, {"input": x})))
        keras_out = np.asarray(model(x, training=False))
        ops = collections.Counter(n.op_type for n in proto.graph.node)
        perms = [list(a.ints) for n in proto.graph.node if n.op_type == "Transpose" for a in n.attribute
                 if a.name == "perm"]
        ref = {"model": f"{name}.onnx", "generator": GENERATOR, "seed": seed,
               "ort": {"version": __import__("onnxruntime").__version__,
                       "graph_optimization_level": "ORT_DISABLE_ALL", "threads": 1},
               "exporter": {"tf2onnx": tf2onnx.__version__, "tensorflow": tf.__version__,
                            "keras": keras.__version__, "opset": 13},
               "onnx_ops": dict(sorted(ops.items())), "transpose_perms": perms,
               "inputs": [fj.tensor("input", x)],
               "outputs": [fj.tensor(n, outs[n]) for n in names]}
        assert [static_shape(o) for o in proto.graph.output] == [list(outs[n].shape) for n in names]
        fj.dump(ref, os.path.join(NHWC_DIR, f"{name}.ref.json"))
        print(f"nhwc/{name}: {len(data)} B; ops {dict(sorted(ops.items()))}; transposes {perms}; "
              f"ORT vs Keras max |diff| {float(np.max(np.abs(outs['output'] - keras_out))):.3g}")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    what = args[0] if args and args[0] in ("mlperf", "keras", "nhwc") else None
    filters = args[1:] if what else args
    if what in (None, "mlperf"):
        gen_mlperf(filters)
    if what in (None, "keras"):
        gen_keras(filters)
    if what in (None, "nhwc"):
        gen_nhwc(filters)


if __name__ == "__main__":
    main()
