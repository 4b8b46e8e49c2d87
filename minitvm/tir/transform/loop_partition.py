"""Loop partitioning: take the `likely` guards of non-divisible splits out of the hot loop.

A split of a loop of extent n by f leaves `if likely(io * f + ii < n)` inside the tile. For a
loop `L` whose body holds such a guard, where the condition is affine in `L` with a positive
coefficient, the guard holds for *every* inner iteration while `L < split`; the loop becomes

    for L in range(min, split):    body with the guard removed   (the hot part)
    for L in range(split, end):    body as it was                (the guarded tail)

Guards that are not affine in the loop, or decrease with it, are left alone.
"""

from __future__ import annotations

from typing import Any

from ..expr import (
    GE,
    GT,
    LE,
    LT,
    Add,
    And,
    FloorDiv,
    IntImm,
    Max,
    Min,
    PrimExpr,
    Range,
    Sub,
    Var,
    binary,
)
from ..expr_build import flatten_operands
from ..function import PrimFunc
from ..functor import Mutator, Visitor
from ..names import LIKELY, is_call
from ..stmt import For, ForKind, IfThenElse, Stmt, seq
from ._pass import prim_func_pass
from ._rename import substitute_fresh

_FIXED_KINDS = (ForKind.VECTORIZED, ForKind.UNROLLED, ForKind.THREAD_BINDING)


def _is_likely(cond: PrimExpr) -> bool:
    return is_call(cond, LIKELY)


def _as_negative_form(cond: PrimExpr) -> PrimExpr | None:
    """`e` such that `cond` ⇔ `e < 0` (integers), or None for other comparisons."""
    if not cond.a.dtype.is_integer:
        return None
    one = IntImm(cond.a.dtype, 1)
    forms = {
        LT: lambda: binary(Sub, cond.a, cond.b),  # a < b  <=>  a - b < 0
        LE: lambda: binary(Sub, binary(Sub, cond.a, cond.b), one),  # a <= b <=> a - b - 1 < 0
        GT: lambda: binary(Sub, cond.b, cond.a),  # a > b  <=>  b - a < 0
        GE: lambda: binary(Sub, binary(Sub, cond.b, cond.a), one),
    }
    make = forms.get(type(cond))
    return make() if make else None


class _GuardCollector(Visitor):
    """The `likely` guards under a loop, each with the ranges of the loops between."""

    def __init__(self) -> None:
        self.inner: dict[Var, Range] = {}
        self.found: list[tuple[PrimExpr, dict[Var, Range]]] = []

    def visit_For(self, loop: For) -> None:
        self.inner[loop.loop_var] = Range.from_min_extent(loop.min, loop.extent)
        self.visit(loop.body)
        del self.inner[loop.loop_var]

    def visit_IfThenElse(self, s: IfThenElse) -> None:
        if _is_likely(s.condition):
            for c in flatten_operands(s.condition.args[0], And):
                self.found.append((c, dict(self.inner)))
        self.generic_visit(s)


class _DropGuards(Mutator):
    """Remove the given conjuncts from `likely` guards (they are proven in this copy)."""

    def __init__(self, proven: list[PrimExpr]) -> None:
        super().__init__()
        self.proven = {id(c) for c in proven}

    def visit_IfThenElse(self, s: IfThenElse) -> Stmt:
        s = self.generic_visit(s)
        if not _is_likely(s.condition):
            return s
        rest = [c for c in flatten_operands(s.condition.args[0], And) if id(c) not in self.proven]
        if len(rest) == len(flatten_operands(s.condition.args[0], And)):
            return s
        if not rest:
            return s.then_case
        cond = rest[0]
        for c in rest[1:]:
            cond = And(cond, c)
        from ..op import likely

        return s.replace(condition=likely(cond))


class _Partition(Mutator):
    def __init__(self) -> None:
        super().__init__()
        from ...arith import Analyzer

        self.ana = Analyzer()

    def visit_For(self, loop: For) -> Stmt:
        self.ana.bind(loop.loop_var, Range.from_min_extent(loop.min, loop.extent), allow_override=True)
        loop = self.generic_visit(loop)  # inner loops first
        if loop.kind in _FIXED_KINDS:
            return loop
        return self.partition(loop)

    def split_point(self, loop: For, cond: PrimExpr, inner: dict[Var, Range]) -> PrimExpr | None:
        from ...arith import affine_coeffs

        neg = _as_negative_form(cond)
        if neg is None:
            return None
        found = affine_coeffs(neg, [loop.loop_var], self.ana)
        if found is None:
            return None
        coeffs, base = found
        a = coeffs[loop.loop_var]
        if a <= 0:
            return None
        bound = self.ana.int_set(base, dom_map=inner)
        if not bound.has_upper_bound():
            return None
        # a*L + M < 0 for the largest M  <=>  L <= floor((-M - 1) / a)
        m = bound.max_value
        one = IntImm(m.dtype, 1)
        last = binary(
            FloorDiv, binary(Sub, binary(Sub, IntImm(m.dtype, 0), m), one), IntImm(m.dtype, a)
        )
        return binary(Add, last, one)

    def partition(self, loop: For) -> Stmt:
        collector = _GuardCollector()
        collector.visit(loop.body)
        splits, proven = [], []
        for cond, inner in collector.found:
            if not any(v is loop.loop_var for v in _vars_of(cond)):
                continue
            point = self.split_point(loop, cond, inner)
            if point is not None:
                splits.append(point)
                proven.append(cond)
        if not splits:
            return loop
        end = binary(Add, loop.min, loop.extent)
        split = splits[0]
        for s in splits[1:]:
            split = binary(Min, split, s)
        split = self.ana.simplify(binary(Min, binary(Max, split, loop.min), end))
        main_extent = self.ana.simplify(binary(Sub, split, loop.min))
        tail_extent = self.ana.simplify(binary(Sub, end, split))
        main = loop.replace(extent=main_extent, body=_DropGuards(proven).visit(loop.body))
        if self.ana.can_prove(tail_extent <= 0):
            return main
        if self.ana.can_prove(main_extent <= 0):
            return loop
        tail_var = Var(loop.loop_var.name, loop.loop_var.dtype)
        tail_body = substitute_fresh(loop.body, {loop.loop_var: tail_var})
        tail = loop.replace(loop_var=tail_var, min=split, extent=tail_extent, body=tail_body)
        return seq(main, tail)


class _Vars(Visitor):
    def __init__(self) -> None:
        self.found: list[Var] = []

    def visit_Var(self, v: Var) -> None:
        self.found.append(v)


def _vars_of(e: Any) -> list[Var]:
    collector = _Vars()
    collector.visit(e)
    return collector.found


def loop_partition(func: PrimFunc) -> PrimFunc:
    """Split loops so that `likely` guards of non-divisible splits leave the main iterations."""
    if not _has_likely_guard(func.body):
        return func  # nothing to partition: skip the per-loop guard searches
    body = _Partition().visit(func.body)
    return func if body is func.body else func.replace(body=body)


class _LikelyGuardFound(Exception):
    pass


class _FindLikelyGuard(Visitor):
    def visit_IfThenElse(self, s: IfThenElse) -> None:
        if _is_likely(s.condition):
            raise _LikelyGuardFound
        self.generic_visit(s)

    def visit_PrimExpr(self, e: PrimExpr) -> None:
        return None  # guards are statements: expressions need no walk


def _has_likely_guard(body: Stmt) -> bool:
    try:
        _FindLikelyGuard().visit(body)
    except _LikelyGuardFound:
        return True
    return False


LoopPartition = prim_func_pass(loop_partition, "LoopPartition")
