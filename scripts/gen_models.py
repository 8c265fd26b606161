#!/usr/bin/env python3
"""Generate the whole-model ONNX test set for sramfit.

Writes tests/models/NAME.onnx + NAME.ref.json for every model below, and the
keyword-spotting DS-CNN a second time as examples/models/kws.onnx (+ .ref.json)
for the README example. Deterministic: rerunning gives byte-identical files.

    python3 scripts/gen_models.py            # write fixtures
    python3 scripts/gen_models.py --stats    # also print per-node activation stats
"""

import os
import sys

sys.dont_write_bytecode = True  # keep scripts/ free of __pycache__

import numpy as np  # noqa: E402

from fixture_lib import REPO_ROOT, GraphBuilder, generate  # noqa: E402

GENERATOR = "scripts/gen_models.py"
OUT_DIR = os.path.join(REPO_ROOT, "tests", "models")
EXAMPLE_DIR = os.path.join(REPO_ROOT, "examples", "models")
# Classifier heads get a larger init so the logits spread (std ~1-2) and the
# softmax is not nearly uniform.
HEAD_GAIN = 6.0


# --------------------------------------------------------------------------- #
def mlp(seed):
    b = GraphBuilder("mlp", seed, "MLP 64-128-64-10: Gemm(transB=1), Gemm(transB=0), MatMul+Add, Softmax")
    x = b.input("input", [1, 64])
    x = b.gemm(x, 64, 128, "fc1", trans_b=1)
    x = b.relu(x, "relu1")
    x = b.gemm(x, 128, 64, "fc2", trans_b=0)
    x = b.relu(x, "relu2")
    w = b.init("fc3.weight", b.he((64, 10), 64, gain=HEAD_GAIN))
    bias = b.init("fc3.bias", b.small_bias(10))
    x = b.node("MatMul", [x, w], "fc3_matmul")
    x = b.node("Add", [x, bias], "fc3_add")
    b.node("Softmax", [x], "softmax", out=b.output("output"), axis=-1)
    return b


def lenet(seed):
    b = GraphBuilder("lenet", seed, "LeNet-5 on 28x28 MNIST")
    x = b.input("input", [1, 1, 28, 28], kind="uniform")
    x = b.conv(x, 1, 6, 5, "conv1", pads=2)
    x = b.relu(x, "relu1")
    x = b.node("MaxPool", [x], "pool1", kernel_shape=[2, 2], strides=[2, 2])
    x = b.conv(x, 6, 16, 5, "conv2")
    x = b.relu(x, "relu2")
    x = b.node("AveragePool", [x], "pool2", kernel_shape=[2, 2], strides=[2, 2])
    x = b.node("Flatten", [x], "flatten", axis=1)
    x = b.gemm(x, 400, 120, "fc1")
    x = b.relu(x, "relu3")
    x = b.gemm(x, 120, 84, "fc2")
    x = b.relu(x, "relu4")
    b.gemm(x, 84, 10, "fc3", gain=HEAD_GAIN, out=b.output("output"))
    return b


def kws_dscnn(seed):
    """MLPerf Tiny keyword spotting DS-CNN (49x10 MFCC, 12 classes)."""
    b = GraphBuilder("kws_dscnn", seed,
                     "MLPerf Tiny KWS DS-CNN: 49x10 MFCC -> 12 classes (random weights)")
    x = b.input("input", [1, 1, 49, 10])
    # TF 'same' padding for a 10x4 kernel, stride 2 on 49x10 -> 25x5:
    # H: total 9 -> top 4, bottom 5; W: total 2 -> left 1, right 1.
    x = b.conv(x, 1, 64, (10, 4), "conv1", stride=2, pads=[4, 1, 5, 1])
    x = b.bn(x, 64, "bn1")
    x = b.relu(x, "relu1")
    for i in range(1, 5):
        x = b.conv(x, 64, 64, 3, f"dw{i}", pads=1, group=64)
        x = b.bn(x, 64, f"dw{i}_bn")
        x = b.relu(x, f"dw{i}_relu")
        x = b.conv(x, 64, 64, 1, f"pw{i}")
        x = b.bn(x, 64, f"pw{i}_bn")
        x = b.relu(x, f"pw{i}_relu")
    x = b.node("AveragePool", [x], "avgpool", kernel_shape=[25, 5], strides=[25, 5])
    x = b.node("Flatten", [x], "flatten", axis=1)
    x = b.gemm(x, 64, 12, "fc", gain=HEAD_GAIN)
    b.node("Softmax", [x], "softmax", out=b.output("output"), axis=-1)
    return b


