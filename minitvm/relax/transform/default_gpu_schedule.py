"""DefaultGPUSchedule (TVM's `tir.transform.DefaultGPUSchedule`): threads for every PrimFunc
nobody scheduled for a GPU, so that it builds for opencl/cuda.

For each PrimFunc without thread bindings: inline every intermediate stage the inliner accepts
(a kernel cannot allocate the global temporaries between stages), then, from the outputs
back, for each remaining block of the root: a stage whose consumers all run in one
thread loop (a reduction the inliner refused) is computed there in "local" memory; any other block
gets its leading spatial loops (those that bind no reduction iterator) bound: the trailing
constant-extent ones fused and split by the target's threads per block into blockIdx.x and
threadIdx.x (a guarded tail when not a multiple), symbolic ones (a batch) fused onto
blockIdx.x. Reduction loops stay serial inside each thread.
"""

from __future__ import annotations

from typing import Any

from ...error import ScheduleError
from ...ir.module import IRModule
from ...ir.transform import Pass
from ...tir.expr import IntImm, IterType
from ...tir.function import PrimFunc
from ...tir.functor import post_order_visit
from ...tir.stmt import BlockRealize
from ...tir.transform.lower_thread_binding import has_thread_bindings


def _uses_var(expr: Any, var: Any) -> bool:
    found = []
    post_order_visit(expr, lambda n: found.append(n) if n is var else None)
    return bool(found)


def _spatial_prefix(sch: Any, block: Any) -> list:
    """The leading loops of `block` that bind only spatial iterators."""
    target = sch.get(block)
    found: list = []
    post_order_visit(
        sch.mod["main"].body,
        lambda n: found.append(n) if isinstance(n, BlockRealize) and n.block is target else None,
    )
    realize = found[0]
    reduce_values = [
        v for iv, v in zip(realize.block.iter_vars, realize.iter_values)
        if iv.iter_type != IterType.DataPar
    ]  # fmt: skip
    out = []
    for loop in sch.get_loops(block):
        var = sch.get(loop).loop_var
        if any(_uses_var(v, var) for v in reduce_values):
            break
        out.append(loop)
    return out


def _inline_intermediates(sch: Any) -> None:
    outputs = {id(sch.get(b)) for b in sch.get_output_blocks("root")}
    for block in sch.get_child_blocks(sch.get_block("root")):
        if id(sch.get(block)) in outputs:
            continue
        try:
            sch.compute_inline(block)
        except ScheduleError:  # the primitive proved it illegal: the stage stays
            continue


def _fuse(sch: Any, loops: list) -> Any:
    return sch.fuse(*loops) if len(loops) > 1 else loops[0]


def _bind_block(sch: Any, block: Any, threads: int) -> Any:
    """Bind `block`'s spatial loops; returns the threadIdx loop (None when it has none).

    The trailing loops of constant extent go to threads (fused, split by `threads` when
    longer); leading symbolic ones (a batch `n`) are fused onto blockIdx.x unsplit, so no
    binding needs a proof about a symbolic tail.
    """
    loops = _spatial_prefix(sch, block)
    if not loops:
        loops = [sch.add_unit_loop(block)]
    n_const = 0
    for loop in reversed(loops):
        if not isinstance(sch.get(loop).extent, IntImm):
            break
        n_const += 1
    symbolic, const = loops[: len(loops) - n_const], loops[len(loops) - n_const :]
    if not const:  # every thread block runs one point of the symbolic loops
        sch.bind(_fuse(sch, symbolic), "blockIdx.x")
        return None
    fused = _fuse(sch, const)
    extent = sch.get(fused).extent.value
    if symbolic:
        sch.bind(_fuse(sch, symbolic), "blockIdx.x")
        if extent > threads:
            _, fused = sch.split(fused, [None, threads])
        sch.bind(fused, "threadIdx.x")
        return fused
    bx, tx = sch.split(fused, [None, min(threads, extent)])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return tx


def default_gpu_schedule_func(func: PrimFunc, max_threads: int = 256) -> PrimFunc:
    """`func` with threads bound as the module doc says (unchanged when it binds any)."""
    from ...tir.schedule import Schedule

    if has_thread_bindings(func):
        return func
    sch = Schedule(IRModule({"main": func}))
    _inline_intermediates(sch)
    outputs = {id(sch.get(b)) for b in sch.get_output_blocks("root")}
    owner: dict[str, str] = {}  # block name -> the bound block whose thread loop it runs in
    thread_loop: dict[str, Any] = {}  # bound block name -> its threadIdx loop (or None)
    for block in reversed(sch.get_child_blocks(sch.get_block("root"))):
        name = sch.get(block).name_hint
        owners = {owner[sch.get(c).name_hint] for c in sch.get_consumers(block)}
        loop = thread_loop.get(next(iter(owners))) if len(owners) == 1 else None
        if id(sch.get(block)) in outputs or loop is None:
            owner[name] = name
            thread_loop[name] = _bind_block(sch, block, max_threads)
            continue
        # a stage the inliner refused (a reduction) whose readers all run in one thread loop:
        # each thread computes what it reads, in registers (a kernel allocates no global memory)
        sch.compute_at(block, loop)
        sch.set_scope(block, 0, "local")
        owner[name] = next(iter(owners))
    return sch.mod["main"]


def default_gpu_schedule(mod: IRModule, target: Any = None) -> IRModule:
    """Every PrimFunc of `mod` given a default GPU schedule for `target` (threads per block
    from its `max_num_threads`, 256 when absent)."""
    threads = getattr(target, "max_num_threads", None) or 256
    out = mod.copy()
    for gv, func in mod.functions_items():
        if isinstance(func, PrimFunc):
            new = default_gpu_schedule_func(func, threads)
            if new is not func:
                out[gv] = new
    return out


def DefaultGPUSchedule(target: Any = None) -> Pass:
    """TVM's `tir.transform.DefaultGPUSchedule()` as a module pass."""
    return Pass(lambda mod: default_gpu_schedule(mod, target), "DefaultGPUSchedule")
