"""`tvm.arith.detect_clip_bound`: per-variable bounds read off a conjunction of comparisons."""

from __future__ import annotations

from collections.abc import Sequence

from ..tir import expr as tx
from ..tir.expr import PrimExpr, Var, as_expr, make_const
from ..tir.functor import post_order_visit
from .analyzer import Analyzer
from .linear_equation import detect_linear_equation

# comparison -> `canonical >= 0` form of `a OP b`
_CANONICAL = {
    tx.LT: lambda a, b: b - a - make_const(a.dtype, 1),
    tx.LE: lambda a, b: b - a,
    tx.GT: lambda a, b: a - b - make_const(a.dtype, 1),
    tx.GE: lambda a, b: a - b,
    tx.EQ: lambda a, b: a - b,
}


# comparison -> (the side whose Min/Max splits into a conjunction, that class):
# `c < min(x, y)` is `c < x and c < y`; `max(x, y) < c` is `x < c and y < c`
_SPLITS = {
    tx.LT: (("b", tx.Min), ("a", tx.Max)),
    tx.LE: (("b", tx.Min), ("a", tx.Max)),
    tx.GT: (("a", tx.Min), ("b", tx.Max)),
    tx.GE: (("a", tx.Min), ("b", tx.Max)),
}


def _split_minmax(x: PrimExpr) -> list[PrimExpr] | None:
    for side, cls in _SPLITS.get(type(x), ()):
        inner = getattr(x, side)
        if isinstance(inner, cls):
            return [x.replace(**{side: inner.a}), x.replace(**{side: inner.b})]
    return None


def _clauses(e: PrimExpr) -> list[PrimExpr]:
    out, stack = [], [e]
    while stack:
        x = stack.pop()
        parts = [x.a, x.b] if isinstance(x, tx.And) else _split_minmax(x)
        if parts is None:
            out.append(x)
        else:
            stack += parts[::-1]
    return out


def _only_var(cond: PrimExpr, wanted: dict[int, Var]) -> Var | None:
    """The one variable of `wanted` that `cond` uses, or None (none of them, or several)."""
    seen: dict[int, Var] = {}
    post_order_visit(cond, lambda n: seen.setdefault(id(n), n) if id(n) in wanted else None)
    return next(iter(seen.values())) if len(seen) == 1 else None


def _clip(cond: PrimExpr, wanted: dict[int, Var], bounds: dict[int, list]) -> bool:
    """Tighten `bounds` with one clause `var * (+-1) + shift cmp 0`; False if it is not one."""
    var = _only_var(cond, wanted)
    canonical = _CANONICAL.get(type(cond))
    if var is None or canonical is None or not cond.a.dtype.is_int:
        return False
    form = detect_linear_equation(canonical(cond.a, cond.b), [var])
    if not form:
        return False
    coeff, base = Analyzer().simplify(form[0]), form[1]
    lo = hi = None
    if isinstance(coeff, tx.IntImm) and coeff.value == 1:  # var + base >= 0
        lo = tx.Sub(make_const(base.dtype, 0), base)
    elif isinstance(coeff, tx.IntImm) and coeff.value == -1:  # base - var >= 0
        hi = base
    else:
        return False
    if isinstance(cond, tx.EQ):
        lo, hi = (lo, lo) if lo is not None else (hi, hi)
    entry = bounds[id(var)]
    if lo is not None:
        entry[0] = lo if entry[0] is None else tx.Max(entry[0], lo)
    if hi is not None:
        entry[1] = hi if entry[1] is None else tx.Min(entry[1], hi)
    return True


def detect_clip_bound(cond: PrimExpr, var_list: Sequence[Var]) -> list:
    """`[min_0, max_0, min_1, max_1, ...]` for `var_list` from `cond`, a conjunction of
    integer comparisons (a min/max on the bounded side splits in two), each linear in one
    variable with coefficient +-1; an unconstrained side is None, and `[]` when a clause is
    not of that form (TVM's rule).

    `detect_clip_bound(tir.all(a < b * 6, a - 1 > 0), [a])` is `[2, b * 6 - 1]`.
    """
    ana = Analyzer()
    wanted = {id(v): v for v in var_list}
    bounds: dict[int, list] = {id(v): [None, None] for v in var_list}
    # each clause is simplified on its own: simplifying the conjunction would fold clauses
    # together (`3 <= a and 0 < min(a, b) + 30`) into forms no longer one comparison each
    for raw in _clauses(as_expr(cond)):
        for clause in _clauses(ana.simplify(raw)):
            if not _clip(clause, wanted, bounds):
                return []
    out = []
    for v in var_list:
        out += [None if b is None else ana.simplify(b) for b in bounds[id(v)]]
    return out