def resnet8(seed):
    """MLPerf Tiny image classification ResNet-8 (CIFAR-10)."""
    b = GraphBuilder("resnet8", seed, "MLPerf Tiny ResNet-8 for CIFAR-10 (random weights)")
    x = b.input("input", [1, 3, 32, 32], kind="uniform")
    x = b.conv(x, 3, 16, 3, "conv1", pads=1)
    x = b.bn(x, 16, "bn1")
    x = b.relu(x, "relu1")
    cin = 16
    for s, cout in enumerate([16, 32, 64], start=1):
        stride = 1 if s == 1 else 2
        # Keras 'same' with stride 2 on an even map pads only bottom/right.
        pads = [1, 1, 1, 1] if stride == 1 else [0, 0, 1, 1]
        y = b.conv(x, cin, cout, 3, f"s{s}_conv1", stride=stride, pads=pads)
        y = b.bn(y, cout, f"s{s}_bn1")
        y = b.relu(y, f"s{s}_relu1")
        y = b.conv(y, cout, cout, 3, f"s{s}_conv2", pads=1)
        y = b.bn(y, cout, f"s{s}_bn2")
        if stride == 1 and cin == cout:
            shortcut = x
        else:
            shortcut = b.conv(x, cin, cout, 1, f"s{s}_shortcut", stride=2, gain=1.0)
        x = b.node("Add", [y, shortcut], f"s{s}_add")
        x = b.relu(x, f"s{s}_relu2")
        cin = cout
    x = b.node("AveragePool", [x], "avgpool", kernel_shape=[8, 8], strides=[8, 8])
    x = b.node("Flatten", [x], "flatten", axis=1)
    x = b.gemm(x, 64, 10, "fc", gain=HEAD_GAIN)
    b.node("Softmax", [x], "softmax", out=b.output("output"), axis=-1)
    return b


def mobilenetv2_block(seed):
    b = GraphBuilder("mobilenetv2_block", seed,
                     "Two MobileNetV2 inverted-residual blocks (stride 1 with residual, stride 2 without)")
    x = b.input("input", [1, 16, 24, 24])
    cmin = b.init("relu6.min", np.float32(0.0))
    cmax = b.init("relu6.max", np.float32(6.0))

    def block(x, i, cin, cexp, cout, stride, out=None):
        y = b.conv(x, cin, cexp, 1, f"b{i}_expand")
        y = b.bn(y, cexp, f"b{i}_expand_bn")
        y = b.node("Clip", [y, cmin, cmax], f"b{i}_expand_relu6")
        y = b.conv(y, cexp, cexp, 3, f"b{i}_dw", stride=stride, pads=1, group=cexp)
        y = b.bn(y, cexp, f"b{i}_dw_bn")
        y = b.node("Clip", [y, cmin, cmax], f"b{i}_dw_relu6")
        y = b.conv(y, cexp, cout, 1, f"b{i}_project", gain=1.0)
        if stride == 1 and cin == cout:
            y = b.bn(y, cout, f"b{i}_project_bn")
            return b.node("Add", [x, y], f"b{i}_add", out=out)
        return b.bn(y, cout, f"b{i}_project_bn", out=out)

    x = block(x, 1, 16, 96, 16, 1)                          # [1,16,24,24], residual
    block(x, 2, 16, 96, 24, 2, out=b.output("output"))      # [1,24,12,12], no residual
    return b


