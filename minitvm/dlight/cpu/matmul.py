"""Matmul: products (matmul, dense, conv) register-blocked, B packed into column panels when
it pays; other products tiled generically."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...arith.analyzer import Analyzer
from ...error import ScheduleError
from ...tir.expr import IterType
from ...tir.functor import substitute
from ...tir.schedule import BlockRV, LoopRV, Schedule
from ...tir.schedule.common import const_int
from ...tir.stmt import Block
from .analysis import (
    BlockKind,
    _contiguous_along,
    _is_conditional,
    _is_reduce_var,
    _last_spatial_var,
    _loads,
    _product_term,
    _transposed_along,
    _uses,
    is_matmul,
)
from .base import BlockRule, NotApplicable
from .fallback import schedule_rows
from .gemv import schedule_row_reduction
from .matmul_prologue import (
    compute_copy_at_panel,
    is_panel_prologue,
    transposing_b_stages,
)
from .matmul_remainder import remainder_cols, takes_remainder_tile
from .matmul_transpose import (
    inline_transposed_b,
    is_batch_deep,
    pack_transposed_a,
    probed_bytes,
    reads_split_reduction,
    split_panels,
)
from .reduction import schedule_reduction
from .utils import (
    MATMUL_PACK_MIN_ROWS_TRANSPOSED,
    TILE_ROWS,
    VECTOR_LANES,
    _decompose,
    _extent,
    _fold_epilogue,
    _fuse_unit_loops,
    _matmul_cols,
    _parallel,
    _parallel_in_order,
    _parallel_widest,
    _split_unless_short,
    _vectorize_inner,
    _work,
)

MATMUL_MAX_ROWS = 8  # rows of a tile of several vectors a row (measured best on 64..2048 GEMMs)


MATMUL_GUARDED_ROWS = 4  # rows of a tile over a symbolic or oddly sized row extent (measured)


MATMUL_K_UNROLL = 4  # reduction steps unrolled in the register tile


# independent accumulators a guarded (remainder) tile keeps, when its rows are guarded too:
# a 4 x 32 tile (8 of them) waits on the FMA latency (ViT's q @ k.T, 197 x 64 x 197, 1 thread:
# 4 x 32 ran 1.10x the generic 4 x 16 tiling, 8 x 32 1.48x)
MATMUL_MIN_ACCUMULATORS = 16


@dataclass(frozen=True)
class RegisterFile:
    """The vector registers a register tile is sized from (AVX-512: 32 zmm of 16 float32)."""

    lanes: int = VECTOR_LANES
    registers: int = 32


REGISTERS = RegisterFile()


def tile_max_rows(vectors: int, regs: RegisterFile = REGISTERS) -> int:
    """The most rows of a register tile whose row is `vectors` vector registers wide.

    Each row holds `vectors` accumulators; its A element is a broadcast operand of the FMAs,
    so the file must also hold the row's B vectors. A one-vector row (a blocked conv's 16
    output channels, a dense with 16 columns) takes half the file, so a conv row of 14 or 16
    output pixels is one tile (measured on 3x3 conv 256x14²: 14 rows 233 GFLOPS, 7 rows 227).
    Wider rows keep MATMUL_MAX_ROWS (measured), their accumulators within 3/4 of the file."""
    if vectors == 1:
        return regs.registers // 2
    return max(1, min(MATMUL_MAX_ROWS, regs.registers * 3 // 4 // vectors))


@dataclass(frozen=True)
class MatmulTile:
    """The register tile of a matmul-like block: `rows` x `cols` outputs accumulated in
    registers over the reduction, `k_unroll` reduction steps unrolled (1: k is not split)."""

    rows: int
    cols: int
    k_unroll: int


def matmul_tile(
    rows: int | None, cols: int | None, reduce: int | None, remainder: bool = False
) -> MatmulTile | None:
    """The register tile for a matmul of static-or-None (symbolic) extents; None when the
    column extent has no guard-free vector width (the block then gets the generic tiling).
    `remainder=True` (the caller packs B into padded panels) gives a row that no whole vector
    width divides (1000 columns) full-width tiles with a guarded last one (`remainder_cols`)
    instead of a narrower guard-free width.
    Rows take the most that divide the row extent; a symbolic extent (batch `n`), or one whose
    divisors are all small, gets MATMUL_GUARDED_ROWS rows and a guard `row < n` on each row of
    the tile: it costs a compare per row and k step, far less than losing the reuse of the B
    vectors (measured 133 vs 39 GFLOPS at n=1000, 784 x 256); a guarded-column tile guards at
    least MATMUL_MIN_ACCUMULATORS // vectors rows (8 rows of a 32-column tile)."""
    if cols is None or rows == 0 or reduce == 0:  # an empty matmul: the generic tiling
        return None
    width = _matmul_cols(cols)
    if remainder and (width is None or width < REGISTERS.lanes):
        width = remainder_cols(cols) or width
    if width is None:
        return None
    vectors = math.ceil(width / REGISTERS.lanes)
    cap = tile_max_rows(vectors)
    rows_guarded = min(cap, MATMUL_GUARDED_ROWS)
    if cols % width:  # a guarded last tile: enough rows to hide the FMA latency
        rows_guarded = min(cap, max(rows_guarded, MATMUL_MIN_ACCUMULATORS // vectors))
    if rows is None:
        mr = rows_guarded
    else:
        mr = next(m for m in range(min(cap, rows), 0, -1) if rows % m == 0)
        if mr < rows_guarded <= rows:  # e.g. a prime row count: a guarded last tile is cheaper
            mr = rows_guarded
    unroll = 1 if reduce is None else next(u for u in (MATMUL_K_UNROLL, 2, 1) if reduce % u == 0)
    return MatmulTile(mr, width, unroll)


def schedule_matmul(
    sch: Schedule,
    block: BlockRV,
    loops: list[LoopRV],
    fold: bool = True,
    remainder: bool = True,
    transpose: bool = True,
) -> bool:
    """Register-blocked matmul: a rows x cols tile accumulates in a `local` cache_write buffer
    (rows and k steps unrolled, cols vectorized, so LLVM keeps it in vector registers) while
    the reduction runs; the write-back (with the fused epilogue folded in) finishes the tile,
    the outer row tiles run in parallel. False (nothing done) when `block` is not a matmul or
    its extents have no guard-free tile. `fold=False` leaves the epilogue out of the
    write-back (the driver's retry when moving it with the tile is refused); `remainder=False`
    keeps to guard-free column widths (`matmul_tile`); `transpose=False` leaves a transpose
    stage feeding B a stage (`inline_transposed_b`). Raises NotApplicable (or ScheduleError)
    when a primitive refuses the plan halfway, the schedule then changed: callers retry on a
    copy taken before (`schedule_block` does)."""
    node = sch.get(block)
    if not is_matmul(node):
        return False
    n_spatial = sum(iv.iter_type == IterType.DataPar for iv in node.iter_vars)
    spatial, reduce = loops[:n_spatial], loops[n_spatial:]
    n_cols = _extent(sch, spatial[-1])
    remainder = remainder and takes_remainder_tile(node, n_cols and _matmul_cols(n_cols))
    tile = matmul_tile(_extent(sch, spatial[-2]), n_cols, _extent(sch, reduce[-1]), remainder)
    if tile is None:
        return False
    work = _work(sch, spatial)
    padded = n_cols is not None and n_cols % tile.cols != 0
    rows = _extent(sch, spatial[-2])
    rows_exact = rows is not None and rows % tile.rows == 0  # no guard on the row tiles
    inlined = (
        transpose
        and (rows is None or rows >= MATMUL_PACK_MIN_ROWS_TRANSPOSED)
        and inline_transposed_b(sch, block)
    )
    few_rows = rows is not None and rows < MATMUL_PACK_MIN_ROWS_TRANSPOSED
    prologue = transposing_b_stages(sch, block) if transpose and not few_rows else {}
    packed = _pack_b(sch, block, tile, rows, padded, prologue)
    if packed is None:
        if inlined:  # the schedule is changed: the driver's next step starts afresh
            raise NotApplicable(f"block '{node.name_hint}': its transposed B is not packed")
        return False
    pack_transposed_a(sch, block, tile.rows, rows)
    write_back = sch.cache_write(block, 0, "local")
    if fold:
        write_back = _fold_epilogue(sch, write_back)
    loops = sch.get_loops(block)
    spatial, reduce = loops[:n_spatial], _fuse_unit_loops(sch, loops[n_spatial:])
    i, j = spatial[-2], spatial[-1]
    io, ii = (i, None) if tile.rows == 1 else sch.split(i, [None, tile.rows])
    jo, ji = (None, j) if tile.cols == _extent(sch, j) else sch.split(j, [None, tile.cols])
    ki = None
    if tile.k_unroll > 1:
        ko, ki = sch.split(reduce[-1], [None, tile.k_unroll])
        reduce = [*reduce[:-1], ko]
    outer = [*spatial[:-2], io]
    inner = [lp for lp in (ki, ii, ji) if lp is not None]
    if (packed or _b_beyond_l2(node)) and jo is not None:
        # column panels outermost: a panel of B (packed, or a column strip of a B larger
        # than L2) stays in L2 while the row tiles pass, instead of each row tile streaming
        # all of B from L3 (measured 128x768x3072, B [K, N] of 9 MB: 83 -> 103 GFLOPS)
        outer, panels = [*spatial[:-2], jo, io], [*spatial[:-2], jo]
        sch.reorder(*outer, *reduce, *inner)
        sch.reverse_compute_at(write_back, io)
        for copy in sch.get_producers(block) if prologue else ():
            if is_panel_prologue(sch, copy):
                compute_copy_at_panel(sch, copy, jo)
        jo = None
    else:
        panels = None
        sch.reorder(*outer, *([jo] if jo is not None else []), *reduce, *inner)
        sch.reverse_compute_at(write_back, jo if jo is not None else io)
    for lp in (ki, ii):
        if lp is not None:
            sch.unroll(lp)
    if (_extent(sch, ji) or 2) > 1:
        sch.vectorize(ji)
    init = _decompose(sch, block, reduce)
    for blk in (write_back,) if init is None else (init, write_back):
        tile_loops = sch.get_loops(blk)[len(outer) + (jo is not None) :]
        if not tile_loops:
            continue  # a one-element tile
        *rows, cols = tile_loops
        for lp in rows:
            sch.unroll(lp)
        if (_extent(sch, cols) or 2) > 1:
            sch.vectorize(cols)
    n_outer = len(outer) + (jo is not None)
    if _batch_outer(node):
        # the loop under the batch loops joins them unless a tile guard depends on it:
        # loop_partition takes a guard out of the hot loop only over a loop of its own
        chain, exact = (panels, not padded) if panels is not None else (outer, rows_exact)
        n_outer -= _parallel_in_order(sch, chain if exact else chain[: n_spatial - 2], work)
    elif panels is not None and _work(sch, panels) >= 2:
        _parallel_widest(sch, panels, work)
    else:
        _parallel_widest(sch, outer, work)
    _stage_at_tile(sch, block, n_outer)
    return True


def _independent_batches(block: Block) -> bool:
    """Whether every operand of the product reads its own slice of each batch axis (the
    spatial axes above rows and columns, leaving out unit ones): a batched matmul such as
    attention's q @ k.T and attn @ V, not a dense over a 3-D input or a conv, whose B (a
    weight) is the same for every batch or row."""
    spatial = [iv for iv in block.iter_vars if iv.iter_type == IterType.DataPar]
    batch = [iv.var for iv in spatial[:-2] if const_int(iv.dom.extent) != 1]
    loads = _loads(_product_term(block))
    return bool(batch) and all(_uses(ld, v) for ld in loads for v in batch)


# batch slices (batch x heads) a batch-outer product needs: its threads may share the fused
# batch loop alone (a guarded row or column loop below stays a serial loop of its own, so
# loop_partition takes its guard out of the hot loop: fused too, ViT's q @ k.T ran 0.56x)
MATMUL_BATCH_OUTER_MIN = 16


def _batch_outer(block: Block) -> bool:
    """Whether the product runs its batch loops outermost, fused into one parallel loop, the
    row tiles (or column panels) inside: a batched product of independent batches
    (`_independent_batches`), at least MATMUL_BATCH_OUTER_MIN of them, whose B over all
    batches is beyond L2 (SYMBOLIC_DIM_PROBE taken for a symbolic batch). The widest loop
    outermost (the 50 row tiles of ViT's attn @ V at batch 8, 32 heads of 197 x 64 inside)
    streams all 1.6 MB of B for each row tile; batch-outer reads each head's B once (1 thread,
    same sums: ViT 1.04x, BERT 1.06x, 96 heads of 512 tokens 1.07x; q @ k.T, whose panels
    already ran under the batch, as fast). Under L2 the order does not matter (batch 1)."""
    if not _independent_batches(block):
        return False
    spatial = [iv for iv in block.iter_vars if iv.iter_type == IterType.DataPar]
    extents = [const_int(iv.dom.extent) for iv in spatial[:-2]]
    if None not in extents and math.prod(extents) < MATMUL_BATCH_OUTER_MIN:
        return False
    return _probed_bytes(block, True) >= L2_BYTES


def _stage_at_tile(sch: Schedule, block: BlockRV, n_outer: int) -> None:
    """Compute each staged padding producer that the tile reads along its vector j (a
    depthwise conv's input: one tile needs only its own channel block, a few rows) under the
    tile's innermost outer loop, so the padded rows are written and read in L1 instead of
    a padded copy of the whole input going through memory (measured 1.6-3.7x on MobileNet's
    depthwise layers). A producer read without j (a dense conv's input, read across all
    channel blocks by every tile) stays whole, and so does one whose reads leave out an output
    iterator (a weight gradient's input, the same for every tile of output channels: staged
    at the tile, each of them would copy it again)."""
    node = sch.get(block)
    j = _last_spatial_var(node)
    spatial = [iv.var for iv in node.iter_vars if iv.iter_type == IterType.DataPar]
    read_along_j = {
        id(ld.buffer)
        for ld in _loads(_product_term(node))
        if _uses(ld, j) and all(_uses(ld, v) for v in spatial)
    }
    at = sch.get_loops(block)[n_outer - 1] if n_outer else None
    for producer in sch.get_producers(block):
        node = sch.get(producer)
        writes = node.writes
        if at is None or len(writes) != 1 or id(writes[0].buffer) not in read_along_j:
            continue
        if not _is_conditional(node.body) or is_panel_prologue(sch, producer):
            continue  # a packed copy of B (`_pack_b`) is written once for all row tiles
        try:
            sch.compute_at(producer, at)
        except ScheduleError:
            continue  # stays a whole stage, still correct
        _vectorize_inner(sch, sch.get_loops(producer)[-1])


# fewer rows do not repay copying B into panels on each call (measured: at 256 rows the
# unpacked GEMM is as fast; a BERT layer's 128-row matmuls ran 45 ms packed, 31 ms unpacked)
MATMUL_PACK_MIN_ROWS = 512


# nor does a B that stays in L2 while the row tiles stream past it (measured: n = 512, B of
# 1 MB, 217 GFLOPS unpacked vs 106 packed; n = 2048, 16 MB: 140 unpacked vs 224 packed)
MATMUL_PACK_MIN_B_BYTES = 2 << 20


# the L2 cache of one core (Zen 4: 1 MB): an unpacked B larger than this is walked one column
# strip at a time, all row tiles under each strip (`schedule_matmul`)
L2_BYTES = 1 << 20


def _b_bytes(block: Block) -> int:
    """The bytes of the largest operand of `block` read along its output columns j (B)."""
    j = _last_spatial_var(block)
    sizes = [
        math.prod(const_int(d) or 0 for d in ld.buffer.shape) * ld.buffer.dtype.bytes
        for ld in _loads(_product_term(block))
        if _uses(ld, j)
    ]
    return max(sizes, default=0)


def _probed_bytes(block: Block, along_j: bool) -> int:
    """The bytes of the largest operand of `block` read along (B) or not along (A) its output
    columns j, each symbolic dim taken as SYMBOLIC_DIM_PROBE."""
    j = _last_spatial_var(block)
    loads = _loads(_product_term(block))
    return max((probed_bytes(ld.buffer) for ld in loads if _uses(ld, j) == along_j), default=0)


def _b_beyond_l2(block: Block) -> bool:
    """Whether the tile walks B one column panel at a time (`schedule_matmul`): a static B
    larger than L2; a B of symbolic size (a weight gradient `x.T @ g` over a training batch)
    larger than L2 at SYMBOLIC_DIM_PROBE and larger than A, which each panel then reads
    again (1 thread, batch 1024: x.T @ g of 256 x 768 85 -> 93 GFLOPS in panels, 1024 x 256
    92 in row tiles, 68 in panels)."""
    j = _last_spatial_var(block)
    b_loads = [ld for ld in _loads(_product_term(block)) if _uses(ld, j)]
    if all(const_int(d) is not None for ld in b_loads for d in ld.buffer.shape):
        return _b_bytes(block) >= L2_BYTES
    b = _probed_bytes(block, True)
    return b >= L2_BYTES and b > _probed_bytes(block, False)


def _pack_b(
    sch: Schedule,
    block: BlockRV,
    tile: MatmulTile,
    rows: int | None,
    padded: bool = False,
    prologue: dict | None = None,
) -> bool | None:
    """Copy B operands of a matmul into column panels `Bp[.., j // cols, k, j % cols]`
    (cache_read + transform_layout), so the register tile reads B contiguously along k instead
    of one row of B (another cache line set) per k step; the copy runs parallel and
    vectorized. A transposed B (`W[.., j, k]`) must be packed (read as it is, the vector
    along j would gather), which pays under many or symbolic (a training batch) rows. A B
    `[.., k, j]` is packed only under many static rows (with few rows B streams once per row
    tile anyway), or when it is a training batch deep (`_packs_plain_b`), and when its rows
    are wider than a panel (not a blocked conv's weights).
    A tile whose columns do not divide the row (`padded`, the guarded last tile of
    `remainder_cols`) packs every B into panels padded to whole tiles, whatever the rows: the
    guarded tile's vectors then stay inside the panels (the padding is never written: the
    lanes that read it are dropped by the guard); a refused packing raises ScheduleError
    (the driver's next step keeps to guard-free widths).
    A B computed by a stage that reads its input transposed (`prologue`, {B: its producer},
    `transposing_b_stages`) is packed whatever the rows, the stage inlined into the copy.
    A B read through a reshape (`B[k // s, k % s, j]`, `reads_split_reduction`) is packed
    under as many rows as a transposed one, its leading dims flattened into the panel's k
    (`Bp[j // cols, k, j % cols]`): read in place, each k step paid a div and a mod.
    Returns whether anything was packed, None when a transposed B is not (the block then gets
    the generic rule)."""
    node = sch.get(block)
    j = _last_spatial_var(node)
    plans: dict = {}
    prologue = prologue or {}
    for ld in _loads(_product_term(node)):
        if ld.buffer in prologue:
            plans[ld.buffer] = False
        elif ld.indices and _contiguous_along(ld, j) and reads_split_reduction(ld, node):
            if padded or rows is None or rows >= MATMUL_PACK_MIN_ROWS_TRANSPOSED:
                plans[ld.buffer] = None  # B[k.., j]: flattened panels (`split_panels`)
        elif _transposed_along(ld, j, node):
            if rows is not None and rows < MATMUL_PACK_MIN_ROWS_TRANSPOSED:
                return None  # copying W each call costs more than the few rows gain
            plans[ld.buffer] = True
        elif padded and _uses(ld, j):
            plans[ld.buffer] = False  # `takes_remainder_tile`: B [.., k, j]
        elif (
            _contiguous_along(ld, j)
            and _is_reduce_var(ld.indices[-2:-1], node)
            and _packs_plain_b(ld.buffer, tile, rows)
        ):
            plans.setdefault(ld.buffer, False)
    c = tile.cols
    panel = {
        False: lambda *ix: (*ix[:-2], ix[-1] // c, ix[-2], ix[-1] % c),  # B[.., k, j]
        True: lambda *ix: (*ix[:-2], ix[-2] // c, ix[-1], ix[-2] % c),  # B[.., j, k]
    }
    for buf, transposed in plans.items():
        at = next(n for n, r in enumerate(sch.get(block).reads) if r.buffer is buf)
        index_map = split_panels(buf, c) if transposed is None else panel[transposed]
        transposed = bool(transposed)  # B[k.., j] is copied like B[.., k, j]
        try:
            copy = sch.cache_read(block, at, "global")
            sch.transform_layout(block, ("read", at), index_map, assume_injective_transform=padded)
            if buf in prologue:
                sch.compute_inline(prologue[buf])
                *batch, k, jj = sch.get_loops(copy)
                _copy_transposed_blocks(sch, batch, jj, k, c, _work(sch, [*batch, k, jj]))
            else:
                _schedule_panel_copy(sch, copy, c, transposed)
        except ScheduleError:
            if padded or buf in prologue:  # half done: the driver's next step starts afresh
                raise
            return None if transposed else False
    return bool(plans)


def _packs_plain_b(buf, tile: MatmulTile, rows: int | None) -> bool:
    """Whether a B read `[.., k, j]` with rows wider than a panel is packed into column panels:
    under many static rows when B is at least MATMUL_PACK_MIN_B_BYTES, or under at least
    MATMUL_PACK_MIN_ROWS_TRANSPOSED static rows (fewer do not repay the copy) when B is a
    training batch deep (`is_batch_deep`: a weight gradient `x.T @ g`)."""
    width, depth = (const_int(d) for d in buf.shape[-1:-3:-1])
    if width is None or width <= tile.cols or rows is None:
        return False
    if is_batch_deep(buf):
        return rows >= MATMUL_PACK_MIN_ROWS_TRANSPOSED
    nbytes = width * (depth or 0) * buf.dtype.bytes
    return rows >= MATMUL_PACK_MIN_ROWS and nbytes >= MATMUL_PACK_MIN_B_BYTES


def _schedule_panel_copy(sch: Schedule, copy: BlockRV, cols: int, transposed: bool) -> None:
    """Loops (.., j // cols, k, j % cols) over the copy into panels, so it writes each panel in
    order and reads `cols` adjacent elements of B per k step, the panel row vectorized, the
    rest parallel. A transposed B (W [.., j, k]) is copied in blocks of `cols` rows by one
    cache line of k (`_copy_transposed_blocks`)."""
    *batch, first, second = sch.get_loops(copy)
    work = _work(sch, [*batch, first, second])
    if transposed:
        _copy_transposed_blocks(sch, batch, first, second, cols, work)
        return
    jo, ji = sch.split(second, [None, cols])
    sch.reorder(*batch, jo, first, ji)
    sch.vectorize(ji)
    # a symbolic depth (a training batch) stays out of the fused parallel loop: its bindings
    # would divide by it
    _parallel(sch, [*batch, jo, *([first] if _extent(sch, first) else [])], work)


# float32 elements of one 64-byte cache line
CACHE_LINE_FLOATS = 16


def _copy_transposed_blocks(
    sch: Schedule, batch: list[LoopRV], j: LoopRV, k: LoopRV, cols: int, work: float
) -> None:
    """Loops (.., j // cols, k // 16, j % cols, k % 16) over the copy of W [.., j, k] into
    panels: each row of W is read one whole cache line at a time and the block written is
    `cols` x 16 consecutive floats of the panel, both in L1; scalar (a vector along either
    axis is a gather or a scatter). A vector down W's columns gathered from rows 4 KB apart
    (W of 1024 columns: one L1 set for all of them) and ran 12x slower (256 x 1024 x 1024
    with B = W.T, 1 thread: 68 -> 88 GFLOPS with the copy)."""
    jo, ji = sch.split(j, [None, cols])
    ko, ki = _split_unless_short(sch, k, CACHE_LINE_FLOATS)
    outer = [*batch, jo, *([ko] if ko is not None else [])]
    sch.reorder(*outer, ji, ki)
    _parallel(sch, outer, work)


def schedule_product(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> LoopRV | None:
    """Register-blocked when the block is a matmul (`schedule_matmul`); otherwise tiled, and
    returns the innermost outer-tile loop, where an epilogue can be computed."""
    realize_block = sch.get(block)
    if schedule_matmul(sch, block, loops) or schedule_row_reduction(sch, block, loops):
        return None
    n_spatial = sum(iv.iter_type == IterType.DataPar for iv in realize_block.iter_vars)
    loops = _hoist_unit_rows(sch, block, loops, n_spatial)
    if _deinterleave_strided_reads(sch, block):
        loops = sch.get_loops(block)
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
    # unit loops go above the reduction: decompose_reduction rejects one below (`_decompose`)
    units = [lp for lp in tile if _extent(sch, lp) == 1]
    tile = [lp for lp in tile if _extent(sch, lp) != 1]
    sch.reorder(*units, *outer, *([j_outer] if j_outer is not None else []), *reduce, *tile)
    if j_inner is not None and (_extent(sch, j_inner) or 2) > 1:
        sch.vectorize(j_inner)
    init = _decompose(sch, block, reduce)
    if init is None:
        outer = _parallel_widest(sch, outer, work)
        return outer[-1] if outer else None
    init_loops = sch.get_loops(init)
    if len(init_loops) > len(outer) + (j_outer is not None) + len(units):
        inner = init_loops[-1]
        if (_extent(sch, inner) or 2) > 1:
            sch.vectorize(inner)
    outer = _parallel_widest(sch, outer, work)
    return outer[-1] if outer else None


def _hoist_unit_rows(
    sch: Schedule, block: BlockRV, loops: list[LoopRV], n_spatial: int
) -> list[LoopRV]:
    """Move unit spatial loops outermost when one sits just above j (a conv1d computed as a
    conv2d over a height-1 image: `(n, o, 1, w)`), so the tile's rows are output channels
    instead of the unit height: a 1-row tile reloads its weight and its sums on every
    multiply-add (Whisper's conv1d stems, 2 threads: 26-35 -> 87-90 GFLOPS, same sums in the
    same order). Returns the block's loops in their new order."""
    spatial = loops[:n_spatial]
    if len(spatial) < 3 or _extent(sch, spatial[-2]) != 1:
        return loops
    units = [lp for lp in spatial[:-1] if _extent(sch, lp) == 1]
    rest = [lp for lp in spatial[:-1] if _extent(sch, lp) != 1]
    if not rest:
        return loops
    sch.reorder(*units, *rest, spatial[-1])
    return sch.get_loops(block)


def _stride_along(index, j) -> int | None:
    """The constant step of `index` when `j` grows by one, or None."""
    step = Analyzer().simplify(substitute(index, lambda v: j + 1 if v is j else None) - index)
    return const_int(step)


def _deinterleave(s: int):
    """The index map `[.., w] -> [.., w % s, w // s]` (its params are the indices only)."""
    return lambda *ix: (*ix[:-1], ix[-1] % s, ix[-1] // s)


def _deinterleave_strided_reads(sch: Schedule, block: BlockRV) -> bool:
    """Re-lay out each staged intermediate (a conv's padded input) that the product reads with
    a constant stride s > 1 along its vector axis j (a stride-2 conv: `pad[.., 2 x + rx]`) as
    `[.., w % s, w // s]`, so the read becomes contiguous in j (`pad[.., rx % 2, x + rx // 2]`)
    and vectorizes instead of gathering lane by lane (Whisper's stride-2 conv1d 256 x 128:
    12.4 -> 2.0 ms). The producer writes the new layout; a parameter is never re-laid out.
    Returns whether anything changed."""
    node = sch.get(block)
    j = _last_spatial_var(node, min_spatial=1)
    if j is None:
        return False
    params = {id(b) for b in sch.mod["main"].buffer_map.values()}
    staged = {id(w.buffer) for p in sch.get_producers(block) for w in sch.get(p).writes}
    changed = False
    for ld in _loads(_product_term(node)):
        buf = ld.buffer
        if id(buf) in params or id(buf) not in staged or not ld.indices:
            continue
        stride = _stride_along(ld.indices[-1], j)
        width = const_int(buf.shape[-1])
        if stride is None or stride < 2 or width is None or width % stride:
            continue
        at = next(n for n, r in enumerate(sch.get(block).reads) if r.buffer is buf)
        try:
            sch.transform_layout(block, ("read", at), _deinterleave(stride))
        except ScheduleError:
            continue  # read as it is: gathered, slower, correct
        changed = True
    return changed


def _schedule_product_unfused(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> None:
    """`schedule_product` with the epilogue left a stage of its own (the spatial rule's)."""
    if not schedule_matmul(sch, block, loops, fold=False, remainder=False, transpose=False):
        schedule_rows(sch, block, loops)


class Matmul(BlockRule):
    """Products (matmul, dense, batch matmul, convs): the register tile when the block is a
    matmul (`schedule_matmul`), else GEMV's partial sums, else a generic tile; with the
    epilogue left a stage of its own when folding it in is refused.

    dl.ApplyDefaultSchedule(dl.cpu.Matmul())
    """

    kinds = frozenset({BlockKind.PRODUCT})
    steps = (schedule_product, _schedule_product_unfused)
