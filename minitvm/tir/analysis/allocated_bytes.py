"""Peak bytes allocated per storage scope (TVM's calculate_allocated_bytes)."""

from __future__ import annotations

from typing import Any

from ...error import ArgumentError
from ...ir.module import IRModule
from ..expr import IntImm
from ..function import PrimFunc
from ..functor import Visitor
from ..stmt import Allocate
from .gpu_code import allocated_scope


class _Peak(Visitor):
    """Nested Allocates are live together; siblings reuse the space (the peak counts)."""

    def __init__(self) -> None:
        self.current: dict[str, int] = {}
        self.peak: dict[str, int] = {}

    def visit_Allocate(self, alloc: Allocate) -> None:
        scope = allocated_scope(alloc)
        size = alloc.dtype.bytes  # all lanes
        for e in alloc.extents:
            if not isinstance(e, IntImm):
                raise ArgumentError(
                    f"calculate_allocated_bytes: allocation '{alloc.buffer_var.name}' has the "
                    f"symbolic extent {e}; only constant-size allocations can be counted"
                )
            size *= e.value
        self.current[scope] = self.current.get(scope, 0) + size
        self.peak[scope] = max(self.peak.get(scope, 0), self.current[scope])
        self.generic_visit(alloc)
        self.current[scope] -= size


def _peak_bytes(func: PrimFunc) -> dict[str, int]:
    walker = _Peak()
    walker.visit(func.body)
    return walker.peak


def calculate_allocated_bytes(func_or_mod: Any) -> dict[str, dict[str, int]]:
    """{function name: {storage scope: peak bytes of its Allocates}}; a lone PrimFunc is
    reported under "main". Runs on lowered TIR (blocks' alloc_buffers are not counted).

    `calculate_allocated_bytes(f)["main"]["global"]` is 1024 for one 256-float Allocate."""
    if isinstance(func_or_mod, PrimFunc):
        return {"main": _peak_bytes(func_or_mod)}
    if isinstance(func_or_mod, IRModule):
        return {
            gv.name_hint: _peak_bytes(f)
            for gv, f in func_or_mod.functions_items()
            if isinstance(f, PrimFunc)
        }
    raise ArgumentError(
        "calculate_allocated_bytes: expected a PrimFunc or an IRModule, got "
        f"{type(func_or_mod).__name__}"
    )
