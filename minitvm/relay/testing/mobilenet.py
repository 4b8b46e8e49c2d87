"""MobileNet (v1, Howard et al.): depthwise-separable conv blocks, global pooling, dense."""

from __future__ import annotations

from ..expr import Expr, Function, var
from ..op import nn
from .init import create_workload
from .layers import Net

# (output channels, stride) of each separable block, at width multiplier 1
BLOCKS = (
    (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
    (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1),
)  # fmt: skip


def conv_block(
    net: Net, x: Expr, name: str, cin: int, cout: int, kernel=3, strides=1, padding=1, groups=1
):
    """conv (no bias), batch norm, relu."""
    y = net.conv2d(x, f"{name}_conv", cin, cout, kernel, strides, padding, groups)
    return nn.relu(net.batch_norm(y, f"{name}_bn", cout))


def separable_conv_block(net: Net, x: Expr, name: str, cin: int, cout: int, stride: int) -> Expr:
    """Depthwise 3x3 (one filter per channel) then pointwise 1x1, each with bn and relu."""
    y = conv_block(net, x, f"{name}_depthwise", cin, cin, 3, stride, 1, groups=cin)
    return conv_block(net, y, f"{name}_pointwise", cin, cout, 1, 1, 0)


def get_net(batch_size, num_classes=1000, image_shape=(3, 224, 224), dtype="float32", alpha=1.0):
    """The MobileNet as a Relay Function of "data" and the weights."""
    net = Net(dtype)
    data = var("data", shape=(batch_size, *image_shape), dtype=dtype)
    channels = int(32 * alpha)
    x = conv_block(net, data, "conv_block_1", image_shape[0], channels, strides=2)
    for i, (cout, stride) in enumerate(BLOCKS, start=1):
        cout = int(cout * alpha)
        x = separable_conv_block(net, x, f"separable_conv_block_{i}", channels, cout, stride)
        channels = cout
    x = nn.batch_flatten(nn.global_avg_pool2d(x))
    x = nn.softmax(net.dense(x, "fc", channels, num_classes))
    return Function([data, *net.params], x)


def get_workload(
    batch_size=1, num_classes=1000, image_shape=(3, 224, 224), dtype="float32", layout="NCHW"
):
    """(mod, params) of MobileNet: `mobilenet.get_workload(batch_size=1)` (NCHW only)."""
    if layout != "NCHW":
        from ...error import ArgumentError

        raise ArgumentError(f"mobilenet: only layout='NCHW' is built, got {layout!r}")
    return create_workload(get_net(batch_size, num_classes, tuple(image_shape), dtype))
