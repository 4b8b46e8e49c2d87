"""Helpers every torch converter uses: shapes and dtypes of relax values, argument forms."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ....error import OpAttributeInvalid, OpAttributeUnImplemented
from ....tir.expr import IntImm
from ... import op as R
from ...expr import Expr
from ...struct_info import TensorStructInfo


def _sinfo(x: Expr) -> TensorStructInfo:
    sinfo = x.struct_info
    if not isinstance(sinfo, TensorStructInfo):
        raise OpAttributeInvalid(f"expected a tensor, got a value of type {sinfo}")
    return sinfo


def shape_of(x: Expr) -> tuple:
    """Dims of a tensor: ints where static, tir PrimExprs where symbolic."""
    sinfo = _sinfo(x)
    if sinfo.shape is None:
        raise OpAttributeUnImplemented(f"a tensor of unknown shape ({sinfo}) cannot be converted")
    return tuple(int(d.value) if isinstance(d, IntImm) else d for d in sinfo.shape)


def _ndim(x: Expr) -> int:
    return _sinfo(x).ndim


def _dtype(x: Expr) -> str:
    return str(_sinfo(x).dtype)


def _axis(dim: int, ndim: int) -> int:
    dim = int(dim)
    if not -ndim <= dim < max(ndim, 1):
        raise OpAttributeInvalid(f"dim {dim} is out of range for a tensor of rank {ndim}")
    return dim % ndim if ndim else 0


def _axis_as_given(dim: int, ndim: int) -> int:
    """A checked dim, negative as the user wrote it: relax ops take -1 as torch does, and
    TVM's importer passes dims through, so the imported module reads as TVM's."""
    _axis(dim, ndim)
    return int(dim)


def _pair(v: Any, n: int = 2) -> tuple:
    if isinstance(v, list | tuple):
        return tuple(v) if len(v) == n else tuple(v) * n if len(v) == 1 else tuple(v)
    return (v,) * n


def _dims(args: Sequence) -> list:
    """Varargs or one list, as Tensor.view(2, 3) and view((2, 3)) both allow."""
    if len(args) == 1 and isinstance(args[0], list | tuple):
        return list(args[0])
    return list(args)


# ----------------------------------------------------------------------------- elementwise


def _unsupported_attr(name: str, value: Any):
    raise OpAttributeUnImplemented(f"{name}={value!r} is not supported")


def _need(name: str) -> Callable:
    """A relax op by its TVM name ("nn.silu"), or a clear error when this build lacks it."""
    fn: Any = R
    for part in name.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise OpAttributeUnImplemented(f"needs relax.op.{name}, which is not available")
    return fn


class NotComputed:
    """An output of a multi-output aten op the importer does not compute (the saved mean of
    native_layer_norm, the indices of max_pool2d_with_indices): using it is refused."""

    __slots__ = ("what",)

    def __init__(self, what: str):
        self.what = what

    def __repr__(self) -> str:
        return f"<not computed: {self.what}>"


def _is_torch_dtype(value: Any) -> bool:
    return type(value).__name__ == "dtype" and type(value).__module__ == "torch"


# ----------------------------------------------------------------------------- nn


def _drop_axis(t, x: Expr, axis: int) -> Expr:
    shape = shape_of(x)
    return t.emit(R.reshape(x, shape[:axis] + shape[axis + 1 :]))
