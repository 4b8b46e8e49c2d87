"""Loop helpers shared by the CPU rules: extents and work, parallel and vector loops, splits,
the reduction's init, and the register tile's write-back (shared by matmul and column sums)."""

from __future__ import annotations

from ...error import ScheduleError
from ...tir.expr import Var
from ...tir.functor import post_order_visit
from ...tir.schedule import BlockRV, LoopRV, Schedule
from ...tir.schedule.common import const_int
from ...tir.stmt import Block, BlockRealize, BufferStore
from ..base.loops import fusable_prefix
from .analysis import BlockKind, _kind, _loads

VECTOR_LANES = 16  # float32 lanes of one AVX-512 register; a split factor, not a limit


TILE_ROWS = 4  # rows of a matmul tile kept hot while its reduction runs


PARALLEL_MIN_WORK = 4096  # fewer (static) iterations than this are not worth a thread pool


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
    """Fuse the (spatial, adjacent) `loops` and run them in parallel when worth it; only the
    outer ones when fusing all would widen a loop's index dtype (`fusable_prefix`: an int32
    symbolic dim fused with another loop would pay int64 div/mod per vector)."""
    if loops and work >= PARALLEL_MIN_WORK:
        n = fusable_prefix(sch, loops)
        sch.parallel(sch.fuse(*loops[:n]) if n > 1 else loops[0])


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


def _parallel_in_order(sch: Schedule, loops: list[LoopRV], work: float) -> int:
    """Fuse the (spatial, adjacent) `loops` in their order and run the fused loop in parallel
    when worth it (`_parallel`); returns how many loops fusing removed. Each thread takes one
    contiguous range of the fused loop, so the outer loops stay outermost for each thread
    while all of them share the work."""
    if not loops or work < PARALLEL_MIN_WORK:
        return 0
    n = fusable_prefix(sch, loops)
    sch.parallel(sch.fuse(*loops[:n]) if n > 1 else loops[0])
    return n - 1


def _fuse_unit_loops(sch: Schedule, loops: list[LoopRV]) -> list[LoopRV]:
    """The adjacent `loops` with each unit loop fused into a neighbour (the reduction over one
    input-channel block of a conv with 16 channels): `_decompose` cannot split the init off
    above a unit loop."""
    out = list(loops)
    k = 0
    while len(out) > 1 and k < len(out):
        if _extent(sch, out[k]) == 1:
            pair = (out[k], out[k + 1]) if k + 1 < len(out) else (out[k - 1], out[k])
            at = k if k + 1 < len(out) else k - 1
            out[at : at + 2] = [sch.fuse(*pair)]
        else:
            k += 1
    return out


def _decompose(sch: Schedule, block: BlockRV, reduce: list[LoopRV]) -> BlockRV | None:
    """decompose_reduction at the outermost reduction loop `reduce[0]`, so the init runs once
    per output before the reduction; None when a unit loop lies at or below it:
    `decompose_reduction` rejects a loop that drives no iterator of the block (a unit loop's
    iterator may be folded to a constant) and one above it that drives a reduction iterator.
    The block then keeps its in-block init, which is correct, only less hoisted."""
    loops = sch.get_loops(block)
    nodes = [sch.get(lp) for lp in loops]
    first = next(k for k, n in enumerate(nodes) if n is sch.get(reduce[0]))
    if any(const_int(n.extent) == 1 for n in nodes[first:]):
        return None
    return sch.decompose_reduction(block, reduce[0])


def _split_unless_short(sch: Schedule, loop: LoopRV, factor: int) -> tuple:
    """(outer, inner) of `loop` split by `factor`; (None, loop) when it is no longer than that."""
    ext = _extent(sch, loop)
    if ext is not None and ext <= factor:
        return None, loop
    outer, inner = sch.split(loop, [None, factor])
    return outer, inner


# vector widths of a register tile, best first (measured); not 48: three-vector tiles ran
# 16-19 GFLOPS against 113 for 16-wide ones (1024x512x48, 384x512x144, any row count)
MATMUL_COLS = (64, 32, 16)


MATMUL_WHOLE_ROW = 128  # a row no longer than this that none of MATMUL_COLS divides is one tile


def _matmul_cols(extent: int) -> int | None:
    """The vector width of a register tile along an output row of `extent` columns, dividing
    it (no tail guard in the vector loop): the first of MATMUL_COLS that divides it, else the
    whole row when short, else its widest power-of-two divisor of at least 4 lanes (LLVM
    splits an odd-sized vector into awkward pieces when it is cut from a longer row); None
    when it has none."""
    for cols in MATMUL_COLS:
        if extent % cols == 0:
            return cols
    if extent <= MATMUL_WHOLE_ROW:
        return extent
    return next((d for d in (8, 4) if extent % d == 0), None)


def _fold_epilogue(sch: Schedule, write_back: BlockRV) -> BlockRV:
    """Fold the one elementwise consumer of the write-back's intermediate into the write-back,
    so each tile is finished straight from registers; returns the block that now writes the
    tile back. A consumer reading the intermediate where it writes (bias, relu, residual add)
    takes the write-back inlined into it (compute_inline: checked from the indices alone);
    any other (the blocked result written back as NCHW) is inlined into the write-back
    (reverse_compute_inline: its inverse index map is proven symbolically when the read is a
    mixed-radix or div/mod map, else point by point on small domains, far slower)."""
    func = sch.mod["main"]
    params = {id(b) for b in func.buffer_map.values()}
    writes = sch.get(write_back).writes
    if any(id(w.buffer) in params for w in writes):
        return write_back
    consumers = sch.get_consumers(write_back)
    if len(consumers) != 1 or _kind(sch.get(consumers[0])) is not BlockKind.SPATIAL:
        return write_back
    consumer = consumers[0]
    if _reads_where_it_writes(sch.get(consumer), writes[0].buffer):
        try:
            sch.compute_inline(write_back)
            return consumer
        except ScheduleError:
            pass  # try the other direction
    try:
        sch.reverse_compute_inline(consumer)
    except ScheduleError:
        pass  # reads the result with other indices (e.g. transposed): stays its own block
    return write_back


def _reads_where_it_writes(block: Block, buf) -> bool:
    """Every load of `buf` in `block` has the indices of its store (an elementwise epilogue)."""
    store = block.body
    if not isinstance(store, BufferStore):
        return False
    loads = [ld for ld in _loads(store.value) if ld.buffer is buf]
    return bool(loads) and all(
        len(ld.indices) == len(store.indices)
        and all(a is b for a, b in zip(ld.indices, store.indices))
        for ld in loads
    )


# a B given as [N, K] must be packed for the register tile; under this many rows the dot
# product rule (`schedule_row_reduction`) reads it in place instead
MATMUL_PACK_MIN_ROWS_TRANSPOSED = 32
