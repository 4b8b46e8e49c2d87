"""RMSNorm: kernels that normalise by a reciprocal square root of a reduction
(`x * rsqrt(mean(x * x) + eps) * w`), matched as TVM's rule matches them (a stage calling
rsqrt). TVM reduces each row across a thread block; minitvm lowers no cross-thread reduction,
so each thread computes the sum its outputs read in registers, as GeneralReduction does."""

from __future__ import annotations

from typing import Any

from ...tir.expr import Call, Op
from ...tir.function import PrimFunc
from ...tir.functor import post_order_visit
from ..base.analysis import blocks
from .base import GPUScheduleRule, reduction_blocks
from .general_reduction import GeneralReduction

_RSQRT = Op.get("tir.rsqrt")


def _calls_rsqrt(stmt: Any) -> bool:
    found: list = []
    post_order_visit(
        stmt, lambda n: found.append(n) if isinstance(n, Call) and n.op is _RSQRT else None
    )
    return bool(found)


class RMSNorm(GPUScheduleRule):
    """Kernels with one reduction and a stage calling rsqrt (RMS normalisation); None for any
    other kernel.

    with tvm.target.Target("cuda"):
        mod = dl.ApplyDefaultSchedule(dl.gpu.RMSNorm(), dl.gpu.Fallback())(mod)
    """

    def apply(self, func: PrimFunc, target: Any, tunable: bool) -> PrimFunc | None:
        if len(reduction_blocks(func)) != 1:
            return None
        if not any(_calls_rsqrt(r.block.body) for r in blocks(func)):
            return None
        return GeneralReduction().apply(func, target, tunable)
