"""Structural queries about blocks in a statement."""

from __future__ import annotations

from typing import Any

from ..functor import pre_order_visit
from ..stmt import BlockRealize, Stmt


def contains_block(s: Stmt) -> bool:
    """True when a BlockRealize occurs anywhere under `s` (stops walking at the first one)."""
    found = False

    def check(n: Any) -> bool:
        nonlocal found
        if isinstance(n, BlockRealize):
            found = True
        return not found and isinstance(n, Stmt)

    pre_order_visit(s, check)
    return found
