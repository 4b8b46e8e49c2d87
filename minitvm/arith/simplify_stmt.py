"""`arith.simplify`: simplify a PrimExpr, or every expression in a Stmt / PrimFunc / IRModule."""

from __future__ import annotations

from typing import Any

from ..error import MiniTVMError
from ..ir.dtype import int32
from ..ir.module import IRModule
from ..tir.buffer import Buffer
from ..tir.expr import IntImm, Not, PrimExpr, Range
from ..tir.function import PrimFunc
from ..tir.functor import Mutator
from ..tir.stmt import (
    Block,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)
from .analyzer import Analyzer
from .canonical import is_index_dtype


class _StmtSimplifier(Mutator):
    """Simplify expressions with loop vars bound to their ranges and `if` conditions assumed."""

    def __init__(self, ana: Analyzer):
        super().__init__()
        self.ana = ana

    def visit(self, n: Any) -> Any:
        if isinstance(n, PrimExpr):
            return self.ana.simplify(n)
        out = super().visit(n)
        # what a statement simplifies to depends on its scope (one object may sit under two
        # different conditions), so results are never reused
        self._memo.clear()
        return out

    def visit_For(self, op: For) -> Stmt:
        lo, ext = self.visit(op.min), self.visit(op.extent)
        with self.ana._bind_scope(op.loop_var, Range.from_min_extent(lo, ext)):
            body = self.visit(op.body)
        return op.replace(min=lo, extent=ext, body=body)

    def visit_Block(self, op: Block) -> Stmt:
        with _binds(self.ana, [(iv.var, iv.dom) for iv in op.iter_vars if iv.dom is not None]):
            return self.generic_visit(op)

    def visit_Buffer(self, op: Buffer) -> Buffer:
        return op  # buffers are shared by identity; their shapes are not ours to rewrite

    def visit_LetStmt(self, op: LetStmt) -> Stmt:
        value = self.visit(op.value)
        rng = _value_range(self.ana, value)
        if rng is None:
            return op.replace(value=value, body=self.visit(op.body))
        with self.ana._bind_scope(op.var, rng):
            body = self.visit(op.body)
        return op.replace(value=value, body=body)

    def visit_IfThenElse(self, op: IfThenElse) -> Stmt:
        cond = self.visit(op.condition)
        if isinstance(cond, IntImm):
            branch = op.then_case if cond.value else op.else_case
            return Evaluate(IntImm(int32, 0)) if branch is None else self.visit(branch)
        with self.ana.constraint_scope(cond):
            then_case = self.visit(op.then_case)
        else_case = op.else_case
        if else_case is not None:
            with self.ana.constraint_scope(Not(cond)):
                else_case = self.visit(else_case)
        return op.replace(condition=cond, then_case=then_case, else_case=else_case)

    def visit_SeqStmt(self, op: SeqStmt) -> Stmt:
        items = [self.visit(s) for s in op.seq]
        kept = [s for s in items if not _is_noop(s)]
        if all(a is b for a, b in zip(items, op.seq)) and len(kept) == len(items):
            return op
        if not kept:
            return Evaluate(IntImm(int32, 0))
        return kept[0] if len(kept) == 1 else SeqStmt(tuple(kept))


class _binds:
    """Bind several vars for a `with` block."""

    def __init__(self, ana: Analyzer, pairs: list):
        self.ana, self.pairs, self.stack = ana, pairs, []

    def __enter__(self):
        for var, value in self.pairs:
            cm = self.ana._bind_scope(var, value)
            cm.__enter__()
            self.stack.append(cm)

    def __exit__(self, *exc):
        while self.stack:
            self.stack.pop().__exit__(None, None, None)
        return False


def _value_range(ana: Analyzer, value: PrimExpr) -> Range | None:
    """The range a let-bound integer takes (the var itself stays, it is not inlined)."""
    if not is_index_dtype(value.dtype):
        return None
    s = ana.int_set(value)
    if s.lo is None or s.hi is None:
        return None
    return Range.from_min_extent(s.lo, ana.simplify(s.hi - s.lo + 1))


def _is_noop(s: Stmt) -> bool:
    return isinstance(s, Evaluate) and isinstance(s.value, IntImm)


def simplify(node: Any, analyzer: Analyzer | None = None) -> Any:
    """Simplify a PrimExpr, or every expression in a Stmt, PrimFunc or IRModule.

    Loop vars are bound to their ranges, block iter vars to their domains, SizeVars are
    non-negative, and `if` conditions hold in their then-branch. Returns `node` itself when
    nothing changed. `arith.simplify(i * 1 + 0)` is `i`.
    """
    ana = analyzer or Analyzer()
    if isinstance(node, PrimExpr):
        return ana.simplify(node)
    if isinstance(node, IRModule):
        items = [
            (gv, f, simplify(f, ana) if isinstance(f, PrimFunc) else f)
            for gv, f in node.functions_items()
        ]
        if all(new is old for _, old, new in items):
            return node
        return IRModule({gv: new for gv, _, new in items}, node.attrs)
    if isinstance(node, PrimFunc):
        return node.replace(body=_StmtSimplifier(ana).visit(node.body))
    if isinstance(node, Stmt):
        return _StmtSimplifier(ana).visit(node)
    raise MiniTVMError(
        f"arith.simplify expects a PrimExpr, Stmt, PrimFunc or IRModule, got {type(node).__name__}"
    )
