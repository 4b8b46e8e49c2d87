"""Fallback: the simple binding. Inline every intermediate stage the inliner accepts (a kernel
cannot allocate the global temporaries between stages), then, from the outputs back, for each
remaining block of the root: a stage whose consumers all run in one thread loop (a reduction
the inliner refused) is computed there in "local" memory; any other block gets its leading
spatial loops (those that bind no reduction iterator) bound: the trailing constant-extent ones
fused and split by the target's threads per block into blockIdx.x and threadIdx.x (a guarded
tail when not a multiple), symbolic ones (a batch) fused onto blockIdx.x. Reduction loops stay
serial inside each thread."""

from __future__ import annotations

from typing import Any

from ...error import ScheduleError
from ...ir.module import IRModule
from ...tir.expr import IterType
from ...tir.function import PrimFunc
from ...tir.transform.lower_thread_binding import has_thread_bindings
from .base import GPUScheduleRule, limits
from .utils import _bind_block, _inline_intermediates


def _bind_threads(func: PrimFunc, max_threads: int, accumulate_locally: bool = False) -> PrimFunc:
    """The simple binding of the module doc; with `accumulate_locally`, a reduction writing an
    output first accumulates in a "local" buffer (cache_write) that its thread copies out once,
    instead of updating global memory at every reduction step."""
    from ...tir.schedule import Schedule

    sch = Schedule(IRModule({"main": func}))
    bind_threads(sch, max_threads, accumulate_locally)
    return sch.mod["main"]


def bind_threads(sch: Any, max_threads: int, accumulate_locally: bool = False) -> None:
    """The binding of `_bind_threads` as steps on `sch` (meta-schedule replays them)."""
    _inline_intermediates(sch)
    if accumulate_locally:
        for block in sch.get_output_blocks("root"):
            if any(iv.iter_type != IterType.DataPar for iv in sch.get(block).iter_vars):
                sch.cache_write(block, 0, "local")
    outputs = {id(sch.get(b)) for b in sch.get_output_blocks("root")}
    owner: dict[str, str] = {}  # block name -> the bound block whose thread loop it runs in
    thread_loop: dict[str, Any] = {}  # bound block name -> its threadIdx loop (or None)
    for block in reversed(sch.get_child_blocks(sch.get_block("root"))):
        name = sch.get(block).name_hint
        owners = {owner[sch.get(c).name_hint] for c in sch.get_consumers(block)}
        loop = thread_loop.get(next(iter(owners))) if len(owners) == 1 else None
        if id(sch.get(block)) in outputs or loop is None:
            if accumulate_locally and _writes_local(sch, block):
                raise ScheduleError(
                    f"block '{name}': its readers bind no thread loop (every output loop is "
                    "symbolic), so it has no thread to accumulate in registers for"
                )
            owner[name] = name
            thread_loop[name] = _bind_block(sch, block, max_threads)
            continue
        # a stage the inliner refused (a reduction) whose readers all run in one thread loop:
        # each thread computes what it reads, in registers (a kernel allocates no global memory)
        sch.compute_at(block, loop)
        sch.set_scope(block, 0, "local")
        owner[name] = next(iter(owners))


def _writes_local(sch: Any, block: Any) -> bool:
    return any(w.buffer.scope() == "local" for w in sch.get(block).writes)


class Fallback(GPUScheduleRule):
    """Any kernel: the simple binding of the module doc (the last rule of a GPU list).

    with tvm.target.Target("opencl"):
        mod = dl.ApplyDefaultSchedule(dl.gpu.Fallback())(mod)
    """

    def apply(self, func: PrimFunc, target: Any, tunable: bool) -> PrimFunc | None:
        if has_thread_bindings(func):
            return None
        return _bind_threads(func, limits(target)[0])
