"""tvm.tir.Schedule: block and loop primitives over an IRModule, with a replayable trace.

IR is immutable, so the schedule holds the current functions and replaces them on every
primitive. A BlockRV resolves by its block's (unique) name, a LoopRV by its loop variable,
which every primitive keeps for the loops it does not replace.
"""

from __future__ import annotations

from typing import Any

from ...error import ScheduleError
from ...ir.module import IRModule
from ..expr import PrimExpr, Var
from ..function import PrimFunc
from ..functor import substitute
from ..stmt import Block, BlockRealize, For, ForKind
from . import cache as _cache
from . import compute_location as _loc
from . import inline as _inline
from . import loop_transform as _lt
from . import reduction as _red
from .block_scope import DepKind
from .common import schedule_error
from .instruction import BlockRV, Instruction, LoopRV, kind_by_method, kind_of_method
from .schedule_block_layout import _as_factor, _BlockLayoutPrimitives
from .schedule_sampling import _SamplingMethods
from .state import ScheduleState, StmtSRef, UnknownRVError
from .trace import Trace
from .tree import (
    Path,
    block_names,
    block_realizes,
    find_block,
    find_loop,
    loops_above,
    replace_stmt,
    walk,
)


def _flow_neighbours(state: ScheduleState, r: BlockRealize, producers: bool) -> list[str]:
    sref = state.get_sref(r.block)
    scope = sref.parent
    while scope is not None and not isinstance(scope.stmt, Block):
        scope = scope.parent
    if scope is None:  # the root block
        return []
    deps = state.get_block_scope(scope)
    edges = deps.get_deps_by_dst(sref) if producers else deps.get_deps_by_src(sref)
    names: list[str] = []
    for e in edges:
        other = e.src if producers else e.dst
        if e.kind in (DepKind.RAW, DepKind.WAW) and other.stmt.name_hint not in names:
            names.append(other.stmt.name_hint)
    return names


class _NoFunctionError(ScheduleError, ValueError):
    """get_block without a function to work on (TVM raises a ValueError here)."""


