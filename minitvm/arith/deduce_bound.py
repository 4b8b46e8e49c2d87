"""`tvm.arith.deduce_bound`: the values of one variable for which a comparison holds.

The comparison is turned into `expr >= result`, `expr <= result` or `expr == result` with the
variable on the `expr` side; the vars of `relax_map` are relaxed to their worst case; then the
operations between the root of `expr` and the variable are undone one at a time (+, -, * by a
term of known sign, // by one of known sign), moving them onto `result`. Integer division
rounds toward the bound that keeps it sound: `4 * a <= 9` gives `a <= 2`, `4 * a >= 9` gives
`a >= 3`. Anything else (the variable twice, under min/max/%, as a divisor) gives the empty
set, as in TVM.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any

from ..tir import expr as tx
from ..tir.expr import PrimExpr, Var, as_expr
from ..tir.functor import Visitor
from .analyzer import Analyzer
from .int_set import IntervalSet, neg_inf, pos_inf


class _Cmp(Enum):
    GE = ">="  # expr >= result
    LE = "<="  # expr <= result
    EQ = "=="

    def reversed(self) -> _Cmp:
        return {_Cmp.GE: _Cmp.LE, _Cmp.LE: _Cmp.GE, _Cmp.EQ: _Cmp.EQ}[self]


class _Fail(Exception):
    """The comparison is outside what deduce_bound solves: the answer is the empty set."""


class _Count(Visitor):
    def __init__(self, var: Var) -> None:
        self.var, self.count = var, 0

    def visit_Var(self, v: Var) -> None:
        self.count += v is self.var


def _count(e: PrimExpr, var: Var) -> int:
    counter = _Count(var)
    counter.visit(e)
    return counter.count


def _one(dtype: Any) -> PrimExpr:
    return tx.make_const(dtype, 1)


# comparison class -> (its cmp with the variable on the left, on the right, result offset):
# `a < b` is `a <= b - 1` with the variable in a, `b >= a + 1` with it in b
_COMPARISONS: dict[type, tuple[_Cmp, _Cmp, int]] = {
    tx.LT: (_Cmp.LE, _Cmp.GE, -1),
    tx.LE: (_Cmp.LE, _Cmp.GE, 0),
    tx.GT: (_Cmp.GE, _Cmp.LE, 1),
    tx.GE: (_Cmp.GE, _Cmp.LE, 0),
    tx.EQ: (_Cmp.EQ, _Cmp.EQ, 0),
}


def _split(cond: PrimExpr, var: Var) -> tuple[_Cmp, PrimExpr, PrimExpr]:
    """(cmp, expr, result) with `var` in expr and `expr cmp result` equivalent to `cond`."""
    row = _COMPARISONS.get(type(cond))
    if row is None:
        raise _Fail
    left_cmp, right_cmp, offset = row
    if _count(cond.a, var):
        expr, other, cmp, delta = cond.a, cond.b, left_cmp, offset
    else:  # mirrored: `a < b` is `b > a`, whose offset has the opposite sign
        expr, other, cmp, delta = cond.b, cond.a, right_cmp, -offset
    if delta:
        other = tx.Add(other, tx.make_const(other.dtype, delta))
    return cmp, expr, other


class _Deducer:
    def __init__(self, var: Var, hint: dict, ana: Analyzer) -> None:
        self.var, self.hint, self.ana = var, hint, ana

    def sign(self, e: PrimExpr) -> int:
        """+1 / -1 when `e` is provably >= 0 / <= 0 over the hint ranges; else fail."""
        if e.dtype.is_uint:
            return 1
        s = self.ana.int_set(e, self.hint)
        zero = tx.make_const(e.dtype, 0)
        if s.lo is not None and self.ana.can_prove(tx.GE(s.lo, zero)):
            return 1
        if s.hi is not None and self.ana.can_prove(tx.LE(s.hi, zero)):
            return -1
        raise _Fail

    def solve(self, cmp: _Cmp, expr: PrimExpr, result: PrimExpr) -> tuple[_Cmp, PrimExpr]:
        """Undo the operations of `expr` down to the variable (`expr cmp result` throughout)."""
        while expr is not self.var:
            kind = type(expr)
            if kind is tx.Add:
                in_a = _count(expr.a, self.var) > 0
                result = tx.Sub(result, expr.b if in_a else expr.a)
                expr = expr.a if in_a else expr.b
            elif kind is tx.Sub:
                if _count(expr.a, self.var):  # x - c cmp r  ->  x cmp r + c
                    result, expr = tx.Add(result, expr.b), expr.a
                else:  # c - x cmp r  ->  x cmp' c - r
                    result, expr, cmp = tx.Sub(expr.a, result), expr.b, cmp.reversed()
            elif kind is tx.Mul:
                cmp, result, expr = self._mul(cmp, result, expr)
            elif kind is tx.FloorDiv:
                cmp, result, expr = self._floordiv(cmp, result, expr)
            else:
                raise _Fail
        return cmp, self.ana.simplify(result)

    def _mul(self, cmp: _Cmp, result: PrimExpr, expr: tx.Mul) -> tuple:
        in_a = _count(expr.a, self.var) > 0
        operand, inner = (expr.b, expr.a) if in_a else (expr.a, expr.b)
        if self.sign(operand) < 0:
            cmp = cmp.reversed()
        exact = self.ana.can_prove(
            tx.EQ(tx.FloorMod(result, operand), tx.make_const(result.dtype, 0))
        )
        if exact and self.ana.can_prove_equal(result, operand):
            return cmp, _one(result.dtype), inner  # r * x == r (r != 0): x == 1
        quotient = tx.FloorDiv(result, operand)  # rounds down: right for <=
        if not exact:
            if cmp is _Cmp.EQ:
                raise _Fail  # no integer solution to check against
            if cmp is _Cmp.GE:
                quotient = tx.Add(quotient, _one(result.dtype))
        return cmp, quotient, inner

    def _floordiv(self, cmp: _Cmp, result: PrimExpr, expr: tx.FloorDiv) -> tuple:
        if _count(expr.b, self.var) or cmp is _Cmp.EQ:
            raise _Fail  # a variable divisor; x // d == r bounds x on both sides
        divisor = expr.b
        if self.ana.can_prove_equal(divisor, 0):
            raise _Fail
        negative = self.sign(divisor) < 0
        if negative:  # x // -d cmp r  ->  -((x + d - 1) // d) cmp r  ->  (x + d - 1) // d cmp' -r
            zero = tx.make_const(divisor.dtype, 0)
            cmp, divisor, result = cmp.reversed(), tx.Sub(zero, divisor), tx.Sub(zero, result)
        if cmp is _Cmp.GE:  # x // d >= r  ->  x >= r * d
            result = tx.Mul(result, divisor)
        else:  # x // d <= r  ->  x <= r * d + d - 1
            result = tx.Sub(tx.Add(tx.Mul(result, divisor), divisor), _one(divisor.dtype))
        if negative:
            result = tx.Add(tx.Sub(result, divisor), _one(divisor.dtype))
        return cmp, result, expr.a


def _sets(mapping: Mapping | None) -> dict:
    """Var -> IntervalSet with PrimExpr bounds (TVM accepts plain ints: IntervalSet(2, 3))."""
    out = {}
    for v, s in (mapping or {}).items():
        lo = None if s.lo is None else as_expr(s.lo)
        hi = None if s.hi is None else as_expr(s.hi)
        out[v] = IntervalSet(lo, hi, s.dtype or (lo if lo is not None else hi).dtype)
    return out


def _relaxed(e: PrimExpr, relax: dict, ana: Analyzer) -> IntervalSet:
    """`e`'s set over the relaxed vars; `e` itself when it mentions none of them."""
    if not any(_count(e, v) for v in relax):
        return IntervalSet.point(e)
    return ana.int_set(e, relax)


