"""Remainder-aware column tiles for matmuls whose output row no vector width divides (an LM
head of 1000 columns): full-width register tiles, the last one guarded, over a B packed into
column panels padded to whole tiles, so the guarded tile still reads whole vectors."""

from __future__ import annotations

from ...tir.schedule.common import const_int
from ...tir.stmt import Block
from .analysis import (
    _contiguous_along,
    _is_reduce_var,
    _last_spatial_var,
    _loads,
    _product_term,
    _transposed_along,
    _uses,
)
from .utils import MATMUL_COLS, MATMUL_WHOLE_ROW, VECTOR_LANES, _matmul_cols

# the most padding a guarded last tile may add to an output row, as a fraction of the row:
# 1000 columns take 16 tiles of 64 (24 padded lanes, 2.4%), GPT-2's 50257 take tiles of 64
MATMUL_REMAINDER_MAX_PAD = 1 / 16


# widths of a guarded tile, best first: several vectors a row, where the guard-free widths
# left (8 or 4 lanes, or none) waste half the FMA width or more; a one-vector row (200 columns:
# 8-lane tiles) keeps its tiling. A row that every width pads by more than
# MATMUL_REMAINDER_MAX_PAD and that has no guard-free width at all (ViT's 197 tokens, 131) takes
# the least padded width: the generic tiling's 4 x 16 tile pads it too and runs latency bound
# (ViT's q @ k.T, 197 x 64 x 197: 8 x 32 tiles over 224 columns ran 1.5x the 4 x 16 tiling)
MATMUL_REMAINDER_COLS = tuple(c for c in MATMUL_COLS if c > VECTOR_LANES)


def remainder_cols(extent: int | None) -> int | None:
    """The vector width of a guarded register tile along an output row of `extent` columns
    that no width of MATMUL_COLS divides and that is longer than one tile: the widest of
    MATMUL_REMAINDER_COLS whose last tile pads the row by at most MATMUL_REMAINDER_MAX_PAD, else,
    when the row has no guard-free width at all (`_matmul_cols`), the least padded one (the
    wider on a tie); None when the row needs no remainder (a dividing width exists, or the row
    is short enough to be one tile) or keeps its narrow guard-free width."""
    if extent is None or extent <= MATMUL_WHOLE_ROW:
        return None
    if any(extent % cols == 0 for cols in MATMUL_COLS):
        return None
    for cols in MATMUL_REMAINDER_COLS:
        if (-extent) % cols <= extent * MATMUL_REMAINDER_MAX_PAD:
            return cols
    if _matmul_cols(extent) is not None:
        return None  # its 8- or 4-lane guard-free tiles pad nothing
    return min(MATMUL_REMAINDER_COLS, key=lambda cols: (-extent) % cols)


def takes_remainder_tile(block: Block, guard_free_cols: int | None) -> bool:
    """Whether `block` (a matmul) should get a guarded full-width tile instead of its
    guard-free width `guard_free_cols` (None: none): the guard-free width is under one vector
    (8 or 4 lanes of 16: half the FMA width, measured 64 vs 93 GFLOPS at 1024 x 256 x 1000),
    and every operand read along the output columns j is a B that can be packed into padded
    panels: `B[.., k, j]` or `B[.., j, k]` with static last two dims (the guarded tile reads
    whole vectors of it; read in place, its last vector would leave the buffer)."""
    if guard_free_cols is not None and guard_free_cols >= VECTOR_LANES:
        return False
    j = _last_spatial_var(block)
    term = _product_term(block)
    if j is None or term is None:
        return False
    b_loads = [ld for ld in _loads(term) if _uses(ld, j)]
    if not b_loads:
        return False
    for ld in b_loads:
        plain = _contiguous_along(ld, j) and _is_reduce_var(tuple(ld.indices[-2:-1]), block)
        if not (plain or _transposed_along(ld, j, block)):
            return False
        if any(const_int(d) is None for d in ld.buffer.shape[-2:]):
            return False
    return True