def fc_autoencoder(seed):
    """MLPerf Tiny anomaly detection (ToyADMOS) dense autoencoder."""
    b = GraphBuilder("fc_autoencoder", seed,
                     "MLPerf Tiny anomaly-detection autoencoder 640-128x4-8-128x4-640 (random weights)")
    x = b.input("input", [1, 640])
    dims = [640, 128, 128, 128, 128, 8, 128, 128, 128, 128]
    for i in range(1, len(dims)):
        x = b.gemm(x, dims[i - 1], dims[i], f"fc{i}")
        x = b.bn(x, dims[i], f"bn{i}")
        x = b.relu(x, f"relu{i}")
    b.gemm(x, 128, 640, f"fc{len(dims)}", gain=1.0, out=b.output("output"))
    return b


def mnist_cnn(seed):
    """Keras 'mnist_cnn' example topology. The dense layer is 32 wide instead
    of 128 so the committed file stays ~1.2 MB (9216x128 weights would be 4.7 MB)."""
    b = GraphBuilder("mnist_cnn", seed,
                     "Keras MNIST CNN: conv32-conv64-maxpool-dense32-dense10 (dense narrowed from 128)")
    x = b.input("input", [1, 1, 28, 28], kind="uniform")
    x = b.conv(x, 1, 32, 3, "conv1")
    x = b.relu(x, "relu1")
    x = b.conv(x, 32, 64, 3, "conv2")
    x = b.relu(x, "relu2")
    x = b.node("MaxPool", [x], "pool", kernel_shape=[2, 2], strides=[2, 2])
    x = b.node("Flatten", [x], "flatten", axis=1)
    x = b.gemm(x, 9216, 32, "fc1")
    x = b.relu(x, "relu3")
    x = b.gemm(x, 32, 10, "fc2", gain=HEAD_GAIN)
    b.node("Softmax", [x], "softmax", out=b.output("output"), axis=-1)
    return b


def vww_mobilenetv1(seed):
    """MobileNetV1 alpha=0.25, 96x96x3, 2 classes (MLPerf Tiny visual wake words)."""
    b = GraphBuilder("vww_mobilenetv1", seed,
                     "MLPerf Tiny VWW MobileNetV1 alpha 0.25, 96x96 RGB, 2 classes (random weights)")
    x = b.input("input", [1, 3, 96, 96], kind="uniform")
    # Keras 'same' padding: stride 1 -> 1 all round; stride 2 on even maps -> bottom/right only.
    same_s2 = [0, 0, 1, 1]
    x = b.conv(x, 3, 8, 3, "conv1", stride=2, pads=same_s2, bias=False)
    x = b.bn(x, 8, "conv1_bn")
    x = b.relu(x, "conv1_relu")
    blocks = [(16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2),
              (128, 1), (128, 1), (128, 1), (128, 1), (128, 1), (256, 2), (256, 1)]
    cin = 8
    for i, (cout, stride) in enumerate(blocks, start=1):
        pads = 1 if stride == 1 else same_s2
        x = b.conv(x, cin, cin, 3, f"dw{i}", stride=stride, pads=pads, group=cin, bias=False)
        x = b.bn(x, cin, f"dw{i}_bn")
        x = b.relu(x, f"dw{i}_relu")
        x = b.conv(x, cin, cout, 1, f"pw{i}", bias=False)
        x = b.bn(x, cout, f"pw{i}_bn")
        x = b.relu(x, f"pw{i}_relu")
        cin = cout
    x = b.node("GlobalAveragePool", [x], "gap")
    x = b.node("Flatten", [x], "flatten", axis=1)
    x = b.gemm(x, 256, 2, "fc", gain=HEAD_GAIN)
    b.node("Softmax", [x], "softmax", out=b.output("output"), axis=-1)
    return b


# -- small structural graphs ----------------------------------------------------- #
def branch_merge(seed):
    b = GraphBuilder("branch_merge", seed, "Conv -> two Conv branches -> Add -> Relu")
    x = b.input("input", [1, 4, 16, 16])
    x = b.conv(x, 4, 8, 3, "conv0", pads=1)
    a = b.conv(x, 8, 8, 3, "branch_a", pads=1, gain=1.0)
    c = b.conv(x, 8, 8, 1, "branch_b", gain=1.0)
    x = b.node("Add", [a, c], "add")
    b.relu(x, "relu", out=b.output("output"))
    return b


