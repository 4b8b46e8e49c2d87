"""`relax.op.nn`: neural-network ops."""

from .attention import attention
from .pad import pad

from .nn import (
    adaptive_avg_pool2d,
    avg_pool2d,
    batch_norm,
    conv2d,
    dense,
    dropout,
    gelu,
    gelu_tanh,
    group_norm,
    layer_norm,
    leakyrelu,
    linear,
    log_softmax,
    max_pool2d,
    relu,
    relu6,
    silu,
    softmax,
    softplus,
)

__all__ = [
    "attention",
    "adaptive_avg_pool2d",
    "avg_pool2d",
    "batch_norm",
    "conv2d",
    "dense",
    "dropout",
    "gelu",
    "gelu_tanh",
    "group_norm",
    "layer_norm",
    "leakyrelu",
    "linear",
    "log_softmax",
    "max_pool2d",
    "pad",
    "relu",
    "relu6",
    "silu",
    "softmax",
    "softplus",
]
