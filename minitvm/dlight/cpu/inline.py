"""Which intermediate stages the CPU rules inline first, and which stay stages (packing copies,
transcendentals read many times)."""

from __future__ import annotations

from ...error import ScheduleError
from ...tir.expr import IterType, Var
from ...tir.schedule import Schedule
from ...tir.schedule.common import const_int
from ...tir.stmt import Block, BufferStore
from ..base.analysis import blocks as _blocks
from .analysis import (
    _TRANSCENDENTAL,
    BlockKind,
    _calls_any,
    _is_conditional,
    _kind,
    _last_spatial_var,
    _loads,
    _product_term,
    _transposed_along,
    _uses,
    is_matmul,
)
from .utils import MATMUL_PACK_MIN_ROWS_TRANSPOSED


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
