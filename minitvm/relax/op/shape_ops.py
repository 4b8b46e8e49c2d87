"""Shapes as run-time values: `shape_of` (a tensor's shape), `tensor_to_shape` (an int tensor's
values as a shape), `shape_to_tensor` (a shape as an int64 tensor).

They have no TE kernel: LegalizeOps turns each call into a `call_pure_packed` of a VM builtin
(`BUILTIN_LOWERING` below), as TVM's VM does. So does a `reshape` (`full`, `broadcast_to`) to a
Shape variable when the compiler cannot prove it valid: the host builtin checks it on every call
instead of letting a kernel read out of bounds. Name a shape's dims with
`R.match_cast(s, R.Shape([n, m]))`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...error import DTypeError, ShapeError
from ...runtime import vm_builtin_shape
from ...topi.utils import const_int, prod, prove_equal
from ..expr import Call, Expr, ExternFunc, ShapeExpr
from ..struct_info import ShapeStructInfo, StructInfo, TensorStructInfo
from . import _infer as I
from ._table import OpPattern, make_call, register_op
from .base import call_pure_packed


def _infer_shape_of(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    if x.shape is not None:
        return ShapeStructInfo(values=x.shape)
    return ShapeStructInfo(ndim=x.ndim)


def _infer_tensor_to_shape(call: Call) -> StructInfo:
    t = I.tensor_arg(call, 0, "data")
    if t.ndim not in (-1, 1):
        raise ShapeError(
            f"relax.tensor_to_shape: data has rank {t.ndim}; it must be a 1-d int tensor "
            "(one value per dim of the shape)"
        )
    if t.dtype is not None and not (t.dtype.is_int or t.dtype.is_uint):
        raise DTypeError(
            f"relax.tensor_to_shape: data has dtype {t.dtype}; a shape needs an integer tensor "
            "(convert with relax.op.astype(data, 'int64'))"
        )
    k = const_int(t.shape[0]) if t.shape is not None else None
    return ShapeStructInfo(ndim=-1 if k is None else k)


def _infer_shape_to_tensor(call: Call) -> StructInfo:
    s = I.shape_arg(call, 0, "shape")
    ndim = len(s) if s is not None else call.args[0].struct_info.ndim
    if ndim < 0:
        return TensorStructInfo(None, "int64", 1)
    return TensorStructInfo((ndim,), "int64")


_shape_of = register_op("relax.shape_of", _infer_shape_of, None, np.shape, OpPattern.OPAQUE)
_tensor_to_shape = register_op(
    "relax.tensor_to_shape",
    _infer_tensor_to_shape,
    None,
    lambda t: tuple(int(v) for v in np.asarray(t).reshape(-1)),
    OpPattern.OPAQUE,
)
_shape_to_tensor = register_op(
    "relax.shape_to_tensor",
    _infer_shape_to_tensor,
    None,
    lambda s: np.asarray(tuple(s), "int64").reshape(-1),
    OpPattern.OPAQUE,
)


def shape_of(x: Expr) -> Call:
    """The shape of tensor `x` as a Shape value: `s = R.shape_of(x)`."""
    return make_call(_shape_of, (x,))


def tensor_to_shape(data: Expr) -> Call:
    """The values of the 1-d int tensor `data` as a Shape value, known only at run time; its
    rank is data's length: `R.match_cast(R.tensor_to_shape(t), R.Shape([n, m]))`."""
    return make_call(_tensor_to_shape, (data,))


def shape_to_tensor(shape: Expr) -> Call:
    """A Shape value as a 1-d int64 tensor: `R.shape_to_tensor(R.shape_of(x))`."""
    return make_call(_shape_to_tensor, (shape,))


# ----------------------------------------------------------------------------- lowering


def _lower_to(builtin: str) -> Callable[[Call], Expr]:
    def lower(call: Call) -> Expr:
        return call_pure_packed(ExternFunc(builtin), *call.args, sinfo_args=call.struct_info)

    return lower


def _reshape_count_unproven(call: Call) -> bool:
    x, new = call.args[0].struct_info, call.args[1].struct_info
    if not isinstance(x, TensorStructInfo) or x.shape is None:
        return True
    if not isinstance(new, ShapeStructInfo) or new.values is None:
        return True
    return not prove_equal(I.dim(prod(x.shape)), I.dim(prod(new.values)))


def _lower_reshape(call: Call) -> Expr | None:
    """A reshape whose element count the compiler cannot prove equal (to a Shape variable, or
    to spelled-out dims such as (n,) into (i, 5)) runs as the builtin that checks the counts at
    run time; the others keep their (fusable, device-capable) TE kernel."""
    if not _reshape_count_unproven(call):
        return None
    if not isinstance(call.struct_info, TensorStructInfo) or call.struct_info.shape is None:
        return None  # no shape to allocate or name: leave it to LegalizeOps' usual error
    return call_pure_packed(
        ExternFunc(vm_builtin_shape.RESHAPE), *call.args, sinfo_args=call.struct_info
    )


def _lower_from_shape_var(builtin: str) -> Callable[[Call], Expr | None]:
    """An op given a Shape *variable* (say from match_cast of tensor_to_shape) runs as a checked
    builtin: a TE kernel would need the dims spelled out, and the match_cast binding them must
    stay used."""

    def lower(call: Call) -> Expr | None:
        out = call.struct_info
        shape_arg = call.args[0] if builtin == vm_builtin_shape.FULL else call.args[1]
        if isinstance(shape_arg, ShapeExpr) or not isinstance(out, TensorStructInfo):
            return None
        if out.shape is None or out.dtype is None:
            return None
        if builtin == vm_builtin_shape.FULL:
            fill = call.args[1].struct_info
            if not isinstance(fill, TensorStructInfo) or fill.dtype != out.dtype:
                return None  # a PrimValue or a cast fill: left to LegalizeOps' usual error
        return call_pure_packed(ExternFunc(builtin), *call.args, sinfo_args=out)

    return lower


# op name -> (call -> the call_pure_packed replacing it, or None to legalize it through TE)
BUILTIN_LOWERING: dict[str, Callable[[Call], Any]] = {
    "relax.shape_of": _lower_to("vm.builtin.shape_of"),
    "relax.tensor_to_shape": _lower_to(vm_builtin_shape.TENSOR_TO_SHAPE),
    "relax.shape_to_tensor": _lower_to(vm_builtin_shape.SHAPE_TO_TENSOR),
    "relax.reshape": _lower_reshape,
    "relax.full": _lower_from_shape_var(vm_builtin_shape.FULL),
    "relax.broadcast_to": _lower_from_shape_var(vm_builtin_shape.BROADCAST_TO),
}
