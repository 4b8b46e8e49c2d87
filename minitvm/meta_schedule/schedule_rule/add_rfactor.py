"""AddRFactor: split a reduction whose spatial part is too small to keep the cores busy and
rfactor it, so its partial sums run in parallel."""

from __future__ import annotations

from ...error import ScheduleError
from ...tir.schedule import BlockRV, Schedule
from ...tir.schedule.common import const_int
from ._block import TILING_KEY, func_of, has_reduction, is_subroot, loop_kinds, num_cores
from .schedule_rule import ScheduleRule


class AddRFactor(ScheduleRule):
    """Fork: the block as it is, and the block rfactored at each half of its split (fused)
    reduction loop; only when spatial iterations < cores x max_jobs_per_core."""

    def __init__(self, max_jobs_per_core: int = 16, max_innermost_factor: int | None = 64) -> None:
        self.max_jobs_per_core = max_jobs_per_core
        self.max_innermost_factor = max_innermost_factor

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        node = sch.get(block)
        if not has_reduction(node) or TILING_KEY in node.annotations:
            return [sch]
        if not is_subroot(func_of(sch)[1], node.name_hint):
            return [sch]
        loops = sch.get_loops(block)
        kinds = loop_kinds(sch, block, loops)
        if kinds is None or "R" not in kinds or kinds.index("R") < kinds.count("S"):
            return [sch]  # reductions must be innermost to fuse them
        extents = [const_int(sch.get(lp).extent) for lp in loops]
        if any(e is None for e in extents):
            return [sch]
        spatial = 1
        for e, k in zip(extents, kinds):
            spatial *= e if k == "S" else 1
        reduce = 1
        for e, k in zip(extents, kinds):
            reduce *= e if k == "R" else 1
        if spatial >= num_cores(self.target) * self.max_jobs_per_core or reduce < 2:
            return [sch]
        out = [sch]
        for which in (0, 1):
            s = sch.copy()
            try:
                r_loops = [lp for lp, k in zip(s.get_loops(block), kinds) if k == "R"]
                fused = s.fuse(*r_loops) if len(r_loops) > 1 else r_loops[0]
                factors = s.sample_perfect_tile(
                    fused, n=2, max_innermost_factor=self.max_innermost_factor or 0
                )
                halves = s.split(fused, factors=factors)
                s.rfactor(halves[which], 0)
            except ScheduleError:
                continue
            out.append(s)
        return out
