"""Replace short UNROLLED loops by copies of their body, one per iteration."""

from __future__ import annotations

from ..expr import Add, IntImm, binary
from ..function import PrimFunc
from ..functor import Mutator, post_order_visit
from ..stmt import For, ForKind, Stmt, seq
from ._pass import prim_func_pass
from ._rename import substitute_fresh

MAX_UNROLL_EXTENT = 64  # longer UNROLLED loops keep LLVM unroll metadata instead
MAX_UNROLL_NODES = 8192  # IR nodes of the unrolled result, to bound code size


def _size(stmt: Stmt) -> int:
    count = [0]
    post_order_visit(stmt, lambda _: count.__setitem__(0, count[0] + 1))
    return count[0]


def _should_unroll(loop: For) -> bool:
    if loop.kind != ForKind.UNROLLED or not isinstance(loop.extent, IntImm):
        return False
    extent = loop.extent.value
    return extent <= MAX_UNROLL_EXTENT and extent * _size(loop.body) <= MAX_UNROLL_NODES


class _Unroll(Mutator):
    def visit_For(self, loop: For) -> Stmt:
        loop = self.generic_visit(loop)
        if not _should_unroll(loop):
            return loop
        copies = [
            substitute_fresh(loop.body, {loop.loop_var: binary(Add, loop.min, k)})
            for k in range(loop.extent.value)
        ]
        return seq(*copies)


def unroll_loop(func: PrimFunc) -> PrimFunc:
    """Unroll UNROLLED loops of constant extent ≤ MAX_UNROLL_EXTENT (others keep their kind)."""
    return func.replace(body=_Unroll().visit(func.body))


UnrollLoop = prim_func_pass(unroll_loop, "UnrollLoop")
