"""VGG-11/13/16/19 (Simonyan & Zisserman): 3x3 conv stages with max pooling, three dense layers."""

from __future__ import annotations

from ...error import ArgumentError
from ..expr import Function, var
from ..op import nn
from .init import create_workload
from .layers import Net

# num_layers -> convs per stage (filters 64, 128, 256, 512, 512)
SPEC = {11: (1, 1, 2, 2, 2), 13: (2, 2, 2, 2, 2), 16: (2, 2, 3, 3, 3), 19: (2, 2, 4, 4, 4)}
FILTERS = (64, 128, 256, 512, 512)


def get_net(batch_size, num_classes, image_shape, num_layers, batch_norm=False, dtype="float32"):
    """The VGG network as a Relay Function of "data" and the weights."""
    if num_layers not in SPEC:
        raise ArgumentError(f"vgg: num_layers must be one of {sorted(SPEC)}, got {num_layers}")
    net = Net(dtype)
    data = var("data", shape=(batch_size, *image_shape), dtype=dtype)
    x, channels = data, image_shape[0]
    for i, (count, filters) in enumerate(zip(SPEC[num_layers], FILTERS), start=1):
        for j in range(1, count + 1):
            x = net.conv2d(x, f"conv{i}_{j}", channels, filters, 3, padding=1, bias=True)
            if batch_norm:
                x = net.batch_norm(x, f"bn{i}_{j}", filters)
            x, channels = nn.relu(x), filters
        x = nn.max_pool2d(x, pool_size=(2, 2), strides=(2, 2))
    height, width = image_shape[1] // 32, image_shape[2] // 32
    x = nn.batch_flatten(x)
    units = channels * height * width
    for name, out in (("fc6", 4096), ("fc7", 4096)):
        x = nn.dropout(nn.relu(net.dense(x, name, units, out)), rate=0.5)
        units = out
    x = nn.softmax(net.dense(x, "fc8", units, num_classes))
    return Function([data, *net.params], x)


def get_workload(
    batch_size=1,
    num_classes=1000,
    image_shape=(3, 224, 224),
    dtype="float32",
    num_layers=11,
    batch_norm=False,
):
    """(mod, params) of VGG-`num_layers`: `vgg.get_workload(num_layers=16, batch_size=1)`."""
    func = get_net(batch_size, num_classes, tuple(image_shape), num_layers, batch_norm, dtype)
    return create_workload(func)
