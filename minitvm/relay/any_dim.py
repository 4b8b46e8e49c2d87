"""`relay.Any()`: a dim known only at run time."""

from __future__ import annotations

from ..tir.expr import PrimExpr, SizeVar

_ANY_COUNT = [0]


def Any() -> PrimExpr:
    """A dim whose size is known only at run time (TVM's `relay.Any()`): each call is a new
    int64 size variable, so two Any() dims need not be equal. Such shapes run on the VM
    executor (`relay.create_executor("vm", ...)`); the graph executor needs static shapes."""
    _ANY_COUNT[0] += 1
    return SizeVar(f"any_dim{_ANY_COUNT[0]}", "int64")
