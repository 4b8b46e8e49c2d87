"""Operator library: TE definitions of tensor operators (symbolic shapes allowed).

`topi.add(A, B)`, `topi.nn.conv2d_nchw(data, kernel, stride, padding, dilation)`, ...; each
returns te Tensors, ready for `te.create_prim_func`. `topi.reference` holds the numpy
reference of every operator.
"""

from . import broadcast, cuda, generic, image, layout, nn, reference, tag, utils
from .broadcast import *  # elementwise, broadcasting, cast, full, where
from .layout import layout_transform
from .linalg import batch_matmul, einsum, matmul
from .reduction import argmax, argmin, max, mean, min, prod, std, sum, variance
from .scatter import gather_nd, one_hot, scatter_elements, scatter_nd
from .sorting import argsort, sort, topk
from .transform import (
    concatenate,
    cumsum,
    expand_dims,
    flatten,
    flip,
    repeat,
    reshape,
    split,
    squeeze,
    strided_slice,
    take,
    tile,
    transpose,
    trilu,
)

__all__ = [
    "argmax",
    "argmin",
    "argsort",
    "batch_matmul",
    "concatenate",
    "cuda",
    "cumsum",
    "einsum",
    "expand_dims",
    "flatten",
    "flip",
    "gather_nd",
    "generic",
    "image",
    "layout",
    "layout_transform",
    "matmul",
    "max",
    "mean",
    "min",
    "nn",
    "one_hot",
    "prod",
    "reference",
    "repeat",
    "reshape",
    "scatter_elements",
    "scatter_nd",
    "sort",
    "split",
    "squeeze",
    "std",
    "strided_slice",
    "sum",
    "tag",
    "take",
    "tile",
    "topk",
    "transpose",
    "trilu",
    "utils",
    "variance",
]
__all__ += broadcast.__all__

from . import math
from .math import *  # ONNX's trig, bitwise and shift computes, reinterpret

__all__ += ["math"]
__all__ += math.__all__
