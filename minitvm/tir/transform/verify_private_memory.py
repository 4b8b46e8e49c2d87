"""Check that each thread reads only on-chip memory that was written for it.

A `local` buffer is private to a thread. When a local stage's loop is bound to a thread axis
(its store index names threadIdx), each thread writes only part of the buffer, and a read of an
element some other thread wrote returns garbage: no barrier can help. For such buffers the
check enumerates, with numpy, every thread's stored and loaded elements (over the launch
extents and the enclosing loops, honouring the guards of stores) and refuses a kernel in which
a thread loads an element it never stores; what it cannot enumerate (symbolic extents, indices
it cannot evaluate, too many points) is refused too, since legality is not proven.

A `shared` buffer is one per block: the same enumeration, keyed by block, refuses a read of an
element no thread of the block writes (a fetch too small for its readers). It checks our own
bound inference rather than a user's choice, so kernels it cannot enumerate pass.
"""

from __future__ import annotations

import numpy as np

from ...error import BuildError
from ..expr import EQ, LT, And, BufferLoad, Cast, IntImm, IterVar, Max, Min, Not, PrimExpr, Var
from ..expr_build import INT_OPERATORS
from ..functor import Visitor, post_order_visit
from ..names import LIKELY, is_call
from ..stmt import Allocate, AttrStmt, BufferStore, For, IfThenElse, Stmt
from .thread_sync import allocated_scope

_BUDGET = 1 << 22  # points enumerated per access; beyond it legality is not proven
_BINARY = {**INT_OPERATORS, Min: np.minimum, Max: np.maximum}  # elementwise on arrays


class _Unprovable(Exception):
    pass


class _Access:
    """One store or load of a local buffer with its enclosing loops and store guards."""

    def __init__(self, index: PrimExpr, loops: list[For], guards: list[PrimExpr]) -> None:
        self.index, self.loops, self.guards = index, loops, guards


class _Collect(Visitor):
    def __init__(self) -> None:
        self.threads: dict[int, tuple[Var, PrimExpr]] = {}  # id(var) -> (var, extent)
        self.local: dict[int, str] = {}  # id(buffer var) -> name, of local and shared buffers
        self.scope: dict[int, str] = {}
        self.stores: dict[int, list[_Access]] = {}
        self.loads: dict[int, list[_Access]] = {}
        self.loops: list[For] = []
        self.guards: list[PrimExpr] = []

    def visit_AttrStmt(self, attr: AttrStmt) -> None:
        if attr.attr_key == "thread_extent" and isinstance(attr.node, IterVar):
            self.threads[id(attr.node.var)] = (attr.node.var, attr.value)
        self.generic_visit(attr)

    def visit_Allocate(self, alloc: Allocate) -> None:
        scope = allocated_scope(alloc)
        if scope in ("local", "shared"):
            self.local[id(alloc.buffer_var)] = alloc.buffer_var.name
            self.scope[id(alloc.buffer_var)] = scope
        self.generic_visit(alloc)

    def visit_For(self, loop: For) -> None:
        self.loops.append(loop)
        self.generic_visit(loop)
        self.loops.pop()

    def visit_IfThenElse(self, s: IfThenElse) -> None:
        self.visit(s.condition)
        self.guards.append(s.condition)
        self.visit(s.then_case)
        self.guards.pop()
        if s.else_case is not None:
            self.guards.append(Not(s.condition))
            self.visit(s.else_case)
            self.guards.pop()

    def _access(self, table: dict, node, indices: tuple) -> None:
        if id(node.buffer.data) in self.local and len(indices) == 1:
            access = _Access(indices[0], list(self.loops), list(self.guards))
            table.setdefault(id(node.buffer.data), []).append(access)

    def visit_BufferStore(self, store: BufferStore) -> None:
        self._access(self.stores, store, store.indices)
        self.generic_visit(store)

    def visit_BufferLoad(self, load: BufferLoad) -> None:
        self._access(self.loads, load, load.indices)
        self.generic_visit(load)


def _uses_any(e: PrimExpr, ids: set[int]) -> bool:
    found = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, Var) and id(n) in ids else None)
    return bool(found)


def _evaluate(e: PrimExpr, env: dict[int, np.ndarray]):
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, Var):
        if id(e) not in env:
            raise _Unprovable(f"it uses '{e.name}'")
        return env[id(e)]
    if isinstance(e, Cast) and (e.dtype.is_int or e.dtype.is_uint or e.dtype.is_bool):
        return _evaluate(e.value, env)
    if isinstance(e, Not):
        return np.logical_not(_evaluate(e.a, env))
    if is_call(e, LIKELY):
        return _evaluate(e.args[0], env)  # a hint: the value of its argument
    op = _BINARY.get(type(e))
    if op is None:
        raise _Unprovable(f"it holds {type(e).__name__} `{e}`")
    return op(_evaluate(e.a, env), _evaluate(e.b, env))


