"""`relax.op.nn`: neural-network ops."""

from ..loss import cross_entropy_with_logits, nll_loss
from .attention import attention
from .conv import conv1d, conv2d_transpose
from .conv_nd import conv1d_transpose, conv3d, conv3d_transpose
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
from .pad import pad
from .pool1d import adaptive_avg_pool1d, avg_pool1d, max_pool1d
from .pool3d import avg_pool3d, max_pool3d
from .sparse import sparse_dense
from ..nn_a3 import prelu, rms_norm  # noqa: F401 - TVM's relax.op.nn.prelu / rms_norm

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "attention",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "batch_norm",
    "conv1d",
    "conv1d_transpose",
    "conv2d",
    "conv2d_transpose",
    "conv3d",
    "conv3d_transpose",
    "cross_entropy_with_logits",
    "dense",
    "dropout",
    "gelu",
    "gelu_tanh",
    "group_norm",
    "layer_norm",
    "leakyrelu",
    "linear",
    "log_softmax",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "nll_loss",
    "pad",
    "relu",
    "relu6",
    "silu",
    "softmax",
    "sparse_dense",
    "softplus",
]
