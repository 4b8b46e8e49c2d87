"""The CPU postprocs: dynamic-loop refusal, reduction decomposition, the parallel / vectorize /
unroll rewrite of ParallelizeVectorizeUnroll's annotations, and the build's legality checks."""

from __future__ import annotations

from typing import Any

from ...error import MiniTVMError, ScheduleError
from ...tir.schedule import Schedule
from ...tir.schedule.common import const_int
from ...tir.schedule.sampling import _loop_kind
from ...tir.schedule.tree import uses_var, walk
from ...tir.stmt import Block, BlockRealize, For, ForKind
from ..schedule_rule._block import TILING_KEY, func_of, is_root
from ..schedule_rule.parallel_vectorize_unroll import (
    PARALLEL,
    UNROLL_EXPLICIT,
    UNROLL_IMPLICIT,
    VECTORIZE,
)
from .postproc import Postproc


def _loops(func) -> list[For]:
    return [s for s, _ in walk(func.body) if isinstance(s, For)]


def _leaf_blocks(func) -> list[str]:
    """Names of blocks that hold no other block (the root excluded), in program order."""
    out = []
    for s, _ in walk(func.body):
        if not isinstance(s, BlockRealize) or is_root(func, s.block.name_hint):
            continue
        if not any(isinstance(t, BlockRealize) for t, _ in walk(s.block.body)):
            out.append(s.block.name_hint)
    return out


class DisallowDynamicLoop(Postproc):
    """Refuse a schedule with a loop whose extent is not a constant."""

    def apply(self, sch: Schedule) -> bool:
        return all(const_int(lp.extent) is not None for lp in _loops(func_of(sch)[1]))


class RewriteReductionBlock(Postproc):
    """decompose_reduction each reduction block (still on serial loops) at its first reduction
    loop, so the init runs once per output tile instead of a test in the inner loop.
    `tiled_only` (GPU): only MultiLevelTiling's blocks, whose outer loops may be bound to
    threads; the default point and AutoBind's blocks are kept as they are."""

    def __init__(self, tiled_only: bool = False) -> None:
        self.tiled_only = tiled_only

    def apply(self, sch: Schedule) -> bool:
        allowed = (ForKind.SERIAL, ForKind.THREAD_BINDING) if self.tiled_only else (ForKind.SERIAL,)
        for name in _leaf_blocks(func_of(sch)[1]):
            block = sch.get_block(name)
            node = sch.get(block)
            if node.init is None or (self.tiled_only and TILING_KEY not in node.annotations):
                continue
            loops = sch.get_loops(block)
            nodes = [sch.get(lp) for lp in loops]
            if any(n.kind not in allowed for n in nodes):
                continue  # scheduled by hand (the default point): kept as it is
            first = next((lp for lp, n in zip(loops, nodes) if _loop_kind(n) == "reduce"), None)
            if first is None:
                continue
            try:
                sch.decompose_reduction(block, first)
            except ScheduleError:
                return False
        return True


def _ann_int(sch: Schedule, value: Any) -> int:
    """An annotation value: an int, or a sampled variable the schedule resolves."""
    value = sch.get(value) if hasattr(value, "name") and hasattr(value, "dtype") else value
    return int(getattr(value, "value", value))


