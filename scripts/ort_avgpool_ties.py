"""How onnxruntime rounds a quantized average pool, measured (issue 16; runtime-min's
`quant::avg_pool2d_half_even`).

Runs random int8 inputs through one-node QDQ (DequantizeLinear -> AveragePool -> QuantizeLinear)
and QOperator (com.microsoft QLinearAveragePool) models, input and output sharing one scale and
zero point, and compares every output with four integer or float rules:

- `ort_f32`: onnxruntime's own float formula (contrib_ops/cpu/quantization/qlinear_pool.cc):
  nearbyint(sum(scale * (x - zp)) / n / scale + zp), all in f32, summed in window order;
- `half_even`: zp + round_half_even(sum(x - zp) / n), exact (avg_pool2d_half_even);
- `tflite`: TFLite's round(sum(x) / n), ties away from zero on the raw sum (avg_pool2d);
- `half_even` and `tflite` only differ from onnxruntime at exact ties of sum(x - zp) / n.

Writes nothing. Prints, per configuration, the outputs, the ties among them and each rule's
disagreements. Needs scripts/requirements-quant.txt.

    python3 scripts/ort_avgpool_ties.py
"""

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

F32 = np.float32
CHANNELS, SIZE, TRIALS = 16, 8, 20


def model(scale, zp, kernel, stride, pad, qop):
    attrs = dict(kernel_shape=[kernel] * 2, strides=[stride] * 2, pads=[pad] * 4, count_include_pad=0)
    inits = [numpy_helper.from_array(np.array(scale, F32), "s"), numpy_helper.from_array(np.array(zp, np.int8), "z")]
    if qop:
        nodes = [helper.make_node("QLinearAveragePool", ["x", "s", "z", "s", "z"], ["y"], domain="com.microsoft",
                                  **attrs)]
    else:
        nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"]),
                 helper.make_node("AveragePool", ["xf"], ["yf"], **attrs),
                 helper.make_node("QuantizeLinear", ["yf", "s", "z"], ["y"])]
    out = (SIZE + 2 * pad - kernel) // stride + 1
    graph = helper.make_graph(nodes, "pool", [helper.make_tensor_value_info("x", TensorProto.INT8, [1, CHANNELS, SIZE, SIZE])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, [1, CHANNELS, out, out])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    return m.SerializeToString(), out


def rules(values, zp, scale):
    n, centered, raw = len(values), sum(values) - len(values) * zp, sum(values)
    acc = F32(0)
    for v in values:
        acc = F32(acc + F32(F32(scale) * F32(v - zp)))
    return {
        "ort_f32": int(np.rint(F32(F32(F32(acc / F32(n)) / F32(scale)) + F32(zp)))),
        "half_even": int(np.round(centered / n)) + zp,
        "tflite": (raw + n // 2) // n if raw > 0 else -((-raw + n // 2) // n),
    }, (2 * centered) % n == 0 and centered % n != 0


def main():
    rng = np.random.default_rng(2)
    for qop in (False, True):
        for kernel, stride, pad in ((2, 2, 0), (3, 1, 1)):
            outputs, ties, wrong = 0, 0, {}
            for _ in range(TRIALS):
                scale, zp = float(F32(rng.uniform(0.001, 0.3))), int(rng.integers(-20, 20))
                m, out = model(scale, zp, kernel, stride, pad, qop)
                x = rng.integers(-128, 128, size=(1, CHANNELS, SIZE, SIZE)).astype(np.int8)
                y = ort.InferenceSession(m, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0].astype(int)
                for c in range(CHANNELS):
                    for oy in range(out):
                        for ox in range(out):
                            rows = [oy * stride - pad + i for i in range(kernel) if 0 <= oy * stride - pad + i < SIZE]
                            cols = [ox * stride - pad + i for i in range(kernel) if 0 <= ox * stride - pad + i < SIZE]
                            values = [int(x[0, c, r, q]) for r in rows for q in cols]
                            got, tie = rules(values, zp, scale)
                            outputs, ties = outputs + 1, ties + tie
                            for name, v in got.items():
                                wrong[name] = wrong.get(name, 0) + (max(-128, min(127, v)) != y[0, c, oy, ox])
            kind = "QLinearAveragePool" if qop else "QDQ AveragePool"
            print(f"{kind} {kernel}x{kernel} stride {stride} pads {pad}: {outputs} outputs, {ties} ties; "
                  + ", ".join(f"{k} differs on {v}" for k, v in wrong.items()))


if __name__ == "__main__":
    main()
