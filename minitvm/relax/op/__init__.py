"""Graph-level ops: `relax.op.add(x, y)`, `relax.op.nn.relu(x)`, ... (each one op-table row)."""

from . import image, nn
from ._table import OP_TABLE, OpDef, OpPattern, register_op
from .base import call_dps_packed, call_tir
from .create import full, ones, zeros
from .elementwise import (
    abs,
    add,
    ceil,
    clip,
    cos,
    divide,
    equal,
    ewise_fma,
    exp,
    floor,
    floor_divide,
    floor_mod,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    mod,
    multiply,
    negative,
    not_equal,
    power,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sqrt,
    square,
    subtract,
    tanh,
    where,
)
from .linear_algebra import einsum, matmul
from .manipulate import (
    astype,
    broadcast_to,
    concat,
    expand_dims,
    flatten,
    flip,
    layout_transform,
    permute_dims,
    repeat,
    reshape,
    split,
    squeeze,
    strided_slice,
    take,
    tile,
)
from .nn import dense, linear


def relu(x):
    """2022 spelling of `relax.op.nn.relu`; warns (DeprecationWarning)."""
    import warnings

    warnings.warn(
        "relax.op.relu is the 2022 spelling; use relax.op.nn.relu", DeprecationWarning, stacklevel=2
    )
    return nn.relu(x)


from .statistical import argmax, argmin, cumsum, max, mean, min, prod, std, sum, variance

__all__ = [
    "OP_TABLE",
    "OpDef",
    "OpPattern",
    "abs",
    "add",
    "argmax",
    "argmin",
    "astype",
    "broadcast_to",
    "call_dps_packed",
    "call_tir",
    "ceil",
    "clip",
    "concat",
    "cos",
    "cumsum",
    "dense",
    "divide",
    "einsum",
    "equal",
    "erf",
    "ewise_fma",
    "exp",
    "expand_dims",
    "flatten",
    "flip",
    "floor",
    "floor_divide",
    "floor_mod",
    "full",
    "greater",
    "greater_equal",
    "image",
    "layout_transform",
    "less",
    "less_equal",
    "linear",
    "log",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "mod",
    "multiply",
    "negative",
    "nn",
    "not_equal",
    "ones",
    "permute_dims",
    "power",
    "prod",
    "register_op",
    "relu",
    "repeat",
    "reshape",
    "round",
    "rsqrt",
    "sigmoid",
    "sign",
    "sin",
    "split",
    "sqrt",
    "square",
    "squeeze",
    "std",
    "strided_slice",
    "subtract",
    "sum",
    "take",
    "tanh",
    "tile",
    "variance",
    "where",
    "zeros",
]

from . import grad
from .grad import erf

__all__ += ["grad"]

from . import elementwise_math
from .elementwise_math import *  # ONNX's trig, bitwise and shift ops, reinterpret

__all__ += elementwise_math.__all__

from .cumulative import cumprod

__all__ += ["cumprod"]

from .indexing import arange, gather_elements, sparse_reshape

__all__ += ["arange", "gather_elements", "sparse_reshape"]
