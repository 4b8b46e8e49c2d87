"""A last step of `Analyzer.can_prove` for comparisons: each `floormod(a, b)` whose divisor is
proven non-negative (so positive: a divisor is never 0) lies in [0, b - 1], so where such a
term appears linearly in `lhs - rhs` it is replaced by the end of that range that makes the
comparison hardest, and the result is simplified again. `x % m * 16 + j < m * 16` with
`j < 16` and a symbolic dim `m >= 0` (a split of a fused symbolic loop) is proven this way;
interval bounds alone cannot compare `x % m` with `m`.
Sound: the replaced expression bounds the original from above for every value of the term."""

from __future__ import annotations

from typing import Any

from ..ir.structural import structural_equal
from ..tir.expr import GE, GT, LE, LT, Add, FloorMod, IntImm, Mul, PrimExpr, Sub, Var
from ..tir.functor import Mutator, post_order_visit, substitute


def _linear_coeff(e: PrimExpr, v: Var) -> int | None:
    """The constant coefficient of `v` when `e` is syntactically affine in `v` (v reached only
    through +, - and multiplication by integer constants); None otherwise (v under a division,
    min/max, select, cast, call or a symbolic factor: no linear bound follows)."""
    if e.same_as(v):
        return 1
    if not _contains(e, v):
        return 0
    if isinstance(e, Add | Sub):
        a, b = _linear_coeff(e.a, v), _linear_coeff(e.b, v)
        if a is None or b is None:
            return None
        return a + b if isinstance(e, Add) else a - b
    if isinstance(e, Mul):
        for x, k in ((e.a, e.b), (e.b, e.a)):
            if isinstance(k, IntImm):
                c = _linear_coeff(x, v)
                return None if c is None else c * k.value
    return None


def _contains(e: PrimExpr, v: Var) -> bool:
    found: list = []
    post_order_visit(e, lambda n: found.append(n) if n.same_as(v) else None)
    return bool(found)


def prove_with_mod_bounds(ana: Any, cond: PrimExpr) -> bool:
    """True when `cond` (a <, <=, >, >= of integers) holds after bounding its floormod terms."""
    if isinstance(cond, GT | GE):
        cond = (LT if isinstance(cond, GT) else LE)(cond.b, cond.a)
    if not isinstance(cond, LT | LE) or not cond.a.dtype.is_int:
        return False
    diff = Sub(cond.a, cond.b)  # prove diff < 0 (LT) or diff <= 0 (LE)
    mods: list[FloorMod] = []
    post_order_visit(diff, lambda n: mods.append(n) if isinstance(n, FloorMod) else None)
    seen: list[FloorMod] = []
    for m in mods:
        if any(m.same_as(s) or ana.can_prove_equal(m, s) for s in seen):
            continue
        seen.append(m)
    changed = False
    for m in seen:
        # a divisor known >= 0 is >= 1 (the Analyzer's rule: division by zero is undefined,
        # and codegen checks every non-constant divisor), so a shape dim n >= 0 is enough
        if not ana.can_prove(m.b >= 0):
            continue
        v = Var("mod_term", m.dtype)
        with_v = _replace(diff, m, v)
        coeff = _linear_coeff(with_v, v)
        if coeff is None or with_v.same_as(diff):
            continue
        # the largest value of diff over the term's range [0, b - 1]
        worst = Sub(m.b, IntImm(m.dtype, 1)) if coeff > 0 else IntImm(m.dtype, 0)
        diff = ana.simplify(substitute(with_v, {v: worst}))
        changed = True
    if not changed:
        return False
    zero = IntImm(diff.dtype, 0)
    return ana.can_prove(LT(diff, zero) if isinstance(cond, LT) else LE(diff, zero))


def _replace(e: PrimExpr, target: FloorMod, v: Var) -> PrimExpr:
    """`e` with every occurrence structurally equal to `target` replaced by `v`."""

    class _Sub(Mutator):
        def visit(self, n: Any) -> Any:
            if isinstance(n, FloorMod) and structural_equal(n, target):
                return v
            return super().visit(n)

    return _Sub().visit(e)