def _relax(cmp: _Cmp, expr: PrimExpr, result: PrimExpr, relax: dict, ana: Analyzer) -> tuple:
    """Worst case over the relaxed vars: `expr >= result` must hold for expr's least value
    and result's greatest (mirrored for <=); `==` only when both sides are fixed."""
    e_set, r_set = _relaxed(expr, relax, ana), _relaxed(result, relax, ana)
    if cmp is _Cmp.EQ:
        for s in (e_set, r_set):
            if s.lo is None or s.hi is None or not ana.can_prove_equal(s.lo, s.hi):
                raise _Fail
        return e_set.lo, r_set.lo
    e_side, r_side = (e_set.lo, r_set.hi) if cmp is _Cmp.GE else (e_set.hi, r_set.lo)
    if e_side is None or r_side is None:
        raise _Fail
    return e_side, r_side


def deduce_bound(
    var: Var, cond: PrimExpr, hint_map: Mapping | None = None, relax_map: Mapping | None = None
) -> IntervalSet:
    """The interval of `var` for which `cond` (a comparison) holds, as TVM's
    `arith.deduce_bound`: `hint_map` (Var -> IntervalSet) gives the signs of the other terms,
    the vars of `relax_map` are taken at their worst case. An unbounded side is `neg_inf()` /
    `pos_inf()`; when the comparison cannot be solved the result `is_nothing()`.

    >>> deduce_bound(a, a * 4 + b < c, {b: IntervalSet(2, 3), c: IntervalSet(10, 15)})
    ...  # max_value: (c - 1 - b) // 4
    """
    ana = Analyzer()
    cond = as_expr(cond)  # `a == b` arrives as a lazy EqualOp
    hint, relax = _sets(hint_map), _sets(relax_map)
    try:
        if _count(cond, var) != 1:
            raise _Fail
        cmp, expr, result = _split(cond, var)
        expr, result = _relax(cmp, expr, result, relax, ana)
        if _count(expr, var) != 1:
            raise _Fail
        cmp, bound = _Deducer(var, hint, ana).solve(cmp, expr, result)
    except _Fail:
        return IntervalSet.nothing()
    if cmp is _Cmp.EQ:
        return IntervalSet(bound, bound, bound.dtype)
    if cmp is _Cmp.GE:
        return IntervalSet(bound, pos_inf(), bound.dtype)
    return IntervalSet(neg_inf(), bound, bound.dtype)
