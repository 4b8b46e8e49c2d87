"""What every rule asks first: is a function already scheduled, and which blocks does it have."""

from __future__ import annotations

from typing import Any

from ...tir.function import PrimFunc
from ...tir.functor import pre_order_visit
from ...tir.stmt import BlockRealize, BufferStore, Evaluate, For, ForKind, Stmt

_LEAVES = (BufferStore, Evaluate)

IS_SCHEDULED = "tir.is_scheduled"
# TVM 0.24 spells the mark "tirx.is_scheduled" (its kernels set it in T.func_attr); either one
# means scheduled. minitvm writes the classic key.
IS_SCHEDULED_KEYS = (IS_SCHEDULED, "tirx.is_scheduled")


def marked_scheduled(func: PrimFunc) -> bool:
    """Carries `tir.is_scheduled` (or 0.24's `tirx.is_scheduled`) set to a true value."""
    return any(func.attrs.get(key) for key in IS_SCHEDULED_KEYS)


def is_scheduled(func: PrimFunc) -> bool:
    """Marked `tir.is_scheduled` (or `tirx.is_scheduled`), or with a loop that is no longer
    serial (hand-scheduled)."""
    if marked_scheduled(func):
        return True
    kinds: list[ForKind] = []

    def visit(n: Any) -> bool:
        if isinstance(n, For):
            kinds.append(n.kind)
        return _has_stmts(n)

    pre_order_visit(func.body, visit)
    return any(k is not ForKind.SERIAL for k in kinds)


def _has_stmts(n: Any) -> bool | None:
    """A pre_order_visit verdict: walk into `n` only when statements can sit under it (loops
    and blocks sit only in statement bodies; expressions, regions and leaf statements, the bulk
    of a function, are not walked)."""
    return None if isinstance(n, Stmt) and not isinstance(n, _LEAVES) else False


def blocks(func: PrimFunc) -> list[BlockRealize]:
    """The block realizes of `func`, outermost first, the root excluded."""
    found: list[BlockRealize] = []

    def visit(n: Any) -> bool | None:
        if isinstance(n, BlockRealize):
            found.append(n)
        return _has_stmts(n)

    pre_order_visit(func.body, visit)
    root = func.body if isinstance(func.body, BlockRealize) else None
    return [r for r in found if r is not root]
