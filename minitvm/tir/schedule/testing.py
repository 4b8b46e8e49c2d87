"""Helpers for testing schedules (`tvm.tir.schedule.testing`): replay a trace and compare."""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...ir.node import FrozenDict
from ...ir.structural import assert_structural_equal
from ..function import PrimFunc


def _without_global_symbol(x: Any) -> Any:
    if isinstance(x, PrimFunc) and "global_symbol" in x.attrs:
        kept = {k: v for k, v in x.attrs.items() if k != "global_symbol"}
        return x.replace(attrs=FrozenDict(kept))
    if isinstance(x, IRModule):
        return IRModule({gv.name_hint: _without_global_symbol(f) for gv, f in x.items()})
    return x


def assert_structural_equal_ignore_global_symbol(
    func1: Any, func2: Any, map_free_vars: bool = False
) -> None:
    """assert_structural_equal of two PrimFuncs (or modules) whatever their symbol names."""
    assert_structural_equal(
        _without_global_symbol(func1), _without_global_symbol(func2), map_free_vars
    )


def verify_trace_roundtrip(
    sch: Any, mod: Any, *, debug_mask: Any = "all", text_format: Any = None
) -> Any:
    """Replay `sch.trace` on a fresh schedule of `mod` and check it gives `sch.mod` again."""
    from .schedule import Schedule

    fresh = Schedule(mod, debug_mask=debug_mask)
    sch.trace.apply_to_schedule(fresh, remove_postproc=False)
    assert_structural_equal(sch.mod, fresh.mod)
    return fresh


__all__ = ["assert_structural_equal_ignore_global_symbol", "verify_trace_roundtrip"]
