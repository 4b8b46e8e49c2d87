"""DeadCodeElimination: let bindings whose variable is never used are dropped (Relay
programs are pure here, so an unused value needs no computing); with `inline_once`, a
binding used exactly once is replaced by its value at the use."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..expr import Expr, Function, Let, Var
from ..expr_functor import ExprMutator, ExprVisitor


class _CountUses(ExprVisitor):
    """How many times each variable is referenced (counting every reference, not nodes)."""

    def __init__(self) -> None:
        super().__init__()
        self.uses: Counter = Counter()

    def visit(self, expr: Any) -> Any:
        if isinstance(expr, Var):
            self.uses[expr] += 1
        return super().visit(expr)

    def visit_let(self, let: Let) -> None:
        self.visit(let.value)  # the binding occurrence is not a use
        self.visit(let.body)

    def visit_function(self, func: Function) -> None:
        self.visit(func.body)


class _Eliminate(ExprMutator):
    def __init__(self, uses: Counter, inline_once: bool) -> None:
        super().__init__()
        self.uses, self.inline_once = uses, inline_once

    def visit_let(self, let: Let) -> Expr:
        n = self.uses[let.var]
        if n == 0:
            return self.visit(let.body)
        if n == 1 and self.inline_once:
            self.memo_map[let.var] = self.visit(let.value)
            return self.visit(let.body)
        return super().visit_let(let)


def dead_code_elimination(func: Function, inline_once: bool = False) -> Function:
    """`func` without unused let bindings (and with single-use ones inlined if asked)."""
    counter = _CountUses()
    counter.visit(func)
    return _Eliminate(counter.uses, inline_once).visit(func)
