"""Operator library: TE definitions of tensor operators (symbolic shapes allowed).

`topi.add(A, B)`, `topi.nn.conv2d_nchw(data, kernel, stride, padding, dilation)`, ...; each
returns te Tensors, ready for `te.create_prim_func`. `topi.reference` holds the numpy
reference of every operator.
"""

from . import cuda, layout, nn, reference, tag, utils
from .broadcast import (
    abs,
    add,
    broadcast_shape,
    broadcast_to,
    cast,
    divide,
    elemwise_sum,
    equal,
    exp,
    full,
    full_like,
    log,
    maximum,
    minimum,
    multiply,
    negative,
    power,
    sigmoid,
    sqrt,
    subtract,
    tanh,
)
from .layout import layout_transform
from .linalg import batch_matmul, matmul
from .reduction import argmax, argmin, max, mean, min, prod, sum
from .transform import (
    concatenate,
    expand_dims,
    flatten,
    reshape,
    split,
    strided_slice,
    take,
    transpose,
)

__all__ = [
    "abs",
    "add",
    "argmax",
    "argmin",
    "batch_matmul",
    "broadcast_shape",
    "broadcast_to",
    "cast",
    "concatenate",
    "cuda",
    "divide",
    "elemwise_sum",
    "equal",
    "exp",
    "expand_dims",
    "flatten",
    "full",
    "full_like",
    "layout",
    "layout_transform",
    "log",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "multiply",
    "negative",
    "nn",
    "power",
    "prod",
    "reference",
    "reshape",
    "sigmoid",
    "split",
    "sqrt",
    "strided_slice",
    "subtract",
    "sum",
    "take",
    "tanh",
    "transpose",
    "tag",
    "utils",
]
