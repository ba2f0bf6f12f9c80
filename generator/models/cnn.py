"""A small ResNet-style image classifier, shaped like torchvision's ResNet exported by the legacy exporter.

Batch norms stay as ``BatchNormalization`` nodes (as in a training-mode export) so that onnxruntime's
folding of them into the convolutions shows up in the layer tables.
"""

from __future__ import annotations

import math

import onnx

from generator.models.builder import FLOAT, GraphBuilder

IMAGE_SIZE = 64
STEM_CHANNELS = 48
# (channels, stride of the first block) per stage, two basic blocks each: about 70 M multiply-adds per image,
# ~1.5 ms at batch 1 on one core of the project machine (a quick sweep stays within minutes).
STAGES = ((48, 1), (96, 2), (192, 2))
BLOCKS_PER_STAGE = 2
NUM_CLASSES = 100


def build_cnn(seed: int = 0) -> onnx.ModelProto:
    """The example CNN: ``input [batch,3,64,64]`` float32 -> ``logits [batch,100]``."""
    b = GraphBuilder("resnet_small", seed)
    x = b.input("input", FLOAT, ["batch", 3, IMAGE_SIZE, IMAGE_SIZE])
    x = _conv_bn(b, x, ("/conv1", "conv1"), ("/bn1", "bn1"), 3, STEM_CHANNELS, kernel=7, stride=2)
    x = b.node("Relu", [x], "/relu")
    x = b.node("MaxPool", [x], "/maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = STEM_CHANNELS
    for stage, (out_channels, stride) in enumerate(STAGES, start=1):
        for block in range(BLOCKS_PER_STAGE):
            block_stride = stride if block == 0 else 1
            x = _basic_block(b, x, f"layer{stage}", block, channels, out_channels, block_stride)
            channels = out_channels
    x = b.node("GlobalAveragePool", [x], "/avgpool")
    x = b.node("Flatten", [x], "", axis=1)
    weight = b.normal("fc.weight", [NUM_CLASSES, channels], 1.0 / math.sqrt(channels))
    bias = b.uniform("fc.bias", [NUM_CLASSES], -0.1, 0.1)
    x = b.node("Gemm", [x, weight, bias], "/fc", alpha=1.0, beta=1.0, transB=1)
    b.output(x, "logits", FLOAT, ["batch", NUM_CLASSES])
    return b.build()


def _basic_block(
    b: GraphBuilder, x: str, layer: str, index: int, in_ch: int, out_ch: int, stride: int
) -> str:
    """conv-bn-relu-conv-bn plus the shortcut, then Add and Relu (torchvision's ``BasicBlock``)."""
    module = f"{layer}.{index}"
    scope = f"/{layer}/{module}"

    def sub(name: str) -> tuple[str, str]:
        return f"{scope}/{name}", f"{module}.{name}"

    y = _conv_bn(b, x, sub("conv1"), sub("bn1"), in_ch, out_ch, kernel=3, stride=stride)
    y = b.node("Relu", [y], f"{scope}/relu")
    y = _conv_bn(b, y, sub("conv2"), sub("bn2"), out_ch, out_ch, kernel=3, stride=1)
    shortcut = x
    if stride != 1 or in_ch != out_ch:
        # The projection shortcut is an nn.Sequential: scopes `/downsample/downsample.0`, `downsample.0.*`.
        down_conv = (f"{scope}/downsample/downsample.0", f"{module}.downsample.0")
        down_bn = (f"{scope}/downsample/downsample.1", f"{module}.downsample.1")
        shortcut = _conv_bn(b, x, down_conv, down_bn, in_ch, out_ch, kernel=1, stride=stride)
    y = b.node("Add", [y, shortcut], scope)
    return b.node("Relu", [y], f"{scope}/relu_1")


def _conv_bn(
    b: GraphBuilder,
    x: str,
    conv: tuple[str, str],
    bn: tuple[str, str],
    in_ch: int,
    out_ch: int,
    kernel: int,
    stride: int,
) -> str:
    """Conv (no bias) then BatchNormalization; ``conv`` and ``bn`` are (node scope, weight prefix)."""
    fan_in = in_ch * kernel * kernel
    # Kaiming-normal weights keep a random network's activations in a sane range through the residual stack.
    weight = b.normal(f"{conv[1]}.weight", [out_ch, in_ch, kernel, kernel], math.sqrt(2.0 / fan_in))
    pad = kernel // 2
    y = b.node(
        "Conv",
        [x, weight],
        conv[0],
        kernel_shape=[kernel, kernel],
        strides=[stride, stride],
        pads=[pad] * 4,
        dilations=[1, 1],
        group=1,
    )
    params = [
        b.uniform(f"{bn[1]}.weight", [out_ch], 0.8, 1.2),
        b.uniform(f"{bn[1]}.bias", [out_ch], -0.1, 0.1),
        b.normal(f"{bn[1]}.running_mean", [out_ch], 0.1),
        b.uniform(f"{bn[1]}.running_var", [out_ch], 0.5, 1.5),
    ]
    return b.node("BatchNormalization", [y, *params], bn[0], epsilon=1e-5, momentum=0.9)
