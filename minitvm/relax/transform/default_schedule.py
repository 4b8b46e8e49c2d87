"""DefaultSchedule: a sensible CPU schedule for every PrimFunc nobody scheduled (dlight-like).

For each PrimFunc without attr `tir.is_scheduled` (and whose loops are all still serial):
  1. inline every elementwise/injective block that writes an intermediate (compute_inline),
     so fused epilogues and prologues stop materialising tensors;
  2. schedule each remaining block by its kind, from the rule table `_RULES`:
     spatial        fuse the outer loops and run them in parallel, vectorize the innermost
                    loop in chunks of 16 lanes (a guarded tail when the extent is not a multiple);
     product        matmul/dense/conv: tile the last two spatial loops (4 x 16), move the
                    reduction loops inside the tile, parallel over the outer tiles, vectorize
                    the 16-wide tile loop, decompose the reduction so the init runs once a tile;
     reduction      sum/max/softmax pieces: parallel over the widest spatial (row) loop;
  3. move the one elementwise consumer of a tiled matmul/conv (its fused epilogue) under the
     outer tile loop (reverse_compute_at), so each tile is finished while it is in cache.
Every rule splits with a `None` factor, so symbolic extents (a batch dim `n`) stay correct.
The result carries `tir.is_scheduled = True`; a function already marked (or with parallel,
vectorized or unrolled loops: someone scheduled it by hand) is left alone and gets the mark.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from ...error import ScheduleError
from ...ir.module import IRModule
from ...tir.expr import IterType, Var
from ...tir.function import PrimFunc
from ...tir.functor import post_order_visit, pre_order_visit
from ...tir.schedule import BlockRV, LoopRV, Schedule
from ...tir.schedule.common import const_int
from ...tir.stmt import Block, BlockRealize, For, ForKind
from ..op._table import OpPattern
from .annotate_op_pattern import block_pattern

IS_SCHEDULED = "tir.is_scheduled"
VECTOR_LANES = 16  # float32 lanes of one AVX-512 register; a split factor, not a limit
TILE_ROWS = 4  # rows of a matmul tile kept hot while its reduction runs
PARALLEL_MIN_WORK = 4096  # fewer (static) iterations than this are not worth a thread pool


class BlockKind(enum.Enum):
    SPATIAL = "spatial"
    PRODUCT = "product"  # a reduction accumulating products: matmul, dense, conv
    REDUCTION = "reduction"


def _kind(block: Block) -> BlockKind | None:
    pattern = block_pattern(block)
    if pattern <= OpPattern.INJECTIVE:
        return BlockKind.SPATIAL
    return {
        OpPattern.OUT_EWISE_FUSABLE: BlockKind.PRODUCT,
        OpPattern.COMM_REDUCE: BlockKind.REDUCTION,
    }.get(pattern)


def is_scheduled(func: PrimFunc) -> bool:
    """Marked `tir.is_scheduled`, or with a loop that is no longer serial (hand-scheduled)."""
    if func.attrs.get(IS_SCHEDULED):
        return True
    kinds: list[ForKind] = []
    post_order_visit(func.body, lambda n: kinds.append(n.kind) if isinstance(n, For) else None)
    return any(k is not ForKind.SERIAL for k in kinds)


# ----------------------------------------------------------------------------- helpers


def _blocks(func: PrimFunc) -> list[BlockRealize]:
    """The block realizes of `func`, outermost first, the root excluded."""
    found: list[BlockRealize] = []
    pre_order_visit(func.body, lambda n: found.append(n) if isinstance(n, BlockRealize) else None)
    root = func.body if isinstance(func.body, BlockRealize) else None
    return [r for r in found if r is not root]


def _extent(sch: Schedule, loop: LoopRV) -> int | None:
    return const_int(sch.get(loop).extent)


def _work(sch: Schedule, loops: list[LoopRV]) -> float:
    total = 1.0
    for loop in loops:
        ext = _extent(sch, loop)
        total *= float("inf") if ext is None else ext
    return total


def _simple_nest(sch: Schedule, block: BlockRV, realize: BlockRealize) -> list[LoopRV] | None:
    """The block's loops when they bind its iterators one to one, in order, and hold nothing
    else (the form `te.create_prim_func` and FuseTIR produce); None otherwise."""
    loops = sch.get_loops(block)
    nodes = [sch.get(lp) for lp in loops]
    if len(nodes) != len(realize.iter_values) or not nodes:
        return None
    for node, value in zip(nodes, realize.iter_values):
        if not (isinstance(value, Var) and value is node.loop_var) or const_int(node.min) != 0:
            return None
    inner: list = []
    post_order_visit(nodes[0], lambda n: inner.append(n) if isinstance(n, BlockRealize) else None)
    return loops if len(inner) == 1 else None


def _vectorize_inner(sch: Schedule, loop: LoopRV) -> LoopRV | None:
    """Vectorize `loop` (split by VECTOR_LANES first unless it is short); returns the outer part."""
    ext = _extent(sch, loop)
    if ext is not None and ext <= VECTOR_LANES:
        if ext > 1:
            sch.vectorize(loop)
        return None
    outer, inner = sch.split(loop, [None, VECTOR_LANES])
    sch.vectorize(inner)
    return outer


def _parallel(sch: Schedule, loops: list[LoopRV], work: float) -> None:
    """Fuse the (spatial, adjacent) `loops` and run them in parallel when worth it."""
    if loops and work >= PARALLEL_MIN_WORK:
        sch.parallel(sch.fuse(*loops) if len(loops) > 1 else loops[0])


def _parallel_widest(sch: Schedule, loops: list[LoopRV], work: float) -> list[LoopRV]:
    """Move the widest of the (spatial, adjacent) `loops` outermost and run it in parallel;
    returns the loops in their new order.

    Used above reductions: the accumulator's index must visibly depend on the parallel loop,
    which a fused loop (div/mod of its var) does not show the scheduler's check."""
    if not loops or work < PARALLEL_MIN_WORK:
        return loops
    extents = [_extent(sch, lp) for lp in loops]
    widest = max(
        range(len(loops)), key=lambda k: float("inf") if extents[k] is None else extents[k]
    )
    if extents[widest] is not None and extents[widest] < 2:
        return loops
    order = [loops[widest], *(lp for k, lp in enumerate(loops) if k != widest)]
    if widest != 0:
        sch.reorder(*order)
    sch.parallel(loops[widest])
    return order


