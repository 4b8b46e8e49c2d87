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
ThreadSync("shared.dyn") orders only dynamic shared memory, whose buffers all count as one
(they share one allocation); its barriers are `tvm_storage_sync("shared.dyn")`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...error import BuildError
from ..analysis.gpu_code import allocated_scope
from ..expr import Call, IterVar, StringImm, Var
from ..function import PrimFunc
from ..functor import Visitor, post_order_visit
from ..names import TVM_STORAGE_SYNC
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
    return Evaluate(Call("int32", TVM_STORAGE_SYNC, (StringImm(scope),)))


@dataclass(frozen=True)
class _Touch:
    """Shared memory read and written since the last barrier: sets of (memory, element),
    element being None (any element) or a thread's own one (see _Accesses)."""

    reads: frozenset = frozenset()
    writes: frozenset = frozenset()

    def __or__(self, other: _Touch) -> _Touch:
        return _Touch(self.reads | other.reads, self.writes | other.writes)

    def conflicts(self, later: _Touch) -> bool:
        """Whether `later` must wait for the threads that made `self`'s accesses."""
        # write-after-write is not ordered: a cooperative fetch writes each element once
        return _overlap(self.writes, later.reads) or _overlap(self.reads, later.writes)


def _overlap(first: frozenset, then: frozenset) -> bool:
    """Whether an access of `then` may touch what another thread touched in `first`: the same
    memory, unless both name one element that only the accessing thread computes."""
    return any(m1 == m2 and (e1 is None or e1 != e2) for m1, e1 in first for m2, e2 in then)


_EMPTY = _Touch()


class _Accesses(Visitor):
    """(memory, element) of each shared access. The element is the buffer and its index text
    when the index uses only thread indices and constants: the thread then touches that one
    element wherever the access is (in any loop iteration), so a later access of the same
    element by the same statement form is the same thread's and needs no barrier."""

    def __init__(self, shared: dict[int, object], threads: set[int]) -> None:
        self.shared = shared  # id(data var) -> the memory it names (see _SharedVars)
        self.threads = threads
        self.reads: set = set()
        self.writes: set = set()

    def _touch(self, buffer, indices: tuple) -> tuple:
        free: list = []
        for i in indices:
            post_order_visit(i, lambda n: free.append(n) if isinstance(n, Var) else None)
        own = bool(free) and all(id(v) in self.threads for v in free)
        element = (id(buffer.data), tuple(str(i) for i in indices)) if own else None
        return self.shared[id(buffer.data)], element

    def visit_BufferLoad(self, load) -> None:
        if id(load.buffer.data) in self.shared:
            self.reads.add(self._touch(load.buffer, load.indices))
        self.generic_visit(load)

    def visit_BufferStore(self, store) -> None:
        if id(store.buffer.data) in self.shared:
            self.writes.add(self._touch(store.buffer, store.indices))
        self.generic_visit(store)


def _uses(node, var_ids: set[int]) -> bool:
    found = []
    post_order_visit(node, lambda n: found.append(n) if id(n) in var_ids else None)
    return bool(found)


class _Planner:
    """Inserts barriers into one kernel body (see the module doc)."""

    def __init__(self, shared: dict[int, object], threads: dict[str, set], scope: str) -> None:
        self.shared = shared
        self.threads = threads["threadIdx"]  # conditions on them diverge
        self.block_threads = threads["threadIdx"] | threads["blockIdx"]  # fixed per thread
        self.scope = scope
        self.divergent = self.threads | set(shared)  # conditions on these may differ per thread

    def touched(self, stmt: Stmt) -> _Touch:
        acc = _Accesses(self.shared, self.block_threads)
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
        if isinstance(stmt, LetStmt) and not _uses(stmt.value, set(self.shared)):
            body, state = self.plan(stmt.body, state)
            return stmt.replace(body=body), state
        if isinstance(stmt, For) and not _uses(stmt.extent, self.divergent):
            return self.plan_loop(stmt, state)
        if isinstance(stmt, IfThenElse) and not _uses(stmt.condition, self.divergent):
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
            return seq(storage_sync(self.scope), stmt), touch
        return stmt, state | touch

    def plan_loop(self, loop: For, state: _Touch) -> tuple[Stmt, _Touch]:
        touch = self.touched(loop.body)
        if touch == _EMPTY:
            return loop, state
        if not touch.conflicts(touch):  # iterations cannot conflict with each other
            if state.conflicts(touch):  # one barrier before the loop, not one per iteration
                return seq(storage_sync(self.scope), loop), touch
            return loop, state | touch
        # an iteration starts with the previous one's accesses pending; the barrier this puts
        # before the first conflicting access also orders what came before the loop
        body, after = self.plan(loop.body, state | touch)
        return loop.replace(body=body), state | after


