"""The GPU rules of the design space: the default GPU schedule as one point (dlight.gpu's
Matmul, else Fallback, replayed through the tuning schedule so its trace is recorded), and
AutoBind (a spatial block's loops fused and split over a sampled number of threads)."""

from __future__ import annotations

from ...dlight.gpu.base import DEFAULT_SHARED_BYTES, DEFAULT_THREADS, limits
from ...dlight.gpu.matmul import (
    _choose_tiles,
    _epilogue,
    _inline_all_but,
    _k_major,
    _match_gemm,
    _NoMatch,
    _operand_indices,
    _tile_gemm,
    _to_gemm_iterators,
)
from ...dlight.gpu.utils import _bind_block, _inline_intermediates, _spatial_prefix
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
    """The steps of dlight.gpu.matmul._schedule_gemm on `sch` (a test checks both agree)."""
    gemm = _match_gemm(sch.mod["main"])
    block = sch.get_block(gemm.name)
    _to_gemm_iterators(sch, block, gemm, _epilogue(sch, block, gemm))
    n = 1 if gemm.batch else 0
    operands = _operand_indices(sch, block)
    itemsize = max(sch.get(block).reads[x].buffer.dtype.bytes for x in operands)
    tiles = _choose_tiles(gemm, max_threads, max_shared, itemsize)
    sch.reindex_cache_read(block, operands[0], "shared", None)
    sch.reindex_cache_read(block, operands[1], "shared", None)
    sch.reindex_cache_write(block, 0, "local", None)
    sch.pad_einsum(block, [1] * n + [tiles.ty * tiles.vi, tiles.tx * tiles.vj, tiles.tk])
    fetches, (writeback,) = sch.get_producers(block), sch.get_consumers(block)
    for fetch in fetches:
        sch.transform_layout(fetch, ("write", 0), _k_major)
    _inline_all_but(sch, [*fetches, block, writeback])
    _tile_gemm(sch, block, fetches, writeback, tiles, n)
    return sch


def _bind_point(sch: Schedule, max_threads: int) -> None:
    """The steps of dlight.gpu.fallback._bind_threads on `sch` (a test checks both agree)."""
    _inline_intermediates(sch)
    outputs = {id(sch.get(b)) for b in sch.get_output_blocks("root")}
    owner: dict[str, str] = {}
    thread_loop: dict = {}
    for block in reversed(sch.get_child_blocks(sch.get_block("root"))):
        name = sch.get(block).name_hint
        owners = {owner[sch.get(c).name_hint] for c in sch.get_consumers(block)}
        loop = thread_loop.get(next(iter(owners))) if len(owners) == 1 else None
        if id(sch.get(block)) in outputs or loop is None:
            owner[name] = name
            thread_loop[name] = _bind_block(sch, block, max_threads)
            continue
        sch.compute_at(block, loop)
        sch.set_scope(block, 0, "local")
        owner[name] = next(iter(owners))


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
    """A root-level block no thread loop covers: its leading spatial loops fused and split
    into blockIdx.x x threadIdx.x, the thread count sampled from 32 .. max_threads_per_block
    (or `thread_extents`); the reduction loops stay serial inside each thread (our lowering
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
        if not spatial or any(not isinstance(sch.get(lp).extent, IntImm) for lp in spatial):
            return [sch]
        choices = self.thread_extents or thread_choices(gpu_limits(target_of(self))[0])
        s = sch.copy()
        try:
            fused = s.fuse(*spatial) if len(spatial) > 1 else spatial[0]
            extent = s.get(fused).extent.value
            choices = [c for c in choices if c <= extent] or [min(choices)]
            threads = s.sample_categorical(choices, [1.0 / len(choices)] * len(choices))
            bx, tx = s.split(fused, [None, threads])
            s.bind(bx, "blockIdx.x")
            s.bind(tx, "threadIdx.x")
        except ScheduleError:
            return [sch]
        return [s]
