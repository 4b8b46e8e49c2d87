"""Neural-network operators as TE computes."""

from .conv2d import conv2d_nchw
from .dense import dense
from .elemwise import gelu, relu
from .norm import batch_norm, layer_norm
from .pad import pad
from .pooling import adaptive_pool2d, global_pool, pool2d
from .softmax import log_softmax, softmax

__all__ = [
    "adaptive_pool2d",
    "batch_norm",
    "conv2d_nchw",
    "dense",
    "gelu",
    "global_pool",
    "layer_norm",
    "log_softmax",
    "pad",
    "pool2d",
    "relu",
    "softmax",
]
