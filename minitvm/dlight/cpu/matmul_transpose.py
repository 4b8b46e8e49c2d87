"""A matmul's B given as the transpose stage of another buffer (`g @ W.T` in a gradient,
`dO @ V.T` in attention: relax's permute_dims fused into the kernel, kept a stage by the
inliner): the stage is inlined back, so the matmul reads W `[.., j, k]` and packs it into
column panels itself, with a copy that reads W a cache line at a time. Staged, the transpose
was a separate pass of 16-lane gathers down W's columns, rows 4 KB apart (one L1 set: every
line of a gather evicts the last), and the matmul then read the transposed copy once more
(256 x 1024 x 1024 with B = W.T: 55 GFLOPS against 96 for a plain B, 1 thread; 89 with the
transpose inlined and packed). A W that fits in L1 stays a stage: its transpose costs little.
"""

from __future__ import annotations

import math

from ...arith.analyzer import Analyzer
from ...error import ScheduleError
from ...tir.expr import BufferLoad, IntImm, Var
from ...tir.functor import substitute
from ...tir.schedule import BlockRV, Schedule
from ...tir.schedule.common import const_int
from ...tir.stmt import Block, BufferStore
from .analysis import _last_spatial_var, _loads, _product_term

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
    b_bufs = {id(ld.buffer) for ld in _loads(_product_term(node)) if ld.indices[-1] is j}
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
