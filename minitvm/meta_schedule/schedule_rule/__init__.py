"""Schedule rules: the stochastic transformations a design space is generated from.

>>> rules = ms.schedule_rule.create_default("llvm")
"""

from __future__ import annotations

from typing import Any

from ._block import as_target
from .add_rfactor import AddRFactor
from .apply_default import ApplyDefaultSchedule, apply_default_schedule
from .auto_inline import AutoInline
from .multi_level_tiling import MultiLevelTiling, ReuseType
from .parallel_vectorize_unroll import ParallelizeVectorizeUnroll
from .random_compute_location import RandomComputeLocation
from .schedule_rule import PyScheduleRule, ScheduleRule


def create_default(target: Any = "llvm") -> list[ScheduleRule]:
    """TVM's CPU rules plus our DefaultSchedule as one fixed point of the space."""
    target = as_target(target)
    if target is not None and target.kind.name != "llvm":
        from ...error import TuningError

        raise TuningError(
            f"meta_schedule: no default schedule rules for target kind '{target.kind.name}'; "
            "tune for an 'llvm' target or pass sch_rules=[...]"
        )
    return [
        ApplyDefaultSchedule(),
        AutoInline(),
        AddRFactor(max_jobs_per_core=16, max_innermost_factor=64),
        MultiLevelTiling(structure="SSRSRS", reuse_write=ReuseType("may", [1, 2], "global")),
        ParallelizeVectorizeUnroll(
            max_jobs_per_core=16, max_vectorize_extent=None, unroll_max_steps=[0, 16, 64, 512]
        ),
        RandomComputeLocation(),
    ]


__all__ = [
    "AddRFactor",
    "ApplyDefaultSchedule",
    "AutoInline",
    "MultiLevelTiling",
    "ParallelizeVectorizeUnroll",
    "PyScheduleRule",
    "RandomComputeLocation",
    "ReuseType",
    "ScheduleRule",
    "apply_default_schedule",
    "create_default",
]
