"""A matmul's B given as the transpose stage of another buffer (`g @ W.T` in a gradient,
`dO @ V.T` in attention: relax's permute_dims fused into the kernel, kept a stage by the
inliner): the stage is inlined back, so the matmul reads W `[.., j, k]` and packs it into
column panels itself, with a copy that reads W a cache line at a time. Staged, the transpose
was a separate pass of 16-lane gathers down W's columns, rows 4 KB apart (one L1 set: every
line of a gather evicts the last), and the matmul then read the transposed copy once more
(256 x 1024 x 1024 with B = W.T: 55 GFLOPS against 96 for a plain B, 1 thread; 89 with the
transpose inlined and packed). A W that fits in L1 stays a stage: its transpose costs little.
An A given transposed (`gᵀ @ x`, a weight gradient) over many rows whose length aliases in
the caches is copied into row panels (`pack_transposed_a`).
"""

from __future__ import annotations

import math

from ...arith.analyzer import Analyzer
from ...error import ScheduleError
from ...tir.expr import BufferLoad, IntImm, IterType, Var
from ...tir.functor import substitute
from ...tir.schedule import BlockRV, Schedule
from ...tir.schedule.common import const_int
from ...tir.stmt import Block, BufferStore
from .analysis import _last_spatial_var, _loads, _product_term, _uses
from .utils import _parallel, _split_unless_short, _work

# the L1 data cache of one core (Zen 4: 32 KB): a transposed W this small stays a stage
L1_BYTES = 32 << 10


# the value a symbolic dim (a training batch) stands at when a buffer's size is estimated
SYMBOLIC_DIM_PROBE = 64


def probed_bytes(buf) -> int:
    """The bytes of `buf`, each symbolic dim taken as SYMBOLIC_DIM_PROBE."""
    probe = lambda v: IntImm(v.dtype, SYMBOLIC_DIM_PROBE) if isinstance(v, Var) else None
    ana = Analyzer()
    dims = [const_int(ana.simplify(substitute(d, probe))) for d in buf.shape]
    return math.prod(d or 0 for d in dims) * buf.dtype.bytes


def _is_transpose_copy(block: Block, params: set[int]) -> bool:
    """`T[.., a, b] = W[.., b, a]`: a copy of a function input with its last two dims swapped,
    W not smaller than L1_BYTES."""
    store = block.body
    if not isinstance(store, BufferStore) or not isinstance(store.value, BufferLoad):
        return False
    load, idx = store.value, store.indices
    if id(load.buffer) not in params or len(idx) < 2 or len(load.indices) != len(idx):
        return False
    if not all(isinstance(i, Var) for i in idx) or load.buffer.dtype != store.buffer.dtype:
        return False
    swapped = (*idx[:-2], idx[-1], idx[-2])
    return (
        all(a is b for a, b in zip(load.indices, swapped)) and probed_bytes(load.buffer) >= L1_BYTES
    )


def inline_transposed_b(sch: Schedule, block: BlockRV) -> bool:
    """compute_inline each transpose stage (`_is_transpose_copy`) that the matmul `block`
    alone reads, as its B (along the output columns j, in the last dim); returns whether one
    was inlined. The caller packs the transposed B (`_pack_b`)."""
    node = sch.get(block)
    j = _last_spatial_var(node)
    params = {id(b) for b in sch.mod["main"].buffer_map.values()}
    b_bufs = {
        id(ld.buffer) for ld in _loads(_product_term(node)) if ld.indices and ld.indices[-1] is j
    }
    done = False
    for producer in sch.get_producers(block):
        p = sch.get(producer)
        if len(p.writes) != 1 or id(p.writes[0].buffer) not in b_bufs:
            continue
        if not _is_transpose_copy(p, params) or len(sch.get_consumers(producer)) != 1:
            continue
        try:
            sch.compute_inline(producer)
        except ScheduleError:
            continue  # stays a stage: correct, slower
        done = True
    return done


# rows of a transposed A (`g[k, i]`: the reduction's length, a training batch) from which it is
# packed into row panels, when its rows are a power of two of at least 1 KB apart: a row tile
# reads a few floats of each row, all in a few cache sets, and each column panel reads A again
# (1 thread, interleaved, rows reduced -> packed/unpacked speed-up: out 1024 x 256 with 4096
# rows 1.1-1.4x, out 256 x 1024 1.05-1.3x; with 2048 rows 0.94x, 1.00x; 768 x 256, rows 3 KB
# apart, 0.91x at 4096: none of those packed)
PACK_A_MIN_DEPTH = 4096


# the least distance of A's rows, in bytes, at which its column strips alias (a power of two)
PACK_A_MIN_ROW_BYTES = 1 << 10


# rows of A copied together into its row panels: a few lines of each row read, runs of this
# many floats of a panel written
A_COPY_ROWS = 16


def transposed_a_loads(block: Block) -> list[BufferLoad]:
    """The loads of the matmul `block`'s product that read A transposed, `A[k.., i]`: the row
    iterator i exactly in the last dimension, the others indexed by reduction iterators only
    (a weight gradient `gᵀ @ x`, its rows maybe flattened from a batch and a sequence)."""
    spatial = [iv.var for iv in block.iter_vars if iv.iter_type == IterType.DataPar]
    reduce = [iv.var for iv in block.iter_vars if iv.iter_type == IterType.CommReduce]
    i = spatial[-2]
    found = []
    for ld in _loads(_product_term(block)):
        if len(ld.indices) < 2 or ld.indices[-1] is not i:
            continue
        outer = ld.indices[:-1]
        if not any(_uses(e, v) for e in outer for v in spatial) and any(
            _uses(e, v) for e in outer for v in reduce
        ):
            found.append(ld)
    return found


