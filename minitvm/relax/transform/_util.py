"""Shared helpers for graph-level passes."""

from __future__ import annotations

from collections.abc import Callable

from ...ir.module import IRModule
from ..expr import Function


def map_functions(mod: IRModule, fn: Callable[[Function], Function]) -> IRModule:
    """A new module with `fn` applied to every relax Function (PrimFuncs kept as they are)."""
    return mod.map_functions(Function, fn)
