"""DefaultSchedule: a sensible CPU schedule for every PrimFunc nobody scheduled (dlight-like).

For each PrimFunc without attr `tir.is_scheduled` (and whose loops are all still serial):
  1. inline every elementwise/injective block that writes an intermediate (compute_inline),
     so fused epilogues and prologues stop materialising tensors -- except a stage whose
     inlining would put a border test (a conv's `data_pad`) or a strided read along the vector
     loop (the transpose of `g @ W.T`) into a product's inner loop: it stays (`_is_packing`);
     and a stage calling exp/erf/tanh/log... read more than once per element (softmax's
     exp, read by the sum and the norm; its norm, read by `P @ V` along every output
     column): it stays, the call made once per element (`_is_reread_transcendental`);
  2. a chain of row reductions feeding one elementwise output (layer_norm) runs as one
     parallel loop over rows, each row's reductions (vector partial sums) and output computed
     under it (`_row_chain`); otherwise
     schedule each remaining block by its kind, reductions first (rfactor needs a stage
     pipeline, which a matmul's tiled write-back hides from the scheduler's check), with the
     first rule of the table `_RULES` the primitives accept, tried on a copy of the schedule
     (a matmul whose epilogue reads a second producer: the epilogue left unfolded, else
     parallel rows):
     spatial        fuse the outer loops and run them in parallel, vectorize the innermost
                    loop in chunks of 16 lanes (a guarded tail when the extent is not a
                    multiple); a padding stage keeps its loops unfused (bound checks);
     product        a matmul (`is_matmul`: C[.., i, j] += A[..] * B[.., j], j contiguous, which
                    a blocked NCHW{c}c conv and depthwise conv are too): register-blocked
                    (`schedule_matmul`): a rows x cols tile (`matmul_tile`, rows from the
                    vector count and the register file, `tile_max_rows`: 14 output pixels x 16
                    channels for a conv, 4 x 64 for a GEMM) accumulates in a `local`
                    cache_write buffer LLVM keeps in zmm registers, k unrolled by 4, rows
                    unrolled, cols vectorized, the fused epilogue folded into the write-back;
                    B copied into column panels first under many rows or when given as
                    [N, K] (`_pack_b`); the column panels outermost when B is packed or
                    larger than L2; a depthwise conv's padding computed per tile;
                    a reduction along the contiguous axis (x @ W.T with few rows): vector
                    partial sums (`schedule_row_reduction`); other products (NCHW conv): tile
                    the last two spatial loops (4 x 16), reductions inside the tile, parallel
                    over the outer tiles, the 16-wide tile loop vectorized;
     reduction      a column reduction (`g.sum(axis=0)`, pooling over NCHW{c}c): a vector of
                    columns accumulates in a `local` buffer, epilogue folded in, like a
                    matmul; a row reduction (softmax, layer_norm): a vector of partial results
                    per row (rfactor), then the lanes added; others: parallel widest row loop;
  3. move the one elementwise consumer of a generically tiled product (its fused epilogue)
     under the outer tile loop (reverse_compute_at), so each tile is finished in cache.
Every rule splits with a `None` factor, so symbolic extents (a batch dim `n`) stay correct
(a guard on the tail tile); a primitive that refuses (ScheduleError) leaves the block to a
more general rule, never to a guess.
The result carries `tir.is_scheduled = True`; a function already marked (or with parallel,
vectorized or unrolled loops: someone scheduled it by hand) is left alone and gets the mark.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass

from ...error import ScheduleError
from ...ir.module import IRModule
from ...tir.expr import Add, BufferLoad, Call, IterType, Max, Min, Op, Select, Var
from ...tir.function import PrimFunc
from ...tir.functor import post_order_visit, pre_order_visit
from ...tir.schedule import BlockRV, LoopRV, Schedule
from ...tir.schedule.common import const_int
from ...tir.stmt import Block, BlockRealize, BufferStore, For, ForKind
from ..op._table import OpPattern
from .annotate_op_pattern import block_pattern

IS_SCHEDULED = "tir.is_scheduled"
VECTOR_LANES = 16  # float32 lanes of one AVX-512 register; a split factor, not a limit
TILE_ROWS = 4  # rows of a matmul tile kept hot while its reduction runs
PARALLEL_MIN_WORK = 4096  # fewer (static) iterations than this are not worth a thread pool
_IF_THEN_ELSE = Op.get("if_then_else")
_EXP = Op.get("tir.exp")
# calls far dearer than the load of a stored result (tens of instructions each): a stage
# computing one is not inlined into a consumer that reads each of its elements many times
_TRANSCENDENTAL = frozenset(
    Op.get(f"tir.{name}")
    for name in ("exp", "exp2", "log", "log1p", "erf", "tanh", "sigmoid", "pow", "sin", "cos")
)


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
    par = loops[:-1] + ([outer] if outer is not None else [])
    if _is_conditional(sch.get(block).body):
        # a border test (padding): its loops stay unfused, so lowering's bound check sees
        # each index as a loop variable (through a fused loop's div/mod it enumerates points:
        # ~1 s for one conv's padding); the widest static loop runs in parallel
        static = [lp for lp in par if _extent(sch, lp) is not None]
        _parallel_widest(sch, static or par, work)
        return
    if _writes_intermediate(sch, block):
        # a staged intermediate (`data_pad`): its symbolic batch loop stays serial outside
        # the fused static loops, so lowering can still bound the buffer by the batch (a fused
        # `n * 242` loop's `// 242` is not bounded by n there)
        while par and _extent(sch, par[0]) is None and len(par) > 1:
            par = par[1:]
    _parallel(sch, par, work)


def _writes_intermediate(sch: Schedule, block: BlockRV) -> bool:
    """`block` writes a buffer that is not a parameter of the function."""
    params = {id(b) for b in sch.mod["main"].buffer_map.values()}
    return any(id(w.buffer) not in params for w in sch.get(block).writes)


def schedule_product(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> LoopRV | None:
    """Register-blocked when the block is a matmul (`schedule_matmul`); otherwise tiled, and
    returns the innermost outer-tile loop, where an epilogue can be computed."""
    realize_block = sch.get(block)
    if schedule_matmul(sch, block, loops) or schedule_row_reduction(sch, block, loops):
        return None
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


# ----------------------------------------------------------------------------- matmul

MATMUL_MAX_ROWS = 8  # rows of a tile of several vectors a row (measured best on 64..2048 GEMMs)
# vector widths of a register tile, best first (measured); not 48: three-vector tiles ran
# 16-19 GFLOPS against 113 for 16-wide ones (1024x512x48, 384x512x144, any row count)
MATMUL_COLS = (64, 32, 16)
MATMUL_WHOLE_ROW = 128  # a row no longer than this that none of MATMUL_COLS divides is one tile
MATMUL_GUARDED_ROWS = 4  # rows of a tile over a symbolic or oddly sized row extent (measured)
MATMUL_K_UNROLL = 4  # reduction steps unrolled in the register tile


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


def _loads(e) -> list[BufferLoad]:
    found: list[BufferLoad] = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, BufferLoad) else None)
    return found


def _uses(e, var: Var) -> bool:
    found: list = []
    post_order_visit(e, lambda n: found.append(n) if n is var else None)
    return bool(found)


def _last_spatial_var(block: Block, min_spatial: int = 2) -> Var | None:
    """The iterator of the last spatial axis (the output column j) of a block with at least
    `min_spatial` spatial iterators followed by at least one reduction iterator; None for any
    other block."""
    types = [iv.iter_type for iv in block.iter_vars]
    n_spatial = next((k for k, t in enumerate(types) if t != IterType.DataPar), len(types))
    if n_spatial < min_spatial or n_spatial == len(types):
        return None
    if any(t != IterType.CommReduce for t in types[n_spatial:]):
        return None
    return block.iter_vars[n_spatial - 1].var


def _product_term(block: Block):
    """`X * Y` of `C[..] = C[..] + X * Y`, or None when `block` is not a product accumulation."""
    store = block.body
    if (
        not isinstance(store, BufferStore)
        or block_pattern(block) is not OpPattern.OUT_EWISE_FUSABLE
    ):
        return None
    value = store.value
    if not isinstance(value, Add):
        return None
    acc_first = isinstance(value.a, BufferLoad) and value.a.buffer is store.buffer
    return value.b if acc_first else value.a


def _contiguous_along(load: BufferLoad, var: Var) -> bool:
    """`load` indexes `var` exactly in its last dimension and nowhere else."""
    *outer, last = load.indices
    return last is var and not any(_uses(i, var) for i in outer)


def _transposed_along(load: BufferLoad, var: Var, block: Block) -> bool:
    """`load` reads `B[.., var, k]`: `var` exactly in the second-to-last dimension and nowhere
    else, a reduction iterator k in the last (the weight of `x @ W.T` in [N, K] layout)."""
    if len(load.indices) < 2:
        return False
    *outer, row, last = load.indices
    return row is var and _is_reduce_var((last,), block) and not any(_uses(i, var) for i in outer)


def _is_reduce_var(exprs: tuple, block: Block) -> bool:
    """`exprs` is one reduction iterator of `block`, alone."""
    return (
        len(exprs) == 1
        and isinstance(exprs[0], Var)
        and any(iv.var is exprs[0] for iv in block.iter_vars if iv.iter_type == IterType.CommReduce)
    )


def is_matmul(block: Block) -> bool:
    """`C[.., i, j] = C[.., i, j] + A[..] * B[.., j]` with spatial loops first: the loads
    that depend on the last spatial iterator j (B) read it contiguously, or transposed
    (`B[.., j, k]`, packed into column panels before the tile reads it), the others (A) are
    broadcast along j, and the output is contiguous along j; a vector along j then reads and
    writes contiguous memory. With no A (a blocked depthwise conv
    `Y[.., ow, ci] += X[.., ow + kw, ci] * W[.., kw, ci]`) the tile multiplies vectors."""
    j = _last_spatial_var(block)
    term = _product_term(block)
    if j is None or term is None or not _contiguous_along(block.body, j):
        return False
    by_j = [_uses(ld, j) for ld in _loads(term)]
    if not any(by_j):
        return False
    return all(
        _contiguous_along(ld, j) or _transposed_along(ld, j, block)
        for ld, uses in zip(_loads(term), by_j)
        if uses
    )


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


def matmul_tile(rows: int | None, cols: int | None, reduce: int | None) -> MatmulTile | None:
    """The register tile for a matmul of static-or-None (symbolic) extents; None when the
    column extent has no guard-free vector width (the block then gets the generic tiling).
    Rows take the most that divide the row extent; a symbolic extent (batch `n`), or one whose
    divisors are all small, gets MATMUL_GUARDED_ROWS rows and a guard `row < n` on each row of
    the tile: it costs a compare per row and k step, far less than losing the reuse of the B
    vectors (measured 133 vs 39 GFLOPS at n=1000, 784 x 256)."""
    if cols is None:
        return None
    width = _matmul_cols(cols)
    if width is None:
        return None
    cap = tile_max_rows(math.ceil(width / REGISTERS.lanes))
    rows_guarded = min(cap, MATMUL_GUARDED_ROWS)
    if rows is None:
        mr = rows_guarded
    else:
        mr = next(m for m in range(min(cap, rows), 0, -1) if rows % m == 0)
        if mr < rows_guarded <= rows:  # e.g. a prime row count: a guarded last tile is cheaper
            mr = rows_guarded
    unroll = 1 if reduce is None else next(u for u in (MATMUL_K_UNROLL, 2, 1) if reduce % u == 0)
    return MatmulTile(mr, width, unroll)


def _fold_epilogue(sch: Schedule, write_back: BlockRV) -> BlockRV:
    """Fold the one elementwise consumer of the write-back's intermediate into the write-back,
    so each tile is finished straight from registers; returns the block that now writes the
    tile back. A consumer reading the intermediate where it writes (bias, relu, residual add)
    takes the write-back inlined into it (compute_inline: checked from the indices alone);
    any other (the blocked result written back as NCHW) is inlined into the write-back
    (reverse_compute_inline, which proves its inverse index map point by point on small
    domains, far slower)."""
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


def schedule_matmul(sch: Schedule, block: BlockRV, loops: list[LoopRV], fold: bool = True) -> bool:
    """Register-blocked matmul: a rows x cols tile accumulates in a `local` cache_write buffer
    (rows and k steps unrolled, cols vectorized, so LLVM keeps it in vector registers) while
    the reduction runs; the write-back (with the fused epilogue folded in) finishes the tile,
    the outer row tiles run in parallel. False (nothing done) when `block` is not a matmul or
    its extents have no guard-free tile. `fold=False` leaves the epilogue out of the
    write-back (the driver's retry when moving it with the tile is refused)."""
    node = sch.get(block)
    if not is_matmul(node):
        return False
    n_spatial = sum(iv.iter_type == IterType.DataPar for iv in node.iter_vars)
    spatial, reduce = loops[:n_spatial], loops[n_spatial:]
    tile = matmul_tile(
        _extent(sch, spatial[-2]), _extent(sch, spatial[-1]), _extent(sch, reduce[-1])
    )
    if tile is None:
        return False
    work = _work(sch, spatial)
    packed = _pack_b(sch, block, tile, _extent(sch, spatial[-2]))
    if packed is None:
        return False
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
    if (packed or _b_bytes(node) >= L2_BYTES) and jo is not None:
        # column panels outermost: a panel of B (packed, or a column strip of a B larger
        # than L2) stays in L2 while the row tiles pass, instead of each row tile streaming
        # all of B from L3 (measured 128x768x3072, B [K, N] of 9 MB: 83 -> 103 GFLOPS)
        outer, panels = [*spatial[:-2], jo, io], [*spatial[:-2], jo]
        sch.reorder(*outer, *reduce, *inner)
        sch.reverse_compute_at(write_back, io)
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
    if panels is not None and _work(sch, panels) >= 2:
        _parallel_widest(sch, panels, work)
    else:
        _parallel_widest(sch, outer, work)
    _stage_at_tile(sch, block, len(outer) + (jo is not None))
    return True


def _stage_at_tile(sch: Schedule, block: BlockRV, n_outer: int) -> None:
    """Compute each staged padding producer that the tile reads along its vector j (a
    depthwise conv's input: one tile needs only its own channel block, a few rows) under the
    tile's innermost outer loop, so the padded rows are written and read in L1 instead of
    a padded copy of the whole input going through memory (measured 1.6-3.7x on MobileNet's
    depthwise layers). A producer read without j (a dense conv's input, read across all
    channel blocks by every tile) stays whole."""
    node = sch.get(block)
    j = _last_spatial_var(node)
    read_along_j = {id(ld.buffer) for ld in _loads(_product_term(node)) if _uses(ld, j)}
    at = sch.get_loops(block)[n_outer - 1] if n_outer else None
    for producer in sch.get_producers(block):
        node = sch.get(producer)
        writes = node.writes
        if at is None or len(writes) != 1 or id(writes[0].buffer) not in read_along_j:
            continue
        if not _is_conditional(node.body):
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
# a B given as [N, K] must be packed for the register tile; under this many rows the dot
# product rule (`schedule_row_reduction`) reads it in place instead
MATMUL_PACK_MIN_ROWS_TRANSPOSED = 32


def _b_bytes(block: Block) -> int:
    """The bytes of the largest operand of `block` read along its output columns j (B)."""
    j = _last_spatial_var(block)
    sizes = [
        math.prod(const_int(d) or 0 for d in ld.buffer.shape) * ld.buffer.dtype.bytes
        for ld in _loads(_product_term(block))
        if _uses(ld, j)
    ]
    return max(sizes, default=0)


def _pack_b(sch: Schedule, block: BlockRV, tile: MatmulTile, rows: int | None) -> bool | None:
    """Copy B operands of a matmul into column panels `Bp[.., j // cols, k, j % cols]`
    (cache_read + transform_layout), so the register tile reads B contiguously along k instead
    of one row of B (another cache line set) per k step; the copy runs parallel and
    vectorized. A transposed B (`W[.., j, k]`) must be packed (read as it is, the vector
    along j would gather), which pays under many or symbolic (a training batch) rows. A B
    `[.., k, j]` is packed only under many static rows (with few rows B streams once per row
    tile anyway) and when its rows are wider than a panel (not a blocked conv's weights).
    Returns whether anything was packed, None when a transposed B is not (the block then gets
    the generic rule)."""
    node = sch.get(block)
    j = _last_spatial_var(node)
    many_rows = rows is not None and rows >= MATMUL_PACK_MIN_ROWS
    plans: dict = {}
    for ld in _loads(_product_term(node)):
        if _transposed_along(ld, j, node):
            if rows is not None and rows < MATMUL_PACK_MIN_ROWS_TRANSPOSED:
                return None  # copying W each call costs more than the few rows gain
            plans[ld.buffer] = True
        elif many_rows and _contiguous_along(ld, j) and _is_reduce_var(ld.indices[-2:-1], node):
            width, depth = (const_int(d) for d in ld.buffer.shape[-1:-3:-1])
            nbytes = (width or 0) * (depth or 0) * ld.buffer.dtype.bytes
            if width is not None and width > tile.cols and nbytes >= MATMUL_PACK_MIN_B_BYTES:
                plans.setdefault(ld.buffer, False)
    c = tile.cols
    panel = {
        False: lambda *ix: (*ix[:-2], ix[-1] // c, ix[-2], ix[-1] % c),  # B[.., k, j]
        True: lambda *ix: (*ix[:-2], ix[-2] // c, ix[-1], ix[-2] % c),  # B[.., j, k]
    }
    for buf, transposed in plans.items():
        at = next(n for n, r in enumerate(sch.get(block).reads) if r.buffer is buf)
        try:
            copy = sch.cache_read(block, at, "global")
            sch.transform_layout(block, ("read", at), panel[transposed])
            _schedule_panel_copy(sch, copy, c, transposed)
        except ScheduleError:
            return None if transposed else False
    return bool(plans)


def _schedule_panel_copy(sch: Schedule, copy: BlockRV, cols: int, transposed: bool) -> None:
    """Loops (.., j // cols, k, j % cols) over the copy into panels, so it writes each panel in
    order and reads `cols` adjacent elements of B per k step (a transposed B: `cols` rows of
    W, kept in L1 across the k steps), the panel row vectorized, the rest parallel."""
    *batch, first, second = sch.get_loops(copy)
    work = _work(sch, [*batch, first, second])
    k, j = (second, first) if transposed else (first, second)
    jo, ji = sch.split(j, [None, cols])
    sch.reorder(*batch, jo, k, ji)
    sch.vectorize(ji)
    _parallel(sch, [*batch, jo, k], work)


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


def _is_column_reduction(block: Block) -> bool:
    """`S[.., j] = S[.., j] (+ | max | min) f(X[.., j], ..)` reducing outer axes of X: the last
    spatial iterator j indexes the output and every load that uses it contiguously (the bias
    gradient `g.sum(axis=0)`, a pooling window over a blocked NCHW{c}c input), so a vector of
    columns can accumulate while the reduction runs."""
    j = _last_spatial_var(block, min_spatial=1)
    store = block.body
    if j is None or not isinstance(store, BufferStore) or not _contiguous_along(store, j):
        return False
    value = store.value
    if not isinstance(value, Add | Max | Min):
        return False
    sides = [value.b, value.a]
    accs = [isinstance(x, BufferLoad) and x.buffer is store.buffer for x in (value.a, value.b)]
    if not any(accs):
        return False
    loads = [ld for ld in _loads(sides[accs.index(True)]) if _uses(ld, j)]
    return bool(loads) and all(_contiguous_along(ld, j) for ld in loads)


def schedule_column_reduction(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> bool:
    """A vector of columns accumulates in a `local` cache_write buffer over the whole
    reduction (the reduction loops outside, the columns vectorized inside), the fused epilogue
    (e.g. the SGD update of a bias) folded into its write-back, parallel over column blocks.
    False (nothing done) when `block` is not a column reduction or its column extent has no
    guard-free vector width."""
    node = sch.get(block)
    if not _is_column_reduction(node):
        return False
    n_spatial = sum(iv.iter_type == IterType.DataPar for iv in node.iter_vars)
    cols = _extent(sch, loops[n_spatial - 1])
    width = None if cols is None else _matmul_cols(cols)
    if width is None:
        return False
    work = _work(sch, loops)
    write_back = sch.cache_write(block, 0, "local")
    write_back = _fold_epilogue(sch, write_back)
    loops = sch.get_loops(block)
    spatial, reduce = loops[:n_spatial], loops[n_spatial:]
    jo, ji = (None, spatial[-1]) if width == cols else sch.split(spatial[-1], [None, width])
    outer = [*spatial[:-1], *([jo] if jo is not None else [])]
    sch.reorder(*outer, *reduce, ji)
    if outer:
        sch.reverse_compute_at(write_back, outer[-1])
    if width > 1:
        sch.vectorize(ji)
    init = _decompose(sch, block, reduce)
    for blk in (write_back,) if init is None else (init, write_back):
        inner = sch.get_loops(blk)[len(outer) :]
        if inner and (_extent(sch, inner[-1]) or 2) > 1:
            sch.vectorize(inner[-1])
    _parallel_widest(sch, outer, work)
    return True


def _row_reduction_lanes(sch: Schedule, block: Block, loops: list[LoopRV]) -> int | None:
    """The vector width for reducing `block` along its one, innermost reduction loop k when
    every load that uses k reads it contiguously (`S[i] = S[i] + f(A[i, k])`: softmax's max
    and sum, layer_norm's sums, a dot product `x[i, k] * W[j, k]`) and the reducer is +, max
    or min; None otherwise, or when no width of at least 4 lanes divides k (rfactor refuses
    a guarded split)."""
    types = [iv.iter_type for iv in block.iter_vars]
    store = block.body
    if types.count(IterType.CommReduce) != 1 or types[-1] != IterType.CommReduce:
        return None
    if len(loops) != len(types) or not isinstance(store, BufferStore):
        return None
    k = block.iter_vars[-1].var
    value = store.value
    if not isinstance(value, Add | Max | Min):
        return None
    accs = [isinstance(x, BufferLoad) and x.buffer is store.buffer for x in (value.a, value.b)]
    if accs.count(True) != 1 or any(_uses(i, k) for i in store.indices):
        return None
    uses = [ld for ld in _loads((value.b, value.a)[accs.index(True)]) if _uses(ld, k)]
    if not uses or not all(_contiguous_along(ld, k) for ld in uses):
        return None
    extent = _extent(sch, loops[-1])
    return next((w for w in (VECTOR_LANES, 8, 4) if extent and extent % w == 0), None)


def schedule_row_reduction(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> bool:
    """A reduction along the contiguous axis k (`_row_reduction_lanes`) keeps one vector of
    partial results per row (rfactor of k's inner `lanes` part, vectorized), then adds the
    lanes up; parallel over the rows. False (nothing done) for any other block."""
    lanes = _row_reduction_lanes(sch, sch.get(block), loops)
    if lanes is None:
        return False
    work = _work(sch, loops)
    _, ki = sch.split(loops[-1], [None, lanes])
    try:
        rf = sch.rfactor(ki, len(loops) - 1)
    except ScheduleError:
        # the split stays, harmless: parallel rows as the generic reduction rule does
        _parallel_widest(sch, loops[:-1], work)
        return True
    rf_loops = sch.get_loops(rf)
    sch.vectorize(rf_loops[-1])
    rows = rf_loops[:-2]
    init = _decompose(sch, rf, [rf_loops[-2]]) if rows else None
    if init is not None:
        sch.vectorize(sch.get_loops(init)[-1])
    _parallel_widest(sch, rows, work)
    return True


def schedule_reduction(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> None:
    """Column reductions accumulate vectors (`schedule_column_reduction`), row reductions
    vectors of partial results (`schedule_row_reduction`); others: parallel rows."""
    if schedule_column_reduction(sch, block, loops) or schedule_row_reduction(sch, block, loops):
        return
    realize_block = sch.get(block)
    n_spatial = 0
    for iv in realize_block.iter_vars:
        if iv.iter_type != IterType.DataPar:
            break
        n_spatial += 1
    rows = loops[:n_spatial]
    _parallel_widest(sch, rows, _work(sch, loops))


def schedule_rows(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> None:
    """The plainest rule, the fallback of all the others: the widest of the leading spatial
    loops in parallel, everything else serial as it was."""
    n_spatial = 0
    for iv in sch.get(block).iter_vars:
        if iv.iter_type != IterType.DataPar:
            break
        n_spatial += 1
    _parallel_widest(sch, loops[:n_spatial], _work(sch, loops[:n_spatial]))


def _schedule_product_unfused(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> None:
    """`schedule_product` with the epilogue left a stage of its own (the spatial rule's)."""
    if not schedule_matmul(sch, block, loops, fold=False):
        schedule_rows(sch, block, loops)


# per kind, the rules tried in turn until the primitives accept one (best first, plainer after);
# each rule may return a loop under which the block's elementwise consumer is computed
_Rule = Callable[[Schedule, BlockRV, list[LoopRV]], LoopRV | None]
_RULES: dict[BlockKind, tuple[_Rule, ...]] = {
    BlockKind.SPATIAL: (schedule_spatial, schedule_rows),
    BlockKind.PRODUCT: (schedule_product, _schedule_product_unfused, schedule_rows),
    BlockKind.REDUCTION: (schedule_reduction, schedule_rows),
}


# ----------------------------------------------------------------------------- row chains


def _row_chain(func: PrimFunc) -> PrimFunc | None:
    """`func` scheduled as one parallel loop over rows when it is a chain of row reductions
    feeding one elementwise output (layer_norm: sum, squared sum, normalise), each row's
    whole chain computed in L1 under the row loop instead of one parallel pass over all rows
    per stage (layer_norm 128x768: 60 -> 31 us, 1536x128: 92 -> 75 us); None (nothing done)
    for any other function or when a primitive refuses.

    A chain evaluating `exp` is left to the per-block rules: softmax is bound by its exp,
    computed twice per element by its definition, and ran 1.05-1.25x slower chained
    (1536x128, 128x768, 96x2048)."""
    sch = Schedule(func)
    realizes = _blocks(func)
    if len(realizes) < 2 or any(_calls(r.block, _EXP) for r in realizes):
        return None
    *stages, last = realizes
    out = sch.get_block(last.block.name_hint)
    out_loops = _simple_nest(sch, out, last)
    if _kind(last.block) is not BlockKind.SPATIAL or out_loops is None or len(out_loops) < 2:
        return None
    rows = [_extent(sch, lp) for lp in out_loops[:-1]]
    plans = []
    for r in stages:
        block = sch.get_block(r.block.name_hint)
        loops = _simple_nest(sch, block, r)
        if _kind(r.block) not in (BlockKind.REDUCTION, BlockKind.PRODUCT) or loops is None:
            return None  # (a squared sum is a product)
        lanes = _row_reduction_lanes(sch, r.block, loops)
        if lanes is None or [_extent(sch, lp) for lp in loops[:-1]] != rows:
            return None
        if (_extent(sch, loops[-1]) or 0) < 2 * lanes:
            return None  # one vector per row: no loop of partial sums to keep
        plans.append((block, loops, lanes))
    try:
        return _chain_rows(sch, out, plans, _work(sch, out_loops))
    except ScheduleError:
        return None  # e.g. a stage reads other rows than it writes: per-block rules instead


def _chain_rows(sch: Schedule, out: BlockRV, plans: list, work: float) -> PrimFunc:
    """Each row reduction of `plans` as vector partial sums (rfactor) then the lanes added,
    all computed at the output's row loop, which runs in parallel."""
    rfs = []
    for block, loops, lanes in plans:
        _, ki = sch.split(loops[-1], [None, lanes])
        rfs.append(sch.rfactor(ki, len(loops) - 1))
    out_name = sch.get(out).name_hint
    stages = [r.block.name_hint for r in _blocks(sch.mod["main"])]
    out_loops = sch.get_loops(out)
    for name in reversed(stages):
        if name != out_name:
            sch.compute_at(sch.get_block(name), out_loops[-2])
    for rf in rfs:
        *_, k_outer, lanes = sch.get_loops(rf)
        sch.reorder(lanes, k_outer)  # compute_at put the lanes (spatial in rf) outside
        *_, k_outer, lanes = sch.get_loops(rf)
        sch.vectorize(lanes)
        init = _decompose(sch, rf, [k_outer])
        if init is not None:
            sch.vectorize(sch.get_loops(init)[-1])
    _vectorize_inner(sch, sch.get_loops(out)[-1])
    _parallel_widest(sch, sch.get_loops(out)[: len(out_loops) - 1], work)
    return sch.mod["main"]


def _calls(block: Block, op: Op) -> bool:
    """`block`'s body calls `op`."""
    return _calls_any(block, frozenset((op,)))


def _calls_any(block: Block, ops: frozenset) -> bool:
    """`block`'s body calls one of `ops`."""
    found: list = []
    post_order_visit(
        block.body, lambda n: found.append(n) if isinstance(n, Call) and n.op in ops else None
    )
    return bool(found)


# ----------------------------------------------------------------------------- driver


def _inline_intermediates(sch: Schedule) -> None:
    """compute_inline every spatial block writing an intermediate, until none is left."""
    changed = True
    while changed:
        changed = False
        func = sch.mod["main"]
        params = {id(b) for b in func.buffer_map.values()}
        blocks = [r.block for r in _blocks(func)]
        for block in blocks:
            if _kind(block) is not BlockKind.SPATIAL or len(block.writes) != 1:
                continue
            if id(block.writes[0].buffer) in params or _is_packing(blocks, block):
                continue
            if _is_reread_transcendental(blocks, block):
                continue
            try:
                sch.compute_inline(sch.get_block(block.name_hint))
            except ScheduleError:
                continue  # not inlinable here (e.g. read with other indices): it stays a block
            changed = True
            break


def _is_reread_transcendental(blocks: list[Block], producer: Block) -> bool:
    """`producer` calls a transcendental op (exp, erf, tanh, ...) and its output is read more
    than once per element: by two or more blocks (softmax's `exp(x - max)`, summed and then
    divided by the sum), or by a block reading one element at several of its own iterations
    (a load that leaves out one of its non-unit spatial iterators: softmax's normalisation
    read as the A of `P @ V`, along all the output columns). Inlined, the call would run once
    per read instead of once per element (attention 12x128x128: every exp 64 times), so it
    stays a stage, computed once, parallel and vectorized by the spatial rule (softmax with
    its exp staged, 2 threads: 128x768 92 -> 69 us, 1536x128 203 -> 127 us; nn.attention
    1x128x12x64 4.3 -> 1.5 ms)."""
    if not _calls_any(producer, _TRANSCENDENTAL):
        return False
    out = producer.writes[0].buffer
    readers = 0
    for block in blocks:
        spatial = [
            iv.var
            for iv in block.iter_vars
            if iv.iter_type == IterType.DataPar and const_int(iv.dom.extent) != 1
        ]
        loads = [ld for ld in _loads(block.body) if ld.buffer is out]
        readers += bool(loads)
        if readers > 1 or any(not all(_uses(ld, v) for v in spatial) for ld in loads):
            return True
    return False


def _is_conditional(e) -> bool:
    """`e` holds a Select or an if_then_else (a padding producer's border test)."""
    found: list = []
    post_order_visit(
        e,
        lambda n: (
            found.append(n)
            if isinstance(n, Select) or isinstance(n, Call) and n.op is _IF_THEN_ELSE
            else None
        ),
    )
    return bool(found)


def _reads_weight_rows(block: Block) -> bool:
    """A product `x @ W.T` (W read `[.., j, k]`) that `_pack_b` leaves unpacked (fewer static
    rows than MATMUL_PACK_MIN_ROWS_TRANSPOSED): the dot-product rule vectorizes it along k."""
    j = _last_spatial_var(block)
    if j is None or not any(_transposed_along(ld, j, block) for ld in _loads(_product_term(block))):
        return False
    spatial = [iv for iv in block.iter_vars if iv.iter_type == IterType.DataPar]
    rows = const_int(spatial[-2].dom.extent)  # the row extent `schedule_matmul` passes _pack_b
    return rows is not None and rows < MATMUL_PACK_MIN_ROWS_TRANSPOSED


def _is_packing(blocks: list[Block], producer: Block) -> bool:
    """`producer` feeds a product (matmul, conv) among `blocks` and inlining it would put into
    that block's inner loop a conditional (the border test of a padding stage like a conv's
    `data_pad`) or a strided load along the vectorized output columns j (the transpose of
    `g @ W.T`): it stays a stage, writing a padded or packed copy once (parallel and
    vectorized by the spatial rule) that the product's register tile reads unguarded."""
    store = producer.body
    if not isinstance(store, BufferStore) or not all(isinstance(i, Var) for i in store.indices):
        return False
    out = producer.writes[0].buffer
    strided = {
        pos
        for pos, v in enumerate(store.indices)
        if any(_uses(i, v) for ld in _loads(store.value) for i in ld.indices[:-1])
    }
    conditional = _is_conditional(store.value)
    for block in blocks:
        term = _product_term(block)
        if term is None:
            continue
        # the axes a rule may vectorize: the output columns j (matmul, conv; its broadcast
        # operand A may be read along k with any stride) and, for other products, the
        # innermost reduction k too (the dot-product rule of x @ W.T under few rows, e.g. a
        # classifier reading a flattened blocked tensor: inlined, every vector of x is a gather)
        last = block.iter_vars[-1] if block.iter_vars else None
        k = last.var if last is not None and last.iter_type == IterType.CommReduce else None
        if is_matmul(block) and not _reads_weight_rows(block):
            k = None
        vector_axes = {id(v) for v in (_last_spatial_var(block), k) if v is not None}
        for ld in _loads(term):
            if ld.buffer is not out:
                continue
            if conditional or any(
                id(idx) in vector_axes and pos in strided for pos, idx in enumerate(ld.indices)
            ):
                return True
    return False


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
    chained = _row_chain(sch.mod["main"])
    if chained is not None:
        return chained.with_attr(IS_SCHEDULED, True)
    for name in _schedule_order(sch.mod["main"]):
        sch = _schedule_block(sch, name)
    return sch.mod["main"].with_attr(IS_SCHEDULED, True)


def _schedule_order(func: PrimFunc) -> list[str]:
    """The block names of `func` in the order the rules visit them: reductions first, then the
    rest in program order. rfactor (the row reductions' rule) needs the function to be a stage
    pipeline, which the scheduler's region check no longer proves once a matmul's register
    tile writes back under two loops per dimension (softmax between the two matmuls of
    attention); the other rules do not need it."""
    realizes = _blocks(func)
    first = [r.block.name_hint for r in realizes if _kind(r.block) is BlockKind.REDUCTION]
    return first + [r.block.name_hint for r in realizes if r.block.name_hint not in first]


def _schedule_block(sch: Schedule, name: str) -> Schedule:
    """`sch` with block `name` scheduled by the first rule of `_RULES` for its kind that the
    primitives accept, tried on a copy (a rule refused halfway leaves no trace); `sch`
    unchanged when none applies (the block keeps its serial loops: correct, only slower)."""
    # fetched afresh: an earlier rule may have moved or inlined (folded) this block
    r = next((r for r in _blocks(sch.mod["main"]) if r.block.name_hint == name), None)
    kind = None if r is None else _kind(r.block)
    if kind is None:
        return sch
    for rule in _RULES[kind]:
        trial = sch.copy()
        block = trial.get_block(name)
        loops = _simple_nest(trial, block, r)
        if loops is None:
            return sch
        try:
            attach = rule(trial, block, loops)
            if attach is not None:
                _attach_epilogue(trial, block, attach)
        except ScheduleError:
            continue  # e.g. a folded epilogue reading a second producer: a plainer rule
        return trial
    return sch


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
    "MatmulTile",
    "default_schedule",
    "default_schedule_func",
    "is_matmul",
    "is_scheduled",
    "matmul_tile",
    "schedule_column_reduction",
    "schedule_matmul",
    "schedule_product",
    "schedule_reduction",
    "schedule_spatial",
]
