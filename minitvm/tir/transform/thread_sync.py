"""Barriers for shared memory (TVM's ThreadSync("shared")): a `tvm_storage_sync("shared")` where
a statement reads (or overwrites) shared memory that an earlier statement of the kernel wrote
(or read) since the last barrier.

Which thread touched which element is not analysed: any write-then-read of one shared buffer
gets a barrier (a read of what the same thread wrote only costs a barrier). The pass walks each
kernel in program order with the set of shared buffers read and written since the last
barrier. A loop whose body both reads and writes one shared buffer is walked as if its previous
iteration had just run (so a fetch at the top of the body that the end of the body reads gets
a barrier before it, for the next iteration); any other loop gets at most one barrier, before
it.
A barrier must be reached by every thread of the block, so none is placed inside a branch or
loop whose condition or extent depends on threadIdx: such a statement counts as one access,
and the barrier goes before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...error import BuildError
from ..expr import Call, IterVar, StringImm
from ..function import PrimFunc
from ..functor import Visitor, post_order_visit
from ..stmt import (
    Allocate,
    AttrStmt,
    DeclBuffer,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    seq,
)  # fmt: skip
from ._pass import prim_func_pass


def storage_sync(scope: str = "shared") -> Stmt:
    """The barrier statement of the lowered-TIR contract."""
    return Evaluate(Call("int32", "tir.tvm_storage_sync", (StringImm(scope),)))


def allocated_scope(alloc: Allocate) -> str:
    """The storage scope of an Allocate (its annotation, else its DeclBuffer's buffer)."""
    scope = alloc.annotations.get("storage_scope")
    if scope is None and isinstance(alloc.body, DeclBuffer):
        scope = alloc.body.buffer.scope()
    return scope or "global"


@dataclass(frozen=True)
class _Touch:
    """Shared buffers (ids of their data vars) read and written since the last barrier."""

    reads: frozenset = frozenset()
    writes: frozenset = frozenset()

    def __or__(self, other: _Touch) -> _Touch:
        return _Touch(self.reads | other.reads, self.writes | other.writes)

    def conflicts(self, later: _Touch) -> bool:
        """Whether `later` must wait for the threads that made `self`'s accesses."""
        # write-after-write is not ordered: a cooperative fetch writes each element once
        return bool(later.reads & self.writes or later.writes & self.reads)


_EMPTY = _Touch()


class _Accesses(Visitor):
    def __init__(self, shared: set[int]) -> None:
        self.shared = shared
        self.reads: set[int] = set()
        self.writes: set[int] = set()

    def visit_BufferLoad(self, load) -> None:
        if id(load.buffer.data) in self.shared:
            self.reads.add(id(load.buffer.data))
        self.generic_visit(load)

    def visit_BufferStore(self, store) -> None:
        if id(store.buffer.data) in self.shared:
            self.writes.add(id(store.buffer.data))
        self.generic_visit(store)


def _uses(node, var_ids: set[int]) -> bool:
    found = []
    post_order_visit(node, lambda n: found.append(n) if id(n) in var_ids else None)
    return bool(found)


class _Planner:
    """Inserts barriers into one kernel body (see the module doc)."""

    def __init__(self, shared: set[int], threads: set[int]) -> None:
        self.shared = shared
        self.threads = threads  # ids of the threadIdx vars: conditions on them diverge

    def touched(self, stmt: Stmt) -> _Touch:
        acc = _Accesses(self.shared)
        acc.visit(stmt)
        return _Touch(frozenset(acc.reads), frozenset(acc.writes))

    def plan(self, stmt: Stmt, state: _Touch) -> tuple[Stmt, _Touch]:
        if isinstance(stmt, SeqStmt):
            out = []
            for child in stmt.seq:
                new, state = self.plan(child, state)
                out.append(new)
            return SeqStmt(tuple(out)), state
        if isinstance(stmt, AttrStmt | Allocate | DeclBuffer):
            body, state = self.plan(stmt.body, state)
            return stmt.replace(body=body), state
        if isinstance(stmt, LetStmt) and not _uses(stmt.value, self.shared):
            body, state = self.plan(stmt.body, state)
            return stmt.replace(body=body), state
        if isinstance(stmt, For) and not _uses(stmt.extent, self.threads | self.shared):
            return self.plan_loop(stmt, state)
        if isinstance(stmt, IfThenElse) and not _uses(stmt.condition, self.threads | self.shared):
            then, s1 = self.plan(stmt.then_case, state)
            other, s2 = (None, state)
            if stmt.else_case is not None:
                other, s2 = self.plan(stmt.else_case, state)
            return stmt.replace(then_case=then, else_case=other), s1 | s2
        return self.atomic(stmt, state)

    def atomic(self, stmt: Stmt, state: _Touch) -> tuple[Stmt, _Touch]:
        """A statement run as one unit (a leaf, or divergent control flow)."""
        touch = self.touched(stmt)
        if touch.conflicts(touch):
            _check_no_inner_exchange(stmt, self.shared)
        if state.conflicts(touch):
            return seq(storage_sync(), stmt), touch
        return stmt, state | touch

    def plan_loop(self, loop: For, state: _Touch) -> tuple[Stmt, _Touch]:
        touch = self.touched(loop.body)
        if touch == _EMPTY:
            return loop, state
        if not touch.conflicts(touch):  # iterations cannot conflict with each other
            if state.conflicts(touch):  # one barrier before the loop, not one per iteration
                return seq(storage_sync(), loop), touch
            return loop, state | touch
        # an iteration starts with the previous one's accesses pending; the barrier this puts
        # before the first conflicting access also orders what came before the loop
        body, after = self.plan(loop.body, state | touch)
        return loop.replace(body=body), state | after


class _Exchange(Visitor):
    """Finds, in program order, a load of shared memory at an index this region stored to
    elsewhere: threads of a divergent region that exchange data there need a barrier that
    cannot be placed (not every thread reaches it)."""

    def __init__(self, shared: set[int]) -> None:
        self.shared = shared
        self.stored: dict[int, list] = {}
        self.found: Any = None

    def visit_BufferStore(self, store) -> None:
        self.visit(store.value)  # the value is read before the store happens
        for i in store.indices:
            self.visit(i)
        if id(store.buffer.data) in self.shared:
            self.stored.setdefault(id(store.buffer.data), []).append(store.indices)

    def visit_BufferLoad(self, load) -> None:
        self.generic_visit(load)
        seen = self.stored.get(id(load.buffer.data))
        if seen and self.found is None and not all(_same_indices(load.indices, i) for i in seen):
            self.found = load


def _same_indices(a: tuple, b: tuple) -> bool:
    from ...ir.structural import structural_equal

    return len(a) == len(b) and all(structural_equal(x, y) for x, y in zip(a, b))


def _check_no_inner_exchange(stmt: Stmt, shared: set[int]) -> None:
    finder = _Exchange(shared)
    finder.visit(stmt)
    if finder.found is not None:
        name = finder.found.buffer.name
        raise BuildError(
            f"ThreadSync: shared buffer '{name}' is written and then read at another index "
            f"inside a branch or loop that depends on threadIdx ({type(stmt).__name__}); "
            "the barrier between them would not be reached by every thread. Move the read "
            "out of the thread-dependent condition (e.g. guard only the store), or keep each "
            "thread reading what it wrote"
        )


class _SharedVars(Visitor):
    def __init__(self) -> None:
        self.shared: set[int] = set()

    def visit_Allocate(self, alloc: Allocate) -> None:
        if allocated_scope(alloc).startswith("shared"):
            self.shared.add(id(alloc.buffer_var))
        self.generic_visit(alloc)


class _Kernels:
    def __init__(self, shared: set[int]) -> None:
        self.shared = shared

    def visit(self, stmt: Stmt) -> Stmt:
        if isinstance(stmt, AttrStmt) and stmt.attr_key == "thread_extent":
            threads: set[int] = set()
            inner = stmt
            while isinstance(inner, AttrStmt) and inner.attr_key == "thread_extent":
                iv = inner.node
                if isinstance(iv, IterVar) and iv.thread_tag.startswith("threadIdx"):
                    threads.add(id(iv.var))
                inner = inner.body
            return _rebuild_chain(stmt, _Planner(self.shared, threads).plan(inner, _EMPTY)[0])
        if isinstance(stmt, SeqStmt):
            return SeqStmt(tuple(self.visit(s) for s in stmt.seq))
        if hasattr(stmt, "body") and isinstance(stmt.body, Stmt):
            return stmt.replace(body=self.visit(stmt.body))
        return stmt


def _rebuild_chain(top: AttrStmt, body: Stmt) -> Stmt:
    if isinstance(top, AttrStmt) and top.attr_key == "thread_extent":
        return top.replace(body=_rebuild_chain(top.body, body))
    return body


def thread_sync(func: PrimFunc, scope: str = "shared") -> PrimFunc:
    """Insert `tvm_storage_sync("shared")` barriers into every kernel of `func` (module doc)."""
    if scope != "shared":
        return func  # global and warp memory need no barrier we can place
    finder = _SharedVars()
    finder.visit(func.body)
    if not finder.shared:
        return func
    return func.replace(body=_Kernels(finder.shared).visit(func.body))


def ThreadSync(scope: str = "shared"):
    """TVM's `tir.transform.ThreadSync(storage_scope)` pass object."""
    return prim_func_pass(lambda f: thread_sync(f, scope), "ThreadSync")()
