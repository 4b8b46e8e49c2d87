"""Affine index analysis: an expression as sum(coeff * var) + base over chosen variables."""

from __future__ import annotations

from collections.abc import Sequence

from ..tir.expr import PrimExpr, Var
from ..tir.functor import post_order_visit
from .analyzer import Analyzer
from .canonical import Canonical, Poly, is_index_dtype


def affine_coeffs(
    expr: PrimExpr, variables: Sequence[Var], analyzer: Analyzer | None = None
) -> tuple[dict[Var, int], PrimExpr] | None:
    """`(coeffs, base)` with `expr == sum(coeffs[v] * v) + base`, or None when `expr` is not
    affine in `variables` with constant coefficients. `base` is free of `variables`; every
    variable gets an entry (0 when absent).

    >>> affine_coeffs(i * 4 + j + n, [i, j])   # ({i: 4, j: 1}, n)
    """
    ana = analyzer or Analyzer()
    wanted = {id(v): v for v in variables}
    coeffs = {v: 0 for v in variables}
    if not is_index_dtype(expr.dtype):
        return None
    with ana._session():
        canon = Canonical(ana)
        p = canon.poly(ana.simplify(expr))
        base = Poly(p.dtype, const=p.const)
        for key, (coeff, atoms) in p.terms.items():
            if len(atoms) == 1 and id(atoms[0]) in wanted:
                coeffs[wanted[id(atoms[0])]] += coeff
            elif any(_uses(a, wanted) for a in atoms):
                return None
            else:
                base.add_term(key, coeff, atoms)
        return coeffs, canon.to_expr(base)


def _uses(e: PrimExpr, wanted: dict[int, Var]) -> bool:
    found = []
    post_order_visit(e, lambda n: found.append(n) if id(n) in wanted else None)
    return bool(found)
