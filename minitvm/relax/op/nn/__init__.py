"""`relax.op.nn`: neural-network ops."""

from .nn import (
    adaptive_avg_pool2d,
    avg_pool2d,
    batch_norm,
    conv2d,
    dense,
    gelu,
    layer_norm,
    linear,
    log_softmax,
    max_pool2d,
    relu,
    relu6,
    softmax,
)

__all__ = [
    "adaptive_avg_pool2d",
    "avg_pool2d",
    "batch_norm",
    "conv2d",
    "dense",
    "gelu",
    "layer_norm",
    "linear",
    "log_softmax",
    "max_pool2d",
    "relu",
    "relu6",
    "softmax",
]
