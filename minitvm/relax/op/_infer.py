"""Helpers for struct-info inference rules: argument checks, broadcasting, dim arithmetic.

Errors name the op, the argument (by the op's parameter name) and the dims that disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...error import DTypeError, ShapeError, StructInfoKindError
from ...ir.dtype import DataType
from ...tir.expr import IntImm, PrimExpr
from ...topi.utils import const_int, fmt_dim, fmt_shape, normalize_axis, prove_equal, simplify
from ..expr import Call
from ..struct_info import (
    INDEX_DTYPE,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)


def op_name(call: Call) -> str:
    return call.op.name


def tensor_arg(call: Call, index: int, pname: str) -> TensorStructInfo:
    """The struct info of argument `index`, which must be a tensor."""
    if index >= len(call.args):
        raise ShapeError(f"{op_name(call)}: missing argument {pname!r} (position {index})")
    sinfo = call.args[index].struct_info
    if not isinstance(sinfo, TensorStructInfo):
        raise StructInfoKindError(
            f"{op_name(call)}: argument {pname!r} must be a tensor, got {type(sinfo).__name__}"
        )
    return sinfo


def tuple_of_tensors(call: Call, index: int, pname: str) -> list[TensorStructInfo]:
    sinfo = call.args[index].struct_info
    if not isinstance(sinfo, TupleStructInfo) or not all(
        isinstance(f, TensorStructInfo) for f in sinfo.fields
    ):
        raise ShapeError(
            f"{op_name(call)}: argument {pname!r} must be a tuple of tensors, got {sinfo}"
        )
    return list(sinfo.fields)


def shape_arg(call: Call, index: int, pname: str) -> tuple[PrimExpr, ...] | None:
    sinfo = call.args[index].struct_info
    if not isinstance(sinfo, ShapeStructInfo):
        raise ShapeError(
            f"{op_name(call)}: argument {pname!r} must be a shape, got {type(sinfo).__name__}"
        )
    return sinfo.values


def require_ndim(
    call: Call, sinfo: TensorStructInfo, pname: str, ndims: Sequence[int], what: str = ""
) -> None:
    if sinfo.ndim != -1 and sinfo.ndim not in ndims:
        want = " or ".join(str(n) for n in ndims)
        raise ShapeError(
            f"{op_name(call)}: {pname} has shape {fmt_shape(sinfo.shape)} (rank {sinfo.ndim}); "
            f"expected rank {want}{what}"
        )


def require_float(call: Call, sinfo: TensorStructInfo, pname: str) -> None:
    if sinfo.dtype is not None and not sinfo.dtype.is_float:
        raise DTypeError(
            f"{op_name(call)}: {pname} has dtype {sinfo.dtype}, but this op needs a float tensor; "
            f"convert it first with relax.op.astype({pname}, 'float32')"
        )


def same_dtype(call: Call, named: Sequence[tuple[str, TensorStructInfo]]) -> DataType | None:
    """The common dtype of the named tensors: known dtypes must agree, and one unknown dtype
    makes the result unknown (TVM's rule: the unknown one may turn out different)."""
    known = [(n, s.dtype) for n, s in named if s.dtype is not None]
    for n, d in known[1:]:
        if d != known[0][1]:
            raise DTypeError(
                f"{op_name(call)}: dtypes differ: {known[0][0]} is {known[0][1]}, {n} is {d}; "
                f"cast one with relax.op.astype"
            )
    return known[0][1] if known and len(known) == len(named) else None


def dim(value: Any) -> PrimExpr:
    """An int64 dim from an int or an expression, simplified (constants fold)."""
    if isinstance(value, int):
        return IntImm(INDEX_DTYPE, value)
    return simplify(value)


def dim_arith(fn: Callable[..., Any], *dims: Any) -> PrimExpr:
    """`fn` over dims, in Python ints when all are constant, else simplified tir."""
    consts = [const_int(d) for d in dims]
    if all(c is not None for c in consts):
        return dim(fn(*consts))
    return dim(fn(*(d if c is None else c for d, c in zip(dims, consts))))


def provably_differ(a: Any, b: Any) -> bool:
    """True when two dims can never be equal. TVM rejects symbolic dims only then: conv2d of
    data (n, c, h, w) with weight (32, in_channels, 3, 3) is legal, the caller binds c."""
    ca, cb = const_int(a), const_int(b)
    if ca is not None and cb is not None:
        return ca != cb
    from ...arith import Analyzer

    return bool(Analyzer().can_prove(dim(a) != dim(b)))


def broadcast(
    call: Call, xname: str, x: TensorStructInfo, yname: str, y: TensorStructInfo
) -> tuple | None:
    """numpy broadcast of two shapes; None when some dims cannot be proven equal or 1."""
    if x.shape is None or y.shape is None:
        return None
    n = max(len(x.shape), len(y.shape))
    out = []
    for k in range(n):
        ix, iy = k - (n - len(x.shape)), k - (n - len(y.shape))
        a = x.shape[ix] if ix >= 0 else None
        b = y.shape[iy] if iy >= 0 else None
        if a is None or (const_int(a) == 1 and b is not None):
            out.append(b)
        elif b is None or const_int(b) == 1 or prove_equal(a, b):
            out.append(a)
        elif const_int(a) is not None and const_int(b) is not None:
            raise ShapeError(
                f"{op_name(call)}: shapes do not broadcast: {xname} has shape {fmt_shape(x.shape)}, "
                f"{yname} has shape {fmt_shape(y.shape)}: dim {ix} of {xname} ({fmt_dim(a)}) must "
                f"equal dim {iy} of {yname} ({fmt_dim(b)}), or one of them must be 1."
            )
        else:
            return None  # symbolic dims that may or may not match: shape known only at run time
    return tuple(out)


def axis_of(call: Call, axis: int, ndim: int) -> int:
    return normalize_axis(axis, ndim, op_name(call))


def tensor(shape: Any, dtype: Any, ndim: int = -1) -> TensorStructInfo:
    return TensorStructInfo(shape, dtype, ndim if shape is None else -1)


def with_shape(
    sinfo: TensorStructInfo, shape: tuple | None, ndim: int = -1, dtype: Any = "keep"
) -> TensorStructInfo:
    dt = sinfo.dtype if dtype == "keep" else dtype
    if shape is None:
        return TensorStructInfo(None, dt, ndim)
    return TensorStructInfo(shape, dt)


def fmt(sinfo: StructInfo) -> str:
    return fmt_shape(sinfo.shape) if isinstance(sinfo, TensorStructInfo) else str(sinfo)