def _rows_alias(buf) -> bool:
    """Whether the transposed A `buf` is packed: static, at least PACK_A_MIN_DEPTH rows, its
    rows a power of two of at least PACK_A_MIN_ROW_BYTES apart; or a training batch deep
    (`is_batch_deep`), whatever its rows."""
    if is_batch_deep(buf):
        return True
    dims = [const_int(d) for d in buf.shape]
    if None in dims:
        return False
    row = dims[-1] * buf.dtype.bytes
    return (
        math.prod(dims[:-1]) >= PACK_A_MIN_DEPTH
        and row >= PACK_A_MIN_ROW_BYTES
        and not (row & (row - 1))
    )


def is_batch_deep(buf) -> bool:
    """Whether the 2-D operand `buf` of a weight gradient is `[n.., c]` with a symbolic depth n
    (the training batch a product reduces over) and static rows c. Such an operand is packed
    into panels whatever its size: the tile then reads one stream instead of a few floats of
    every row, and n is large in training (1 thread, GPT-2 bench, same sums: x.T @ g of
    1000 x 256 at 1024 rows 0.86x the time with both operands packed, 256 x 768 0.92x; at
    4096 rows 256 x 1024 0.85x, 256 x 768 0.65x, B of 16 MB streamed once per row tile)."""
    return (
        len(buf.shape) == 2
        and const_int(buf.shape[0]) is None
        and const_int(buf.shape[1]) is not None
    )


def _flatten(dims: list, ix: tuple):
    """The row-major offset of the indices `ix` in dims `dims` (the first dim's size unused)."""
    k = ix[0]
    for d, e in zip(dims[1:], ix[1:]):
        k = k * d + e
    return k


def _row_panels(buf, r: int):
    """The index map `A[k.., i] -> Ap[i // r, k, i % r]`, A's leading dims flattened into k
    (a reshape's `g[k // s, k % s, i]` then reads `Ap[i // r, k, i % r]`: no div per step)."""
    dims = [const_int(d) for d in buf.shape[:-1]]
    return lambda *ix: (ix[-1] // r, _flatten(dims, ix[:-1]), ix[-1] % r)


def split_panels(buf, c: int):
    """The index map `B[k.., j] -> Bp[j // c, k, j % c]`, B's leading dims flattened into k:
    the column panels of a B read through a reshape (`reads_split_reduction`)."""
    dims = [const_int(d) for d in buf.shape[:-1]]
    return lambda *ix: (ix[-1] // c, _flatten(dims, ix[:-1]), ix[-1] % c)


def reads_split_reduction(load: BufferLoad, block: Block) -> bool:
    """`load` reads `B[k // s, k % s, j]`: its leading indices are one reduction iterator k of
    `block` split over B's leading dims, all static but the first (a reshape (b, s, n) ->
    (b * s, n) inlined into a weight gradient `gᵀ @ x2`), so they flatten back to k."""
    if len(load.indices) < 3:
        return False
    dims = [const_int(d) for d in load.buffer.shape[:-1]]
    lead = load.indices[:-1]
    reduce = [iv.var for iv in block.iter_vars if iv.iter_type == IterType.CommReduce]
    used = [v for v in reduce if any(_uses(e, v) for e in lead)]
    if None in dims[1:] or len(used) != 1:
        return False
    return const_int(Analyzer().simplify(_flatten(dims, lead) - used[0])) == 0


def pack_transposed_a(sch: Schedule, block: BlockRV, tile_rows: int, rows: int | None) -> bool:
    """Copy each transposed A (`transposed_a_loads`) that `_rows_alias` picks into row panels
    `Ap[i // tile_rows, k.., i % tile_rows]`, one per row tile, when the tile rows divide the
    rows: the tile then reads its A as one stream instead of `tile_rows` floats of every row
    (1 thread, 4096 x 1024 x 256 `gᵀ @ x`: 1.3-1.4x slower than the plain product of the same
    FLOPs unpacked, 1.15-1.2x packed, the copy included). Returns whether anything was packed;
    a refused copy raises ScheduleError (the schedule changed: the driver starts afresh)."""
    if rows is None or rows % tile_rows or tile_rows < 2:
        return False
    bufs = [ld.buffer for ld in transposed_a_loads(sch.get(block))]
    bufs = [b for b in dict.fromkeys(bufs) if _rows_alias(b)]
    r = tile_rows
    for buf in bufs:
        panel = _row_panels(buf, r)
        at = next(n for n, rd in enumerate(sch.get(block).reads) if rd.buffer is buf)
        copy = sch.cache_read(block, at, "global")
        sch.transform_layout(block, ("read", at), panel)
        *batch, k, i = sch.get_loops(copy)
        work = _work(sch, [*batch, k, i])
        io, ii = sch.split(i, [None, r])
        ko, ki = _split_unless_short(sch, k, A_COPY_ROWS)
        outer = [*batch, *([ko] if ko is not None else [])]
        sch.reorder(*outer, io, ki, ii)
        sch.vectorize(ii)
        _parallel(sch, outer or [io], work)
    return bool(bufs)