def concat_branches(seed):
    b = GraphBuilder("concat_branches", seed,
                     "Two Conv+Relu branches concatenated on channels, then a 1x1 Conv")
    x = b.input("input", [1, 4, 12, 12])
    a = b.conv(x, 4, 6, 3, "branch_a", pads=1)
    a = b.relu(a, "branch_a_relu")
    c = b.conv(x, 4, 10, 1, "branch_b")
    c = b.relu(c, "branch_b_relu")
    x = b.node("Concat", [a, c], "concat", axis=1)
    x = b.conv(x, 16, 8, 1, "fuse", gain=1.0)
    b.relu(x, "fuse_relu", out=b.output("output"))
    return b


def reshape_views(seed):
    b = GraphBuilder("reshape_views", seed,
                     "Conv -> Reshape -> Transpose -> Reshape -> Unsqueeze/Identity/Squeeze -> Gemm "
                     "-> Dropout -> Relu -> Unsqueeze -> Flatten -> Gemm")
    x = b.input("input", [1, 3, 8, 8])
    x = b.conv(x, 3, 4, 3, "conv", pads=1)                                    # [1,4,8,8]
    x = b.relu(x, "relu1")
    x = b.node("Reshape", [x, b.init_i64("reshape1.shape", [0, 4, 64])], "reshape1")  # [1,4,64]
    x = b.node("Transpose", [x], "transpose", perm=[0, 2, 1])                # [1,64,4]
    x = b.node("Reshape", [x, b.init_i64("reshape2.shape", [1, -1])], "reshape2")     # [1,256]
    x = b.node("Unsqueeze", [x, b.init_i64("unsqueeze1.axes", [1])], "unsqueeze1")    # [1,1,256]
    x = b.node("Identity", [x], "identity")
    x = b.node("Squeeze", [x, b.init_i64("squeeze.axes", [1])], "squeeze")            # [1,256]
    x = b.gemm(x, 256, 16, "fc1")
    x = b.node("Dropout", [x], "dropout")
    x = b.relu(x, "relu2")
    x = b.node("Unsqueeze", [x, b.init_i64("unsqueeze2.axes", [2])], "unsqueeze2")    # [1,16,1]
    x = b.node("Flatten", [x], "flatten", axis=1)                            # [1,16]
    b.gemm(x, 16, 5, "fc2", trans_b=0, gain=1.0, out=b.output("output"))
    return b


def two_inputs_two_outputs(seed):
    b = GraphBuilder("two_inputs_two_outputs", seed,
                     "Two inputs, two outputs; output_0 is also consumed by a later node")
    x0 = b.input("input_0", [1, 8])
    x1 = b.input("input_1", [1, 8])
    s = b.node("Add", [x0, x1], "add")
    y0 = b.node("Mul", [s, x0], "mul", out=b.output("output_0"))
    g = b.gemm(y0, 8, 4, "fc", gain=1.0)
    b.node("Tanh", [g], "tanh", out=b.output("output_1"))
    return b


MODELS = [
    ("mlp", mlp, 101),
    ("lenet", lenet, 102),
    ("kws_dscnn", kws_dscnn, 103),
    ("resnet8", resnet8, 104),
    ("mobilenetv2_block", mobilenetv2_block, 105),
    ("fc_autoencoder", fc_autoencoder, 106),
    ("mnist_cnn", mnist_cnn, 107),
    ("vww_mobilenetv1", vww_mobilenetv1, 108),
    ("branch_merge", branch_merge, 109),
    ("concat_branches", concat_branches, 110),
    ("reshape_views", reshape_views, 111),
    ("two_inputs_two_outputs", two_inputs_two_outputs, 112),
]


def main():
    generate(MODELS, OUT_DIR, GENERATOR, sys.argv[1:], copies={"kws_dscnn": [(EXAMPLE_DIR, "kws")]})


if __name__ == "__main__":
    main()
