"""`arith.detect_linear_equation`: an expression as sum(coeff_i * v_i) + base, with symbolic
coefficients allowed (they must not use the chosen variables)."""

from __future__ import annotations

from collections.abc import Sequence

from ..tir.expr import Add, IntImm, Mul, PrimExpr, Sub, Var, as_expr
from ..tir.functor import post_order_visit
from .analyzer import Analyzer

# a linear form: coefficient per chosen variable (by position; None = 0) and the rest
_Linear = tuple[list, PrimExpr | None]


def detect_linear_equation(expr: PrimExpr, var_list: Sequence[Var]) -> list[PrimExpr]:
    """`[c_0, ..., c_{n-1}, base]` with `expr == sum(c_i * var_list[i]) + base`, each `c_i` and
    `base` free of the variables and simplified; `[]` when `expr` is not linear in them.

    `detect_linear_equation(a * 4 + b * 6 + 7, [a])` is `[4, b * 6 + 7]`.
    """
    expr = as_expr(expr)
    variables = list(var_list)
    form = _linear(expr, {id(v): i for i, v in enumerate(variables)}, len(variables))
    if form is None:
        return []
    coeffs, base = form
    ana = Analyzer()
    zero = IntImm(expr.dtype, 0)
    return [ana.simplify(c) if c is not None else zero for c in coeffs] + [
        ana.simplify(base) if base is not None else zero
    ]


def _uses_any(e: PrimExpr, index: dict[int, int]) -> bool:
    found = []
    post_order_visit(e, lambda n: isinstance(n, Var) and id(n) in index and found.append(n))
    return bool(found)


def _plus(a: PrimExpr | None, b: PrimExpr | None, sub: bool = False) -> PrimExpr | None:
    if b is None:
        return a
    if a is None:
        return _neg(b) if sub else b
    return Sub(a, b) if sub else Add(a, b)


def _neg(e: PrimExpr) -> PrimExpr:
    return Sub(IntImm(e.dtype, 0), e)


def _scale(form: _Linear, k: PrimExpr) -> _Linear:
    coeffs, base = form
    return [None if c is None else Mul(c, k) for c in coeffs], (
        None if base is None else Mul(base, k)
    )


def _linear(e: PrimExpr, index: dict[int, int], n: int) -> _Linear | None:
    """The linear form of `e`, or None; recursion follows the expression's +, - and * only."""
    if isinstance(e, Var) and id(e) in index:
        coeffs = [None] * n
        coeffs[index[id(e)]] = IntImm(e.dtype, 1)
        return coeffs, None
    if isinstance(e, Add | Sub):
        a, b = _linear(e.a, index, n), _linear(e.b, index, n)
        if a is None or b is None:
            return None
        sub = isinstance(e, Sub)
        coeffs = [_plus(x, y, sub) for x, y in zip(a[0], b[0])]
        return coeffs, _plus(a[1], b[1], sub)
    if isinstance(e, Mul):
        a_free, b_free = not _uses_any(e.a, index), not _uses_any(e.b, index)
        if a_free and b_free:
            return [None] * n, e
        if a_free or b_free:
            form = _linear(e.b if a_free else e.a, index, n)
            return None if form is None else _scale(form, e.a if a_free else e.b)
        return None  # a product of two expressions that both use the variables
    if _uses_any(e, index):
        return None
    return [None] * n, e
