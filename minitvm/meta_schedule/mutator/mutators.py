"""The mutators: each picks one instruction of a trace and returns the trace with a new
decision for it (None when the trace has nothing it can change)."""

from __future__ import annotations

import bisect
import json
from typing import Any

from ...error import ScheduleError
from ...tir.expr import IterType
from ...tir.schedule import Schedule
from ...tir.schedule import sampling as _sampling
from ...tir.schedule.common import const_int
from ...tir.schedule.instruction import Instruction
from ...tir.schedule.trace import Trace
from ...tir.schedule.tree import block_realizes, find_block, vars_in
from ...tir.stmt import Block, For
from ..schedule_rule._block import func_of, num_cores
from ..schedule_rule.parallel_vectorize_unroll import PARALLEL, UNROLL_EXPLICIT, UNROLL_IMPLICIT
from ..utils import TuneContextPart

_TRIES = 16  # random edits tried before a mutator gives up on a trace


def as_engine(rng: Any) -> Any:
    """A RandomEngine from an engine, an int seed or a numpy Generator."""
    if isinstance(rng, _sampling.RandomEngine):
        return rng
    if rng is None or isinstance(rng, int):
        return _sampling.make_rng(rng)
    if hasattr(rng, "integers"):
        return _sampling.make_rng(int(rng.integers(0, 2**31 - 2)))
    raise ScheduleError(
        f"mutator: rng must be a RandomEngine, int seed or numpy Generator: {rng!r}"
    )


class Mutator(TuneContextPart):
    """Base class: `apply(trace, rng) -> Trace | None`."""

    mod: Any = None

    def _initialize_with_tune_context(self, context: Any) -> None:
        super()._initialize_with_tune_context(context)
        self.mod = getattr(context, "mod", None)

    def apply(self, trace: Trace, rng: Any = None) -> Trace | None:
        raise NotImplementedError(f"{type(self).__name__}.apply")

    @staticmethod
    def create(kind: str = "llvm") -> dict:
        """Mutators and their probabilities for target kind `kind` ("llvm", "cuda"): TVM's name for
        `create_default`."""
        from . import create_default

        return create_default(kind)


PyMutator = Mutator


def _insts(trace: Trace, kind_name: str) -> list[Instruction]:
    return [
        i for i in trace.insts if i.kind.name == kind_name and trace.get_decision(i) is not None
    ]


def _divisors(n: int) -> list[int]:
    return [d for d in range(2, n + 1) if n % d == 0]


class MutateTileSize(Mutator):
    """Move a divisor from one factor of a sampled tile to another (the product stays the
    loop extent; the sampling rule re-checks the innermost limit and partition)."""

    def apply(self, trace: Trace, rng: Any = None) -> Trace | None:
        rng = as_engine(rng)
        insts = _insts(trace, "SamplePerfectTile") + _insts(trace, "SamplePartitionedTile")
        insts = [
            i for i in insts if -1 not in trace.get_decision(i) and len(trace.get_decision(i)) > 1
        ]
        if not insts:
            return None
        for _ in range(_TRIES):
            inst = rng.choice(insts)
            factors = [int(f) for f in trace.get_decision(inst)]
            src = [i for i, f in enumerate(factors) if f > 1]
            if not src:
                continue
            x = rng.choice(src)
            y = rng.choice([i for i in range(len(factors)) if i != x])
            d = rng.choice(_divisors(factors[x]))
            new = list(factors)
            new[x] //= d
            new[y] *= d
            if _tile_ok(inst, new):
                return trace.with_decision(inst, new, remove_postproc=True)
        return None


def _tile_ok(inst: Instruction, factors: list[int]) -> bool:
    extent = 1
    for f in factors:
        extent *= f
    attrs = [int(a) for a in inst.attrs]
    try:
        if inst.kind.name == "SamplePerfectTile":
            n, max_inner = attrs[0], attrs[1]
            if max_inner > 0 and factors[-1] > max_inner:
                return False
            _sampling.sample_perfect_tile(None, extent, n, max_inner, factors)
        else:
            n, pos, inner = attrs
            _sampling.sample_partitioned_tile(None, extent, n, pos, inner, factors)
    except ScheduleError:
        return False
    return True


