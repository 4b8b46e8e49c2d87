"""Graph-level ops: `relax.op.add(x, y)`, `relax.op.nn.relu(x)`, ... (each one op-table row)."""

from . import ccl, elementwise, elementwise_math, image, nn, vision
from ._table import OP_TABLE, OpDef, OpPattern, register_op
from .base import call_dps_packed, call_tir
from .base import call_inplace_packed, call_pure_packed, call_py_func
from .collapse_sum import collapse_sum_like, collapse_sum_to
from .create import full, full_like, ones, ones_like, tril, triu, zeros, zeros_like
from .cumulative import cumprod
from .data_dependent import nonzero, unique
from .dynamic import dynamic_strided_slice
from . import random  # noqa: F401 - relax.op.random.dropout_mask (training dropout)
from .elementwise import *  # arithmetic, comparisons, unary math, where, clip
from .elementwise_math import *  # ONNX's trig, bitwise and shift ops, reinterpret
from .indexing import arange, gather_elements, sparse_reshape
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
from .null_value import null_value  # noqa: F401 - TVM's relax.op.null_value, R.null_value
from .scatter import gather_nd, one_hot, scatter_elements, scatter_nd
from .shape_ops import shape_of, shape_to_tensor, tensor_to_shape
from .sorting import argsort, sort, topk
from .statistical import argmax, argmin, cumsum, max, mean, min, prod, std, sum, variance


def relu(x):
    """2022 spelling of `relax.op.nn.relu`; warns (DeprecationWarning)."""
    import warnings

    warnings.warn(
        "relax.op.relu is the 2022 spelling; use relax.op.nn.relu", DeprecationWarning, stacklevel=2
    )
    return nn.relu(x)


# last: grad attaches a gradient rule to every op registered above
from . import grad, grad_norm  # noqa: F401 - grad_norm: batch_norm's rule in both modes
from . import grad_extra  # noqa: F401 - tril/triu, variance/std, grouped conv2d rules
from . import grad_more  # noqa: F401 - transposed/3-D convs, einsum, attention, resize rules
from . import grad_api  # noqa: F401 - Op.get_attr("FPrimalGradient"), relax.grad.no_grad
from .call_tir_grad import call_tir_with_grad  # a call_tir with a TE gradient
from . import grad_indexing  # noqa: F401 - sort/scatter ops join the gradient tables
from . import grad_collapse  # noqa: F401 - collapse_sum and ccl ops join them too
from . import grad_ccl  # noqa: F401 - allreduce's rule (sum/avg: self-adjoint)
from .grad import erf
from .sampling_a3 import multinomial_from_uniform  # noqa: F401 - TVM sampling op, a3 grad lines
from .effects_a10 import assert_op, print  # noqa: F401 - TVM's effect ops (R.print, R.assert_op)
from .call_tir_inplace import call_tir_inplace  # a call_tir writing into its inputs

__all__ = [
    "OP_TABLE",
    "OpDef",
    "OpPattern",
    "arange",
    "argmax",
    "argmin",
    "argsort",
    "astype",
    "broadcast_to",
    "call_dps_packed",
    "call_inplace_packed",
    "call_pure_packed",
    "call_py_func",
    "call_tir",
    "call_tir_inplace",
    "call_tir_with_grad",
    "ccl",
    "collapse_sum_like",
    "collapse_sum_to",
    "concat",
    "cumprod",
    "cumsum",
    "dynamic_strided_slice",
    "dense",
    "einsum",
    "erf",
    "expand_dims",
    "flatten",
    "flip",
    "full",
    "full_like",
    "gather_elements",
    "gather_nd",
    "grad",
    "image",
    "layout_transform",
    "linear",
    "matmul",
    "max",
    "mean",
    "min",
    "nn",
    "nonzero",
    "one_hot",
    "ones",
    "ones_like",
    "permute_dims",
    "prod",
    "register_op",
    "relu",
    "repeat",
    "reshape",
    "scatter_elements",
    "scatter_nd",
    "shape_of",
    "shape_to_tensor",
    "sort",
    "sparse_reshape",
    "split",
    "squeeze",
    "std",
    "strided_slice",
    "sum",
    "take",
    "tensor_to_shape",
    "tile",
    "topk",
    "tril",
    "triu",
    "unique",
    "variance",
    "vision",
    "zeros",
    "zeros_like",
]
__all__ += elementwise.__all__ + elementwise_math.__all__