def _const(e: PrimExpr, what: str) -> int:
    if not isinstance(e, IntImm):
        raise _Unprovable(f"{what} {e} is not a constant")
    return e.value


def _owned(
    access: _Access, axes: list[tuple[Var, int]], strict: bool, owners: int | None = None
) -> np.ndarray:
    """(thread number, element) pairs of `access` where its guards hold, over every thread and
    enclosing loop; a guard it cannot evaluate is unprovable when `strict`, else ignored."""
    loops = [(lp.loop_var, _const(lp.min, "a loop start"), _const(lp.extent, "a loop extent"))
             for lp in access.loops]  # fmt: skip
    sizes = [n for _, n in axes] + [n for _, _, n in loops]
    if int(np.prod(sizes, dtype=np.int64)) > _BUDGET:
        raise _Unprovable(f"it would take more than {_BUDGET} points to enumerate")
    grids = np.meshgrid(*[np.arange(n) for n in sizes], indexing="ij", sparse=True)
    env = {id(v): g for (v, _), g in zip(axes, grids)}
    env |= {id(v): g + lo for (v, lo, _), g in zip(loops, grids[len(axes) :])}
    thread = np.zeros((), np.int64)  # the owner: a thread (local memory) or a block (shared)
    for (_, n), g in list(zip(axes, grids))[:owners]:
        thread = thread * n + g
    shape = np.broadcast_shapes(*(g.shape for g in grids)) if grids else ()
    element = np.broadcast_to(_evaluate(access.index, env), shape)
    pairs = np.stack([np.broadcast_to(thread, shape), element], axis=-1).reshape(-1, 2)
    keep = np.ones(shape, bool)
    for g in access.guards:
        try:
            keep &= np.broadcast_to(_evaluate(g, env), shape).astype(bool)
        except _Unprovable:
            if strict:
                raise
    return pairs[keep.reshape(-1)]


def verify_private_memory(kernel_body: Stmt, where: str) -> None:
    """Raise BuildError unless every thread loads only `local` elements it stores itself."""
    c = _Collect()
    c.visit(kernel_body)
    thread_ids = set(c.threads)
    for buf, stores in c.stores.items():
        if c.scope[buf] == "shared":
            _check_shared(c, c.local[buf], stores, c.loads.get(buf, []), where)
            continue
        if not any(_uses_any(s.index, thread_ids) for s in stores):
            continue  # every thread writes the whole buffer: its own copy
        name = c.local[buf]
        loads = c.loads.get(buf, [])
        used = {id(v) for a in stores + loads for v in _vars(a)} & thread_ids
        try:
            axes = [(v, _const(ext, f"the extent of '{v.name}'"))
                    for key, (v, ext) in c.threads.items() if key in used]  # fmt: skip
            # a guard that cannot be evaluated could skip the store: nothing is proven then
            stored = np.concatenate([_owned(s, axes, True) for s in stores])
            # a load under a guard it cannot evaluate is checked anyway: that only refuses more
            loaded = [_owned(a, axes, False) for a in loads]
        except _Unprovable as err:
            raise BuildError(
                f"{where}: local buffer '{name}' is written by a loop bound to GPU threads (each "
                f"thread writes only part of it), and it cannot be proven that every thread "
                f"reads only the elements it wrote itself: {err}. Bind only shared-memory "
                "stages to threads, or compute_at the local stage inside the thread loop"
            ) from None
        unwritten = _first_unwritten(stored, loads, loaded)
        if unwritten is not None:
            access, element = unwritten
            raise BuildError(
                f"{where}: a thread reads local buffer '{name}' at `{access.index}` "
                f"(element {element}), which that thread never writes "
                "(local memory is private to each thread, so it reads garbage); cache into "
                "'shared' for data exchanged between threads (with the barrier that "
                "brings), or bind the local stage's loop like its reader's"
            )


def _first_unwritten(stored: np.ndarray, loads: list, loaded: list) -> tuple | None:
    """(access, element) of the first load of an (owner, element) pair no store wrote."""
    key = stored[:, 0] * (1 << 32) + stored[:, 1]
    for access, pairs in zip(loads, loaded):
        missing = ~np.isin(pairs[:, 0] * (1 << 32) + pairs[:, 1], key)
        if missing.any():
            return access, int(pairs[missing][0, 1])
    return None


def _vars(access: _Access) -> list[Var]:
    found: list[Var] = []
    for e in (access.index, *access.guards):
        post_order_visit(e, lambda n: found.append(n) if isinstance(n, Var) else None)
    return found