class MutateUnroll(Mutator):
    """Pick another unroll depth for a sample_categorical that feeds an unroll annotation."""

    def apply(self, trace: Trace, rng: Any = None) -> Trace | None:
        rng = as_engine(rng)
        feeding = set()
        for inst in trace.insts:
            if (
                inst.kind.name == "Annotate"
                and inst.attrs
                and inst.attrs[0]
                in (
                    UNROLL_EXPLICIT,
                    UNROLL_IMPLICIT,
                )
            ):
                feeding.update(id(v) for v in inst.inputs[1:])
        return _resample_categorical(trace, feeding, rng)


class MutateThreadBinding(Mutator):
    """Pick another thread count for a sample_categorical that feeds a split (AutoBind's
    threads per block)."""

    def apply(self, trace: Trace, rng: Any = None) -> Trace | None:
        rng = as_engine(rng)
        feeding = set()
        for inst in trace.insts:
            if inst.kind.name == "Split":
                feeding.update(id(v) for v in _flat(inst.inputs))
        return _resample_categorical(trace, feeding, rng)


def _resample_categorical(trace: Trace, feeding: set, rng: Any) -> Trace | None:
    """Another choice for one sample_categorical (of 2+ choices) whose output is in `feeding`."""
    insts = [
        i
        for i in _insts(trace, "SampleCategorical")
        if any(id(o) in feeding for o in i.outputs) and len(i.attrs[0]) > 1
    ]
    if not insts:
        return None
    inst = rng.choice(insts)
    old = int(trace.get_decision(inst))
    choices = [k for k in range(len(inst.attrs[0])) if k != old]
    return trace.with_decision(inst, rng.choice(choices), remove_postproc=True)


def _flat(items: Any) -> list:
    out = []
    for x in items:
        out.extend(_flat(x) if isinstance(x, list | tuple) else [x])
    return out


class MutateParallel(Mutator):
    """Change the meta_schedule.parallel annotation to a value that parallelises a different
    number of outer loops (TVM's plans): the candidates are the products of the outer spatial
    loop extents of the blocks in the annotated scope, up to cores x max_jobs_per_core."""

    def __init__(self, max_jobs_per_core: int = 16) -> None:
        self.max_jobs_per_core = max_jobs_per_core

    def apply(self, trace: Trace, rng: Any = None) -> Trace | None:
        rng = as_engine(rng)
        found = [
            (k, i)
            for k, i in enumerate(trace.insts)
            if i.kind.name == "Annotate" and i.attrs and i.attrs[0] == PARALLEL
        ]
        if not found or self.mod is None:
            return None
        k, inst = rng.choice(found)
        name = _block_name(trace, inst.inputs[0], k)
        limit = num_cores(self.target) * self.max_jobs_per_core
        options = self._options(trace, name, int(inst.inputs[1]), limit)
        if not options:
            return None
        new_inst = Instruction(
            inst.kind, [inst.inputs[0], rng.choice(options)], inst.attrs, inst.outputs
        )
        valid = trace._valid(True)
        if k >= len(valid):
            return None
        insts = list(valid)
        insts[k] = new_inst
        decisions = {i: d for i, d in trace.decisions.items() if i in set(insts)}
        return Trace(insts, decisions)

    def _options(self, trace: Trace, name: str | None, old: int, limit: int) -> list[int]:
        """Annotation values giving plans other than `old`'s, one value per plan."""
        if name is None:
            return []
        sch = Schedule(self.mod)
        try:
            trace.apply_to_schedule(sch, remove_postproc=True)
            func = func_of(sch)[1]
        except (ScheduleError, ValueError):
            return []
        found = find_block(func, name)
        if found is None:
            return []
        prods = _scope_loop_products(found[0].block, limit)
        plans: dict[tuple[int, ...], int] = {}
        for value in sorted({p for row in prods for p in row if p <= limit}):
            plans[_fused_loops(prods, value)] = value  # the largest value of a plan stays
        plans.pop(_fused_loops(prods, old), None)
        return sorted(plans.values())


