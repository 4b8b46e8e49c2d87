"""Shape helpers shared by the operator definitions (symbolic dims are tir expressions)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..error import ShapeError, TEError
from ..tir.expr import IntImm, PrimExpr, as_expr


def const_int(dim: Any) -> int | None:
    """The value of a constant dim (int or IntImm), or None when it is symbolic."""
    if isinstance(dim, int) and not isinstance(dim, bool):
        return dim
    return dim.value if isinstance(dim, IntImm) else None


def is_one(dim: Any) -> bool:
    return const_int(dim) == 1


def simplify(expr: Any) -> PrimExpr:
    """Simplify an index expression (constant dims fold to IntImm)."""
    expr = as_expr(expr)
    if isinstance(expr, IntImm):
        return expr
    from ..arith import Analyzer

    return Analyzer().simplify(expr)


def prove_equal(a: Any, b: Any) -> bool:
    """True when two dims are provably equal (constants, the same var, or by the simplifier)."""
    ca, cb = const_int(a), const_int(b)
    if ca is not None and cb is not None:
        return ca == cb
    if a is b:
        return True
    from ..arith import Analyzer

    return bool(Analyzer().can_prove_equal(as_expr(a), as_expr(b)))


def get_const_tuple(shape: Sequence[Any], what: str | None = None) -> tuple:
    """The shape as ints. TVM's one-argument form keeps a symbolic dim as its expression; with
    `what` (minitvm's operators) a symbolic dim raises an error naming `what`."""
    out = []
    for n, d in enumerate(shape):
        v = const_int(d)
        if v is None and what is not None:
            raise TEError(f"{what}: dim {n} is symbolic ({d}); this operator needs a static size")
        out.append(d if v is None else v)
    return tuple(out)


def normalize_axis(axis: int, ndim: int, what: str) -> int:
    """`axis` in [-ndim, ndim) → [0, ndim)."""
    if not -ndim <= int(axis) < ndim:
        raise ShapeError(f"{what}: axis {axis} is out of range for a tensor of rank {ndim}")
    return int(axis) % ndim


def normalize_axes(axis: Any, ndim: int, what: str) -> tuple[int, ...]:
    """None → all axes; int or list → sorted distinct non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = [axis] if isinstance(axis, int) else list(axis)
    out = sorted({normalize_axis(a, ndim, what) for a in axes})
    if len(out) != len(axes):
        raise ShapeError(f"{what}: axes {list(axes)} repeat an axis")
    return tuple(out)


def fmt_dim(d: Any) -> str:
    v = const_int(d)
    if v is not None:
        return str(v)
    return getattr(d, "name", None) or str(d)


def fmt_shape(shape: Sequence[Any] | None) -> str:
    if shape is None:
        return "(unknown)"
    inner = ", ".join(fmt_dim(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def prod(dims: Sequence[Any]) -> PrimExpr:
    """Product of dims (int64), folded when all are constant."""
    total: Any = 1
    for d in dims:
        c = const_int(d)
        total = total * (c if c is not None else d)
    if isinstance(total, int):
        return IntImm("int64", total)
    return total


def ravel_index(indices: Sequence[Any], shape: Sequence[Any]) -> Any:
    """Row-major linear index of `indices` in `shape`."""
    lin: Any = 0
    for i, d in zip(indices, shape):
        lin = i if isinstance(lin, int) and lin == 0 else lin * d + i
    return lin


def unravel_index(lin: Any, shape: Sequence[Any]) -> list[Any]:
    """Indices of the row-major linear index `lin` in `shape`."""
    out = []
    for n in range(len(shape) - 1, 0, -1):
        d = shape[n]
        if is_one(d):
            out.append(0)
            continue
        out.append(lin % d)
        lin = lin // d
    if shape:
        out.append(0 if is_one(shape[0]) else lin)
    return out[::-1]
