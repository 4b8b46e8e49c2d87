"""The CPU rules' shape: block rules (ElementWise, Matmul, GEMV, Reduction, Fallback) each take
blocks of some kinds and try their steps in turn; `PerBlock` gives every block of a function
the first of its rules that takes it (the default CPU schedule); every CPU rule first inlines
the function's intermediate stages (`inline.py`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...error import ScheduleError
from ...tir.function import PrimFunc
from ...tir.schedule import BlockRV, LoopRV, Schedule
from ..base.analysis import blocks as _blocks
from ..base.schedule_rule import RuleResult, ScheduleRule
from .analysis import BlockKind, _kind
from .inline import _inline_intermediates
from .utils import _simple_nest, _vectorize_inner

# a step schedules one block given its loops; it may return a loop under which the block's
# elementwise consumer is then computed (tile by tile)
BlockStep = Callable[[Schedule, BlockRV, list[LoopRV]], LoopRV | None]


class NotApplicable(Exception):
    """A block rule's step does not fit the block; the next step or rule is tried."""


class CPUScheduleRule(ScheduleRule):
    """A dlight rule for CPU targets (llvm) that schedules a function after inlining its
    intermediate stages; subclasses say what they do with the inlined schedule."""

    def is_target_available(self, target: Any) -> bool:
        return target is None or target.kind.name == "llvm"

    def apply(self, func: PrimFunc, target: Any, tunable: bool) -> RuleResult:
        if not _blocks(func):
            return None
        sch = Schedule(func)
        _inline_intermediates(sch)
        return self.apply_inlined(sch)

    def apply_inlined(self, sch: Schedule) -> RuleResult:
        """The rule on a schedule whose intermediates are inlined (left unchanged); None when
        it does not apply."""
        raise NotImplementedError(f"{type(self).__name__}.apply_inlined(sch)")


class BlockRule(CPUScheduleRule):
    """A CPU rule for single blocks of the kinds in `kinds`: `steps` tried in turn on a copy
    (a step raising ScheduleError or NotApplicable leaves the block to the next). On its own
    it schedules every block it takes and applies when it takes one."""

    kinds: frozenset[BlockKind] = frozenset()
    steps: tuple[BlockStep, ...] = ()

    def apply_inlined(self, sch: Schedule) -> RuleResult:
        return PerBlock(self).apply_inlined(sch)


class PerBlock(CPUScheduleRule):
    """Every block of a function (reductions first) given the first of `rules` that takes it;
    applies when one does.

    dl.ApplyDefaultSchedule(dl.cpu.PerBlock(dl.cpu.Matmul(), dl.cpu.Fallback()))
    """

    def __init__(self, *rules: BlockRule) -> None:
        self.rules = rules

    def apply_inlined(self, sch: Schedule) -> RuleResult:
        applied = False
        for name in _schedule_order(sch.mod["main"]):
            new = schedule_block(sch, name, self.rules)
            if new is not None:
                sch, applied = new, True
        return sch if applied else None

    def __repr__(self) -> str:
        return f"PerBlock({', '.join(map(repr, self.rules))})"


def _schedule_order(func: PrimFunc) -> list[str]:
    """The block names of `func` in the order the rules visit them: reductions first, then the
    rest in program order. rfactor (the row reductions' rule) needs the function to be a stage
    pipeline, which the scheduler's region check no longer proves once a matmul's register
    tile writes back under two loops per dimension (softmax between the two matmuls of
    attention); the other rules do not need it."""
    realizes = _blocks(func)
    first = [r.block.name_hint for r in realizes if _kind(r.block) is BlockKind.REDUCTION]
    return first + [r.block.name_hint for r in realizes if r.block.name_hint not in first]


def schedule_block(sch: Schedule, name: str, rules: tuple[BlockRule, ...]) -> Schedule | None:
    """A copy of `sch` with block `name` scheduled by the first step of `rules` (those taking
    its kind) that the primitives accept (a step refused halfway leaves no trace); None when
    none does (the block keeps its serial loops: correct, only slower)."""
    # fetched afresh: an earlier rule may have moved or inlined (folded) this block
    r = next((r for r in _blocks(sch.mod["main"]) if r.block.name_hint == name), None)
    kind = None if r is None else _kind(r.block)
    if kind is None:
        return None
    for step in (step for rule in rules if kind in rule.kinds for step in rule.steps):
        trial = sch.copy()
        block = trial.get_block(name)
        loops = _simple_nest(trial, block, r)
        if loops is None:
            return None
        try:
            attach = step(trial, block, loops)
            if attach is not None:
                _attach_epilogue(trial, block, attach)
        except (ScheduleError, NotApplicable):
            continue  # e.g. a folded epilogue reading a second producer: a plainer step
        return trial
    return None


def _attach_epilogue(sch: Schedule, block: BlockRV, loop: LoopRV) -> None:
    """Compute the one spatial consumer of `block`'s intermediate result under `loop` (tile by
    tile, while the tile is hot), vectorizing its inner loop."""
    func = sch.mod["main"]
    if any(w.buffer is b for w in sch.get(block).writes for b in func.buffer_map.values()):
        return
    consumers = sch.get_consumers(block)
    if len(consumers) != 1 or _kind(sch.get(consumers[0])) is not BlockKind.SPATIAL:
        return
    try:
        sch.reverse_compute_at(consumers[0], loop)
    except ScheduleError:
        return  # the consumer needs more than one tile (e.g. reads it transposed): stays apart
    _vectorize_inner(sch, sch.get_loops(consumers[0])[-1])