def _check_shared(c: _Collect, name: str, stores: list, loads: list, where: str) -> None:
    """Every shared element a block reads is written by some thread of that block (a check of
    bound inference and compaction: a tile fetched for fewer threads than read it). Kernels it
    cannot enumerate (symbolic sizes, data-dependent indices) are left to the other checks."""
    blocks = [(v, e) for v, e in c.threads.values() if v.name.startswith("blockIdx")]
    threads = [(v, e) for v, e in c.threads.values() if not v.name.startswith("blockIdx")]
    used = {id(v) for a in stores + loads for v in _vars(a)}
    try:
        axes = [(v, _const(e, "")) for v, e in blocks + threads if id(v) in used]
        owners = sum(1 for v, _ in blocks if id(v) in used)
        stored = np.concatenate([_owned(a, axes, True, owners) for a in stores])
        loaded = [_owned(a, axes, True, owners) for a in loads]
    except _Unprovable:
        return
    unwritten = _first_unwritten(stored, loads, loaded)
    if unwritten is not None:
        access, element = unwritten
        raise BuildError(
            f"{where}: shared buffer '{name}' is read at `{access.index}` (element "
            f"{element}), which no thread of the block writes; the "
            "cooperative fetch into it does not cover what the block reads (a bound "
            "inference error: please report it with the schedule)"
        )


class _Stores(Visitor):
    """Every store of a kernel with the guards around it."""

    def __init__(self) -> None:
        self.threads: dict[int, tuple[Var, PrimExpr]] = {}
        self.found: list[tuple[BufferStore, list[PrimExpr]]] = []
        self.guards: list[PrimExpr] = []
        self.private: set[int] = set()  # local buffers: each thread has its own

    def visit_AttrStmt(self, attr: AttrStmt) -> None:
        if attr.attr_key == "thread_extent" and isinstance(attr.node, IterVar):
            self.threads[id(attr.node.var)] = (attr.node.var, attr.value)
        self.generic_visit(attr)

    def visit_Allocate(self, alloc: Allocate) -> None:
        if allocated_scope(alloc).startswith(("local", "warp")):
            self.private.add(id(alloc.buffer_var))
        self.generic_visit(alloc)

    def visit_IfThenElse(self, s: IfThenElse) -> None:
        self.guards.append(s.condition)
        self.visit(s.then_case)
        self.guards.pop()
        if s.else_case is not None:
            self.visit(s.else_case)

    def visit_BufferStore(self, store: BufferStore) -> None:
        self.found.append((store, list(self.guards)))
        self.generic_visit(store)


def _pins(guard: PrimExpr, var: Var) -> bool:
    """Whether `guard` lets one value of `var` through (`var == c`, `var < 1`)."""
    if isinstance(guard, And):
        return _pins(guard.a, var) or _pins(guard.b, var)
    if isinstance(guard, EQ):
        return (guard.a is var and isinstance(guard.b, IntImm)) or (
            guard.b is var and isinstance(guard.a, IntImm)
        )
    return isinstance(guard, LT) and guard.a is var and _is_int(guard.b, 1)


def _is_int(e: PrimExpr, value: int) -> bool:
    return isinstance(e, IntImm) and e.value == value


def verify_no_write_race(kernel_body: Stmt, where: str) -> None:
    """Raise BuildError where the threads of a block write one shared or global element with
    different values, or accumulate into it (each thread's read-modify-write undoes the others'):
    a store whose index leaves out a launched threadIdx while its value reads the stored buffer or
    depends on that thread index, and that no guard pins to one thread."""
    s = _Stores()
    s.visit(kernel_body)
    threads = [v for v, e in s.threads.values()
               if v.name.startswith("threadIdx") and not _is_int(e, 1)]  # fmt: skip
    for store, guards in s.found:
        if id(store.buffer.data) in s.private:
            continue
        index_vars = {id(v) for i in store.indices for v in _vars(_Access(i, [], []))}
        value_vars = {id(v) for v in _vars(_Access(store.value, [], []))}
        accumulates = _reads(store.value, store.buffer.data)
        for t in threads:
            if id(t) in index_vars or any(_pins(g, t) for g in guards):
                continue
            if accumulates or id(t) in value_vars:
                how = (
                    "reading it back (an accumulation)"
                    if accumulates
                    else f"with a value that depends on '{t.name}'"
                )
                index = ", ".join(str(i) for i in store.indices)
                raise BuildError(
                    f"{where}: every thread along '{t.name}' stores to '{store.buffer.name}' at "
                    f"the same index `{index}`, {how}, so the threads race and the result "
                    f"depends on their timing; bind a loop of that stage to '{t.name}' (to let "
                    "one thread store it, split an axis by factor 1 and bind the inner part: "
                    "threads past the extent skip it), or keep the stage in 'local' memory"
                )


def _reads(e: PrimExpr, data: Var) -> bool:
    found = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, BufferLoad)
                     and n.buffer.data is data else None)  # fmt: skip
    return bool(found)
