"""What the ONNX converters share: dims, dtypes, axes, operands and attribute checks."""

from __future__ import annotations

from typing import Any

import numpy as np

from ....error import OpAttributeInvalid, OpAttributeRequired, OpAttributeUnImplemented
from ....tir.expr import IntImm, PrimExpr
from ...expr import Expr
from ...struct_info import TensorStructInfo

# ----------------------------------------------------------------------------- helpers

# entries of a matrix a converter builds at import time (a DFT's, a mel filter bank's): a
# model's dims decide it, so a hostile or mistaken one could ask for terabytes
MAX_IMPORT_ENTRIES = 2**24


def check_import_entries(entries: int, what: str) -> None:
    """Refuse a constant of more than MAX_IMPORT_ENTRIES entries before it is built."""
    if entries > MAX_IMPORT_ENTRIES:
        raise OpAttributeUnImplemented(
            f"{what} would be a constant of {entries} entries built at import, over minitvm's "
            f"limit of {MAX_IMPORT_ENTRIES}; use smaller dims"
        )


def shape_of(x: Expr) -> tuple:
    """Dims of a tensor: ints where static, tir PrimExprs where symbolic."""
    sinfo = x.struct_info
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None:
        raise OpAttributeUnImplemented(f"an input of unknown shape ({sinfo}) cannot be converted")
    return tuple(int(d.value) if isinstance(d, IntImm) else d for d in sinfo.shape)


def _ndim(x: Expr) -> int:
    return len(shape_of(x))


def _dtype(x: Expr) -> str:
    return str(x.struct_info.dtype)


def _axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise OpAttributeInvalid(f"axis {axis} is out of range for a tensor of rank {ndim}")
    return axis % ndim if ndim else 0


def _required(attrs: dict, name: str) -> Any:
    if name not in attrs:
        raise OpAttributeRequired(f"attribute {name!r} is required but missing")
    return attrs[name]


def _unsupported(name: str, value: Any, supported: Any) -> None:
    raise OpAttributeUnImplemented(
        f"attribute {name}={value!r} is not supported; supported: {supported}"
    )


def _tensor(ctx, value: Any, like: Expr | None = None) -> Expr:
    """An input as a relax expression; a known array takes `like`'s dtype when it has one."""
    if isinstance(value, np.ndarray) and like is not None:
        return ctx.expr(value.astype(_dtype(like)))
    return ctx.expr(value)


def _operands(ctx, a: Any, b: Any) -> tuple[Expr, Expr]:
    """Both operands as expressions of one dtype (a known one follows the computed one)."""
    if isinstance(a, np.ndarray) and isinstance(b, Expr):
        return _tensor(ctx, a, b), b
    if isinstance(b, np.ndarray) and isinstance(a, Expr):
        return a, _tensor(ctx, b, a)
    return ctx.expr(a), ctx.expr(b)


def _scalar(ctx, value: Any, what: str) -> float:
    array = np.asarray(ctx.known(value, what))
    if array.size != 1:
        raise OpAttributeInvalid(f"input '{what}' must hold one value, got shape {array.shape}")
    return float(array.reshape(-1)[0])


def _prod(dims) -> Any:
    """Product of dims; symbolic products are simplified (1 * n -> n) so kernels can size them."""
    from ....arith import Analyzer

    out = 1
    for d in dims:
        out = out * d
    if isinstance(out, PrimExpr):
        out = Analyzer().simplify(out)
        return int(out.value) if isinstance(out, IntImm) else out
    return out


def _const_like(ctx, x: Expr, value: float) -> Expr:
    return ctx.expr(np.asarray(value, _dtype(x)))
