"""SqueezeNet 1.0 and 1.1 (Iandola et al.): fire modules (squeeze 1x1, expand 1x1 and 3x3)."""

from __future__ import annotations

from ...error import ArgumentError
from ..expr import Expr, Function, var
from ..op import concatenate, nn
from .init import create_workload
from .layers import Net

# version -> (stem channels, stem kernel, layers); an int is a fire module's squeeze width
# (expand widths are 4x it), "pool" a 3x3 stride-2 max pool
LAYOUT = {
    "1.0": (96, 7, ("pool", 16, 16, 32, "pool", 32, 48, 48, 64, "pool", 64)),
    "1.1": (64, 3, ("pool", 16, 16, "pool", 32, 32, "pool", 48, 48, 64, 64)),
}


def fire(net: Net, x: Expr, name: str, cin: int, squeeze: int) -> Expr:
    """Squeeze to `squeeze` channels, then expand 1x1 and 3x3 side by side (4x each)."""
    s = nn.relu(net.conv2d(x, f"{name}_squeeze1x1", cin, squeeze, 1, bias=True))
    e1 = nn.relu(net.conv2d(s, f"{name}_expand1x1", squeeze, 4 * squeeze, 1, bias=True))
    e3 = nn.relu(net.conv2d(s, f"{name}_expand3x3", squeeze, 4 * squeeze, 3, padding=1, bias=True))
    return concatenate([e1, e3], axis=1)


def get_net(batch_size, image_shape, num_classes=1000, version="1.0", dtype="float32"):
    """SqueezeNet as a Relay Function of "data" and the weights."""
    if version not in LAYOUT:
        raise ArgumentError(f"squeezenet: version must be one of {sorted(LAYOUT)}, got {version!r}")
    stem, kernel, layers = LAYOUT[version]
    net = Net(dtype)
    data = var("data", shape=(batch_size, *image_shape), dtype=dtype)
    x = nn.relu(net.conv2d(data, "conv1", image_shape[0], stem, kernel, strides=2, bias=True))
    channels, index = stem, 0
    for layer in layers:
        if layer == "pool":
            x = nn.max_pool2d(x, pool_size=(3, 3), strides=(2, 2))
            continue
        index += 1
        x, channels = fire(net, x, f"fire{index}", channels, layer), 8 * layer
    x = nn.dropout(x, rate=0.5)
    x = nn.relu(net.conv2d(x, "conv_final", channels, num_classes, 1, bias=True))
    x = nn.softmax(nn.batch_flatten(nn.global_avg_pool2d(x)))
    return Function([data, *net.params], x)


def get_workload(
    batch_size=1, num_classes=1000, version="1.0", image_shape=(3, 224, 224), dtype="float32"
):
    """(mod, params) of SqueezeNet `version` ("1.0" or "1.1")."""
    func = get_net(batch_size, tuple(image_shape), num_classes, version, dtype)
    return create_workload(func)
