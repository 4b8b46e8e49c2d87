"""Fallback: the plainest CPU rule, the widest leading spatial loop in parallel."""

from __future__ import annotations

from ...tir.expr import IterType
from ...tir.schedule import BlockRV, LoopRV, Schedule
from .analysis import BlockKind
from .base import BlockRule
from .utils import _parallel_widest, _work


def schedule_rows(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> None:
    """The plainest rule, the fallback of all the others: the widest of the leading spatial
    loops in parallel, everything else serial as it was."""
    n_spatial = 0
    for iv in sch.get(block).iter_vars:
        if iv.iter_type != IterType.DataPar:
            break
        n_spatial += 1
    _parallel_widest(sch, loops[:n_spatial], _work(sch, loops[:n_spatial]))


class Fallback(BlockRule):
    """Any block: the widest leading spatial loop in parallel (`schedule_rows`); the last
    rule of the default list.

    dl.ApplyDefaultSchedule(dl.cpu.Fallback())
    """

    kinds = frozenset(BlockKind)
    steps = (schedule_rows,)
