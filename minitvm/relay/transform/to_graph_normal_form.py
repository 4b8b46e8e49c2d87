"""ToGraphNormalForm: `let %v = value; body` becomes `body` with `value` wherever `%v` was,
so a value used twice is one shared node (the graph form every other pass expects)."""

from __future__ import annotations

from ..expr import Expr, Function, Let
from ..expr_functor import ExprMutator


class _ToGraph(ExprMutator):
    def visit_let(self, let: Let) -> Expr:
        self.memo_map[let.var] = self.visit(let.value)
        return self.visit(let.body)


def to_graph_normal_form(func: Function) -> Function:
    """`func` with every let binding replaced by sharing of its value."""
    return _ToGraph().visit(func)
