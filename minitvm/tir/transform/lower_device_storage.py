"""Shared-memory allocations at the top of their kernel (TVM's LowerDeviceStorageAccessInfo
step for scoped storage): OpenCL declares `__local` arrays only at kernel scope and CUDA sizes
a block's shared memory at launch, so every "shared" Allocate of a kernel moves, with its
DeclBuffer, just inside the kernel's thread_extent scopes. Its size must then be a constant.
"local" Allocates stay where they are (per-thread arrays); "global" ones inside a kernel are
refused (a kernel cannot allocate device memory).
"""

from __future__ import annotations

from typing import Any

from ...error import BuildError
from ..expr import IntImm
from ..function import PrimFunc
from ..functor import Mutator, map_outermost
from ..stmt import Allocate, AttrStmt, DeclBuffer, Stmt
from ._pass import prim_func_pass
from .thread_sync import allocated_scope


class _Lift(Mutator):
    """Removes the shared Allocates under one kernel, remembering them outermost first."""

    def __init__(self, func_name: str) -> None:
        super().__init__()
        self.func_name = func_name
        self.lifted: list[tuple[Allocate, DeclBuffer | None]] = []

    def visit_Allocate(self, alloc: Allocate) -> Stmt:
        scope = allocated_scope(alloc)
        name = alloc.buffer_var.name
        if scope == "global":
            raise BuildError(
                f"{self.func_name}: buffer '{name}' (scope global) is allocated inside a GPU "
                "kernel, which cannot allocate device memory; compute_inline its stage, or "
                "cache it in scope 'shared' or 'local' (set_scope / cache_read) instead"
            )
        if not scope.startswith("shared"):
            return self.generic_visit(alloc)
        for e in alloc.extents:
            if not isinstance(e, IntImm):
                raise BuildError(
                    f"{self.func_name}: shared buffer '{name}' has extent {e}, not a constant; "
                    "shared memory is sized at launch, so compute_at the shared stage where its "
                    "region is a constant-size tile (e.g. under a split with constant factor)"
                )
        body = alloc.body
        decl = None
        if isinstance(body, DeclBuffer) and body.buffer.data is alloc.buffer_var:
            decl, body = body, body.body
        self.lifted.append((alloc.replace(body=body), decl))
        return self.visit(body)


def _lower_kernel(stmt: AttrStmt, func_name: str) -> Stmt:
    chain = []
    inner: Stmt = stmt
    while isinstance(inner, AttrStmt) and inner.attr_key == "thread_extent":
        chain.append(inner)
        inner = inner.body
    lift = _Lift(func_name)
    body = lift.visit(inner)
    for alloc, decl in reversed(lift.lifted):
        if decl is not None:
            body = decl.replace(body=body)
        body = alloc.replace(body=body)
    for attr in reversed(chain):
        body = attr.replace(body=body)
    return body


def _is_kernel(s: Any) -> bool:
    return isinstance(s, AttrStmt) and s.attr_key == "thread_extent"


def lower_device_storage(func: PrimFunc) -> PrimFunc:
    """Hoist every kernel's shared Allocates to the kernel's top (module doc)."""
    name = f"function '{func.attrs.get('global_symbol', 'main')}'"
    return func.replace(
        body=map_outermost(func.body, _is_kernel, lambda attr: _lower_kernel(attr, name))
    )


LowerDeviceStorageAccessInfo = prim_func_pass(lower_device_storage, "LowerDeviceStorageAccessInfo")
