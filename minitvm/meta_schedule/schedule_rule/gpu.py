"""The GPU rules of the design space: the default GPU schedule as one point (dlight.gpu's
Matmul, else Fallback, replayed through the tuning schedule so its trace is recorded), and
AutoBind (a spatial block's loops fused and split over a sampled number of threads)."""

from __future__ import annotations

from ...dlight.gpu.base import DEFAULT_SHARED_BYTES, DEFAULT_THREADS, limits
from ...dlight.gpu.fallback import bind_threads
from ...dlight.gpu.matmul import _NoMatch, schedule_gemm
from ...dlight.gpu.utils import _spatial_prefix
from ...error import MiniTVMError, ScheduleError
from ...tir.expr import IntImm
from ...tir.schedule import BlockRV, Schedule
from ...tir.stmt import ForKind
from ...tir.transform.lower_thread_binding import has_thread_bindings
from ._block import func_of, is_root, is_subroot, target_of
from .schedule_rule import ScheduleRule

GPU_KINDS = ("cuda", "nvptx", "opencl", "rocm", "metal", "vulkan")


def is_gpu(target) -> bool:
    """Whether `target` runs kernels on a GPU (its keys name "gpu")."""
    return target is not None and "gpu" in tuple(getattr(target, "keys", ()) or ())


def gpu_limits(target) -> tuple[int, int]:
    """(threads, shared bytes) per block of `target`; dlight's defaults for a GPU kind that
    states none (rocm, metal, vulkan parse but carry no limits here)."""
    try:
        return limits(target)
    except MiniTVMError:
        return DEFAULT_THREADS, DEFAULT_SHARED_BYTES


def default_gpu_point(sch: Schedule, target) -> Schedule:
    """DefaultGPUSchedule (dlight.gpu: Matmul's shared-memory tiles, else Fallback's binding)
    applied to `sch` itself, so the trace holds every step; `sch` when it binds threads."""
    _, func = func_of(sch)
    if has_thread_bindings(func):
        return sch
    threads, shared = gpu_limits(target)
    try:
        return _gemm_point(sch.copy(), threads, shared)
    except (_NoMatch, ScheduleError):
        pass  # not a GEMM that fits its tiles: the simple binding, as dlight does
    _bind_point(sch, threads)
    return sch


def _gemm_point(sch: Schedule, max_threads: int, max_shared: int) -> Schedule:
    """dlight.gpu.Matmul's tiling as steps on `sch`."""
    schedule_gemm(sch, max_threads, max_shared)
    return sch


def _bind_point(sch: Schedule, max_threads: int) -> None:
    """dlight.gpu.Fallback's binding as steps on `sch`."""
    bind_threads(sch, max_threads)


class ApplyDefaultGPUSchedule(ScheduleRule):
    """A whole-function rule: one extra design space, the untuned GPU kernel's schedule (so
    tuning can only match or beat it)."""

    is_function_rule = True

    def apply_function(self, sch: Schedule) -> list[Schedule]:
        if func_of(sch)[0] != "main":
            return []  # dlight's steps address the function as "main"
        try:
            return [default_gpu_point(sch.copy(), target_of(self))]
        except ScheduleError:
            return []


def thread_choices(max_threads: int) -> list[int]:
    """Threads per block AutoBind samples from: 32, 64, ... up to the target's limit."""
    out = [t for t in (32, 64, 128, 256, 512, 1024) if t <= max_threads]
    return out or [max_threads]


class AutoBind(ScheduleRule):
    """A root-level block no thread loop covers: its leading spatial loops (a unit loop when
    it has none) fused and split into blockIdx.x x threadIdx.x, the thread count sampled from
    32 .. max_threads_per_block (or `thread_extents`); the reduction loops stay serial inside each thread (our lowering
    has no cross-thread reduction). `max_threadblocks` is TVM's argument, accepted for its
    signature: the grid here is as long as the loops need."""

    def __init__(self, max_threadblocks: int = 256, thread_extents: list | None = None) -> None:
        self.max_threadblocks = max_threadblocks
        self.thread_extents = thread_extents

    def apply(self, sch: Schedule, block: BlockRV) -> list[Schedule]:
        _, func = func_of(sch)
        name = sch.get(block).name_hint
        if is_root(func, name) or not is_subroot(func, name):
            return [sch]
        loops = sch.get_loops(block)
        if any(sch.get(lp).kind is ForKind.THREAD_BINDING for lp in loops):
            return [sch]
        spatial = _spatial_prefix(sch, block)
        if any(not isinstance(sch.get(lp).extent, IntImm) for lp in spatial):
            return [sch]
        max_threads = gpu_limits(target_of(self))[0]
        choices = self.thread_extents or thread_choices(max_threads)
        s = sch.copy()
        try:
            if not spatial:  # no spatial loop (none, or reductions only): a unit loop to bind
                spatial = [s.add_unit_loop(loops[0] if loops else block)]
            fused = s.fuse(*spatial) if len(spatial) > 1 else spatial[0]
            extent = s.get(fused).extent.value
            threads = _thread_count(s, choices, min(extent, max_threads))
            bx, tx = s.split(fused, [None, threads])
            s.bind(bx, "blockIdx.x")
            s.bind(tx, "threadIdx.x")
        except ScheduleError:
            return [sch]
        return [s]


def _thread_count(sch: Schedule, choices: list, most: int):
    """Threads per block: sampled from the choices up to `most`; a constant when one fits,
    or `most` itself when none does (as TVM's factor sampler)."""
    fits = [int(c) for c in choices if int(c) <= most]
    if not fits:
        return most
    if len(fits) == 1:
        return fits[0]
    return sch.sample_categorical(fits, [1.0 / len(fits)] * len(fits))
