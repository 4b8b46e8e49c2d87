"""The default GPU schedule (`relax.transform.DefaultGPUSchedule`, TVM's
`tir.transform.DefaultGPUSchedule`): Matmul's shared-memory tiles when the kernel fits them,
else Fallback's simple binding (why a kernel was not tiled is logged at debug level)."""

from __future__ import annotations

import logging
from typing import Any

from ...error import ScheduleError
from ...ir.module import IRModule
from ...tir.function import PrimFunc
from ...tir.transform.lower_thread_binding import has_thread_bindings
from .base import limits
from .fallback import Fallback, _bind_threads
from .matmul import Matmul, _NoMatch, _schedule_gemm

_log = logging.getLogger(__name__)

# the rules default_gpu_schedule_func applies, as dlight rules
DEFAULT_RULES = (Matmul(), Fallback())


def default_gpu_schedule_func(
    func: PrimFunc, max_threads: int = 256, max_shared_bytes: int = 32768
) -> PrimFunc:
    """`func` with threads bound as the module doc says (unchanged when it binds any)."""
    if has_thread_bindings(func):
        return func
    try:
        return _schedule_gemm(func, max_threads, max_shared_bytes)
    except (_NoMatch, ScheduleError) as err:
        _log.debug("DefaultGPUSchedule: simple binding, not GEMM tiles: %s", err)
    return _bind_threads(func, max_threads)


def default_gpu_schedule(mod: IRModule, target: Any = None) -> IRModule:
    """Every PrimFunc of `mod` given a default GPU schedule for `target` (threads per block
    from its `max_num_threads`, 256 when absent; shared memory per block from its
    `max_shared_memory_per_block`, 32768 bytes when absent)."""
    threads, shared = limits(target)
    return mod.map_functions(PrimFunc, lambda f: default_gpu_schedule_func(f, threads, shared))
