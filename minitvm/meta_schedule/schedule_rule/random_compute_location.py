"""RandomComputeLocation: compute a producer block at a sampled loop of its consumer."""

from __future__ import annotations

from ...error import ScheduleError
from ...tir.schedule import BlockRV, Schedule
from ._block import TILING_KEY, consumers_of, func_of, is_root, is_subroot, writes_output
from .schedule_rule import ScheduleRule


class RandomComputeLocation(ScheduleRule):
    """sample_compute_location then compute_at (root and inline are candidates too) for a
    block of the root scope that feeds another block and was not tiled."""

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        _, func = func_of(sch)
        node = sch.get(block)
        name = node.name_hint
        if is_root(func, name) or not is_subroot(func, name) or TILING_KEY in node.annotations:
            return [sch]
        if writes_output(func, node) or not consumers_of(func, node):
            return [sch]
        if not sch.get_loops(block):
            return [sch]
        s = sch.copy()
        try:
            loc = s.sample_compute_location(block)
            s.compute_at(block, loc)
        except ScheduleError:
            return [sch]
        return [s]
