"""Give fresh variables to every definition inside a statement (for copies of loop bodies)."""

from __future__ import annotations

from typing import Any

from ..expr import Var
from ..functor import Mutator
from ..stmt import Allocate, For, LetStmt, Stmt


class _Renew(Mutator):
    def __init__(self, vmap: dict[int, Any]) -> None:
        super().__init__()
        self.vmap = vmap
        self.keep: list[Any] = []

    def fresh(self, v: Var) -> Var:
        new = Var(v.name, v.dtype)
        self.vmap[id(v)] = new
        self.keep.append(v)
        return new

    def visit_Var(self, v: Var) -> Any:
        return self.vmap.get(id(v), v)

    def visit_For(self, loop: For) -> For:
        self.fresh(loop.loop_var)
        return self.generic_visit(loop)

    def visit_LetStmt(self, let: LetStmt) -> Stmt:
        value = self.visit(let.value)
        self.fresh(let.var)
        return let.replace(var=self.visit(let.var), value=value, body=self.visit(let.body))

    def visit_Allocate(self, alloc: Allocate) -> Stmt:
        self.fresh(alloc.buffer_var)
        return self.generic_visit(alloc)


def substitute_fresh(stmt: Stmt, vmap: dict[Any, Any]) -> Stmt:
    """`substitute(stmt, vmap)`, and every variable defined inside `stmt` renamed to a new Var."""
    return _Renew({id(k): v for k, v in vmap.items()}).visit(stmt)
