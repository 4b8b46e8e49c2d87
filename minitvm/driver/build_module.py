"""`tvm.driver.build_module`: TVM's module path for `lower`, `build` and `schedule_to_module`."""

from __future__ import annotations

from typing import Any

from ..error import BuildError
from ..ir.module import IRModule
from . import build, lower


def schedule_to_module(
    sch: Any, args: Any = None, name: str = "main", binds: Any = None
) -> IRModule:
    """The loop nest of a te.Schedule as an IRModule {name: PrimFunc}, before buffer flattening
    (multi-dimensional indices, split predicates as `if` statements).

    >>> mod = schedule_to_module(s, [A, B]); mod["main"].body
    """
    if not hasattr(sch, "build_prim_func"):
        raise BuildError(
            f"schedule_to_module: expected a te.Schedule (te.create_schedule), got "
            f"{type(sch).__name__}; use tvm.lower for PrimFuncs and IRModules"
        )
    return lower(sch, args, name=name, binds=binds)


__all__ = ["build", "lower", "schedule_to_module"]
