"""Replace short UNROLLED loops by copies of their body, one per iteration.

An UNROLLED loop is unrolled completely, here or (for longer ones) by LLVM through
`llvm.loop.unroll.full` metadata, so build time and code size grow with the unrolled size.
A loop whose unrolled body would exceed MAX_UNROLLED_STATEMENTS statements (short constant
inner loops counted with their trip count, as LLVM unrolls those too) is a BuildError that
says how to restructure it, instead of a build that runs for minutes.
"""

from __future__ import annotations

from ...error import BuildError
from ..expr import Add, IntImm, binary
from ..function import PrimFunc
from ..functor import Mutator, post_order_visit
from ..stmt import For, ForKind, Stmt, seq
from ._pass import prim_func_pass
from ._rename import substitute_fresh

MAX_UNROLL_EXTENT = 64  # longer UNROLLED loops keep LLVM unroll metadata instead
MAX_UNROLL_NODES = 8192  # IR nodes of the unrolled result, to bound code size
MAX_UNROLLED_STATEMENTS = 4096  # statements an unrolled loop may become (TVM's auto_max_step)


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
    def __init__(self) -> None:
        super().__init__()
        self.statements: dict[int, int] = {}  # id(stmt) -> statements once unrolled

    def count(self, stmt: Stmt | None) -> int:
        """Leaf statements `stmt` becomes once every UNROLLED loop in it is unrolled."""
        if stmt is None:
            return 0
        hit = self.statements.get(id(stmt))
        if hit is not None:
            return hit
        children = [v for v in _child_stmts(stmt)]
        n = sum(self.count(c) for c in children) if children else 1
        if isinstance(stmt, For) and _copied_by_unrolling(stmt):
            n *= max(stmt.extent.value, 0)
        self.statements[id(stmt)] = n
        return n

    def visit_For(self, loop: For) -> Stmt:
        self._check_limit(loop)
        loop = self.generic_visit(loop)
        if not _should_unroll(loop):
            return loop
        copies = [
            substitute_fresh(loop.body, {loop.loop_var: binary(Add, loop.min, k)})
            for k in range(loop.extent.value)
        ]
        return seq(*copies)

    def _check_limit(self, loop: For) -> None:
        if loop.kind != ForKind.UNROLLED or not isinstance(loop.extent, IntImm):
            return
        n = self.count(loop)
        if n > MAX_UNROLLED_STATEMENTS:
            name = loop.loop_var.name
            raise BuildError(
                f"loop '{name}' unrolls to {n} statements, counting the short loops inside it "
                f"that are unrolled too (limit {MAX_UNROLLED_STATEMENTS}): "
                f"split it and unroll only the inner part (e.g. split '{name}' by 8, unroll the "
                "inner loop), or keep it a serial loop (T.serial / no unroll)"
            )


def _copied_by_unrolling(loop: For) -> bool:
    """Loops whose body is copied once per iteration in the straight-line code LLVM gets: the
    UNROLLED ones, and short constant serial loops (LLVM fully unrolls those by itself once
    they sit in unrolled code, which made a 37x45 unrolled matmul nest build for minutes)."""
    if not isinstance(loop.extent, IntImm):
        return False
    if loop.kind == ForKind.UNROLLED:
        return True
    return loop.kind == ForKind.SERIAL and loop.extent.value <= MAX_UNROLL_EXTENT


def _child_stmts(stmt: Stmt) -> list[Stmt]:
    """The statements directly inside `stmt` (bodies, branches, sequence items)."""
    out = []
    for name in ("body", "then_case", "else_case"):
        child = getattr(stmt, name, None)
        if isinstance(child, Stmt):
            out.append(child)
    seq_items = getattr(stmt, "seq", None)
    if seq_items is not None:
        out.extend(seq_items)
    return out


def unroll_loop(func: PrimFunc) -> PrimFunc:
    """Unroll UNROLLED loops of constant extent ≤ MAX_UNROLL_EXTENT (others keep their kind).

    Raises BuildError when an UNROLLED loop would become more than MAX_UNROLLED_STATEMENTS
    statements (here or in LLVM, which fully unrolls the longer ones).
    """
    return func.replace(body=_Unroll().visit(func.body))


UnrollLoop = prim_func_pass(unroll_loop, "UnrollLoop")