class _Exchange(Visitor):
    """Finds, in program order, a load of shared memory at an index this region stored to
    elsewhere: threads of a divergent region that exchange data there need a barrier that
    cannot be placed (not every thread reaches it)."""

    def __init__(self, shared: dict[int, object]) -> None:
        self.shared = shared
        self.stored: dict[object, list] = {}
        self.found: Any = None

    def visit_BufferStore(self, store) -> None:
        self.visit(store.value)  # the value is read before the store happens
        for i in store.indices:
            self.visit(i)
        if id(store.buffer.data) in self.shared:
            memory = self.shared[id(store.buffer.data)]
            self.stored.setdefault(memory, []).append((store.buffer.data, store.indices))

    def visit_BufferLoad(self, load) -> None:
        self.generic_visit(load)
        seen = self.stored.get(self.shared.get(id(load.buffer.data)))
        if (
            seen
            and self.found is None
            and not all(
                data is load.buffer.data and _same_indices(load.indices, i) for data, i in seen
            )
        ):
            self.found = load


def _same_indices(a: tuple, b: tuple) -> bool:
    from ...ir.structural import structural_equal

    return len(a) == len(b) and all(structural_equal(x, y) for x, y in zip(a, b))


def _check_no_inner_exchange(stmt: Stmt, shared: dict[int, object]) -> None:
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
    """The buffers the pass orders: id(data var) -> the memory it names. A "shared" buffer is
    its own memory; all "shared.dyn" buffers of a kernel are one (they are carved out of the
    one dynamic allocation, so any two may overlap)."""

    def __init__(self, scope: str) -> None:
        self.scopes = _SCOPES_ORDERED[scope]
        self.shared: dict[int, object] = {}

    def visit_Allocate(self, alloc: Allocate) -> None:
        scope = allocated_scope(alloc)
        if scope in self.scopes:
            var = alloc.buffer_var
            self.shared[id(var)] = "shared.dyn" if scope == "shared.dyn" else id(var)
        self.generic_visit(alloc)


# the barrier scope a ThreadSync call places -> the allocation scopes it orders
_SCOPES_ORDERED = {"shared": ("shared", "shared.dyn"), "shared.dyn": ("shared.dyn",)}


class _Kernels:
    def __init__(self, shared: dict[int, object], scope: str) -> None:
        self.shared = shared
        self.scope = scope

    def visit(self, stmt: Stmt) -> Stmt:
        if isinstance(stmt, AttrStmt) and stmt.attr_key == "thread_extent":
            inner = stmt
            while isinstance(inner, AttrStmt) and inner.attr_key == "thread_extent":
                inner = inner.body
            threads = _thread_vars(stmt)
            planner = _Planner(self.shared, threads, self.scope)
            return _rebuild_chain(stmt, planner.plan(inner, _EMPTY)[0])
        if isinstance(stmt, SeqStmt):
            return SeqStmt(tuple(self.visit(s) for s in stmt.seq))
        if hasattr(stmt, "body") and isinstance(stmt.body, Stmt):
            return stmt.replace(body=self.visit(stmt.body))
        return stmt


def _thread_vars(kernel: Stmt) -> dict[str, set]:
    """ids of the kernel's threadIdx and blockIdx variables (launched anywhere in it)."""
    found: dict[str, set] = {"threadIdx": set(), "blockIdx": set()}

    def note(n) -> None:
        if isinstance(n, AttrStmt) and n.attr_key == "thread_extent":
            iv = n.node
            kind = iv.thread_tag.split(".")[0] if isinstance(iv, IterVar) else ""
            if kind in found:
                found[kind].add(id(iv.var))

    post_order_visit(kernel, note)
    return found


def _rebuild_chain(top: AttrStmt, body: Stmt) -> Stmt:
    if isinstance(top, AttrStmt) and top.attr_key == "thread_extent":
        return top.replace(body=_rebuild_chain(top.body, body))
    return body


def thread_sync(func: PrimFunc, scope: str = "shared") -> PrimFunc:
    """Insert `tvm_storage_sync(scope)` barriers into every kernel of `func` (module doc)."""
    if scope not in _SCOPES_ORDERED:
        return func  # global and warp memory need no barrier we can place
    finder = _SharedVars(scope)
    finder.visit(func.body)
    if not finder.shared:
        return func
    return func.replace(body=_Kernels(finder.shared, scope).visit(func.body))


def ThreadSync(scope: str = "shared"):
    """TVM's `tir.transform.ThreadSync(storage_scope)` pass object."""
    return prim_func_pass(lambda f: thread_sync(f, scope), "ThreadSync")()
