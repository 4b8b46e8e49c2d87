"""A matmul's B computed by a stage that reads its input transposed (attention's `q @ k.T`
with RoPE applied to k inside the kernel: `B[.., d, s] = rope(k[.., s, d])`): the stage is
inlined into the copy that packs B into column panels, and that copy runs once per panel
right before the row tiles read it, walking k's rows a cache line at a time. Staged on its
own, the rotation was a pass of 16-lane gathers down k's columns (five per vector: k twice,
cos, sin), then the tile read the result once more (Llama, 8 x 4 heads x 128 x 128 x 64,
1 thread: 1.46 -> 0.96 ms, 0.63 for the same product of a given k.T). A plain transpose of a
head-split k (BERT, GPT-2, Whisper: `k[b, s, h * 64 + d]`) takes the same path (0.88 -> 0.73
ms at batch 8).
"""

from __future__ import annotations

from ...error import ScheduleError
from ...tir.expr import IterType
from ...tir.schedule import BlockRV, LoopRV, Schedule
from ...tir.stmt import Block, BufferStore
from .analysis import _last_spatial_var, _loads, _product_term, _uses
from .matmul_transpose import L1_BYTES, probed_bytes
from .utils import _split_unless_short

# float32 elements of one 64-byte cache line: the rows of k are read this many at a time
LINE_FLOATS = 16


def reads_input_transposed(block: Block, params: set[int]) -> bool:
    """`block` is a spatial stage `T[.., a, b] = f(..)` that reads a function input with its
    last iterator b in an outer dimension and its second-to-last a in the last one
    (`k[.., b, .. a]`): a vector along b would gather down the input's columns. An input
    within L1 does not count (its transpose costs little: `matmul_transpose`)."""
    store = block.body
    spatial = [iv.var for iv in block.iter_vars if iv.iter_type == IterType.DataPar]
    if not isinstance(store, BufferStore) or len(spatial) != len(block.iter_vars):
        return False
    if len(spatial) < 2:
        return False
    a, b = spatial[-2], spatial[-1]
    for ld in _loads(store.value):
        if id(ld.buffer) not in params or not ld.indices:
            continue
        *outer, last = ld.indices
        if _uses(last, a) and not _uses(last, b) and any(_uses(i, b) for i in outer):
            return probed_bytes(ld.buffer) >= L1_BYTES
    return False


def transposing_b_stages(sch: Schedule, block: BlockRV) -> dict:
    """{B buffer: its producer} for each B of the matmul `block` (read `[.., k, j]` along the
    output columns j) written by a stage that only this block reads and that reads its input
    transposed (`reads_input_transposed`)."""
    node = sch.get(block)
    j = _last_spatial_var(node)
    params = {id(b) for b in sch.mod["main"].buffer_map.values()}
    b_bufs = {
        id(ld.buffer) for ld in _loads(_product_term(node)) if ld.indices and ld.indices[-1] is j
    }
    found = {}
    for producer in sch.get_producers(block):
        p = sch.get(producer)
        if len(p.writes) != 1 or id(p.writes[0].buffer) not in b_bufs:
            continue
        if len(sch.get_consumers(producer)) != 1 or not reads_input_transposed(p, params):
            continue
        found[p.writes[0].buffer] = producer
    return found


def is_panel_prologue(sch: Schedule, copy: BlockRV) -> bool:
    """`copy` (a producer of the matmul) computes B's panels from an input read transposed."""
    params = {id(b) for b in sch.mod["main"].buffer_map.values()}
    return reads_input_transposed(sch.get(copy), params)


def compute_copy_at_panel(sch: Schedule, copy: BlockRV, panel: LoopRV) -> bool:
    """Compute the panel copy under the matmul's panel loop `panel` (one panel of B, written
    just before the row tiles read it: it stays in L1), looping (k // 16, j, k % 16) so each
    row of the input is read a cache line at a time; scalar (a vector along either axis
    gathers or scatters). False (nothing done) when compute_at refuses: the caller keeps the
    copy a whole stage."""
    try:
        sch.compute_at(copy, panel)
    except ScheduleError:
        return False
    *_, k, j = sch.get_loops(copy)
    ko, ki = _split_unless_short(sch, k, LINE_FLOATS)
    if ko is not None:
        sch.reorder(ko, j, ki)
    return True
