"""Graph-level ops: `relax.op.add(x, y)`, `relax.op.nn.relu(x)`, ... (each one op-table row)."""

from . import nn
from ._table import OP_TABLE, OpDef, OpPattern, register_op
from .base import call_dps_packed, call_tir
from .create import full, ones, zeros
from .elementwise import (
    abs,
    add,
    clip,
    divide,
    equal,
    ewise_fma,
    exp,
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
from .linear_algebra import matmul
from .manipulate import (
    astype,
    concat,
    expand_dims,
    flatten,
    layout_transform,
    permute_dims,
    reshape,
    split,
    strided_slice,
    take,
)
from .nn import dense, linear


def relu(x):  # noqa: ANN001, ANN201 (2022 spelling; the op is relax.op.nn.relu)
    """2022 spelling of `relax.op.nn.relu`; warns (DeprecationWarning)."""
    import warnings

    warnings.warn(
        "relax.op.relu is the 2022 spelling; use relax.op.nn.relu", DeprecationWarning, stacklevel=2
    )
    return nn.relu(x)


from .statistical import max, mean, min, prod, sum

__all__ = [
    "OP_TABLE",
    "OpDef",
    "OpPattern",
    "abs",
    "add",
    "astype",
    "call_dps_packed",
    "call_tir",
    "clip",
    "concat",
    "dense",
    "divide",
    "equal",
    "ewise_fma",
    "exp",
    "expand_dims",
    "flatten",
    "full",
    "layout_transform",
    "linear",
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
    "ones",
    "permute_dims",
    "power",
    "prod",
    "register_op",
    "relu",
    "reshape",
    "sigmoid",
    "split",
    "sqrt",
    "strided_slice",
    "subtract",
    "sum",
    "take",
    "tanh",
    "zeros",
]

from . import grad  # noqa: E402  (gradient rules: fills the `grad` column of the op table)

__all__ += ["grad"]
