"""GPUScheduleRule: the base of the GPU rules (threads per block and shared memory per block
from the target)."""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...tir.expr import IterType
from ...tir.function import PrimFunc
from ...tir.stmt import Block
from ..base.analysis import blocks
from ..base.schedule_rule import ScheduleRule

DEFAULT_THREADS = 256  # threads per block when the target does not say
DEFAULT_SHARED_BYTES = 32768  # shared memory per block when the target does not say


def limits(target: Any) -> tuple[int, int]:
    """(threads per block, shared bytes per block) of `target`, the defaults where it is silent."""
    threads = getattr(target, "max_num_threads", None) or DEFAULT_THREADS
    shared = getattr(target, "max_shared_memory_per_block", None) or DEFAULT_SHARED_BYTES
    return threads, shared


def reduction_blocks(func: PrimFunc) -> list[Block]:
    """The blocks of `func` with a reduction iterator, in program order."""
    return [
        r.block
        for r in blocks(func)
        if any(iv.iter_type != IterType.DataPar for iv in r.block.iter_vars)
    ]


def output_buffers(func: PrimFunc) -> set[int]:
    """ids of `func`'s parameter buffers (what a kernel may write)."""
    return {id(b) for b in func.buffer_map.values()}


class GPUScheduleRule(ScheduleRule):
    """A dlight rule for GPU targets (opencl, cuda: targets whose keys include "gpu"); a
    function that already binds threads is not one it applies to."""

    def is_target_available(self, target: Any) -> bool:
        return target is not None and "gpu" in target.keys


def module_of(func: PrimFunc) -> IRModule:
    return IRModule({"main": func})