# ----------------------------------------------------------------------------- rules


def schedule_spatial(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> None:
    """Parallel outer loops, vectorized inner loop."""
    work = _work(sch, loops)
    outer = _vectorize_inner(sch, loops[-1])
    _parallel(sch, loops[:-1] + ([outer] if outer is not None else []), work)


def schedule_product(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> LoopRV | None:
    """Tiled: returns the innermost outer-tile loop, where an epilogue can be computed."""
    realize_block = sch.get(block)
    n_spatial = sum(iv.iter_type == IterType.DataPar for iv in realize_block.iter_vars)
    spatial, reduce = loops[:n_spatial], loops[n_spatial:]
    if not spatial or not reduce:
        return schedule_reduction(sch, block, loops)
    work = _work(sch, spatial)
    j_outer, j_inner = _split_unless_short(sch, spatial[-1], VECTOR_LANES)
    if len(spatial) >= 2:
        i_outer, i_inner = _split_unless_short(sch, spatial[-2], TILE_ROWS)
        outer = [lp for lp in (*spatial[:-2], i_outer) if lp is not None]
    else:
        i_inner, outer = None, []
    tile = [lp for lp in (i_inner, j_inner) if lp is not None]
    sch.reorder(*outer, *([j_outer] if j_outer is not None else []), *reduce, *tile)
    if j_inner is not None and (_extent(sch, j_inner) or 2) > 1:
        sch.vectorize(j_inner)
    init = sch.decompose_reduction(block, reduce[0])
    init_loops = sch.get_loops(init)
    if len(init_loops) > len(outer) + (j_outer is not None):
        inner = init_loops[-1]
        if (_extent(sch, inner) or 2) > 1:
            sch.vectorize(inner)
    outer = _parallel_widest(sch, outer, work)
    return outer[-1] if outer else None


def _split_unless_short(sch: Schedule, loop: LoopRV, factor: int) -> tuple:
    """(outer, inner) of `loop` split by `factor`; (None, loop) when it is no longer than that."""
    ext = _extent(sch, loop)
    if ext is not None and ext <= factor:
        return None, loop
    outer, inner = sch.split(loop, [None, factor])
    return outer, inner


def schedule_reduction(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> None:
    """Parallel rows."""
    realize_block = sch.get(block)
    n_spatial = 0
    for iv in realize_block.iter_vars:
        if iv.iter_type != IterType.DataPar:
            break
        n_spatial += 1
    rows = loops[:n_spatial]
    _parallel_widest(sch, rows, _work(sch, loops))


# each rule may return a loop under which the block's elementwise consumer is computed
_RULES: dict[BlockKind, Callable[[Schedule, BlockRV, list[LoopRV]], LoopRV | None]] = {
    BlockKind.SPATIAL: schedule_spatial,
    BlockKind.PRODUCT: schedule_product,
    BlockKind.REDUCTION: schedule_reduction,
}


# ----------------------------------------------------------------------------- driver


def _inline_intermediates(sch: Schedule) -> None:
    """compute_inline every spatial block writing an intermediate, until none is left."""
    changed = True
    while changed:
        changed = False
        func = sch.mod["main"]
        params = {id(b) for b in func.buffer_map.values()}
        for r in _blocks(func):
            block = r.block
            if _kind(block) is not BlockKind.SPATIAL or len(block.writes) != 1:
                continue
            if id(block.writes[0].buffer) in params:
                continue
            try:
                sch.compute_inline(sch.get_block(block.name_hint))
            except ScheduleError:
                continue  # not inlinable here (e.g. read with other indices): it stays a block
            changed = True
            break


def _attach_epilogue(sch: Schedule, block: BlockRV, loop: LoopRV) -> None:
    """Compute the one spatial consumer of `block`'s intermediate result under `loop` (tile by
    tile, while the tile is hot), vectorizing its inner loop."""
    func = sch.mod["main"]
    if any(w.buffer is b for w in sch.get(block).writes for b in func.buffer_map.values()):
        return
    consumers = sch.get_consumers(block)
    if len(consumers) != 1 or _kind(sch.get(consumers[0])) is not BlockKind.SPATIAL:
        return
    try:
        sch.reverse_compute_at(consumers[0], loop)
    except ScheduleError:
        return  # the consumer needs more than one tile (e.g. reads it transposed): stays apart
    _vectorize_inner(sch, sch.get_loops(consumers[0])[-1])


def default_schedule_func(func: PrimFunc) -> PrimFunc:
    """`func` with the default CPU schedule applied and marked `tir.is_scheduled`."""
    if is_scheduled(func):
        return func if func.attrs.get(IS_SCHEDULED) else func.with_attr(IS_SCHEDULED, True)
    if not _blocks(func):
        return func.with_attr(IS_SCHEDULED, True)
    sch = Schedule(func)
    _inline_intermediates(sch)
    for r in _blocks(sch.mod["main"]):
        kind = _kind(r.block)
        if kind is None:
            continue
        block = sch.get_block(r.block.name_hint)
        loops = _simple_nest(sch, block, r)
        if loops is not None:
            attach = _RULES[kind](sch, block, loops)
            if attach is not None:
                _attach_epilogue(sch, block, attach)
    return sch.mod["main"].with_attr(IS_SCHEDULED, True)


def default_schedule(mod: IRModule) -> IRModule:
    """Apply `default_schedule_func` to every PrimFunc of the module."""
    out = mod.copy()
    for gv, func in mod.functions_items():
        if isinstance(func, PrimFunc):
            new = default_schedule_func(func)
            if new is not func:
                out[gv] = new
    return out


__all__ = [
    "IS_SCHEDULED",
    "BlockKind",
    "default_schedule",
    "default_schedule_func",
    "is_scheduled",
    "schedule_product",
    "schedule_reduction",
    "schedule_spatial",
]