def _scope_loop_products(scope: Block, limit: int) -> list[list[int]]:
    """For each block directly in `scope`: the running products of its outer loops' extents
    (outermost first), over the loops before the first non-spatial or symbolic one, stopping
    once the product reaches `limit`."""
    children = [
        (r, [s for s in path if isinstance(s, For)])
        for r, path in block_realizes(scope.body)
        if not any(isinstance(s, Block) for s in path)
    ]
    non_spatial = {
        id(v)
        for r, _ in children
        for iv, value in zip(r.block.iter_vars, r.iter_values)
        if iv.iter_type != IterType.DataPar
        for v in vars_in(value)
    }
    out = []
    for _, loops in children:
        row, product = [], 1
        for loop in loops:
            ext = const_int(loop.extent)
            if ext is None or id(loop.loop_var) in non_spatial:
                break
            product *= ext
            row.append(product)
            if product >= limit:
                break
        if row:
            out.append(row)
    return out


def _fused_loops(prods: list[list[int]], value: int) -> tuple[int, ...]:
    """How many outer loops of each block a parallel annotation of `value` fuses: up to and
    including the first whose running product passes `value`."""
    plan = []
    for row in prods:
        i = bisect.bisect_right(row, value)
        if i > 0 and row[i - 1] == value:
            i -= 1
        plan.append(i + 1 if i != len(row) else i)
    return tuple(plan)


class MutateComputeLocation(Mutator):
    """Move a sampled compute location to another legal loop: the trace up to the sampling
    instruction is replayed on the workload to list the candidates."""

    def apply(self, trace: Trace, rng: Any = None) -> Trace | None:
        rng = as_engine(rng)
        insts = _insts(trace, "SampleComputeLocation")
        if not insts or self.mod is None:
            return None
        inst = rng.choice(insts)
        candidates = self._candidates(trace, inst)
        old = int(trace.get_decision(inst))
        choices = [c for c in candidates if c != old]
        if not choices:
            return None
        return trace.with_decision(inst, rng.choice(choices), remove_postproc=True)

    _CACHE_SIZE = 64  # traces whose candidates are kept (evolution mutates the same parents)

    def _initialize_with_tune_context(self, context: Any) -> None:
        super()._initialize_with_tune_context(context)
        self._cache: dict[str, list[int]] = {}  # for this workload only

    def _candidates(self, trace: Trace, inst: Instruction) -> list[int]:
        """The legal locations, memoised by the trace before `inst` (a replay and a legality
        check per loop cost a fraction of a second)."""
        index = trace.insts.index(inst)
        prefix = Trace(trace.insts[:index], trace.decisions)
        key = json.dumps(prefix.as_json())
        cache = self.__dict__.setdefault("_cache", {})
        if key not in cache:
            if len(cache) >= self._CACHE_SIZE:
                cache.pop(next(iter(cache)))  # the oldest
            cache[key] = self._find_candidates(prefix, inst)
        return cache[key]

    def _find_candidates(self, prefix: Trace, inst: Instruction) -> list[int]:
        name = _block_name(prefix, inst.inputs[0], len(prefix.insts))
        if name is None:
            return []  # the block came from a primitive (a cache stage): left as sampled
        sch = Schedule(self.mod)
        try:
            prefix.apply_to_schedule(sch, True)
            _, func, r, path = sch._block(sch.get_block(name))
        except ScheduleError:
            return []
        return sorted(k for k, _ in _sampling.compute_locations(func, r, path))


def _block_name(trace: Trace, rv: Any, index: int) -> str | None:
    for inst in trace.insts[:index]:
        if inst.kind.name == "GetBlock" and inst.outputs and inst.outputs[0] is rv:
            return str(inst.attrs[0])
    return None
