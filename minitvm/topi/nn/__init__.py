"""Neural-network operators as TE computes."""

from .attention import attention
from .conv import (
    conv2d,
    conv2d_layout,
    conv2d_nchw,
    conv2d_NCHWc,
    conv2d_nhwc,
    depthwise_conv2d_NCHWc,
)
from .conv2d_hwcn import conv2d_hwcn
from .conv3d_transpose import conv3d_transpose_ncdhw
from .conv_ext import conv1d_ncw, conv1d_transpose_ncw, conv2d_transpose_nchw, conv3d_ncdhw
from .dense import dense, flatten, matmul
from .elemwise import gelu, gelu_tanh, leaky_relu, relu, silu, softplus
from .norm import batch_norm, group_norm, layer_norm
from .pad import mirror_pad, pad
from .pool3d import pool3d
from .pooling import adaptive_pool, adaptive_pool1d, adaptive_pool2d, global_pool, pool1d, pool2d
from .softmax import log_softmax, softmax
from .sparse import sparse_dense

__all__ = [
    "adaptive_pool",
    "adaptive_pool1d",
    "adaptive_pool2d",
    "attention",
    "batch_norm",
    "conv1d_ncw",
    "conv1d_transpose_ncw",
    "conv2d",
    "conv2d_NCHWc",
    "conv2d_hwcn",
    "conv2d_layout",
    "conv2d_nchw",
    "conv2d_nhwc",
    "conv2d_transpose_nchw",
    "conv3d_ncdhw",
    "conv3d_transpose_ncdhw",
    "dense",
    "depthwise_conv2d_NCHWc",
    "flatten",
    "gelu",
    "gelu_tanh",
    "global_pool",
    "group_norm",
    "layer_norm",
    "leaky_relu",
    "log_softmax",
    "matmul",
    "mirror_pad",
    "pad",
    "pool1d",
    "pool2d",
    "pool3d",
    "relu",
    "silu",
    "softmax",
    "softplus",
    "sparse_dense",
]