class RewriteParallelVectorizeUnroll(Postproc):
    """Turn the root's meta_schedule.parallel/vectorize/unroll_* annotations into loop kinds.

    Per loop nest: the outer loops that are spatial for every block under them are fused (up
    to the parallel extent) and run in parallel; each leaf block's inner spatial loops are
    fused (up to the vector extent) and vectorized; the loops around that, innermost first,
    are unrolled while their iteration product stays within the sampled unroll depth. Each
    primitive checks legality; a refusal drops the candidate."""

    def apply(self, sch: Schedule) -> bool:
        _, func = func_of(sch)
        if not isinstance(func.body, BlockRealize):
            return True
        anns = func.body.block.annotations
        keys = [k for k in (PARALLEL, VECTORIZE, UNROLL_EXPLICIT, UNROLL_IMPLICIT) if k in anns]
        if not keys:
            return True
        root = sch.get_block(func.body.block.name_hint)
        try:
            values = {k: _ann_int(sch, anns[k]) for k in keys}
        except (MiniTVMError, TypeError, ValueError):
            return False
        for k in keys:
            sch.unannotate(root, k)
        unroll = values.get(UNROLL_EXPLICIT, values.get(UNROLL_IMPLICIT, 0))
        try:
            if values.get(PARALLEL, 0) > 1:
                self._parallelize(sch, values[PARALLEL])
            for name in _leaf_blocks(func_of(sch)[1]):
                vec = self._vectorize(sch, name, values.get(VECTORIZE, 0))
                if unroll > 1:
                    self._unroll(sch, name, unroll, vec)
        except ScheduleError:
            return False
        return True

    @staticmethod
    def _parallelize(sch: Schedule, max_extent: int) -> None:
        """Fuse and parallelize the spatial prefix of each top-level loop nest."""
        func = func_of(sch)[1]
        top = func.body.block.body
        nests = list(getattr(top, "seq", None) or [top])
        for nest in nests:
            if not isinstance(nest, For):
                continue
            prefix, node, product = 0, nest, 1
            while isinstance(node, For):
                ext = const_int(node.extent)
                if node.kind is not ForKind.SERIAL or ext is None or _loop_kind(node) != "spatial":
                    break
                if prefix and product * ext > max_extent:
                    break
                product *= ext
                prefix += 1
                node = node.body
            if prefix == 0 or product < 2:
                continue
            leaf = next(s for s, _ in walk(nest) if isinstance(s, BlockRealize))
            loops = sch.get_loops(sch.get_block(leaf.block.name_hint))[:prefix]
            loop = sch.fuse(*loops) if prefix > 1 else loops[0]
            sch.parallel(loop)

    @staticmethod
    def _vectorize(sch: Schedule, name: str, max_extent: int) -> int:
        """Vectorize the block's innermost spatial loops that feed one block iterator (the
        lanes stay contiguous); the index of the first loop left unvectorized (the unroll
        candidates end there)."""
        block = sch.get_block(name)
        loops = sch.get_loops(block)
        nodes = [sch.get(lp) for lp in loops]
        realize = nodes[-1].body if nodes else None
        take, product, feeds = 0, 1, None
        for i in range(len(nodes) - 1, -1, -1):
            n = nodes[i]
            ext = const_int(n.extent)
            inner = nodes[i + 1] if i + 1 < len(nodes) else None
            # only a perfect nest fuses: the loop must hold just the next loop (or the block)
            if inner is not None and n.body is not inner:
                break
            if n.kind is not ForKind.SERIAL or ext is None or _loop_kind(n) != "spatial":
                break
            if product * ext > max_extent:
                break
            # loops of two iterators (i3, j3) fused index lanes by `f // 16`, `f % 16`: the
            # build cannot vectorize that (scalar code 20-50x slower, up to 30 s of LLVM)
            mine = _iterators_fed(realize, n)
            if len(mine) != 1 or feeds not in (None, mine):
                break
            feeds = mine
            product *= ext
            take += 1
        if take == 0 or product < 2 or max_extent < 2:
            return len(loops)
        if isinstance(sch.get(loops[-1]).body, For | Block):
            return len(loops)
        inner = loops[len(loops) - take :]
        loop = sch.fuse(*inner) if take > 1 else inner[0]
        sch.vectorize(loop)
        return len(loops) - take

    @staticmethod
    def _unroll(sch: Schedule, name: str, max_steps: int, end: int) -> None:
        """Unroll the block's loops, innermost first, while the straight-line code a loop
        becomes (short serial loops inside counted, as LLVM unrolls those too) fits."""
        block = sch.get_block(name)
        for lp in reversed(sch.get_loops(block)[:end]):
            node = sch.get(lp)
            extent = const_int(node.extent)
            if node.kind is not ForKind.SERIAL or extent is None:
                break
            # the loop's own copies count: a long serial loop is not one LLVM copies out, so
            # _unrolled_size(node) would leave its extent out (a k loop of 196 around 8
            # vector statements was unrolled under a limit of 64: a 196 s LLVM build)
            if extent * _unrolled_size(node.body) > max_steps:
                break
            if extent > 1:
                sch.unroll(lp)


def _iterators_fed(realize: Any, loop: For) -> set[int]:
    """Positions of the block iterators whose binding uses `loop`'s variable."""
    if not isinstance(realize, BlockRealize):
        return set()
    var = {id(loop.loop_var)}
    return {k for k, value in enumerate(realize.iter_values) if uses_var(value, var)}


def _unrolled_size(stmt: Any) -> int:
    """Statements `stmt` becomes once its unrolled and short serial loops are copied out."""
    if isinstance(stmt, For):
        ext = const_int(stmt.extent)
        inner = _unrolled_size(stmt.body)
        copied = stmt.kind is ForKind.UNROLLED or (
            stmt.kind is ForKind.SERIAL and (ext or 65) <= 64
        )
        return inner * (ext or 1) if copied else inner
    if isinstance(stmt, BlockRealize):
        block = stmt.block
        return _unrolled_size(block.body) + (_unrolled_size(block.init) if block.init else 0)
    items = getattr(stmt, "seq", None)
    if items is not None:
        return sum(_unrolled_size(s) for s in items)
    body = getattr(stmt, "body", None)
    return _unrolled_size(body) if body is not None else 1


class VerifyCPUCode(Postproc):
    """The legality checks the build runs (loop kinds free of races, block bindings in their
    domains), so an illegal candidate is dropped before it costs a build."""

    def apply(self, sch: Schedule) -> bool:
        from ...tir.schedule.verify import verify_block_bindings, verify_loop_kinds

        func = func_of(sch)[1]
        try:
            verify_loop_kinds(func)
            verify_block_bindings(func)
        except MiniTVMError:
            return False
        return True
