"""Ops whose output shape depends on tensor values known only at run time:
`dynamic_strided_slice(x, begin, end, strides)` (TVM's name), a slice of every axis with bounds
and strides read from 1-d int tensors.

Its output has x's rank and unknown dims. LegalizeOps turns it into a checked VM builtin (as
`tensor_to_shape` is): the slice's extents exist only once the bounds are read, and the builtin
checks them before copying. Give the result named dims with `R.match_cast` or reshape it to a
shape computed alongside.
"""

from __future__ import annotations

import numpy as np

from ...error import DTypeError, ShapeError
from ...runtime import vm_builtin_shape
from ..expr import Call, Expr, ExternFunc
from ..struct_info import StructInfo, TensorStructInfo
from . import _infer as I
from ._table import OpPattern, make_call, register_op
from .base import call_pure_packed
from .shape_ops import BUILTIN_LOWERING


def _infer_dynamic_strided_slice(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    for index, name in enumerate(("begin", "end", "strides"), start=1):
        t = I.tensor_arg(call, index, name)
        if t.dtype is not None and not t.dtype.is_integer:
            raise DTypeError(
                f"relax.dynamic_strided_slice: {name} has dtype {t.dtype}; it must be an int "
                "tensor (convert with relax.op.astype)"
            )
        if t.ndim not in (-1, 1):
            raise ShapeError(
                f"relax.dynamic_strided_slice: {name} has rank {t.ndim}; it must be 1-d (one "
                "value per axis of x)"
            )
        length = getattr(t.shape[0], "value", None) if t.shape is not None else None
        if length is not None and x.ndim >= 0 and length != x.ndim:
            raise ShapeError(
                f"relax.dynamic_strided_slice: {name} has length {length} but x has rank "
                f"{x.ndim}; give one value per axis"
            )
    return TensorStructInfo(None, x.dtype, x.ndim)


def _numpy_dynamic_strided_slice(x, begin, end, strides):
    out = vm_builtin_shape.dynamic_strided_slice(x, begin, end, strides)
    return np.asarray(out.numpy())


_dynamic_strided_slice = register_op(
    "relax.dynamic_strided_slice",
    _infer_dynamic_strided_slice,
    None,
    _numpy_dynamic_strided_slice,
    OpPattern.OPAQUE,
)


def dynamic_strided_slice(x: Expr, begin: Expr, end: Expr, strides: Expr) -> Call:
    """x[begin[i]:end[i]:strides[i]] on every axis i, the bounds being 1-d int tensors read at
    run time (numpy's clamping: negative counts from the end, out-of-range clamps):
    `R.dynamic_strided_slice(x, b, e, s)`."""
    return make_call(_dynamic_strided_slice, (x, begin, end, strides))


def _lower_dynamic_strided_slice(call: Call) -> Expr:
    return call_pure_packed(
        ExternFunc(vm_builtin_shape.DYNAMIC_STRIDED_SLICE), *call.args, sinfo_args=call.struct_info
    )


BUILTIN_LOWERING["relax.dynamic_strided_slice"] = _lower_dynamic_strided_slice
