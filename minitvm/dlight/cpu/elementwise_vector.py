"""Which trailing loops of a spatial block to fuse into its vector loop.

A block whose innermost loop is short (the 3 of a 512x512x3x3 conv weight's optimizer update,
the 1 or 2 of a batch norm on 1x1 or 2x2 images) would vectorize only that loop: 3 lanes of a
16-lane register, and one parallel iteration per 3 elements. When every buffer the block
touches is either contiguous over some of the trailing loops or does not depend on them, those
loops are one contiguous run of memory, and fusing them gives a vector loop of full width."""

from __future__ import annotations

import math

from ...tir.expr import Var
from ...tir.functor import post_order_visit
from ...tir.schedule import BlockRV, LoopRV, Schedule
from ...tir.schedule.common import const_int
from ...tir.stmt import BufferStore
from ..base.loops import fuse_keeps_dtype
from .analysis import _loads
from .utils import VECTOR_LANES, _extent

# the flat index of a vector spanning two loops, `x // b * b + x % b`, folds back to the ramp
# `x`; over three (`x // 9 * 9 + x % 9 // 3 * 3 + x % 3`) the simplifier keeps the div/mod, the
# vectorizer sees a gather and the loop runs scalar (512x512x3x3 update: 3.2 -> 9.5 ms)
MAX_WIDE_LOOPS = 2


def vector_loops(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> int:
    """How many trailing `loops` (a simple nest) to fuse into the vector loop: 1 (the innermost
    alone) unless it is shorter than VECTOR_LANES; then the fewest that reach a multiple of
    VECTOR_LANES, else the most whose product stays within VECTOR_LANES, among those the
    block's buffers are contiguous over (`_contiguous_suffix`), at most MAX_WIDE_LOOPS of them
    longer than 1."""
    inner = _extent(sch, loops[-1])
    if inner is None or inner >= VECTOR_LANES or len(loops) < 2:
        return 1
    extents = [_extent(sch, lp) for lp in loops]
    usable = _contiguous_suffix(sch, block, extents)
    best, fused, wide = 1, 1, 0
    for k in range(1, usable + 1):
        fused *= extents[-k]
        wide += extents[-k] != 1
        if wide > MAX_WIDE_LOOPS:
            break
        if fused % VECTOR_LANES == 0:
            best = k
            break
        if fused <= VECTOR_LANES:
            best = k
    # a mixed int32/int64 nest would widen the fused loop's index (div/mod per vector)
    return best if best == 1 or fuse_keeps_dtype(sch, loops[-best:]) else 1


def _contiguous_suffix(sch: Schedule, block: BlockRV, extents: list) -> int:
    """The most trailing loops (static) over which each access of the block is either
    contiguous (its flat offset steps by one along the fused loops) or invariant."""
    node = sch.get(block)
    iters = [iv.var for iv in node.iter_vars]
    accesses: list = []
    post_order_visit(
        node.body, lambda n: accesses.append(n) if isinstance(n, BufferStore) else None
    )
    accesses += _loads(node.body)
    best = 0
    for k in range(1, len(iters) + 1):
        if extents[-k] is None:
            break
        group = [(iters[-m], extents[-m]) for m in range(k, 0, -1)]
        if not all(_contiguous_or_invariant(a, group) for a in accesses):
            break
        best = k
    return best


def _contiguous_or_invariant(access, group: list) -> bool:
    """`access` (a load or store) reads along the loops of `group` (var, extent), outermost
    first, with flat strides prod(later extents), or does not depend on them (unit loops
    aside). Indices must be the vars themselves or free of them."""
    names = {id(v): k for k, (v, _) in enumerate(group)}
    shape = [const_int(s) for s in access.buffer.shape]
    strides: dict[int, int] = {}
    for d, index in enumerate(access.indices):
        used = _group_vars(index, names)
        if not used:
            continue
        if not (isinstance(index, Var) and id(index) in names) or any(
            s is None for s in shape[d + 1 :]
        ):
            return False
        if names[id(index)] in strides:
            return False  # one loop in two dims (a diagonal)
        strides[names[id(index)]] = math.prod(shape[d + 1 :])
    wide = [k for k, (_, ext) in enumerate(group) if ext != 1]
    if not any(k in strides for k in wide):
        return True
    step = 1
    for k in reversed(wide):
        if strides.get(k) != step:
            return False
        step *= group[k][1]
    return True


def _group_vars(index, names: dict) -> bool:
    found: list = []
    post_order_visit(index, lambda n: found.append(n) if id(n) in names else None)
    return bool(found)
