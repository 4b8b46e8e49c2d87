"""What every rule asks first: is a function already scheduled, and which blocks does it have."""

from __future__ import annotations

from ...tir.function import PrimFunc
from ...tir.functor import post_order_visit, pre_order_visit
from ...tir.stmt import BlockRealize, For, ForKind

IS_SCHEDULED = "tir.is_scheduled"


def is_scheduled(func: PrimFunc) -> bool:
    """Marked `tir.is_scheduled`, or with a loop that is no longer serial (hand-scheduled)."""
    if func.attrs.get(IS_SCHEDULED):
        return True
    kinds: list[ForKind] = []
    post_order_visit(func.body, lambda n: kinds.append(n.kind) if isinstance(n, For) else None)
    return any(k is not ForKind.SERIAL for k in kinds)


def blocks(func: PrimFunc) -> list[BlockRealize]:
    """The block realizes of `func`, outermost first, the root excluded."""
    found: list[BlockRealize] = []
    pre_order_visit(func.body, lambda n: found.append(n) if isinstance(n, BlockRealize) else None)
    root = func.body if isinstance(func.body, BlockRealize) else None
    return [r for r in found if r is not root]
