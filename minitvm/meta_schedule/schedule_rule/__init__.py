"""Schedule rules: the stochastic transformations a design space is generated from.

>>> rules = ms.schedule_rule.create_default("llvm")
"""

from __future__ import annotations

from typing import Any

from ._block import as_target
from .add_rfactor import AddRFactor
from .apply_custom_rule import ApplyCustomRule
from .apply_default import ApplyDefaultSchedule, apply_default_schedule
from .auto_inline import AutoInline, InlineConstantScalars
from .gpu import GPU_KINDS, ApplyDefaultGPUSchedule, AutoBind, is_gpu
from .multi_level_tiling import MultiLevelTiling, ReuseType
from .parallel_vectorize_unroll import ParallelizeVectorizeUnroll
from .random_compute_location import RandomComputeLocation
from .schedule_rule import PyScheduleRule, ScheduleRule


def create_default(target: Any = "llvm") -> list[ScheduleRule]:
    """The target's rules: TVM's CPU rules plus our DefaultSchedule as one fixed point of the
    space, or (a GPU target) TVM's GPU rules plus the default GPU schedule as that point."""
    target = as_target(target)
    kind = "llvm" if target is None else target.kind.name
    if kind == "llvm":
        return _cpu_rules()
    if is_gpu(target):
        return _gpu_rules()
    from ...error import TuningError

    raise TuningError(
        f"meta_schedule: no default schedule rules for target kind '{kind}'; tune for an "
        f"'llvm' target or a GPU one ({', '.join(GPU_KINDS)}), or pass sch_rules=[...]"
    )


def _cpu_rules() -> list[ScheduleRule]:
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


def _gpu_rules() -> list[ScheduleRule]:
    """TVM's GPU rules without CrossThreadReduction (our lowering has no cross-thread
    reduction: a reduction loop bound to threads would race)."""
    return [
        ApplyDefaultGPUSchedule(),
        AutoInline(),
        MultiLevelTiling(
            structure="SSSRRSRS",
            tile_binds=["blockIdx.x", "vthread.x", "threadIdx.x"],
            max_innermost_factor=64,
            reuse_read=ReuseType("must", [4], "shared"),
            reuse_write=ReuseType("must", [3], "local"),
        ),
        ParallelizeVectorizeUnroll(
            max_jobs_per_core=-1, max_vectorize_extent=-1, unroll_max_steps=[0, 16, 64, 512, 1024]
        ),
        AutoBind(max_threadblocks=256),
    ]


__all__ = [
    "AddRFactor",
    "ApplyCustomRule",
    "ApplyDefaultGPUSchedule",
    "ApplyDefaultSchedule",
    "AutoBind",
    "AutoInline",
    "InlineConstantScalars",
    "MultiLevelTiling",
    "ParallelizeVectorizeUnroll",
    "PyScheduleRule",
    "RandomComputeLocation",
    "ReuseType",
    "ScheduleRule",
    "apply_default_schedule",
    "create_default",
]
