"""Move each `Allocate` to the lowest common ancestor loop of all uses of its memory.

A `cache_write("local")` accumulator used only inside a tile's loops then becomes a small
constant-size allocation inside the tile (a stack slot LLVM promotes to registers), and a
buffer used inside a parallel loop becomes private to each iteration.
"""

from __future__ import annotations

from typing import Any

from ..analysis.gpu_code import allocated_scope
from ..expr import Var
from ..function import PrimFunc
from ..functor import Mutator, Visitor
from ..stmt import Allocate, DeclBuffer, For, ForKind, Stmt
from ._pass import prim_func_pass
from .convert_blocks_to_loops import PINNED_ALLOCATION


class _Strip(Mutator):
    """Remove every Allocate (and the DeclBuffer right under it), remembering them in order."""

    def __init__(self) -> None:
        super().__init__()
        self.allocs: list[tuple[Allocate, DeclBuffer | None]] = []
        self.thread_depth = 0
        self.outside_threads: set[int] = set()  # ids of Allocates above every thread binding

    def visit_For(self, loop: For) -> Stmt:
        bound = loop.kind == ForKind.THREAD_BINDING
        self.thread_depth += bound
        try:
            return self.generic_visit(loop)
        finally:
            self.thread_depth -= bound

    def visit_Allocate(self, alloc: Allocate) -> Stmt:
        if not self.thread_depth:
            self.outside_threads.add(id(alloc))
        decl = (
            alloc.body
            if isinstance(alloc.body, DeclBuffer) and alloc.body.buffer.data is alloc.buffer_var
            else None
        )
        self.allocs.append((alloc, decl))
        return self.visit(decl.body if decl is not None else alloc.body)


class _UsePaths(Visitor):
    """For each allocated data var: the common prefix of the loop paths of all its uses."""

    def __init__(self, data_vars: set[int]) -> None:
        self.data_vars = data_vars
        self.path: list[For] = []
        self.lca: dict[int, list[For]] = {}

    def visit_For(self, loop: For) -> None:
        self.path.append(loop)
        self.generic_visit(loop)
        self.path.pop()

    def visit_Var(self, v: Var) -> None:
        if id(v) not in self.data_vars:
            return
        old = self.lca.get(id(v))
        if old is None:
            self.lca[id(v)] = list(self.path)
            return
        n = 0
        while n < min(len(old), len(self.path)) and old[n] is self.path[n]:
            n += 1
        del old[n:]


def _placement(path: list[For], keep_off_threads: bool = False) -> For | None:
    """The loop whose body hosts the allocation: never inside a vectorized loop, nor inside a
    GPU thread-bound loop when `keep_off_threads` (a global buffer the function allocated
    outside its kernels: the host allocates it, as TVM places global buffers above the thread
    bindings; one allocated inside a kernel stays there and the GPU checks refuse it)."""
    for n, loop in enumerate(path):
        if loop.kind == ForKind.VECTORIZED or (
            keep_off_threads and loop.kind == ForKind.THREAD_BINDING
        ):
            return path[n - 1] if n else None
    return path[-1] if path else None


class _Insert(Mutator):
    def __init__(self, at: dict[int, list[tuple[Allocate, DeclBuffer | None]]]) -> None:
        super().__init__()
        self.at = at

    def visit_For(self, loop: For) -> For:
        new = self.generic_visit(loop)
        allocs = self.at.get(id(loop))
        return new.replace(body=wrap(new.body, allocs)) if allocs else new


def wrap(body: Stmt, allocs: list[tuple[Allocate, DeclBuffer | None]]) -> Stmt:
    """Re-wrap `body` in the given allocations, the first one outermost."""
    for alloc, decl in reversed(allocs):
        inner = decl.replace(body=body) if decl is not None else body
        body = alloc.replace(body=inner)
    return body


def plan_and_update_buffer_allocation_location(func: PrimFunc) -> PrimFunc:
    """Re-place every Allocate at the deepest loop enclosing all uses (unused ones are dropped)."""
    strip = _Strip()
    body = strip.visit(func.body)
    if not strip.allocs:
        return func
    uses = _UsePaths({id(a.buffer_var) for a, _ in strip.allocs})
    uses.visit(body)
    at: dict[int, list[Any]] = {}
    top: list[Any] = []
    for alloc, decl in strip.allocs:
        path = uses.lca.get(id(alloc.buffer_var))
        if path is None:
            continue
        # a pinned buffer carries values across loop iterations (rolling_buffer): keep it
        # outside every loop
        pinned = alloc.annotations.get(PINNED_ALLOCATION)
        off_threads = id(alloc) in strip.outside_threads and allocated_scope(alloc) == "global"
        host = None if pinned else _placement(path, off_threads)
        (top if host is None else at.setdefault(id(host), [])).append((alloc, decl))
    body = _Insert(at).visit(body)
    return func.replace(body=wrap(body, top))


PlanAndUpdateBufferAllocationLocation = prim_func_pass(
    plan_and_update_buffer_allocation_location, "PlanAndUpdateBufferAllocationLocation"
)
