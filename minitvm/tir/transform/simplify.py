"""Simplify every expression with the enclosing loop ranges known; drop provably-true guards."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..buffer import Buffer
from ..expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    And,
    BufferLoad,
    FloatImm,
    IntImm,
    Not,
    Or,
    PrimExpr,
    Var,
    make_const,
)
from ..function import PrimFunc
from ..functor import Mutator, substitute
from ..names import LIKELY, is_call
from ..op import likely
from ..stmt import For, ForKind, IfThenElse, LetStmt, Stmt
from ._analyzer import ScopedAnalyzer
from ._pass import prim_func_pass
from ._transitive import TransitiveProver

CONFIG_KEY = "tir.Simplify"  # PassContext config: {"tir.Simplify": {option: bool}}
_NEGATED = {LT: GE, LE: GT, GT: LE, GE: LT, EQ: NE, NE: EQ}


def _unwrap_likely(cond: PrimExpr) -> tuple[PrimExpr, bool]:
    if is_call(cond, LIKELY):
        return cond.args[0], True
    return cond, False


class _Simplify(Mutator):
    """Results depend on the enclosing loops and guards, so nothing is reused by identity."""

    def __init__(self, transitive: bool = False) -> None:
        super().__init__()
        self.ana = ScopedAnalyzer()
        self.transitive = transitive
        self.known: list[PrimExpr] = []  # the if-conditions in scope, for transitive proofs

    def visit(self, n: Any) -> Any:
        self._memo.clear()
        if isinstance(n, PrimExpr):
            return self.expr(n)
        return super().visit(n)

    # ---- expressions
    def expr(self, e: PrimExpr) -> PrimExpr:
        cond, was_likely = _unwrap_likely(e)
        if was_likely:
            inner = self.expr(cond)
            return inner if isinstance(inner, IntImm) else likely(inner)
        if e.dtype.lanes > 1 or isinstance(e, BufferLoad):
            return Mutator.generic_visit(self, e)  # simplify the scalar parts
        out = self._loads(self.ana.simplify(e))
        if self.transitive and out.dtype.is_bool and self.known:
            out = self._prove_transitively(out, TransitiveProver(self.known))
        return out

    def _prove_transitively(self, e: PrimExpr, prover: TransitiveProver) -> PrimExpr:
        """Replace comparisons (also inside and/or/not) the conditions in scope decide."""
        if isinstance(e, And | Or):
            a = self._prove_transitively(e.a, prover)
            b = self._prove_transitively(e.b, prover)
            return e if a is e.a and b is e.b else self.ana.simplify(type(e)(a, b))
        if isinstance(e, Not):
            a = self._prove_transitively(e.a, prover)
            return e if a is e.a else self.ana.simplify(Not(a))
        negated = _NEGATED.get(type(e))
        if negated is None:
            return e
        if prover.prove(e):
            return make_const("bool", 1)
        if prover.prove(negated(e.a, e.b)):
            return make_const("bool", 0)
        return e

    def _loads(self, e: PrimExpr) -> PrimExpr:
        """Simplify the indices of loads the simplifier treated as opaque."""
        if isinstance(e, IntImm | FloatImm | Var):
            return e  # no load inside
        return _LoadIndices(self).visit(e)

    def visit_Buffer(self, buf: Buffer) -> Buffer:
        return buf  # shapes are kept as declared: buffers must stay identical to buffer_map's

    # ---- statements
    def visit_For(self, loop: For) -> Stmt:
        lo, ext = self.expr(loop.min), self.expr(loop.extent)
        loop = loop.replace(min=lo, extent=ext)
        if _is_one(ext) and loop.kind != ForKind.THREAD_BINDING and not loop.annotations:
            return self.visit(substitute(loop.body, {loop.loop_var: lo}))
        with self.ana.loop(loop):
            return loop.replace(body=self.visit(loop.body))

    def visit_IfThenElse(self, s: IfThenElse) -> Stmt:
        raw, was_likely = _unwrap_likely(s.condition)
        cond = self.expr(raw)
        if self.ana.can_prove(cond):
            return self.visit(s.then_case)
        if self.ana.can_prove(Not(cond)):
            return self.visit(s.else_case) if s.else_case is not None else _no_op()
        with self.ana.assume(cond), self._knowing(cond):
            then_case = self.visit(s.then_case)
        else_case = None
        if s.else_case is not None:
            negated = self.ana.simplify(Not(cond)) if self.transitive else cond
            with self.ana.assume(Not(cond)), self._knowing(negated):
                else_case = self.visit(s.else_case)
        return IfThenElse(likely(cond) if was_likely else cond, then_case, else_case)

    @contextmanager
    def _knowing(self, cond: PrimExpr) -> Iterator[None]:
        if not self.transitive:
            yield
            return
        self.known.append(cond)
        try:
            yield
        finally:
            self.known.pop()

    def visit_LetStmt(self, s: LetStmt) -> Stmt:
        return s.replace(value=self.expr(s.value), body=self.visit(s.body))


class _LoadIndices(Mutator):
    """Simplifies the indices of every load in an expression, in the simplifier's scope."""

    def __init__(self, simplifier: _Simplify) -> None:
        super().__init__()
        self.simplifier = simplifier

    def visit_BufferLoad(self, load: BufferLoad) -> PrimExpr:
        return load.replace(indices=tuple(self.simplifier.expr(i) for i in load.indices))


def _no_op() -> Stmt:
    from ..stmt import Evaluate

    return Evaluate(IntImm("int32", 0))


def simplify(func: PrimFunc) -> PrimFunc:
    """arith.simplify over the body with loop ranges bound; guards proven true are removed,
    the others stay (those from block predicates as `likely(...)`).

    The PassContext config {"tir.Simplify": {"transitively_prove_inequalities": True}} also
    decides comparisons that follow from enclosing if-conditions by transitivity."""
    from ...ir.transform import PassContext

    options = PassContext.current().config.get(CONFIG_KEY) or {}
    transitive = bool(options.get("transitively_prove_inequalities", False))
    return func.replace(body=_Simplify(transitive).visit(func.body))


Simplify = prim_func_pass(simplify, "Simplify")


def _is_one(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 1
