"""tvm.tir.Schedule: block and loop primitives over an IRModule, with a replayable trace.

IR is immutable, so the schedule holds the current functions and replaces them on every
primitive. A BlockRV resolves by its block's (unique) name, a LoopRV by its loop variable,
which every primitive keeps for the loops it does not replace.
"""

from __future__ import annotations

from typing import Any

from ...error import ScheduleError
from ...ir.module import IRModule
from ..expr import IntImm, PrimExpr, Var
from ..function import PrimFunc
from ..functor import substitute
from ..stmt import Block, BlockRealize, For, ForKind
from . import block_edit as _edit
from . import blockize as _blockize
from . import cache as _cache
from . import compute_location as _loc
from . import inline as _inline
from . import loop_transform as _lt
from . import merge as _merge
from . import reduction as _red
from . import sampling as _sampling
from . import tensorize as _tensorize
from .block_scope import DepKind
from .common import const_int, schedule_error, simplify
from .instruction import BlockRV, Instruction, LoopRV, kind_of_method
from .state import ScheduleState, StmtSRef, UnknownRVError, parse_debug_mask
from .trace import Trace
from .tree import (
    Path,
    block_names,
    find_block,
    find_loop,
    loops_above,
    replace_stmt,
    walk,
)


def _as_factor(f: Any) -> Any:
    if f is None or isinstance(f, PrimExpr):
        return f
    if hasattr(f, "__index__") and not isinstance(f, bool):
        return int(f.__index__())
    return f


_RENDER_LEVELS = {"detail", "fast", "none"}
_BLOCK_PARAMS = {"block", "block_or_loop", "scope_block", "target", "consumer_blocks"}
_MARKS = {-2: Var("inline_mark", "int32"), -1: Var("root_mark", "int32")}


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


