"""HoistIfThenElse: move an `if` out of the loops it does not depend on.

`for i: for j: if c(i): S` becomes `for i: if c(i): for j: S`: an `if` that is the whole
body of a loop, whose condition uses neither the loop variable nor memory, is swapped with
the loop (an `else` gets its own copy of the loop), and the swap repeats outwards. A loop
bound to a GPU thread is not crossed. The condition is evaluated once instead of once per
iteration; what runs is unchanged.
"""

from __future__ import annotations

from typing import Any

from ..expr import BufferLoad, Call, Var
from ..function import PrimFunc
from ..functor import Mutator, post_order_visit
from ..stmt import For, ForKind, IfThenElse, Stmt
from ._pass import prim_func_pass


def _movable(cond: Any, loop_var: Var) -> bool:
    """Whether `cond` is the same in every iteration of the loop over `loop_var`."""
    bad: list[Any] = []

    def note(n: Any) -> None:
        impure = isinstance(n, Call) and not getattr(n.op, "pure", False)
        if n is loop_var or isinstance(n, BufferLoad) or impure:
            bad.append(n)

    post_order_visit(cond, note)
    return not bad


def _hoist(loop: For) -> Stmt:
    """`loop` with an `if` that is its whole body moved above it, repeatedly."""
    body = loop.body
    if loop.kind == ForKind.THREAD_BINDING or not isinstance(body, IfThenElse):
        return loop
    if not _movable(body.condition, loop.loop_var):
        return loop
    then = _hoist(loop.replace(body=body.then_case))
    other = None if body.else_case is None else _hoist(loop.replace(body=body.else_case))
    return IfThenElse(body.condition, then, other)


class _Hoist(Mutator):
    def visit_For(self, loop: For) -> Stmt:
        return _hoist(self.generic_visit(loop))


def hoist_if_then_else(func: PrimFunc) -> PrimFunc:
    """`func` with loop-invariant `if`s moved out of the loops around them."""
    return func.replace(body=_Hoist().visit(func.body))


HoistIfThenElse = prim_func_pass(hoist_if_then_else, "HoistIfThenElse")
