"""matmul with numpy semantics (batched, batch dims broadcast, 1-D operands allowed); einsum."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...error import ShapeError, TEError
from ...topi import einsum as topi_einsum
from ...topi import matmul as topi_matmul
from ...topi.linalg import einsum_dims, parse_einsum
from ...topi.utils import const_int, fmt_dim, fmt_shape, prove_equal
from ..expr import Call, Expr, Tuple
from ..struct_info import StructInfo, TensorStructInfo
from . import _infer as I
from ._table import OpPattern, make_call, register_op


def _infer_matmul(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    y = I.tensor_arg(call, 1, "y")
    out_dtype = call.attrs.get("out_dtype") or I.same_dtype(call, [("x", x), ("y", y)])
    for name, s in (("x", x), ("y", y)):
        if s.ndim == 0:
            raise ShapeError(f"relax.matmul: {name} is a scalar (rank 0); matmul needs rank >= 1")
    if x.shape is None or y.shape is None:
        ndim = -1 if -1 in (x.ndim, y.ndim) else max(x.ndim, y.ndim) - (x.ndim == 1) - (y.ndim == 1)
        return TensorStructInfo(None, out_dtype, ndim)
    xk_axis = len(x.shape) - 1
    yk_axis = 0 if len(y.shape) == 1 else len(y.shape) - 2
    xk, yk = x.shape[xk_axis], y.shape[yk_axis]
    if not prove_equal(xk, yk):
        why = (
            ""
            if const_int(xk) is not None and const_int(yk) is not None
            else (
                " (they are symbolic and cannot be proven equal; use R.match_cast to give them one name)"
            )
        )
        raise ShapeError(
            f"relax.matmul: inner dims differ: x has shape {fmt_shape(x.shape)}, y has shape "
            f"{fmt_shape(y.shape)}: dim {xk_axis} of x ({fmt_dim(xk)}) must equal dim {yk_axis} "
            f"of y ({fmt_dim(yk)}).{why}"
        )
    xb = (
        TensorStructInfo(x.shape[:-2], x.dtype)
        if len(x.shape) > 1
        else TensorStructInfo((), x.dtype)
    )
    yb = (
        TensorStructInfo(y.shape[:-2], y.dtype)
        if len(y.shape) > 1
        else TensorStructInfo((), y.dtype)
    )
    batch = I.broadcast(call, "x (batch dims)", xb, "y (batch dims)", yb)
    if batch is None:
        return TensorStructInfo(
            None, out_dtype, max(xb.ndim, yb.ndim) + (len(x.shape) > 1) + (len(y.shape) > 1)
        )
    out = (
        batch
        + ((x.shape[-2],) if len(x.shape) > 1 else ())
        + ((y.shape[-1],) if len(y.shape) > 1 else ())
    )
    return TensorStructInfo(out, out_dtype)


def _np_matmul(x: np.ndarray, y: np.ndarray, out_dtype: str | None = None) -> np.ndarray:
    return np.matmul(x, y).astype(out_dtype or x.dtype)


def _te_matmul(x, y, out_dtype=None):
    return topi_matmul(x, y, out_dtype=out_dtype)


_matmul = register_op(
    "relax.matmul", _infer_matmul, _te_matmul, _np_matmul, OpPattern.OUT_EWISE_FUSABLE
)


def matmul(x: Expr, y: Expr, out_dtype: str | None = None) -> Call:
    """numpy.matmul: `relax.op.matmul(x, y)`; batch dims broadcast."""
    if out_dtype is not None and str(out_dtype) in ("", "void"):  # TVM's "no dtype" spellings
        out_dtype = None
    return make_call(_matmul, (x, y), {"out_dtype": out_dtype})


# ----------------------------------------------------------------------------- einsum


def _infer_einsum(call: Call) -> StructInfo:
    parts = I.tuple_of_tensors(call, 0, "operands")
    dtype = I.same_dtype(call, [(f"operands[{n}]", p) for n, p in enumerate(parts)])
    subscripts = call.attrs["subscripts"]
    if any(p.shape is None for p in parts):
        return TensorStructInfo(None, dtype, -1)
    try:
        inputs, out = parse_einsum(subscripts, [len(p.shape) for p in parts], "relax.einsum")
        dims = einsum_dims(inputs, [p.shape for p in parts], "relax.einsum")
    except TEError as err:
        shapes = ", ".join(fmt_shape(p.shape) for p in parts)
        raise ShapeError(f"{err} (operand shapes {shapes})") from err
    return TensorStructInfo(tuple(dims[c] for c in out), dtype)


_einsum = register_op(
    "relax.einsum",
    _infer_einsum,
    lambda operands, subscripts: topi_einsum(subscripts, *operands),
    lambda operands, subscripts: np.einsum(subscripts, *operands).astype(operands[0].dtype),
    OpPattern.OUT_EWISE_FUSABLE,
)


def einsum(operands: Any, subscripts: str) -> Call:
    """numpy.einsum over a list of tensors: `relax.op.einsum([a, b], "bij,bjk->bik")`."""
    tup = operands if isinstance(operands, Expr) else Tuple(tuple(operands))
    return make_call(_einsum, (tup,), {"subscripts": str(subscripts)})
