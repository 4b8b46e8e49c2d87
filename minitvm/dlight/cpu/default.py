"""The default CPU schedule (`relax.transform.DefaultSchedule`): inline the intermediates once,
then GeneralReduction's row chain, else each block by the first block rule that takes it."""

from __future__ import annotations

from ...arith.block_indices import simplify_block_indices
from ...ir.module import IRModule
from ...tir.function import PrimFunc
from ...tir.schedule import Schedule
from ..base.analysis import IS_SCHEDULED, is_scheduled, marked_scheduled
from ..base.analysis import blocks as _blocks
from ..base.schedule_rule import result_func
from .base import PerBlock, _schedule_order, schedule_block
from .elementwise import ElementWise
from .fallback import Fallback
from .general_reduction import GeneralReduction
from .inline import _inline_intermediates
from .matmul import Matmul
from .reduction import Reduction

# per block kind, the block rules in the order tried (best first, Fallback's plainest last)
DEFAULT_BLOCK_RULES = (ElementWise(), Matmul(), Reduction(), Fallback())
# what `dl.ApplyDefaultSchedule(*dl.cpu.DEFAULT_RULES)` and DefaultSchedule give a function
DEFAULT_RULES = (GeneralReduction(), PerBlock(*DEFAULT_BLOCK_RULES))


def default_schedule_func(func: PrimFunc) -> PrimFunc:
    """`func` with the default CPU schedule applied and marked `tir.is_scheduled`; a function
    already marked, or scheduled by hand (a loop no longer serial), is only marked."""
    if is_scheduled(func):
        return func if marked_scheduled(func) else func.with_attr(IS_SCHEDULED, True)
    if not _blocks(func):
        return func.with_attr(IS_SCHEDULED, True)
    # a legalized reshape's digit divisions fold under the block domains (FuseTIR did this for
    # the fused kernels; an unfused one arrives here as legalized)
    sch = Schedule(simplify_block_indices(func))
    _inline_intermediates(sch)
    for rule in DEFAULT_RULES:  # each starts from the inlined schedule and leaves it unchanged
        out = result_func(rule.apply_inlined(sch))
        if out is not None:
            return out.with_attr(IS_SCHEDULED, True)
    return sch.mod["main"].with_attr(IS_SCHEDULED, True)


def _schedule_block(sch: Schedule, name: str) -> Schedule:
    """`sch` with block `name` given the first of DEFAULT_BLOCK_RULES that takes it (meta-
    schedule's ApplyDefaultSchedule replays the default schedule through this)."""
    return schedule_block(sch, name, DEFAULT_BLOCK_RULES) or sch


def default_schedule(mod: IRModule) -> IRModule:
    """Apply `default_schedule_func` to every PrimFunc of the module."""
    return mod.map_functions(PrimFunc, default_schedule_func)


__all__ = [
    "DEFAULT_BLOCK_RULES",
    "DEFAULT_RULES",
    "_blocks",
    "_inline_intermediates",
    "_schedule_order",
    "default_schedule",
    "default_schedule_func",
    "is_scheduled",
]
