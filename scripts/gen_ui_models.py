"""Small ONNX files for the diagnostics tests in ui-tests/ (each exercises one compile error).

Run from the repository root: python3 scripts/gen_ui_models.py
Deterministic: rerunning gives byte-identical files.
"""
import os
import struct

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = "ui-tests/models"


def flatbuffer_field(buf, table, slot):
    """The position of field `slot` of the flatbuffer table at `table` in `buf` (None if absent)."""
    vtable = table - struct.unpack_from("<i", buf, table)[0]
    at = 4 + 2 * slot
    return table + struct.unpack_from("<H", buf, vtable + at)[0] if at < struct.unpack_from("<H", buf, vtable)[0] else None


def save(name, nodes, inputs, outputs, inits=(), out=OUT, opset=13):
    graph = helper.make_graph(nodes, os.path.basename(name), inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8,
                              producer_name="sramfit-scripts")
    onnx.checker.check_model(model)
    os.makedirs(out, exist_ok=True)
    onnx.save(model, os.path.join(out, name + ".onnx"))
    return model


def conv_model(name, shape):
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array((rng.standard_normal((8, shape[1], 3, 3)) * 0.2).astype(np.float32), "conv.weight")
    nodes = [helper.make_node("Conv", ["input", "conv.weight"], ["conv_out"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["conv_out"], ["output"], name="relu")]
    return save(name, nodes, [helper.make_tensor_value_info("input", TensorProto.FLOAT, shape)],
                [helper.make_tensor_value_info("output", TensorProto.FLOAT, [shape[0], 8, shape[2], shape[3]])], [w])


def chain_model(out):
    """Four 3x3 convolutions in a row: three intermediate tensors of 1 KiB, of which the first and
    the third can share memory, so the planned arena (2048 bytes) is smaller than a plan without
    reuse (3072 bytes, the offline plan of the ui tests)."""
    rng = np.random.default_rng(2)
    inits, nodes, x = [], [], "input"
    for i in range(4):
        w = numpy_helper.from_array((rng.standard_normal((4, 4, 3, 3)) * 0.3).astype(np.float32), f"conv{i}.weight")
        inits.append(w)
        y = "output" if i == 3 else f"conv{i}"
        nodes.append(helper.make_node("Conv", [x, w.name], [y], name=f"conv{i}", pads=[1, 1, 1, 1]))
        x = y
    shape = [1, 4, 8, 8]
    return save("chain", nodes, [helper.make_tensor_value_info("input", TensorProto.FLOAT, shape)],
                [helper.make_tensor_value_info("output", TensorProto.FLOAT, shape)], inits, out=out)


def main():
    os.makedirs(OUT, exist_ok=True)
    # A small valid model: Conv 3x3 (4 -> 8 channels) + Relu on a 16x16 map.
    tiny = conv_model("tiny", [1, 4, 16, 16])
    # The same model with a symbolic batch dimension.
    conv_model("symbolic", ["batch", 4, 16, 16])
    # Shapes whose byte size overflows usize.
    conv_model("huge", [1, 4, 1 << 31, 1 << 31])
    # Not ONNX at all, and a valid model cut in half.
    with open(os.path.join(OUT, "not_onnx.onnx"), "w") as f:
        f.write("this is a text file, not an ONNX model\n")
    data = tiny.SerializeToString()
    with open(os.path.join(OUT, "truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])
    # A TFLite flatbuffer cut short (its file identifier intact, so it is read as TFLite).
    with open(os.path.join("tests", "models", "tflite", "keras", "lenet_int8.tflite"), "rb") as f:
        tflite = f.read()
    with open(os.path.join(OUT, "truncated.tflite"), "wb") as f:
        f.write(tflite[:2048])
    # A TFLite model whose one operator code is rewritten from FULLY_CONNECTED (9) to ARG_MAX (56),
    # an operator sramfit does not lower: both the 8-bit deprecated code and the 32-bit code.
    with open(os.path.join("tests", "models", "tflite", "keras", "fc_autoencoder_int8.tflite"), "rb") as f:
        arg_max = bytearray(f.read())
    u32 = lambda o: struct.unpack_from("<I", arg_max, o)[0]
    codes = flatbuffer_field(arg_max, u32(0), 1)  # Model.operator_codes
    code = codes + u32(codes) + 4
    code += u32(code)
    arg_max[flatbuffer_field(arg_max, code, 0)] = 56
    struct.pack_into("<i", arg_max, flatbuffer_field(arg_max, code, 3), 56)
    with open(os.path.join(OUT, "unsupported.tflite"), "wb") as f:
        f.write(arg_max)
    # A 16x8 model (int16 activations) whose SOFTMAX (25) is rewritten to LOGISTIC (14), an int16
    # operator sramfit does not lower (TFLite's int16 LOGISTIC has the same output quantization).
    with open(os.path.join("tests", "models", "tflite", "keras", "ds_cnn_a16w8.tflite"), "rb") as f:
        logistic = bytearray(f.read())
    u32 = lambda o: struct.unpack_from("<I", logistic, o)[0]
    field16 = lambda table, slot: flatbuffer_field(logistic, table, slot)
    codes = field16(u32(0), 1)  # Model.operator_codes
    codes += u32(codes)
    for i in range(u32(codes)):
        code = codes + 4 + 4 * i
        code += u32(code)
        deprecated, builtin = field16(code, 0), field16(code, 3)
        if deprecated is not None and logistic[deprecated] == 25:
            logistic[deprecated] = 14
            if builtin is not None:
                struct.pack_into("<i", logistic, builtin, 14)
    with open(os.path.join(OUT, "int16_logistic.tflite"), "wb") as f:
        f.write(logistic)
    # An operator tract knows but sramfit's runtime does not: Trilu (the upper triangle of a matrix).
    save("unsupported", [helper.make_node("Relu", ["input"], ["r"], name="relu"),
                         helper.make_node("Trilu", ["r"], ["output"], name="upper_triangle")],
         [helper.make_tensor_value_info("input", TensorProto.FLOAT, [4, 4])],
         [helper.make_tensor_value_info("output", TensorProto.FLOAT, [4, 4])], opset=14)
    # A QDQ model whose Erf has no integer form: a float operator inside a quantized region.
    q = [numpy_helper.from_array(np.array(v, dtype=d), n) for v, d, n in
         [(0.05, np.float32, "x_scale"), (0, np.int8, "x_zp"), (1 / 128, np.float32, "y_scale"), (0, np.int8, "y_zp")]]
    save("quant_float_op",
         [helper.make_node("QuantizeLinear", ["input", "x_scale", "x_zp"], ["xq"], name="input_q"),
          helper.make_node("DequantizeLinear", ["xq", "x_scale", "x_zp"], ["x"], name="input_dq"),
          helper.make_node("Erf", ["x"], ["e"], name="erf"),
          helper.make_node("QuantizeLinear", ["e", "y_scale", "y_zp"], ["eq"], name="erf_q"),
          helper.make_node("DequantizeLinear", ["eq", "y_scale", "y_zp"], ["output"], name="output_dq")],
         [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 8])],
         [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 8])], q)
    # No graph inputs: a constant output.
    c = numpy_helper.from_array(np.ones((1, 4), dtype=np.float32), "c")
    # The budget tests' model (an arena of 2048 bytes), and the same model in three folders, for the
    # offline plan files written by scripts/gen_ui_plans.sh.
    chain_model(OUT)
    for case in ("used", "stale", "corrupt"):
        chain_model(os.path.join(OUT, "offline", case))
    save("no_inputs", [helper.make_node("Relu", ["c"], ["output"], name="relu")], [],
         [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 4])], [c])


if __name__ == "__main__":
    main()
