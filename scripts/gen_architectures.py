#!/usr/bin/env python3
"""Generate the whole-architecture test set for sramfit (random weights).

Writes tests/models/arch/NAME.onnx + NAME.ref.json for the architectures people
deploy: MobileNetV2 (alpha 0.35, 96x96), ResNet-18 (64x64), SqueezeNet 1.1,
ShuffleNetV2 (0.5x, channel shuffle via Reshape/Transpose), an Inception block
with four branches, a DenseNet block, a UNet-style encoder/decoder (Resize +
Concat skips) and a one-layer transformer encoder. (MobileNetV1-0.25 is
tests/models/vww_mobilenetv1.onnx, from gen_models.py.)

Architectures are not shrunk. Where the weights would make a large file
(ResNet-18 has 11.7M parameters), every weight above FACTOR_ABOVE elements is
computed inside the graph as Reshape(MatMul(U, V)) from two small random
factors (rank 8, same standard deviation as the He-normal draw it replaces):
an importer that folds constants sees ordinary full-size, non-uniform weights.
Deterministic: rerunning gives byte-identical files.

    python3 scripts/gen_architectures.py            # write fixtures
    python3 scripts/gen_architectures.py --stats    # also print per-node activation stats
"""

import os
import sys

sys.dont_write_bytecode = True  # keep scripts/ free of __pycache__

import numpy as np  # noqa: E402

from fixture_lib import LAYERNORM_OPSET, REPO_ROOT, GraphBuilder, generate  # noqa: E402

GENERATOR = "scripts/gen_architectures.py"
OUT_DIR = os.path.join(REPO_ROOT, "tests", "models", "arch")
HEAD_GAIN = 6.0
# Weights with more elements than this are generated in the graph from rank-8 factors.
FACTOR_ABOVE = 32768


def conv_bn(b, x, cin, cout, k, name, stride=1, pads=0, group=1, relu=True):
    """Conv (no bias) + BatchNormalization (+ Relu): the unit every CNN below is made of."""
    x = b.conv(x, cin, cout, k, name, stride=stride, pads=pads, group=group, bias=False,
               gain=2.0 if relu else 1.0)
    x = b.bn(x, cout, f"{name}_bn")
    return b.relu(x, f"{name}_relu") if relu else x


def classifier(b, x, cin, classes, name="fc"):
    x = b.node("GlobalAveragePool", [x], f"{name}_gap")
    x = b.node("Flatten", [x], f"{name}_flatten", axis=1)
    return b.gemm(x, cin, classes, name, gain=HEAD_GAIN, out=b.output("output"))


