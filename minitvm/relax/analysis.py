"""Relax analyses TVM code calls by name (`relax.analysis.remove_all_unused`)."""

from __future__ import annotations

from ..error import MiniTVMError
from ..ir.module import IRModule
from .expr import Function
from .transform.dead_code_elimination import dead_code_elimination, remove_unused_bindings


def remove_all_unused(func: Function | IRModule) -> Function | IRModule:
    """Drop bindings whose variable is never used (a Function), or also unreachable functions
    (an IRModule). Calls in impure functions are kept: they may have side effects."""
    if isinstance(func, Function):
        return remove_unused_bindings(func)
    if isinstance(func, IRModule):
        return dead_code_elimination(func)
    raise MiniTVMError(
        f"relax.analysis.remove_all_unused: expected a relax.Function or an IRModule, got "
        f"{type(func).__name__}"
    )


__all__ = ["remove_all_unused"]
