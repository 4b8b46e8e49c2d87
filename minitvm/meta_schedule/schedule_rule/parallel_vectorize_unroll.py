"""ParallelizeVectorizeUnroll: annotate the root block with how far to parallelize, vectorize
and unroll; the RewriteParallelVectorizeUnroll postproc turns the annotations into loops."""

from __future__ import annotations

from ...tir.schedule import BlockRV, Schedule
from ._block import func_of, is_root, num_cores, vector_lanes
from .schedule_rule import ScheduleRule

PARALLEL = "meta_schedule.parallel"
VECTORIZE = "meta_schedule.vectorize"
UNROLL_EXPLICIT = "meta_schedule.unroll_explicit"
UNROLL_IMPLICIT = "meta_schedule.unroll_implicit"


class ParallelizeVectorizeUnroll(ScheduleRule):
    """On the root block: meta_schedule.parallel = cores x max_jobs_per_core,
    meta_schedule.vectorize = max_vectorize_extent, and an unroll depth sampled from
    unroll_max_steps with sample_categorical (uniformly)."""

    def __init__(
        self,
        max_jobs_per_core: int = 16,
        max_vectorize_extent: int | None = None,
        unroll_max_steps: list | None = None,
        unroll_explicit: bool = True,
    ) -> None:
        self.max_jobs_per_core = max_jobs_per_core
        self.max_vectorize_extent = max_vectorize_extent
        self.unroll_max_steps = list(unroll_max_steps or [])
        self.unroll_explicit = unroll_explicit

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        _, func = func_of(sch)
        if not is_root(func, sch.get(block).name_hint):
            return [sch]
        if self.max_jobs_per_core > 0:
            sch.annotate(block, PARALLEL, num_cores(self.target) * self.max_jobs_per_core)
        vec = self.max_vectorize_extent
        if vec is None:
            vec = 4 * vector_lanes(self.target)  # a few registers' worth of float32 lanes
        if vec > 1:
            sch.annotate(block, VECTORIZE, vec)
        if self.unroll_max_steps:
            n = len(self.unroll_max_steps)
            depth = sch.sample_categorical(self.unroll_max_steps, [1.0 / n] * n)
            key = UNROLL_EXPLICIT if self.unroll_explicit else UNROLL_IMPLICIT
            sch.annotate(block, key, depth)
        return [sch]