class Schedule(_SamplingMethods, _BlockLayoutPrimitives):
    """Schedule primitives on the PrimFuncs of a module (or of one PrimFunc, as "main").

    >>> sch = tvm.tir.Schedule(mod)
    >>> i, j, k = sch.get_loops(sch.get_block("C"))
    >>> i0, i1 = sch.split(i, factors=[None, 4])
    """

    def __init__(
        self,
        mod: IRModule | PrimFunc,
        *,
        seed: int | None = None,
        debug_mask: Any = "all",
        error_render_level: str = "detail",
        enable_check: bool = True,
    ) -> None:
        if isinstance(mod, PrimFunc):
            mod = IRModule({"main": mod})
        if not isinstance(mod, IRModule):
            raise ScheduleError(
                f"tir.Schedule takes an IRModule or a PrimFunc, got {type(mod).__name__}"
            )
        self._mod = mod.copy()
        prims = [
            name
            for name, f in ((gv.name_hint, f) for gv, f in mod.items())
            if isinstance(f, PrimFunc)
        ]
        if not prims:
            raise ScheduleError("tir.Schedule: the module has no PrimFunc to schedule")
        self._func_name = "main" if "main" in prims else (prims[0] if len(prims) == 1 else None)
        self._blocks: dict[int, tuple[str, str]] = {}
        self._loops: dict[int, tuple[str, Var]] = {}
        self._trace = Trace()
        self._init_trace_state(seed, debug_mask, error_render_level, enable_check)

    # ------------------------------------------------------------------ state
    @property
    def mod(self) -> IRModule:
        return self._mod.copy()

    @property
    def trace(self) -> Trace:
        return self._trace

    @property
    def func_working_on(self) -> Any:
        """The GlobalVar of the function get_block looks in (None when not decided)."""
        return None if self._func_name is None else self._mod.get_global_var(self._func_name)

    def show(self, *args: Any, **kwargs: Any) -> None:
        self._mod.show(*args, **kwargs)

    def copy(self) -> Schedule:
        out = Schedule.__new__(Schedule)
        out._mod = self._mod.copy()
        out._func_name = self._func_name
        out._blocks = dict(self._blocks)
        out._loops = dict(self._loops)
        out._trace = self._trace.copy()
        self._copy_trace_state(out)
        return out

    def work_on(self, func_name: str) -> None:
        if func_name not in self._mod or not isinstance(self._mod[func_name], PrimFunc):
            names = [gv.name_hint for gv, f in self._mod.items() if isinstance(f, PrimFunc)]
            raise ScheduleError(f"work_on: no PrimFunc named {func_name!r}; the module has {names}")
        self._func_name = func_name  # not traced: get_block records its func_name (as TVM)

    def _func(self, name: str) -> PrimFunc:
        return self._mod[name]

    def _update(self, name: str, func: PrimFunc) -> None:
        self._mod[name] = func

    def _record(
        self,
        kind: str,
        args: tuple,
        kwargs: tuple,
        outputs: tuple = (),
        unpack: bool = False,
        decision: Any = None,
    ) -> None:
        """Append the call `sch.<kind>(*args, **kwargs)` to the trace as an Instruction."""
        named = {k: self._desugar(k, v) for k, v in kwargs}
        inst_kind = kind_of_method(kind, named, len(outputs), unpack)
        inputs, attrs = inst_kind.split_call(tuple(args), named)
        self._trace.append(Instruction(inst_kind, inputs, attrs, list(outputs)), decision)
        if kind != "get_block":  # the names a primitive looked up serve that primitive only
            self._sugar.clear()

    def _record_call(
        self,
        method: str,
        *values: Any,
        outputs: tuple = (),
        unpack: bool = False,
        decision: Any = None,
    ) -> None:
        """Record `sch.<method>(*values)`: the values are the parameters of the method's
        instruction kind, in its order; trailing ones left out take their defaults."""
        params = kind_by_method(method).params
        assert len(values) <= len(params), f"{method}: more values than parameters"
        kwargs = tuple((p.name, v) for p, v in zip(params, values))
        self._record(method, (), kwargs, outputs, unpack, decision)

    def _with_new_block(
        self, method: str, fname: str, func: PrimFunc, name: str, *values: Any
    ) -> BlockRV:
        """Install `func` as function `fname`, trace `sch.<method>(*values)` and return the
        BlockRV of the block `name` the primitive created."""
        self._update(fname, func)
        out = self._new_block(fname, name)
        self._record_call(method, *values, outputs=(out,))
        return out

    # ------------------------------------------------------------------ random variables
    def _new_block(self, func_name: str, name: str) -> BlockRV:
        rv = BlockRV()
        self._blocks[rv._id] = (func_name, name)
        return rv

    def _new_loop(self, func_name: str, var: Var) -> LoopRV:
        rv = LoopRV()
        self._loops[rv._id] = (func_name, var)
        return rv

    def _block(self, rv: Any) -> tuple[str, PrimFunc, BlockRealize, Path]:
        if isinstance(rv, str):  # convenience: a block name, traced as a get_block (as TVM)
            name, rv = rv, self.get_block(rv)
            self._sugar[name] = rv
        if isinstance(rv, BlockRV) and not isinstance(rv, LoopRV) and rv._id not in self._blocks:
            raise UnknownRVError(
                f"{rv!r} is not a BlockRV of this schedule (removed, or from another schedule)"
            )
        if not isinstance(rv, BlockRV) or isinstance(rv, LoopRV):
            raise ScheduleError(f"expected a BlockRV from this schedule's get_block, got {rv!r}")
        fname, name = self._blocks[rv._id]
        func = self._func(fname)
        found = find_block(func, name)
        if found is None:
            raise schedule_error(
                func,
                f"block '{name}' no longer exists in function '{fname}' (a primitive such "
                "as compute_inline removed it)",
            )
        return fname, func, found[0], found[1]

    def _loop(self, rv: Any) -> tuple[str, PrimFunc, For, Path]:
        if isinstance(rv, LoopRV) and rv._id not in self._loops:
            raise UnknownRVError(
                f"{rv!r} is not a LoopRV of this schedule (removed, or from another schedule)"
            )
        if not isinstance(rv, LoopRV):
            raise ScheduleError(
                f"expected a LoopRV from this schedule's get_loops/split/fuse, got {rv!r}"
            )
        fname, var = self._loops[rv._id]
        func = self._func(fname)
        found = find_loop(func, var)
        if found is None:
            raise schedule_error(
                func,
                f"loop '{var.name}' no longer exists in function '{fname}' (it was split, "
                "fused or moved away by an earlier primitive); use the loops that primitive "
                "returned",
            )
        return fname, func, found[0], found[1]

    def get(self, rv: Any) -> Any:
        """The Block of a BlockRV, the For of a LoopRV, the int of a sampled ExprRV."""
        if isinstance(rv, StmtSRef):
            return rv.stmt
        if isinstance(rv, Var):
            return self._expr_value(rv)
        if isinstance(rv, LoopRV):
            return self._loop(rv)[2]
        return self._block(rv)[2].block

    def get_sref(self, rv: Any) -> Any:
        """The StmtSRef of a BlockRV/LoopRV or of a Block/For node of the current module."""
        stmt = rv if isinstance(rv, Block | For) else self.get(rv)
        return self.state.get_sref(stmt)

    def _rename_block(self, fname: str, old: str, new: str) -> None:
        """Point every BlockRV of block `old` at its new name `new`."""
        for key, (fn, name) in list(self._blocks.items()):
            if fn == fname and name == old:
                self._blocks[key] = (fn, new)

    def _rename_loop(self, loop: LoopRV, name: str) -> None:
        """Give a loop a new variable called `name` (not traced: the te adapter names loops
        after the user's IterVars, e.g. `i.outer`)."""
        fname, func, node, _ = self._loop(loop)
        if node.loop_var.name == name:
            return
        old = node.loop_var
        var = Var(name, old.dtype)
        new = node.replace(loop_var=var, body=substitute(node.body, {old: var}))
        self._update(fname, replace_stmt(func, node, new))
        for key, (fn, v) in list(self._loops.items()):
            if v is old:
                self._loops[key] = (fn, var)

    # ------------------------------------------------------------------ lookup
    def get_block(self, name: str, func_name: str | None = None) -> BlockRV:
        fname = func_name or self._func_name
        if fname is None:
            raise _NoFunctionError(
                "get_block: the schedule does not know which function to be working on (the "
                "module has several PrimFuncs; pass func_name= or call work_on(name) first)"
            )
        if fname not in self._mod:
            raise ScheduleError(f"get_block: no function named {fname!r} in the module")
        func = self._func(fname)
        found = [
            r
            for r, _ in ((s, p) for s, p in walk(func.body))
            if isinstance(r, BlockRealize) and r.block.name_hint == name
        ]
        if not found:
            raise self._render_error(
                func,
                f"Cannot find a block with the name: {name} (no block named '{name}' in "
                f"function '{fname}'; blocks are: {block_names(func)})",
                "Cannot find a block with the specified name",
            )
        if len(found) > 1:
            raise schedule_error(
                func,
                f"get_block: {len(found)} blocks are named '{name}'; block "
                "names must be unique to be scheduled",
            )
        rv = self._new_block(fname, name)
        self._record_call("get_block", name, fname, outputs=(rv,))
        return rv

    get_sblock = get_block  # TVM 0.24's name (blocks became "schedulable blocks", SBlock)

    def get_loops(self, block: BlockRV) -> list[LoopRV]:
        fname, _, _, path = self._block(block)
        out = [self._new_loop(fname, f.loop_var) for f in loops_above(path)]
        self._record_call("get_loops", block, outputs=tuple(out), unpack=True)
        return out

    def get_child_blocks(self, block_or_loop: Any) -> list[BlockRV]:
        if isinstance(block_or_loop, LoopRV):
            fname, _, node, _ = self._loop(block_or_loop)
            stmt = node.body
        else:
            fname, _, realize, _ = self._block(block_or_loop)
            stmt = realize.block.body
        names = [
            r.block.name_hint
            for r, p in walk(stmt)
            if isinstance(r, BlockRealize) and not any(isinstance(a, Block) for a in p)
        ]
        out = [self._new_block(fname, n) for n in names]
        self._record_call("get_child_blocks", block_or_loop, outputs=tuple(out), unpack=True)
        return out

    def _neighbours(self, block: BlockRV, producers: bool) -> list[BlockRV]:
        """Blocks of the same scope linked to `block` by a RAW or WAW dependency (as TVM):
        earlier ones for producers, later ones for consumers, each once."""
        fname, _, r, _ = self._block(block)
        return [self._new_block(fname, n) for n in _flow_neighbours(self.state, r, producers)]

    def get_producers(self, block: BlockRV) -> list[BlockRV]:
        out = self._neighbours(block, producers=True)
        self._record_call("get_producers", block, outputs=tuple(out), unpack=True)
        return out

    def get_consumers(self, block: BlockRV) -> list[BlockRV]:
        out = self._neighbours(block, producers=False)
        self._record_call("get_consumers", block, outputs=tuple(out), unpack=True)
        return out

    # ------------------------------------------------------------------ loop primitives
    def split(
        self,
        loop: LoopRV,
        factors: list,
        preserve_unit_iters: bool = True,
        disable_predication: bool = False,
    ) -> list[LoopRV]:
        fname, func, node, path = self._loop(loop)
        traced, factors = list(factors), [_as_factor(self._expr_value(f)) for f in factors]
        func, new_vars = _lt.split(
            func, node, path, factors, preserve_unit_iters, disable_predication
        )
        self._update(fname, func)
        out = [self._new_loop(fname, v) for v in new_vars]
        self._record_call(
            "split",
            loop,
            traced,
            preserve_unit_iters,
            disable_predication,
            outputs=tuple(out),
            unpack=True,
        )
        return out

    def _loop_args(self, loops: tuple) -> tuple[tuple, list[tuple[str, PrimFunc, For, Path]]]:
        """The loops a primitive of several loops got (`f(a, b)` or `f([a, b])`), and each
        resolved as `_loop` does."""
        if len(loops) == 1 and isinstance(loops[0], list | tuple):
            loops = tuple(loops[0])
        return loops, [self._loop(rv) for rv in loops]

    def fuse(self, *loops: LoopRV, preserve_unit_iters: bool = True) -> LoopRV:
        loops, resolved = self._loop_args(loops)
        if not loops:
            raise ScheduleError("fuse: pass at least one loop")
        fname, func = resolved[0][0], resolved[0][1]
        if len(loops) == 1:
            return loops[0]
        func, var = _lt.fuse(func, [r[2] for r in resolved], resolved[0][3])
        self._update(fname, func)
        out = self._new_loop(fname, var)
        self._record("fuse", tuple(loops), (("preserve_unit_iters", preserve_unit_iters),), (out,))
        return out

    def reorder(self, *ordered_loops: LoopRV) -> None:
        ordered_loops, resolved = self._loop_args(ordered_loops)
        if not resolved:
            return
        fname, func = resolved[0][0], resolved[0][1]
        self._update(fname, _lt.reorder(func, [(r[2], r[3]) for r in resolved]))
        self._record("reorder", tuple(ordered_loops), ())

    def _set_kind(self, name: str, loop: LoopRV, kind: ForKind, thread: str | None = None) -> None:
        fname, func, node, path = self._loop(loop)
        self._update(fname, _lt.set_loop_kind(func, node, kind, thread, path))
        self._record_call(name, *((loop,) if thread is None else (loop, thread)))

    def parallel(self, loop: LoopRV) -> None:
        self._set_kind("parallel", loop, ForKind.PARALLEL)

    def vectorize(self, loop: LoopRV) -> None:
        self._set_kind("vectorize", loop, ForKind.VECTORIZED)

    def unroll(self, loop: LoopRV) -> None:
        self._set_kind("unroll", loop, ForKind.UNROLLED)

    def bind(self, loop: LoopRV, thread_axis: str) -> None:
        if not isinstance(thread_axis, str):
            thread_axis = getattr(thread_axis, "thread_tag", None) or str(thread_axis)
        self._set_kind("bind", loop, ForKind.THREAD_BINDING, thread_axis)

    def annotate(self, block_or_loop: Any, ann_key: str, ann_val: Any) -> None:
        fname, func, node = self._target(block_or_loop)
        # a sampled ExprRV goes into the IR as its value; the trace keeps the variable
        value = self._expr_value(ann_val) if isinstance(ann_val, PrimExpr) else ann_val
        self._update(fname, _lt.annotate(func, node, ann_key, value))
        self._record_call("annotate", block_or_loop, ann_key, ann_val)

    def unannotate(self, block_or_loop: Any, ann_key: str) -> None:
        fname, func, node = self._target(block_or_loop)
        self._update(fname, _lt.unannotate(func, node, ann_key))
        self._record_call("unannotate", block_or_loop, ann_key)

    def _target(self, rv: Any) -> tuple[str, PrimFunc, Any]:
        if isinstance(rv, LoopRV):
            fname, func, node, _ = self._loop(rv)
            return fname, func, node
        fname, func, realize, _ = self._block(rv)
        return fname, func, realize.block

    # ------------------------------------------------------------------ compute location
    def compute_at(
        self, block: BlockRV, loop: LoopRV, preserve_unit_loops: bool = False, index: int = -1
    ) -> None:
        located = self._block(block)
        if self._apply_location_mark(loop, *located):
            self._record_call("compute_at", block, loop, preserve_unit_loops)
            return
        self._move_block("compute_at", located, block, loop, preserve_unit_loops, index)

    def reverse_compute_at(
        self, block: BlockRV, loop: LoopRV, preserve_unit_loops: bool = False, index: int = -1
    ) -> None:
        located = self._block(block)
        self._move_block("reverse_compute_at", located, block, loop, preserve_unit_loops, index)

    def _move_block(
        self, method: str, located: tuple, block: Any, loop: LoopRV, preserve: bool, index: int
    ) -> None:
        """compute_at or reverse_compute_at (`method`, named as in compute_location.py) of the
        block `located` (what `_block(block)` returned)."""
        fname, func, r, rpath = located
        _, _, node, lpath = self._loop(loop)
        move = getattr(_loc, method)
        self._update(fname, move(func, r, rpath, node, lpath, preserve, index))
        self._record_call(method, block, loop, preserve, index)

    def compute_inline(self, block: BlockRV) -> None:
        fname, func, r, path = self._block(block)
        self._update(fname, _inline.compute_inline(func, r, path))
        self._record_call("compute_inline", block)

    def _compute_inline_names(self, names: list[str], func_name: str | None = None) -> None:
        """`compute_inline(get_block(name))` for each of `names`, in one walk of the function
        (a default schedule inlines a model's whole chain of elementwise stages so: one by one,
        each walk was as long as the function). Every block is checked as compute_inline
        checks it; the trace holds the same get_block/compute_inline pairs, in order."""
        fname = func_name or self._func_name
        if fname is None or fname not in self._mod:
            raise ScheduleError(f"compute_inline: no function {fname!r} to work on")
        func = self._func(fname)
        by_name: dict[str, list] = {}
        for r, _ in block_realizes(func.body):
            by_name.setdefault(r.block.name_hint, []).append(r)
        realizes = []
        for name in names:
            found = by_name.get(name, [])
            if len(found) != 1:
                self.get_block(name, fname)  # raises get_block's error for a missing/duplicate name
            realizes.append(found[0])
        self._update(fname, _inline.compute_inline_many(func, realizes))
        for name in names:
            rv = self._new_block(fname, name)
            self._record_call("get_block", name, fname, outputs=(rv,))
            self._record_call("compute_inline", rv)

    def reverse_compute_inline(self, block: BlockRV) -> None:
        fname, func, r, path = self._block(block)
        self._update(fname, _inline.reverse_compute_inline(func, r, path))
        self._record_call("reverse_compute_inline", block)

    # ------------------------------------------------------------------ caching
    def cache_read(
        self,
        block: BlockRV,
        read_buffer_index: int,
        storage_scope: str,
        consumer_blocks: list | None = None,
    ) -> BlockRV:
        return self._cache("cache_read", block, read_buffer_index, storage_scope, consumer_blocks)

    def cache_write(
        self,
        block: BlockRV,
        write_buffer_index: int,
        storage_scope: str,
        consumer_blocks: list | None = None,
    ) -> BlockRV:
        return self._cache("cache_write", block, write_buffer_index, storage_scope, consumer_blocks)

    def _cache(
        self, method: str, block: BlockRV, index: int, scope: str, consumer_blocks: list | None
    ) -> BlockRV:
        """cache_read or cache_write (`method`, named as in cache.py); returns the new block."""
        fname, func, r, path = self._block(block)
        consumers = None
        if consumer_blocks is not None:
            consumer_blocks = list(consumer_blocks)
            consumers = [self._block(b)[2] for b in consumer_blocks]
        func, name = getattr(_cache, method)(func, r, path, index, scope, consumers=consumers)
        return self._with_new_block(method, fname, func, name, block, index, scope, consumer_blocks)

    def set_scope(self, block: BlockRV, buffer_index: Any, storage_scope: str) -> None:
        from . import layout as _layout

        fname, func, r, _ = self._block(block)
        if not isinstance(buffer_index, int):  # a name or Buffer: traced as its write index
            buffer_index = _layout.resolve_buffer(func, r, buffer_index, "set_scope")[1]
        self._update(fname, _layout.set_scope(func, r, buffer_index, storage_scope))
        self._record_call("set_scope", block, buffer_index, storage_scope)

    # ------------------------------------------------------------------ reductions
    def decompose_reduction(self, block: BlockRV, loop: LoopRV) -> BlockRV:
        fname, func, r, path = self._block(block)
        _, _, node, _ = self._loop(loop)
        func, name, update_name = _red.decompose_reduction(func, r, path, node)
        self._rename_block(fname, r.block.name_hint, update_name)
        return self._with_new_block("decompose_reduction", fname, func, name, block, loop)

    def rfactor(self, loop: LoopRV, factor_axis: int) -> BlockRV:
        fname, func, node, path = self._loop(loop)
        func, name = _red.rfactor(func, node, path, factor_axis)
        return self._with_new_block("rfactor", fname, func, name, loop, factor_axis)


SBlockRV = BlockRV  # TVM 0.24's name of the block handle: the same class

__all__ = ["BlockRV", "LoopRV", "SBlockRV", "Schedule", "ScheduleError", "Trace"]