# --------------------------------------------------------------------------- #
def mobilenetv2(seed):
    """Keras MobileNetV2(alpha=0.35, 96x96), 2 classes (the visual-wake-words head)."""
    b = GraphBuilder("mobilenetv2_035", seed,
                     "MobileNetV2 alpha 0.35, 96x96 RGB, 2 classes (random weights)",
                     factor_above=FACTOR_ABOVE)
    x = b.input("input", [1, 3, 96, 96], kind="uniform")
    lo, hi = b.init("relu6.min", np.float32(0.0)), b.init("relu6.max", np.float32(6.0))

    def relu6(x, name):
        return b.node("Clip", [x, lo, hi], name)

    def divisible(v):
        new = max(8, int(v + 4) // 8 * 8)
        return new + 8 if new < 0.9 * v else new

    x = b.conv(x, 3, 16, 3, "conv1", stride=2, pads=[0, 0, 1, 1], bias=False)
    x = relu6(b.bn(x, 16, "conv1_bn"), "conv1_relu6")
    cin, i = 16, 0
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        cout = divisible(c * 0.35)
        for j in range(n):
            stride = s if j == 0 else 1
            i += 1
            y = x
            if t != 1:
                y = b.conv(y, cin, cin * t, 1, f"b{i}_expand", bias=False)
                y = relu6(b.bn(y, cin * t, f"b{i}_expand_bn"), f"b{i}_expand_relu6")
            e = cin * t
            pads = 1 if stride == 1 else [0, 0, 1, 1]
            y = b.conv(y, e, e, 3, f"b{i}_dw", stride=stride, pads=pads, group=e, bias=False)
            y = relu6(b.bn(y, e, f"b{i}_dw_bn"), f"b{i}_dw_relu6")
            y = b.conv(y, e, cout, 1, f"b{i}_project", bias=False, gain=1.0)
            y = b.bn(y, cout, f"b{i}_project_bn")
            x = b.node("Add", [x, y], f"b{i}_add") if stride == 1 and cin == cout else y
            cin = cout
    x = b.conv(x, cin, 1280, 1, "conv_last", bias=False)
    x = relu6(b.bn(x, 1280, "conv_last_bn"), "conv_last_relu6")
    classifier(b, x, 1280, 2)
    return b


def resnet18(seed):
    """torchvision ResNet-18 (BasicBlock x [2,2,2,2], 1000 classes) at 64x64."""
    b = GraphBuilder("resnet18", seed, "ResNet-18, 64x64 RGB, 1000 classes (random weights, "
                     "large ones generated in the graph from rank-8 factors)",
                     factor_above=FACTOR_ABOVE)
    x = b.input("input", [1, 3, 64, 64], kind="uniform")
    x = conv_bn(b, x, 3, 64, 7, "conv1", stride=2, pads=3)
    x = b.node("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for s, cout in enumerate([64, 128, 256, 512], start=1):
        for j in range(2):
            stride = 2 if s > 1 and j == 0 else 1
            name = f"layer{s}_{j}"
            y = conv_bn(b, x, cin, cout, 3, f"{name}_conv1", stride=stride, pads=1)
            y = conv_bn(b, y, cout, cout, 3, f"{name}_conv2", pads=1, relu=False)
            if stride != 1 or cin != cout:
                x = conv_bn(b, x, cin, cout, 1, f"{name}_down", stride=stride, relu=False)
            x = b.relu(b.node("Add", [y, x], f"{name}_add"), f"{name}_relu")
            cin = cout
    classifier(b, x, 512, 1000)
    return b


def squeezenet11(seed):
    """SqueezeNet 1.1 (torchvision layout, ceil-mode max pools), 1000 classes, at 96x96."""
    b = GraphBuilder("squeezenet11", seed, "SqueezeNet 1.1, 96x96 RGB, 1000 classes (random weights)",
                     factor_above=FACTOR_ABOVE)
    x = b.input("input", [1, 3, 96, 96], kind="uniform")
    x = b.relu(b.conv(x, 3, 64, 3, "conv1", stride=2), "conv1_relu")

    def pool(x, name):
        return b.node("MaxPool", [x], name, kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)

    def fire(x, cin, squeeze, expand, name):
        s = b.relu(b.conv(x, cin, squeeze, 1, f"{name}_squeeze"), f"{name}_squeeze_relu")
        e1 = b.relu(b.conv(s, squeeze, expand, 1, f"{name}_expand1"), f"{name}_expand1_relu")
        e3 = b.relu(b.conv(s, squeeze, expand, 3, f"{name}_expand3", pads=1), f"{name}_expand3_relu")
        return b.node("Concat", [e1, e3], f"{name}_concat", axis=1)

    x = pool(x, "pool1")
    x = fire(x, 64, 16, 64, "fire2")
    x = fire(x, 128, 16, 64, "fire3")
    x = pool(x, "pool3")
    x = fire(x, 128, 32, 128, "fire4")
    x = fire(x, 256, 32, 128, "fire5")
    x = pool(x, "pool5")
    x = fire(x, 256, 48, 192, "fire6")
    x = fire(x, 384, 48, 192, "fire7")
    x = fire(x, 384, 64, 256, "fire8")
    x = fire(x, 512, 64, 256, "fire9")
    x = b.node("Dropout", [x], "dropout")
    x = b.relu(b.conv(x, 512, 1000, 1, "conv10", gain=HEAD_GAIN), "conv10_relu")
    x = b.node("GlobalAveragePool", [x], "gap")
    b.node("Flatten", [x], "flatten", out=b.output("output"), axis=1)
    return b


def shufflenetv2(seed):
    """ShuffleNetV2 0.5x (stages 48/96/192, repeats 4/8/4, conv5 1024), 1000 classes, at 96x96."""
    b = GraphBuilder("shufflenetv2", seed, "ShuffleNetV2 0.5x, 96x96 RGB, 1000 classes; channel "
                     "shuffle as Reshape-Transpose-Reshape, split as Split (random weights)",
                     factor_above=FACTOR_ABOVE)
    x = b.input("input", [1, 3, 96, 96], kind="uniform")
    x = conv_bn(b, x, 3, 24, 3, "conv1", stride=2, pads=1)
    x = b.node("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    hw = 24

    def shuffle(x, c, hw, name):
        s5 = b.init_i64(f"{name}.shape5", [1, 2, c // 2, hw, hw])
        s4 = b.init_i64(f"{name}.shape4", [1, c, hw, hw])
        x = b.node("Reshape", [x, s5], f"{name}_reshape1")
        x = b.node("Transpose", [x], f"{name}_transpose", perm=[0, 2, 1, 3, 4])
        return b.node("Reshape", [x, s4], f"{name}_reshape2")

    def branch(x, cin, c, stride, name):
        y = conv_bn(b, x, cin, c, 1, f"{name}_pw1")
        y = conv_bn(b, y, c, c, 3, f"{name}_dw", stride=stride, pads=1, group=c, relu=False)
        return conv_bn(b, y, c, c, 1, f"{name}_pw2")

    cin = 24
    for s, (cout, repeats) in enumerate([(48, 4), (96, 8), (192, 4)], start=2):
        half = cout // 2
        for j in range(repeats):
            name = f"stage{s}_{j}"
            if j == 0:
                left = conv_bn(b, x, cin, cin, 3, f"{name}_left_dw", stride=2, pads=1, group=cin,
                               relu=False)
                left = conv_bn(b, left, cin, half, 1, f"{name}_left_pw")
                right = branch(x, cin, half, 2, f"{name}_right")
                hw //= 2
            else:
                split = b.init_i64(f"{name}.split", [half, half])
                left, rest = b.node("Split", [x, split], f"{name}_split", n_out=2, axis=1)
                right = branch(rest, half, half, 1, f"{name}_right")
            x = b.node("Concat", [left, right], f"{name}_concat", axis=1)
            x = shuffle(x, cout, hw, f"{name}_shuffle")
            cin = cout
    x = conv_bn(b, x, cin, 1024, 1, "conv5")
    classifier(b, x, 1024, 1000)
    return b


def inception_block(seed):
    """GoogLeNet inception (3a): 1x1 | 1x1-3x3 | 1x1-5x5 | maxpool-1x1, concatenated, at 14x14."""
    b = GraphBuilder("inception_block", seed, "Inception (3a) block with four branches on "
                     "[1,192,14,14] -> [1,256,14,14] (random weights)")
    x = b.input("input", [1, 192, 14, 14], kind="uniform")
    b1 = b.relu(b.conv(x, 192, 64, 1, "b1_conv"), "b1_relu")
    b2 = b.relu(b.conv(x, 192, 96, 1, "b2_reduce"), "b2_reduce_relu")
    b2 = b.relu(b.conv(b2, 96, 128, 3, "b2_conv", pads=1), "b2_relu")
    b3 = b.relu(b.conv(x, 192, 16, 1, "b3_reduce"), "b3_reduce_relu")
    b3 = b.relu(b.conv(b3, 16, 32, 5, "b3_conv", pads=2), "b3_relu")
    b4 = b.node("MaxPool", [x], "b4_pool", kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
    b4 = b.relu(b.conv(b4, 192, 32, 1, "b4_conv"), "b4_relu")
    b.node("Concat", [b1, b2, b3, b4], "concat", out=b.output("output"), axis=1)
    return b


def densenet_block(seed):
    """DenseNet-BC dense block (4 layers, growth 32, bottleneck 4x) and its transition layer."""
    b = GraphBuilder("densenet_block", seed, "DenseNet-BC block: 4 x (BN-ReLU-1x1 conv-BN-ReLU-3x3 "
                     "conv, concat), then BN-ReLU-1x1 conv-AvgPool transition (random weights)")
    x = b.input("input", [1, 64, 16, 16])
    c, growth = 64, 32
    for i in range(1, 5):
        y = b.relu(b.bn(x, c, f"l{i}_bn1"), f"l{i}_relu1")
        y = b.conv(y, c, 4 * growth, 1, f"l{i}_conv1", bias=False)
        y = b.relu(b.bn(y, 4 * growth, f"l{i}_bn2"), f"l{i}_relu2")
        y = b.conv(y, 4 * growth, growth, 3, f"l{i}_conv2", pads=1, bias=False)
        x = b.node("Concat", [x, y], f"l{i}_concat", axis=1)
        c += growth
    x = b.relu(b.bn(x, c, "transition_bn"), "transition_relu")
    x = b.conv(x, c, c // 2, 1, "transition_conv", bias=False)
    b.node("AveragePool", [x], "transition_pool", out=b.output("output"),
           kernel_shape=[2, 2], strides=[2, 2])
    return b


def unet(seed):
    """UNet-style encoder/decoder: two down levels, a bottleneck, Resize x2 (nearest, then
    linear) with Concat skips, 2-class 1x1 head, at 64x64."""
    b = GraphBuilder("unet", seed, "UNet encoder/decoder 64x64: conv blocks 16/32/64, MaxPool down, "
                     "Resize up (nearest, linear) with Concat skips (random weights)")
    x = b.input("input", [1, 3, 64, 64], kind="uniform")

    def block(x, cin, cout, name):
        x = b.relu(b.conv(x, cin, cout, 3, f"{name}_conv1", pads=1), f"{name}_relu1")
        return b.relu(b.conv(x, cout, cout, 3, f"{name}_conv2", pads=1), f"{name}_relu2")

    def down(x, name):
        return b.node("MaxPool", [x], name, kernel_shape=[2, 2], strides=[2, 2])

    def up(x, name, mode):
        scales = b.init(f"{name}.scales", np.array([1, 1, 2, 2], dtype=np.float32))
        attrs = {"mode": mode}
        if mode == "linear":
            attrs["coordinate_transformation_mode"] = "half_pixel"
        return b.node("Resize", [x, "", scales], name, **attrs)

    e1 = block(x, 3, 16, "enc1")
    e2 = block(down(e1, "pool1"), 16, 32, "enc2")
    m = block(down(e2, "pool2"), 32, 64, "mid")
    d2 = b.node("Concat", [up(m, "up2", "nearest"), e2], "cat2", axis=1)
    d2 = block(d2, 96, 32, "dec2")
    d1 = b.node("Concat", [up(d2, "up1", "linear"), e1], "cat1", axis=1)
    d1 = block(d1, 48, 16, "dec1")
    b.conv(d1, 16, 2, 1, "head", gain=1.0, out=b.output("output"))
    return b


def transformer_encoder(seed):
    """One post-norm transformer encoder layer: 4-head self-attention (MatMul, Softmax) and a
    ReLU feed-forward, each with a residual Add and LayerNormalization; sequence 16, width 64."""
    seq, d, heads, ff = 16, 64, 4, 128
    hd = d // heads
    b = GraphBuilder("transformer_encoder", seed, "Transformer encoder layer: seq 16, d_model 64, "
                     "4 heads, FFN 128, post-norm LayerNormalization (random weights)",
                     opset=LAYERNORM_OPSET)
    x = b.input("input", [1, seq, d])

    def linear(x, k, n, name, gain=1.0):
        w = b.init(f"{name}.weight", b.he((k, n), k, gain))
        y = b.node("MatMul", [x, w], f"{name}_matmul")
        return b.node("Add", [y, b.init(f"{name}.bias", b.small_bias(n))], f"{name}_add")

    def layernorm(x, name):
        scale = b.init(f"{name}.scale", b.rng.uniform(0.6, 1.4, size=d))
        bias = b.init(f"{name}.bias", b.small_bias(d))
        return b.node("LayerNormalization", [x, scale, bias], name, axis=-1, epsilon=1e-5)

    heads_shape = b.init_i64("heads.shape", [1, seq, heads, hd])
    model_shape = b.init_i64("model.shape", [1, seq, d])

    def split_heads(x, name, perm):
        x = b.node("Reshape", [x, heads_shape], f"{name}_reshape")
        return b.node("Transpose", [x], f"{name}_transpose", perm=perm)

    q = split_heads(linear(x, d, d, "q"), "q", [0, 2, 1, 3])      # [1,h,seq,hd]
    k = split_heads(linear(x, d, d, "k"), "k", [0, 2, 3, 1])      # [1,h,hd,seq]
    v = split_heads(linear(x, d, d, "v"), "v", [0, 2, 1, 3])      # [1,h,seq,hd]
    s = b.node("MatMul", [q, k], "scores")
    s = b.node("Mul", [s, b.init("scores.scale", np.float32(1.0 / np.sqrt(hd)))], "scores_scaled")
    p = b.node("Softmax", [s], "attention", axis=-1)
    a = b.node("MatMul", [p, v], "context")
    a = b.node("Transpose", [a], "context_transpose", perm=[0, 2, 1, 3])
    a = b.node("Reshape", [a, model_shape], "context_reshape")
    a = linear(a, d, d, "attn_out")
    x = layernorm(b.node("Add", [x, a], "residual1"), "norm1")
    f = b.relu(linear(x, d, ff, "ff1", gain=2.0), "ff_relu")
    f = linear(f, ff, d, "ff2")
    y = b.node("Add", [x, f], "residual2")
    b.node("LayerNormalization", [y, b.init("norm2.scale", b.rng.uniform(0.6, 1.4, size=d)),
                                  b.init("norm2.bias", b.small_bias(d))],
           "norm2", out=b.output("output"), axis=-1, epsilon=1e-5)
    return b


MODELS = [
    ("mobilenetv2_035", mobilenetv2, 301),
    ("resnet18", resnet18, 302),
    ("squeezenet11", squeezenet11, 303),
    ("shufflenetv2", shufflenetv2, 304),
    ("inception_block", inception_block, 305),
    ("densenet_block", densenet_block, 306),
    ("unet", unet, 307),
    ("transformer_encoder", transformer_encoder, 308),
]


def main():
    generate(MODELS, OUT_DIR, GENERATOR, sys.argv[1:])


if __name__ == "__main__":
    main()
