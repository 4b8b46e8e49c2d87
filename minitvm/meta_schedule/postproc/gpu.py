"""The GPU postprocs: cooperative fetches spread over the block's threads, blocks left unbound
bound, and the target's per-block limits checked on the lowered kernels (a candidate over
them is dropped before it costs a build)."""

from __future__ import annotations

from ...dlight.gpu.utils import _bind_block
from ...error import MiniTVMError, ScheduleError
from ...tir.schedule import Schedule
from ...tir.schedule.common import const_int
from ...tir.schedule.tree import walk
from ...tir.stmt import BlockRealize, ForKind
from ..schedule_rule._block import func_of, is_subroot, target_of
from ..schedule_rule.gpu import gpu_limits
from ..schedule_rule.multi_level_tiling import COOPERATIVE_FETCH
from .postproc import Postproc
from .rewrite import _leaf_blocks


def _own_loops(sch: Schedule, block) -> list:
    """The innermost loops of `block` that hold no other block (its copy loops)."""
    loops = sch.get_loops(block)
    own = []
    for lp in reversed(loops):
        inner = [s for s, _ in walk(sch.get(lp).body) if isinstance(s, BlockRealize)]
        if len(inner) != 1:
            break
        own.append(lp)
    return own[::-1]


def _thread_loop(sch: Schedule, block, tag: str = "threadIdx.x"):
    """The outermost loop around `block` bound to `tag` (None when none is)."""
    for lp in sch.get_loops(block):
        binding = sch.get(lp).thread_binding
        if binding is not None and binding.thread_tag == tag:
            return lp
    return None


class RewriteCooperativeFetch(Postproc):
    """A copy annotated meta_schedule.cooperative_fetch (MultiLevelTiling's shared-memory
    stage) has its copy loops fused and split by the block's threadIdx.x extent, the inner
    part bound to threadIdx.x: every thread copies a share (the lowering guards the tail)."""

    def apply(self, sch: Schedule) -> bool:
        for name in _leaf_blocks(func_of(sch)[1]):
            block = sch.get_block(name)
            if COOPERATIVE_FETCH not in sch.get(block).annotations:
                continue
            sch.unannotate(block, COOPERATIVE_FETCH)
            outer = _thread_loop(sch, block)
            threads = None if outer is None else const_int(sch.get(outer).extent)
            copy = _own_loops(sch, block)
            if threads is None or not copy:
                return False
            try:
                fused = sch.fuse(*copy) if len(copy) > 1 else copy[0]
                _, inner = sch.split(fused, [None, threads])
                sch.bind(inner, "threadIdx.x")
            except ScheduleError:
                return False
        return True


class RewriteUnboundBlock(Postproc):
    """Bind every root-level block that no thread loop covers (blockIdx.x x threadIdx.x over
    its spatial loops, as the default GPU schedule binds them): a GPU runs nothing unbound.
    `max_threadblocks` is TVM's argument, accepted for its signature (the grid is not capped)."""

    def __init__(self, max_threadblocks: int = 256) -> None:
        self.max_threadblocks = max_threadblocks

    def apply(self, sch: Schedule) -> bool:
        func = func_of(sch)[1]
        threads = gpu_limits(target_of(self))[0]
        for name in _leaf_blocks(func):
            block = sch.get_block(name)
            kinds = [sch.get(lp).kind for lp in sch.get_loops(block)]
            if ForKind.THREAD_BINDING in kinds:
                continue
            if not is_subroot(func_of(sch)[1], name):
                return False  # under another block's serial loops: no place to bind it
            try:
                _bind_block(sch, block, threads)
            except ScheduleError:
                return False
        return True


class VerifyGPUCode(Postproc):
    """Lower the candidate for its target and check each kernel's threads per block and
    shared memory against the target's limits (the build's own checks, run early)."""

    def apply(self, sch: Schedule) -> bool:
        from ...driver import lower_gpu

        target = target_of(self)
        if target is None:
            return True
        name, func = func_of(sch)
        if "global_symbol" not in func.attrs:
            func = func.with_attr("global_symbol", name)
        try:
            lower_gpu([func], target)
        except MiniTVMError:
            return False
        return True
