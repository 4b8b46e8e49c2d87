"""LowerIntrin's division part (TVM's pass): integer floordiv and floormod become the
truncating division and remainder the hardware has, using what the loop ranges and enclosing
conditions tell about the signs (`x // 8` becomes `x >> 3`, a non-negative `x // y` becomes
`truncdiv(x, y)`); float ones are written with floor. minitvm's code generators lower the
math intrinsics (exp, fma, ...) to LLVM themselves, so those calls are left as they are.
"""

from __future__ import annotations

from typing import Any

from ..expr import Call, FloorDiv, FloorMod, IntImm, Let, Not, PrimExpr, Select, Var, make_const
from ..function import PrimFunc
from ..functor import Mutator
from ..names import IF_THEN_ELSE, is_call
from ..op import bitwise_and, floor, shift_right, truncdiv, truncmod
from ..stmt import For, IfThenElse, Stmt
from ._analyzer import ScopedAnalyzer
from ._pass import prim_func_pass


def _power_of_two(e: PrimExpr) -> int | None:
    if isinstance(e, IntImm) and e.value > 0 and e.value & (e.value - 1) == 0:
        return e.value.bit_length() - 1
    return None


class _LowerDivMod(Mutator):
    """Results depend on the enclosing loops and conditions, so nothing is memoised."""

    def __init__(self) -> None:
        super().__init__()
        self.ana = ScopedAnalyzer()

    def visit(self, n: Any) -> Any:
        self._memo.clear()
        return super().visit(n)

    def _non_negative(self, e: PrimExpr) -> bool:
        return self.ana.can_prove(e >= make_const(e.dtype, 0))

    def visit_For(self, loop: For) -> Stmt:
        with self.ana.loop(loop):
            return self.generic_visit(loop)

    def visit_IfThenElse(self, s: IfThenElse) -> Stmt:
        cond = self.visit(s.condition)
        with self.ana.assume(cond):
            then_case = self.visit(s.then_case)
        else_case = None
        if s.else_case is not None:
            with self.ana.assume(Not(cond)):
                else_case = self.visit(s.else_case)
        return s.replace(condition=cond, then_case=then_case, else_case=else_case)

    def visit_Select(self, e: Select) -> PrimExpr:
        cond = self.visit(e.condition)
        with self.ana.assume(cond):
            t = self.visit(e.true_value)
        with self.ana.assume(Not(cond)):
            f = self.visit(e.false_value)
        return e.replace(condition=cond, true_value=t, false_value=f)

    def visit_Call(self, e: Call) -> PrimExpr:
        if not is_call(e, IF_THEN_ELSE):
            return self.generic_visit(e)
        cond = self.visit(e.args[0])
        with self.ana.assume(cond):
            t = self.visit(e.args[1])
        with self.ana.assume(Not(cond)):
            f = self.visit(e.args[2])
        return e.replace(args=(cond, t, f))

    def visit_FloorDiv(self, e: FloorDiv) -> PrimExpr:
        a, b = self.visit(e.a), self.visit(e.b)
        dtype = e.dtype
        if dtype.is_float:
            return floor(a / b)
        shift = _power_of_two(b)
        if shift is not None:
            return shift_right(a, make_const(dtype, shift))  # arithmetic shift rounds down
        if self._non_negative(b) and self._non_negative(a):
            return truncdiv(a, b)
        return self._with_remainder(a, b, lambda rdiv, rmod: Select(_fix(b, rmod), rdiv, rdiv - 1))

    def visit_FloorMod(self, e: FloorMod) -> PrimExpr:
        a, b = self.visit(e.a), self.visit(e.b)
        if e.dtype.is_float:
            return a - floor(a / b) * b
        shift = _power_of_two(b)
        if shift is not None:
            return bitwise_and(a, make_const(e.dtype, (1 << shift) - 1))
        if self._non_negative(b) and self._non_negative(a):
            return truncmod(a, b)
        return self._with_remainder(a, b, lambda rdiv, rmod: Select(_fix(b, rmod), rmod, rmod + b))

    @staticmethod
    def _with_remainder(a: PrimExpr, b: PrimExpr, pick: Any) -> PrimExpr:
        """`pick(rdiv, rmod)` with the truncated quotient and remainder bound once each."""
        rdiv, rmod = Var("rdiv", a.dtype), Var("rmod", a.dtype)
        return Let(rmod, truncmod(a, b), Let(rdiv, truncdiv(a, b), pick(rdiv, rmod)))


def _fix(b: PrimExpr, rmod: Var) -> PrimExpr:
    """Whether truncation already rounded down: the remainder is zero or has b's sign."""
    zero = make_const(rmod.dtype, 0)
    return ((b >= zero) & (rmod >= zero)) | ((b < zero) & (rmod <= zero))


def lower_intrin(func: PrimFunc) -> PrimFunc:
    """Lower floordiv/floormod of integers to truncating operations (see the module docstring)."""
    body = _LowerDivMod().visit(func.body)
    return func if body is func.body else func.replace(body=body)


LowerIntrin = prim_func_pass(lower_intrin, "LowerIntrin")