class Schedule:
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
        self._record("get_block", (), (("name", name), ("func_name", fname)), (rv,))
        return rv

    def get_loops(self, block: BlockRV) -> list[LoopRV]:
        fname, _, _, path = self._block(block)
        out = [self._new_loop(fname, f.loop_var) for f in loops_above(path)]
        self._record("get_loops", (), (("block", block),), tuple(out), unpack=True)
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
        self._record(
            "get_child_blocks", (), (("block_or_loop", block_or_loop),), tuple(out), unpack=True
        )
        return out

    def _neighbours(self, block: BlockRV, producers: bool) -> list[BlockRV]:
        """Blocks of the same scope linked to `block` by a RAW or WAW dependency (as TVM):
        earlier ones for producers, later ones for consumers, each once."""
        fname, _, r, _ = self._block(block)
        return [self._new_block(fname, n) for n in _flow_neighbours(self.state, r, producers)]

    def get_producers(self, block: BlockRV) -> list[BlockRV]:
        out = self._neighbours(block, producers=True)
        self._record("get_producers", (), (("block", block),), tuple(out), unpack=True)
        return out

    def get_consumers(self, block: BlockRV) -> list[BlockRV]:
        out = self._neighbours(block, producers=False)
        self._record("get_consumers", (), (("block", block),), tuple(out), unpack=True)
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
        self._record(
            "split",
            (),
            (
                ("loop", loop),
                ("factors", traced),
                ("preserve_unit_iters", preserve_unit_iters),
            )
            + ((("disable_predication", True),) if disable_predication else ()),
            tuple(out),
            True,
        )
        return out

    def fuse(self, *loops: LoopRV, preserve_unit_iters: bool = True) -> LoopRV:
        if len(loops) == 1 and isinstance(loops[0], list | tuple):
            loops = tuple(loops[0])
        if not loops:
            raise ScheduleError("fuse: pass at least one loop")
        resolved = [self._loop(rv) for rv in loops]
        fname, func = resolved[0][0], resolved[0][1]
        if len(loops) == 1:
            return loops[0]
        func, var = _lt.fuse(func, [r[2] for r in resolved], resolved[0][3])
        self._update(fname, func)
        out = self._new_loop(fname, var)
        self._record("fuse", tuple(loops), (("preserve_unit_iters", preserve_unit_iters),), (out,))
        return out

    def reorder(self, *ordered_loops: LoopRV) -> None:
        if len(ordered_loops) == 1 and isinstance(ordered_loops[0], list | tuple):
            ordered_loops = tuple(ordered_loops[0])
        resolved = [self._loop(rv) for rv in ordered_loops]
        if not resolved:
            return
        fname, func = resolved[0][0], resolved[0][1]
        self._update(fname, _lt.reorder(func, [(r[2], r[3]) for r in resolved]))
        self._record("reorder", tuple(ordered_loops), ())

    def _set_kind(self, name: str, loop: LoopRV, kind: ForKind, thread: str | None = None) -> None:
        fname, func, node, path = self._loop(loop)
        self._update(fname, _lt.set_loop_kind(func, node, kind, thread, path))
        kwargs = (("loop", loop),) + ((("thread_axis", thread),) if thread is not None else ())
        self._record(name, (), kwargs)

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
        self._record(
            "annotate",
            (),
            (("block_or_loop", block_or_loop), ("ann_key", ann_key), ("ann_val", ann_val)),
        )

    def unannotate(self, block_or_loop: Any, ann_key: str) -> None:
        fname, func, node = self._target(block_or_loop)
        self._update(fname, _lt.unannotate(func, node, ann_key))
        self._record("unannotate", (), (("block_or_loop", block_or_loop), ("ann_key", ann_key)))

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
        fname, func, r, rpath = self._block(block)
        if self._apply_location_mark(loop, fname, func, r, rpath):
            kwargs = (
                ("block", block),
                ("loop", loop),
                ("preserve_unit_loops", preserve_unit_loops),
            )
            self._record("compute_at", (), kwargs)
            return
        _, _, node, lpath = self._loop(loop)
        self._update(
            fname, _loc.compute_at(func, r, rpath, node, lpath, preserve_unit_loops, index)
        )
        self._record(
            "compute_at",
            (),
            (("block", block), ("loop", loop), ("preserve_unit_loops", preserve_unit_loops))
            + ((("index", index),) if index != -1 else ()),
        )

    def reverse_compute_at(
        self, block: BlockRV, loop: LoopRV, preserve_unit_loops: bool = False, index: int = -1
    ) -> None:
        fname, func, r, rpath = self._block(block)
        _, _, node, lpath = self._loop(loop)
        self._update(
            fname, _loc.reverse_compute_at(func, r, rpath, node, lpath, preserve_unit_loops, index)
        )
        self._record(
            "reverse_compute_at",
            (),
            (("block", block), ("loop", loop), ("preserve_unit_loops", preserve_unit_loops))
            + ((("index", index),) if index != -1 else ()),
        )

    def compute_inline(self, block: BlockRV) -> None:
        fname, func, r, path = self._block(block)
        self._update(fname, _inline.compute_inline(func, r, path))
        self._record("compute_inline", (), (("block", block),))

    def reverse_compute_inline(self, block: BlockRV) -> None:
        fname, func, r, path = self._block(block)
        self._update(fname, _inline.reverse_compute_inline(func, r, path))
        self._record("reverse_compute_inline", (), (("block", block),))

    # ------------------------------------------------------------------ caching
    def cache_read(
        self,
        block: BlockRV,
        read_buffer_index: int,
        storage_scope: str,
        consumer_blocks: list | None = None,
    ) -> BlockRV:
        fname, func, r, path = self._block(block)
        consumers = None
        if consumer_blocks is not None:
            consumers = [self._block(b)[2] for b in consumer_blocks]
        func, name = _cache.cache_read(func, r, path, read_buffer_index, storage_scope, consumers)
        self._update(fname, func)
        out = self._new_block(fname, name)
        kwargs = (
            ("block", block),
            ("read_buffer_index", read_buffer_index),
            ("storage_scope", storage_scope),
        )
        if consumer_blocks is not None:
            kwargs += (("consumer_blocks", list(consumer_blocks)),)
        self._record("cache_read", (), kwargs, (out,))
        return out

    def cache_write(
        self,
        block: BlockRV,
        write_buffer_index: int,
        storage_scope: str,
        consumer_blocks: list | None = None,
    ) -> BlockRV:
        fname, func, r, path = self._block(block)
        consumers = None
        if consumer_blocks is not None:
            consumers = [self._block(b)[2] for b in consumer_blocks]
        func, name = _cache.cache_write(
            func, r, path, write_buffer_index, storage_scope, consumers=consumers
        )
        self._update(fname, func)
        out = self._new_block(fname, name)
        kwargs = (
            ("block", block),
            ("write_buffer_index", write_buffer_index),
            ("storage_scope", storage_scope),
        )
        if consumer_blocks is not None:
            kwargs += (("consumer_blocks", list(consumer_blocks)),)
        self._record("cache_write", (), kwargs, (out,))
        return out

    def set_scope(self, block: BlockRV, buffer_index: Any, storage_scope: str) -> None:
        from . import layout as _layout

        fname, func, r, _ = self._block(block)
        if not isinstance(buffer_index, int):  # a name or Buffer: traced as its write index
            buffer_index = _layout.resolve_buffer(func, r, buffer_index, "set_scope")[1]
        self._update(fname, _layout.set_scope(func, r, buffer_index, storage_scope))
        self._record(
            "set_scope",
            (),
            (("block", block), ("buffer_index", buffer_index), ("storage_scope", storage_scope)),
        )

    # ------------------------------------------------------------------ reductions
    def decompose_reduction(self, block: BlockRV, loop: LoopRV) -> BlockRV:
        fname, func, r, path = self._block(block)
        _, _, node, _ = self._loop(loop)
        func, name, update_name = _red.decompose_reduction(func, r, path, node)
        self._update(fname, func)
        self._rename_block(fname, r.block.name_hint, update_name)
        out = self._new_block(fname, name)
        self._record("decompose_reduction", (), (("block", block), ("loop", loop)), (out,))
        return out

    def rfactor(self, loop: LoopRV, factor_axis: int) -> BlockRV:
        fname, func, node, path = self._loop(loop)
        func, name = _red.rfactor(func, node, path, factor_axis)
        self._update(fname, func)
        out = self._new_block(fname, name)
        self._record("rfactor", (), (("loop", loop), ("factor_axis", factor_axis)), (out,))
        return out

    # --- trace, state, sampling ---
    def _init_trace_state(
        self, seed: Any, debug_mask: Any, error_render_level: str, enable_check: bool
    ) -> None:
        if error_render_level not in _RENDER_LEVELS:
            raise ScheduleError(
                f"error_render_level must be one of {sorted(_RENDER_LEVELS)}, got "
                f"{error_render_level!r}"
            )
        self._rng = _sampling.make_rng(seed)
        self._debug_mask = parse_debug_mask(debug_mask)
        self._error_render_level = error_render_level
        self._enable_check = enable_check
        self._exprs: dict[int, tuple[Var, int]] = {}  # sampled ExprRVs and their values
        self._sugar: dict[str, BlockRV] = {}  # block names a primitive turned into get_block
        self._state: ScheduleState | None = None
        self._locations: dict = {}  # sample_compute_location's candidates of one func version

    def _copy_trace_state(self, out: Schedule) -> None:
        out._rng = _sampling.fork(self._rng)
        out._debug_mask = self._debug_mask
        out._error_render_level = self._error_render_level
        out._enable_check = self._enable_check
        out._exprs = dict(self._exprs)
        out._sugar = {}
        out._state = None
        out._locations = {}

    def _desugar(self, param: str, value: Any) -> Any:
        """A block name the primitive looked up stands for the BlockRV it got (as TVM traces)."""
        if param not in _BLOCK_PARAMS:
            return value
        if isinstance(value, str):
            return self._sugar.get(value, value)
        if isinstance(value, list | tuple):
            return type(value)(self._sugar.get(v, v) if isinstance(v, str) else v for v in value)
        return value

    def _render_error(self, func: PrimFunc, detail: str, fast: str) -> ScheduleError:
        """The error at this schedule's error_render_level (detail shows the function)."""
        if self._error_render_level == "detail":
            return schedule_error(func, detail)
        if self._error_render_level == "fast":
            return ScheduleError(fast)
        return ScheduleError("(not rendered)")

    def _new_expr(self, value: int) -> Var:
        var = Var("v", "int32")
        self._exprs[id(var)] = (var, int(value))
        return var

    def _expr_value(self, value: Any) -> Any:
        """The int a sampled ExprRV holds (other values unchanged; sums of them folded)."""
        if isinstance(value, Var) and id(value) in self._exprs:
            return self._exprs[id(value)][1]
        if isinstance(value, Var):
            raise UnknownRVError(f"{value!r} is not a sampled variable of this schedule")
        if isinstance(value, PrimExpr) and self._exprs:
            known = {v: IntImm(v.dtype, n) for v, n in self._exprs.values()}
            folded = simplify(substitute(value, known))
            return int(folded.value) if isinstance(folded, IntImm) else folded
        return value

    @property
    def state(self) -> ScheduleState:
        """The ScheduleState (module, srefs, block scopes) this schedule works on."""
        if self._state is None:
            self._state = ScheduleState(
                _owner=self, debug_mask=self._debug_mask, enable_check=self._enable_check
            )
        return self._state

    def remove_rv(self, rand_var: Any) -> None:
        """Forget a random variable; using it afterwards raises IndexError."""
        table = {BlockRV: self._blocks, LoopRV: self._loops}.get(type(rand_var))
        key = id(rand_var) if isinstance(rand_var, Var) else getattr(rand_var, "_id", None)
        table = self._exprs if isinstance(rand_var, Var) else table
        if table is None or table.pop(key, None) is None:
            raise UnknownRVError(
                f"remove_rv: {rand_var!r} is not a random variable of this schedule"
            )

    def seed(self, seed: int) -> None:
        """Reseed the schedule's random state (-1 for a random seed)."""
        self._rng = _sampling.make_rng(seed)

    def fork_seed(self) -> int:
        """A new seed drawn from this schedule's random state."""
        return self._rng.fork_seed()

    def enter_postproc(self) -> None:
        """Mark the start of postprocessing in the trace (Trace.simplified can cut it)."""
        self._record("enter_postproc", (), ())

    def sample_categorical(self, candidates: list, probs: list, decision: int | None = None) -> Var:
        """Draw one of `candidates` with probabilities `probs`; the index is the decision."""
        value, index = _sampling.sample_categorical(self._rng, candidates, probs, decision)
        out = self._new_expr(value)
        cands = [int(c) for c in candidates]
        self._record(
            "sample_categorical",
            (),
            (("candidates", cands), ("probs", [float(p) for p in probs])),
            (out,),
            decision=index,
        )
        return out

    def _loop_extent(self, loop: LoopRV) -> int | None:
        return const_int(self._loop(loop)[2].extent)

    def _tile_outputs(self, kind: str, loop: LoopRV, attrs: tuple, factors: list) -> list:
        outs = [None if f == -1 else self._new_expr(f) for f in factors]
        self._record(
            kind, (), (("loop", loop),) + attrs, tuple(outs), unpack=True, decision=list(factors)
        )
        return outs

    def sample_perfect_tile(
        self, loop: LoopRV, n: int, max_innermost_factor: int = 16, decision: Any = None
    ) -> list:
        """`n` sampled factors whose product is the loop's extent (None first when unknown)."""
        factors = _sampling.sample_perfect_tile(
            self._rng, self._loop_extent(loop), int(n), int(max_innermost_factor), decision
        )
        attrs = (("n", int(n)), ("max_innermost_factor", int(max_innermost_factor)))
        return self._tile_outputs("sample_perfect_tile", loop, attrs, factors)

    def sample_partitioned_tile(
        self,
        loop: LoopRV,
        n: int,
        partition_pos: int = 0,
        innerpart_factor: int = 1,
        decision: Any = None,
    ) -> list:
        """Perfect-tile factors whose product from `partition_pos` on divides by
        `innerpart_factor`."""
        factors = _sampling.sample_partitioned_tile(
            self._rng,
            self._loop_extent(loop),
            int(n),
            int(partition_pos),
            int(innerpart_factor),
            decision,
        )
        attrs = (
            ("n", int(n)),
            ("partition_pos", int(partition_pos)),
            ("innerpart_factor", int(innerpart_factor)),
        )
        return self._tile_outputs("sample_partitioned_tile", loop, attrs, factors)

    def sample_compute_location(self, block: Any, decision: int | None = None) -> LoopRV:
        """A loop (or root/inline mark) where `block` may be computed at, drawn uniformly."""
        fname, func, r, path = self._block(block)
        key = (fname, r.block.name_hint)
        cached = self._locations.get(key)
        if cached is None or cached[0] is not func:
            cached = (func, _sampling.compute_locations(func, r, path))
            self._locations = {key: cached}
        places = dict(cached[1])
        index = _sampling.pick_location(self._rng, sorted(places), decision)
        loop = places[index]
        out = self._new_loop(fname, loop.loop_var if loop is not None else _MARKS[index])
        self._record("sample_compute_location", (), (("block", block),), (out,), decision=index)
        return out

    def _apply_location_mark(
        self, loop: Any, fname: str, func: PrimFunc, r: Any, path: Any
    ) -> bool:
        """compute_at at a root/inline mark of sample_compute_location: stay, or inline."""
        entry = self._loops.get(loop._id) if isinstance(loop, LoopRV) else None
        mark = next((k for k, v in _MARKS.items() if entry is not None and entry[1] is v), None)
        if mark == -2:
            self._update(fname, _inline.compute_inline(func, r, path))
        return mark is not None

    def get_output_blocks(self, scope_block: Any) -> list[BlockRV]:
        """Blocks under `scope_block` that write a buffer of the function's parameters."""
        fname, func, r, _ = self._block(scope_block)
        params = {id(b) for b in func.buffer_map.values()}
        names = [
            s.block.name_hint
            for s, _ in walk(r.block.body)
            if isinstance(s, BlockRealize) and any(id(w.buffer) in params for w in s.block.writes)
        ]
        out = [self._new_block(fname, n) for n in names]
        self._record(
            "get_output_blocks", (), (("scope_block", scope_block),), tuple(out), unpack=True
        )
        return out

    # --- blockize, tensorize, merge, block iterators, buffer access ---
    def blockize(self, target: Any, preserve_unit_iters: bool = True) -> BlockRV:
        if isinstance(target, list | tuple):
            located = [self._block(b) for b in target]
            fname, func = located[0][0], located[0][1]
            func, name = _blockize.blockize_blocks(
                func, [(r, p) for _, _, r, p in located], preserve_unit_iters
            )
        else:
            fname, func, node, path = self._loop(target)
            func, realize = _blockize.blockize_loop(func, node, path, preserve_unit_iters)
            name = realize.block.name_hint
        self._update(fname, func)
        out = self._new_block(fname, name)
        kwargs = (("target", target), ("preserve_unit_iters", preserve_unit_iters))
        self._record("blockize", (), kwargs, (out,))
        return out

    def merge(self, *loops: LoopRV) -> LoopRV:
        if len(loops) == 1 and isinstance(loops[0], list | tuple):
            loops = tuple(loops[0])
        resolved = [self._loop(rv) for rv in loops]
        if not resolved:
            raise ScheduleError("merge: pass at least two loops")
        fname, func = resolved[0][0], resolved[0][1]
        func, var = _merge.merge(func, [(r[2], r[3]) for r in resolved])
        self._update(fname, func)
        out = self._new_loop(fname, var)
        self._record("merge", tuple(loops), (), (out,))
        return out

    def reorder_block_iter_var(self, block: BlockRV, new_order: list) -> None:
        fname, func, r, _ = self._block(block)
        new_order = [int(i) for i in new_order]
        self._update(fname, _edit.reorder_block_iter_var(func, r, new_order))
        self._record("reorder_block_iter_var", (), (("block", block), ("new_order", new_order)))

    def annotate_buffer_access(
        self, block: BlockRV, buffer_index: int, buf_type: str, gen_new_ranges: Any
    ) -> None:
        fname, func, r, _ = self._block(block)
        ranges = _edit.ranges_index_map(gen_new_ranges, r.block)
        self._update(fname, _edit.annotate_buffer_access(func, r, buffer_index, buf_type, ranges))
        self._record(
            "annotate_buffer_access",
            (),
            (
                ("block", block),
                ("buffer_index", buffer_index),
                ("buf_type", buf_type),
                ("gen_new_ranges", gen_new_ranges),
            ),
        )

    def tensorize(
        self, block_or_loop: Any, tensor_intrin: Any, preserve_unit_iters: bool = True
    ) -> None:
        from ..tensor_intrin_base import TensorIntrin

        intrin = tensor_intrin
        if isinstance(tensor_intrin, str):
            intrin = TensorIntrin.get(tensor_intrin)
        if isinstance(block_or_loop, LoopRV):
            fname, func, node, path = self._loop(block_or_loop)
            outer = _blockize.blockize_realize(func, node, path, preserve_unit_iters)
            new = _tensorize.tensorize_block(func, outer, intrin.desc, intrin.impl)
            func = replace_stmt(func, node, new)
        else:
            fname, func, r, _ = self._block(block_or_loop)
            new = _tensorize.tensorize_block(func, r, intrin.desc, intrin.impl)
            func = replace_stmt(func, r, new)
        self._update(fname, func)
        self._record(
            "tensorize",
            (),
            (
                ("block_or_loop", block_or_loop),
                ("tensor_intrin", tensor_intrin),
                ("preserve_unit_iters", preserve_unit_iters),
            ),
        )

    # --- layout, padding, reindex, rolling buffer, read/write at ---
    from . import layout as _layout_module  # registers how traces print and store IndexMaps

    def transform_layout(
        self,
        block: Any,
        buffer: Any,
        index_map: Any,
        pad_value: Any = None,
        *,
        assume_injective_transform: bool = False,
    ) -> None:
        from . import layout as _layout

        fname, func, r, _ = self._block(block)
        imap, separators = _layout.buffer_index_map(func, r, buffer, index_map)
        imap = _layout.with_values(imap, getattr(self, "_exprs", {}))
        kind, index, buf = _layout.resolve_buffer(func, r, buffer, "transform_layout")
        pad_value = _layout.pad_value_map(pad_value, imap, buf.dtype)
        func = _layout.transform_layout(
            func, r, buffer, imap, pad_value, assume_injective_transform
        )
        self._update(fname, func)
        self._record(
            "transform_layout",
            (),
            (
                ("block", block),
                ("buffer", [kind, index]),  # a Buffer object or name has no trace form
                ("index_map", imap),
                ("pad_value", pad_value),
                ("assume_injective_transform", assume_injective_transform),
            ),
        )
        if separators:  # TVM applies (and traces) the separators as a second primitive
            self.set_axis_separator(block, (kind, index), separators)

    def transform_block_layout(self, block: Any, index_map: Any) -> None:
        from . import layout as _layout

        fname, func, r, path = self._block(block)
        imap = _layout.block_index_map(r, index_map)
        imap = _layout.with_values(imap, getattr(self, "_exprs", {}))
        self._update(fname, _layout.transform_block_layout(func, r, path, imap))
        self._record("transform_block_layout", (), (("block", block), ("index_map", imap)))

    def set_axis_separator(self, block: Any, buffer: Any, axis_separators: Any) -> None:
        from . import layout as _layout

        fname, func, r, _ = self._block(block)
        kind, index, _ = _layout.resolve_buffer(func, r, buffer, "set_axis_separator")
        self._update(fname, _layout.set_axis_separator(func, r, buffer, axis_separators))
        self._record(
            "set_axis_separator",
            (),
            (
                ("block", block),
                ("buffer", [kind, index]),
                ("axis_separators", list(axis_separators)),
            ),
        )

    def storage_align(
        self, block: Any, buffer_index: int, axis: int, factor: int, offset: int
    ) -> None:
        from . import layout as _layout

        fname, func, r, _ = self._block(block)
        self._update(fname, _layout.storage_align(func, r, buffer_index, axis, factor, offset))
        self._record(
            "storage_align",
            (),
            (
                ("block", block),
                ("buffer_index", buffer_index),
                ("axis", axis),
                ("factor", factor),
                ("offset", offset),
            ),
        )

    def unsafe_set_dtype(self, block: Any, buffer_index: int, dtype: str) -> None:
        from . import layout as _layout

        fname, func, r, _ = self._block(block)
        self._update(fname, _layout.unsafe_set_dtype(func, r, buffer_index, dtype))
        self._record(
            "unsafe_set_dtype",
            (),
            (("block", block), ("buffer_index", buffer_index), ("dtype", dtype)),
        )

    def decompose_padding(self, block: Any, loop: LoopRV) -> BlockRV:
        from . import padding as _padding

        fname, func, r, path = self._block(block)
        _, _, node, _ = self._loop(loop)
        func, name = _padding.decompose_padding(func, r, path, node)
        self._update(fname, func)
        out = self._new_block(fname, name)
        self._record("decompose_padding", (), (("block", block), ("loop", loop)), (out,))
        return out

    def can_decompose_padding(self, block: Any, loop: LoopRV) -> bool:
        from . import padding as _padding

        _, func, r, path = self._block(block)
        _, _, node, _ = self._loop(loop)
        try:
            _padding.decompose_padding(func, r, path, node)
        except ScheduleError:
            return False
        return True

    def _stage_at(self, name: str, loop: LoopRV, block: Any, index: int, scope: str) -> BlockRV:
        from . import read_write_at as _rw

        fname, func, r, path = self._block(block)
        _, _, node, _ = self._loop(loop)
        func, new = getattr(_rw, name)(func, node, r, path, index, scope)
        self._update(fname, func)
        out = self._new_block(fname, new)
        kwargs = (
            ("loop", loop),
            ("block", block),
            (f"{name[:-3]}_buffer_index", index),
            ("storage_scope", scope),
        )
        self._record(name, (), kwargs, (out,))
        return out

    def read_at(
        self, loop: LoopRV, block: Any, read_buffer_index: int, storage_scope: str
    ) -> BlockRV:
        return self._stage_at("read_at", loop, block, read_buffer_index, storage_scope)

    def write_at(
        self, loop: LoopRV, block: Any, write_buffer_index: int, storage_scope: str
    ) -> BlockRV:
        return self._stage_at("write_at", loop, block, write_buffer_index, storage_scope)

    def pad_einsum(self, block: Any, padding: list) -> None:
        from . import padding as _padding

        fname, func, r, path = self._block(block)
        padding = [int(p) if hasattr(p, "__index__") else p for p in padding]
        self._update(fname, _padding.pad_einsum(func, r, path, padding))
        self._record("pad_einsum", (), (("block", block), ("padding", list(padding))))

    def rolling_buffer(self, block: Any, write_buffer_index: int) -> None:
        from . import rolling_buffer as _rolling

        fname, func, r, path = self._block(block)
        self._update(fname, _rolling.rolling_buffer(func, r, path, write_buffer_index))
        self._record(
            "rolling_buffer", (), (("block", block), ("write_buffer_index", write_buffer_index))
        )

    def _reindex(self, name: str, block: Any, spec: Any, scope: Any, index_map: Any, kwargs):
        from . import reindex as _reindex

        fname, func, r, path = self._block(block)
        if index_map is not None:
            index_map = self._layout_module.block_index_map(r, index_map)
            kwargs = tuple((k, index_map if k == "index_map" else v) for k, v in kwargs)
        func, new = _reindex.reindex(func, r, path, spec, scope, index_map, name)
        self._update(fname, func)
        out = self._new_block(fname, new)
        self._record(name, (), kwargs, (out,))
        return out

    def reindex(self, block: Any, buffer: Any) -> BlockRV:
        _, func, r, _ = self._block(block)
        kind, index, _ = self._layout_module.resolve_buffer(func, r, buffer, "reindex")
        kwargs = (("block", block), ("buffer", [kind, index]))
        return self._reindex("reindex", block, buffer, None, None, kwargs)

    def reindex_cache_read(
        self, block: Any, read_buffer_index: int, storage_scope: str, index_map: Any
    ) -> BlockRV:
        kwargs = (
            ("block", block),
            ("read_buffer_index", read_buffer_index),
            ("storage_scope", storage_scope),
            ("index_map", index_map),
        )
        spec = ("read", read_buffer_index)
        return self._reindex("reindex_cache_read", block, spec, storage_scope, index_map, kwargs)

    def reindex_cache_write(
        self, block: Any, write_buffer_index: int, storage_scope: str, index_map: Any
    ) -> BlockRV:
        kwargs = (
            ("block", block),
            ("write_buffer_index", write_buffer_index),
            ("storage_scope", storage_scope),
            ("index_map", index_map),
        )
        spec = ("write", write_buffer_index)
        return self._reindex("reindex_cache_write", block, spec, storage_scope, index_map, kwargs)

    # --- loop helpers ---
    def add_unit_loop(self, block_or_loop: Any) -> LoopRV:
        """Create a loop of extent 1 above a block or a loop; returns it.

        >>> u = sch.add_unit_loop(sch.get_block("C"))
        """
        if isinstance(block_or_loop, LoopRV):
            fname, func, node, _ = self._loop(block_or_loop)
        else:
            fname, func, node, _ = self._block(block_or_loop)
        func, var = _lt.add_unit_loop(func, node)
        self._update(fname, func)
        out = self._new_loop(fname, var)
        self._record("add_unit_loop", (), (("block_or_loop", block_or_loop),), (out,))
        return out

    # --- loop partition ---
    def loop_partition(
        self, loop: LoopRV, factors: list, preserve_unit_iters: bool = True
    ) -> list[LoopRV]:
        """Cut a loop into consecutive loops of the given lengths (one None is inferred; without
        one, the rest of the loop is a last part); returns the new loops.

        >>> i0, i1, i2 = sch.loop_partition(i, factors=[2, 64])  # [0,2), [2,66), [66,128)
        """
        from . import loop_partition as _lp

        fname, func, node, path = self._loop(loop)
        traced, factors = list(factors), [_as_factor(self._expr_value(f)) for f in factors]
        func, new_vars = _lp.loop_partition(func, node, path, factors)
        self._update(fname, func)
        out = [self._new_loop(fname, v) for v in new_vars]
        kwargs = (("loop", loop), ("factors", traced), ("preserve_unit_iters", preserve_unit_iters))
        self._record("loop_partition", (), kwargs, tuple(out), True)
        return out

    # --- cache in place ---
    def cache_inplace(
        self, block: BlockRV, read_buffer_index: Any, storage_scope: str
    ) -> list[BlockRV]:
        """Stage a buffer the block reads and writes in place through a cache: a copy in right
        before the block and a copy back right after; returns [copy_in, copy_out].

        >>> rd, wr = sch.cache_inplace(sch.get_block("ext_call"), 0, "local")
        """
        fname, func, r, path = self._block(block)
        func, rname, wname = _cache.cache_inplace(func, r, path, read_buffer_index, storage_scope)
        self._update(fname, func)
        out = [self._new_block(fname, rname), self._new_block(fname, wname)]
        kwargs = (
            ("block", block),
            ("read_buffer_index", read_buffer_index),
            ("storage_scope", storage_scope),
        )
        self._record("cache_inplace", (), kwargs, tuple(out), True)
        return out


__all__ = ["Schedule", "BlockRV", "LoopRV", "Trace", "ScheduleError"]
