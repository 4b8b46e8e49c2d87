"""A multilayer perceptron: flatten, dense 128 + relu, dense 64 + relu, dense classes, softmax."""

from __future__ import annotations

import numpy as np

from ..expr import Function, var
from ..op import nn
from .init import create_workload
from .layers import Net


def get_net(batch_size, num_classes=10, image_shape=(1, 28, 28), dtype="float32"):
    """The MLP as a Relay Function of "data" and the weights."""
    net = Net(dtype)
    data = var("data", shape=(batch_size, *image_shape), dtype=dtype)
    x, units = nn.batch_flatten(data), int(np.prod(image_shape))
    for name, out in (("fc1", 128), ("fc2", 64)):
        x, units = nn.relu(net.dense(x, name, units, out)), out
    x = nn.softmax(net.dense(x, "fc3", units, num_classes))
    return Function([data, *net.params], x)


def get_workload(batch_size=1, num_classes=10, image_shape=(1, 28, 28), dtype="float32"):
    """(mod, params) of the MLP."""
    return create_workload(get_net(batch_size, num_classes, tuple(image_shape), dtype))
