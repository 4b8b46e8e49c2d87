"""The trace, state and sampling side of tir.Schedule: trace and state setup, random variables
and their values, seeds, sampling instructions, compute-location marks (a base class of
tir.Schedule)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...error import ScheduleError
from ..expr import IntImm, PrimExpr, Var
from ..function import PrimFunc
from ..functor import substitute
from ..stmt import BlockRealize
from . import inline as _inline
from . import sampling as _sampling
from .common import const_int, schedule_error, simplify
from .instruction import BlockRV, LoopRV
from .state import ScheduleState, UnknownRVError, parse_debug_mask
from .tree import (
    walk,
)

if TYPE_CHECKING:
    from .schedule import Schedule

_RENDER_LEVELS = {"detail", "fast", "none"}
_BLOCK_PARAMS = {"block", "block_or_loop", "scope_block", "target", "consumer_blocks"}
_MARKS = {-2: Var("inline_mark", "int32"), -1: Var("root_mark", "int32")}


class _SamplingMethods:
    """tir.Schedule's methods for the trace, state and sampling side of tir.Schedule."""

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
        self._record_call("enter_postproc")

    def sample_categorical(self, candidates: list, probs: list, decision: int | None = None) -> Var:
        """Draw one of `candidates` with probabilities `probs`; the index is the decision."""
        value, index = _sampling.sample_categorical(self._rng, candidates, probs, decision)
        out = self._new_expr(value)
        cands, probs = [int(c) for c in candidates], [float(p) for p in probs]
        self._record_call("sample_categorical", cands, probs, outputs=(out,), decision=index)
        return out

    def _loop_extent(self, loop: LoopRV) -> int | None:
        return const_int(self._loop(loop)[2].extent)

    def _tile_outputs(self, kind: str, loop: LoopRV, attrs: tuple, factors: list) -> list:
        outs = [None if f == -1 else self._new_expr(f) for f in factors]
        attrs = tuple(int(a) for a in attrs)
        self._record_call(
            kind, loop, *attrs, outputs=tuple(outs), unpack=True, decision=list(factors)
        )
        return outs

    def sample_perfect_tile(
        self, loop: LoopRV, n: int, max_innermost_factor: int = 16, decision: Any = None
    ) -> list:
        """`n` sampled factors whose product is the loop's extent (None first when unknown)."""
        factors = _sampling.sample_perfect_tile(
            self._rng, self._loop_extent(loop), int(n), int(max_innermost_factor), decision
        )
        attrs = (n, max_innermost_factor)
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
        attrs = (n, partition_pos, innerpart_factor)
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
        self._record_call("sample_compute_location", block, outputs=(out,), decision=index)
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
        self._record_call("get_output_blocks", scope_block, outputs=tuple(out), unpack=True)
        return out
