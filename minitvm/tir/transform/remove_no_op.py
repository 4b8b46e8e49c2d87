"""Remove statements that do nothing: empty loops, `if False`, constant evaluations."""

from __future__ import annotations

from ..expr import IntImm
from ..function import PrimFunc
from ..functor import Mutator
from ..stmt import (
    Evaluate,
    For,
    IfThenElse,
    SeqStmt,
    Stmt,
    seq,
)
from ._pass import prim_func_pass


def is_no_op(s: Stmt | None) -> bool:
    """True for a statement with no effect (None, a constant Evaluate, an empty sequence)."""
    if s is None:
        return True
    if isinstance(s, Evaluate):
        return isinstance(s.value, IntImm)
    if isinstance(s, SeqStmt):
        return all(is_no_op(x) for x in s.seq)
    return False


def _const(e) -> int | None:
    return e.value if isinstance(e, IntImm) else None


_NO_OP = Evaluate(IntImm("int32", 0))


class _RemoveNoOp(Mutator):
    def visit_SeqStmt(self, s: SeqStmt) -> Stmt:
        items = [self.visit(x) for x in s.seq]
        kept = [x for x in items if not is_no_op(x)]
        if len(kept) == len(s.seq) and all(a is b for a, b in zip(kept, s.seq)):
            return s
        return seq(*kept) if kept else _NO_OP

    def visit_For(self, loop: For) -> Stmt:
        loop = self.generic_visit(loop)
        extent = _const(loop.extent)
        if is_no_op(loop.body) or (extent is not None and extent <= 0):
            return _NO_OP
        return loop

    def visit_IfThenElse(self, s: IfThenElse) -> Stmt:
        s = self.generic_visit(s)
        cond = _const(s.condition)
        if cond is not None:
            chosen = s.then_case if cond else s.else_case
            return _NO_OP if chosen is None else chosen
        if is_no_op(s.else_case) and s.else_case is not None:
            s = s.replace(else_case=None)
        if is_no_op(s.then_case) and s.else_case is None:
            return _NO_OP
        return s

    def _wrapper(self, s: Stmt) -> Stmt:
        s = self.generic_visit(s)
        return _NO_OP if is_no_op(s.body) else s

    visit_LetStmt = _wrapper
    visit_Allocate = _wrapper
    visit_DeclBuffer = _wrapper
    visit_AttrStmt = _wrapper


def remove_no_op(func: PrimFunc) -> PrimFunc:
    """Drop loops with empty bodies or zero extent, constant branches and no-op statements."""
    return func.replace(body=_RemoveNoOp().visit(func.body))


RemoveNoOp = prim_func_pass(remove_no_op, "RemoveNoOp")
