"""ResNet-18/34/50/101/152 with pre-activation residual units (He et al., "Identity Mappings")."""

from __future__ import annotations

from ...error import ArgumentError
from ..expr import Expr, Function, var
from ..op import nn
from .init import create_workload
from .layers import Net

# num_layers -> units per stage
UNITS = {
    18: (2, 2, 2, 2),
    34: (3, 4, 6, 3),
    50: (3, 4, 6, 3),
    101: (3, 4, 23, 3),
    152: (3, 8, 36, 3),
}
EPS = 2e-5


def residual_unit(net: Net, x: Expr, name: str, cin: int, cout: int, stride: int, bottleneck: bool):
    """bn-relu-conv twice (basic) or three times (bottleneck), plus the shortcut.

    Returns the output and the name of the branch's last conv (initialised small)."""
    act = nn.relu(net.batch_norm(x, f"{name}_bn1", cin, EPS))
    if bottleneck:
        mid = cout // 4
        y = net.conv2d(act, f"{name}_conv1", cin, mid, 1)
        y = nn.relu(net.batch_norm(y, f"{name}_bn2", mid, EPS))
        y = net.conv2d(y, f"{name}_conv2", mid, mid, 3, strides=stride, padding=1)
        y = nn.relu(net.batch_norm(y, f"{name}_bn3", mid, EPS))
        last = f"{name}_conv3"
        y = net.conv2d(y, last, mid, cout, 1)
    else:
        y = net.conv2d(act, f"{name}_conv1", cin, cout, 3, strides=stride, padding=1)
        y = nn.relu(net.batch_norm(y, f"{name}_bn2", cout, EPS))
        last = f"{name}_conv2"
        y = net.conv2d(y, last, cout, cout, 3, padding=1)
    shortcut = (
        x if (cin == cout and stride == 1) else net.conv2d(act, f"{name}_sc", cin, cout, 1, stride)
    )
    return y + shortcut, f"{last}_weight"


def get_net(batch_size, num_classes, num_layers, image_shape, dtype="float32", layout="NCHW"):
    """The ResNet as a Relay Function of "data" and the weights, plus the residual names.

    `layout="NHWC"` takes an (H, W, C) image_shape and uses HWIO weights."""
    if num_layers not in UNITS:
        raise ArgumentError(f"resnet: num_layers must be one of {sorted(UNITS)}, got {num_layers}")
    bottleneck = num_layers >= 50
    filters = (64, 256, 512, 1024, 2048) if bottleneck else (64, 64, 128, 256, 512)
    net = Net(dtype, layout)
    if len(image_shape) != 3:
        raise ArgumentError(
            f"resnet: image_shape must have 3 dims ({layout[1:]}), got {image_shape}"
        )
    in_ch = image_shape[0] if layout == "NCHW" else image_shape[2]
    data = var("data", shape=(batch_size, *image_shape), dtype=dtype)
    x = net.batch_norm(data, "bn_data", in_ch, EPS, scale=False)
    x = net.conv2d(x, "conv0", in_ch, filters[0], 7, strides=2, padding=3)
    x = nn.relu(net.batch_norm(x, "bn0", filters[0], EPS))
    x = nn.max_pool2d(x, pool_size=(3, 3), strides=(2, 2), padding=(1, 1), layout=layout)
    residual, channels = [], filters[0]
    for stage, units in enumerate(UNITS[num_layers], start=1):
        for unit in range(1, units + 1):
            stride = 2 if (unit == 1 and stage > 1) else 1
            name = f"stage{stage}_unit{unit}"
            x, last = residual_unit(net, x, name, channels, filters[stage], stride, bottleneck)
            residual.append(last)
            channels = filters[stage]
    x = nn.relu(net.batch_norm(x, "bn1", channels, EPS))
    x = nn.batch_flatten(nn.global_avg_pool2d(x, layout=layout))
    x = nn.softmax(net.dense(x, "fc1", channels, num_classes))
    return Function([data, *net.params], x), residual


def get_workload(
    batch_size=1,
    num_classes=1000,
    num_layers=18,
    image_shape=None,
    layout="NCHW",
    dtype="float32",
    **kwargs,
):
    """(mod, params) of ResNet-`num_layers`: `resnet.get_workload(num_layers=18, batch_size=1)`.

    layout "NCHW" (image_shape defaults to (3, 224, 224)) or "NHWC" ((224, 224, 3), HWIO weights)."""
    if kwargs:
        raise ArgumentError(f"resnet.get_workload: unknown arguments {sorted(kwargs)}")
    if image_shape is None:
        image_shape = (3, 224, 224) if layout == "NCHW" else (224, 224, 3)
    func, residual = get_net(batch_size, num_classes, num_layers, tuple(image_shape), dtype, layout)
    return create_workload(func, scales={name: 0.3 for name in residual})
