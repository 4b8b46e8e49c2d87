"""Tiles for a spatial block that reads one input transposed (`out[i, j] = A[j, i] ...`).

Vectorized along j, such a block gathers each vector from 16 rows of A, one element per row;
A's rows are a power of two apart (a 256 x 1024 weight gradient: 4 KB), so every row of a
gather falls into the same L1 set, and the next j-vector's rows evict the last ones before
the next i comes back for the rest of their cache lines. Walking a tile of TILE_ROWS i by
TILE_LANES j instead uses each gathered line TILE_ROWS times while its TILE_LANES rows still
fit one set's ways (the optimizer update of a transposed weight, 1024 x 256: 0.75 -> 0.11 ms,
one thread; 16 lanes keep 16 rows per set and measured 0.23 ms)."""

from __future__ import annotations

from ...tir.expr import Add, Var
from ...tir.schedule import BlockRV, LoopRV, Schedule
from ...tir.schedule.common import const_int
from ...tir.stmt import BlockRealize
from .analysis import _loads, _uses

TILE_ROWS = 16  # i per tile: each gathered cache line (16 floats) is used this many times
TILE_LANES = 8  # j per vector: rows of one gather, within an L1 set's 12 ways (AMD Zen 4)


def transposed_partner(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> int | None:
    """The position of the loop i when `block` (a simple nest over `loops`, writing along the
    innermost loop j) reads some input as `A[.., j, .., i]`: i in A's last dimension, j in an
    earlier one. None when there is no such read or the tile would need a guard (i, j static
    and whole multiples of the tile)."""
    node = sch.get(block)
    if len(loops) < 2 or not _binds_in_order(sch, loops, node):
        return None
    iters = [iv.var for iv in node.iter_vars]
    extents = [const_int(sch.get(lp).extent) for lp in loops]
    if extents[-1] is None or extents[-1] % TILE_LANES or extents[-1] < 2 * TILE_LANES:
        return None
    store = node.body
    if not (store.indices and store.indices[-1] is iters[-1]):
        return None
    for load in _loads(store.value):
        if not load.indices or _uses(load.indices[-1], iters[-1]):
            continue
        pos = _unit_term(load.indices[-1], iters[:-1])
        if pos is None or extents[pos] is None or extents[pos] % TILE_ROWS:
            continue
        if any(_uses(index, iters[-1]) for index in load.indices[:-1]):
            return pos
    return None


def _unit_term(index, iters: list[Var]) -> int | None:
    """The position in `iters` of the iterator that `index` steps by one along: the index is
    that iterator, or it plus a term free of it (`h % 4 * 64 + d`, a head's column)."""
    terms = (index.a, index.b) if isinstance(index, Add) else (index,)
    for k, term in enumerate(terms):
        rest = terms[1 - k] if len(terms) == 2 else None
        if not isinstance(term, Var):
            continue
        pos = next((p for p, v in enumerate(iters) if v is term), None)
        if pos is not None and (rest is None or not _uses(rest, term)):
            return pos
    return None


def _binds_in_order(sch: Schedule, loops: list[LoopRV], node) -> bool:
    """Each loop binds the block's iterator of the same position, and the innermost loop holds
    the block itself (nothing else in the nest)."""
    body = sch.get(loops[-1]).body
    if not isinstance(body, BlockRealize) or body.block is not node:
        return False
    if len(body.iter_values) != len(loops):
        return False
    for lp, value in zip(loops, body.iter_values):
        loop = sch.get(lp)
        if not (isinstance(value, Var) and value is loop.loop_var) or const_int(loop.min) != 0:
            return False
    return True


def tile_transposed(sch: Schedule, loops: list[LoopRV], pos: int) -> list[LoopRV]:
    """Split loop `pos` (i) by TILE_ROWS and the innermost (j) by TILE_LANES, move both tile
    loops innermost and vectorize j's; returns the loops left outside the tile, outermost
    first, for the caller to run in parallel."""
    i_out, i_in = sch.split(loops[pos], [None, TILE_ROWS])
    j_out, j_in = sch.split(loops[-1], [None, TILE_LANES])
    others = [lp for k, lp in enumerate(loops[:-1]) if k != pos]
    outer = [*others, i_out, j_out]
    sch.reorder(*outer, i_in, j_in)
    sch.vectorize(j_in)
    return outer
