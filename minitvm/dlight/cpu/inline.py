"""Which intermediate stages the CPU rules inline first, and which stay stages (packing copies,
transcendentals read many times)."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from ...error import ScheduleError
from ...tir.expr import IterType, Var
from ...tir.function import PrimFunc
from ...tir.functor import deep_recursion
from ...tir.schedule import Schedule
from ...tir.schedule.common import const_int
from ...tir.schedule.inline import _check_inline, _InlineIndex, _InlineLoads
from ...tir.stmt import Block, BufferStore
from ..base.analysis import blocks as _blocks
from .analysis import (
    _TRANSCENDENTAL,
    BlockKind,
    _calls_any,
    _contiguous_along,
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
    """compute_inline every spatial block writing an intermediate, until none is left.

    The blocks are chosen as inlining them one at a time chooses them (always the first block,
    in program order, that qualifies in the function as it then stands), then inlined in one
    walk: one by one, each inline walked the whole function and a model's chain of N
    elementwise stages (fused into one kernel of N blocks) took N^2 time (BENCHMARKS.md,
    "Build time")."""
    with deep_recursion():  # the bodies built hold whole chains of inlined values
        names = _InlinePlan(sch.mod["main"]).run()
    if names:
        sch._compute_inline_names(names)


class _InlinePlan:
    """The function as it would stand after each inline of the sequence, kept as facts per
    block: the intermediates its body loads, whether it calls a transcendental, and (built
    only when a rule asks for it) its body with the inlined values in place. A block's verdict
    can change only when something is inlined into it, into one of its readers, or out of its
    readers; only those blocks are looked at again, lowest position first."""

    def __init__(self, func: PrimFunc) -> None:
        self.func = func
        self.params = {id(b) for b in func.buffer_map.values()}
        self.realizes = _blocks(func)
        self.alive = [True] * len(self.realizes)
        self.writers: dict[int, list[int]] = {}
        for i, r in enumerate(self.realizes):
            for w in r.block.writes:
                self.writers.setdefault(id(w.buffer), []).append(i)
        self.loaded: list[set[int]] = []  # ids of the intermediates each body loads
        self.readers: dict[int, set[int]] = {b: set() for b in self.writers}
        for i, r in enumerate(self.realizes):
            ids = {id(ld.buffer) for ld in _loads(r.block.body) if id(ld.buffer) in self.writers}
            self.loaded.append(ids)
            for b in ids:
                self.readers[b].add(i)
        self.transcendental = [_calls_any(r.block, _TRANSCENDENTAL) for r in self.realizes]
        self.kind = [_kind(r.block) for r in self.realizes]  # an inlined value keeps a kind
        self.reduces = [
            any(iv.iter_type != IterType.DataPar for iv in r.block.iter_vars) for r in self.realizes
        ]
        self.inlined: dict[int, tuple] = {}  # id(buffer) -> (buffer, iter vars, value)
        self.current: dict[int, Block] = {}  # bodies with the inlined values in place, by need
        self.index: Any = None

    def run(self) -> list[str]:
        """The names of the blocks to inline, in the order one-by-one inlining takes them."""
        heap = list(range(len(self.realizes)))
        dirty = set(heap)
        chosen: list[str] = []
        while heap:
            i = heapq.heappop(heap)
            if i not in dirty:
                continue
            dirty.discard(i)
            if not self.alive[i] or not self._qualifies(i):
                continue
            chosen.append(self.realizes[i].block.name_hint)
            for j in self._inline(i):
                if j not in dirty and self.alive[j]:
                    dirty.add(j)
                    heapq.heappush(heap, j)
        return chosen

    def block(self, i: int) -> Block:
        """Block i as it stands: its body with every value inlined so far in place."""
        got = self.current.get(i)
        if got is None:
            block = self.realizes[i].block
            got = block.replace(body=_InlineLoads(self.func, self.inlined).visit(block.body))
            self.current[i] = got
        return got

    def _qualifies(self, i: int) -> bool:
        block = self.realizes[i].block
        if self.kind[i] is not BlockKind.SPATIAL or len(block.writes) != 1:
            return False
        out = block.writes[0].buffer
        if id(out) in self.params:
            return False
        readers = sorted(self.readers[id(out)])
        # only a reduction can be a product (a spatial block has no product term)
        products = [self.block(j) for j in readers if self.reduces[j]]
        if _is_packing(products, block, lambda: self.block(i), self.writers.keys()):
            return False
        if self.transcendental[i] and _is_reread_transcendental(
            [self.block(j) for j in readers], out
        ):
            return False
        return self._legal(i)

    def _legal(self, i: int) -> bool:
        """compute_inline's rules hold for block i (they read its store, which inlining into it
        leaves in place, and the writers and opaque users of its buffer)."""
        if self.index is None:
            bufs = [w.buffer for r in self.realizes for w in r.block.writes]
            self.index = _InlineIndex(self.func, bufs)
        try:
            _check_inline(self.func, self.realizes[i], self.index)
        except ScheduleError:
            return False  # not inlinable here (e.g. read with other indices): it stays a block
        return True

    def _inline(self, i: int) -> set[int]:
        """Record block i as inlined; the blocks whose verdict may have changed."""
        r = self.realizes[i]
        store, buf, params = _check_inline(self.func, r, self.index)
        self.alive[i] = False
        self.inlined[id(buf)] = (buf, params, store.value)
        self.current.pop(i, None)
        moved = self.loaded[i] - {id(buf)}
        for b in self.loaded[i]:
            self.readers[b].discard(i)
        consumers = self.readers.pop(id(buf), set())
        self.readers[id(buf)] = set()
        touched = set(consumers)
        for c in consumers:
            self.loaded[c] = (self.loaded[c] - {id(buf)}) | moved
            self.transcendental[c] = self.transcendental[c] or self.transcendental[i]
            self.current.pop(c, None)
            for b in moved:
                self.readers[b].add(c)
            for b in self.loaded[c]:
                touched.update(self.writers.get(b, ()))
        for b in moved:
            touched.update(self.writers.get(b, ()))
        return touched


def _is_reread_transcendental(readers: list[Block], out: Any) -> bool:
    """A producer calling a transcendental op (exp, erf, tanh, ...; the caller checks that)
    whose output `out` is read more than once per element by `readers` (the blocks loading
    it): by two or more blocks (softmax's `exp(x - max)`, summed and then divided by the
    sum), or by a block reading one element at several of its own iterations (a load that
    leaves out one of its non-unit spatial iterators: softmax's normalisation read as the A
    of `P @ V`, along all the output columns). Inlined, the call would run once per read
    instead of once per element (attention 12x128x128: every exp 64 times), so it stays a
    stage, computed once, parallel and vectorized by the spatial rule (softmax with its exp
    staged, 2 threads: 128x768 92 -> 69 us, 1536x128 203 -> 127 us; nn.attention
    1x128x12x64 4.3 -> 1.5 ms)."""
    count = 0
    for block in readers:
        spatial = [
            iv.var
            for iv in block.iter_vars
            if iv.iter_type == IterType.DataPar and const_int(iv.dom.extent) != 1
        ]
        loads = [ld for ld in _loads(block.body) if ld.buffer is out]
        count += bool(loads)
        if count > 1 or any(not all(_uses(ld, v) for v in spatial) for ld in loads):
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


def _is_packing(
    blocks: list[Block],
    producer: Block,
    current: Callable[[], Block],
    written: Any = frozenset(),
) -> bool:
    """`producer` feeds a product (matmul, conv) among `blocks` and inlining it would put into
    that block's inner loop a conditional (the border test of a padding stage like a conv's
    `data_pad`) or a strided load along the vectorized output columns j (the transpose of
    `g @ W.T`): it stays a stage, writing a padded or packed copy once (parallel and
    vectorized by the spatial rule) that the product's register tile reads unguarded.
    `current()` gives the producer with what was inlined into it (its value), asked for only
    when a product reads it; `written` holds the ids of the buffers the function's blocks
    write (`_streams_inlined` decides a dot product's producers)."""
    store = producer.body
    if not isinstance(store, BufferStore) or not all(isinstance(i, Var) for i in store.indices):
        return False
    out = producer.writes[0].buffer
    facts: list = []  # (strided positions, conditional) of the current value, once needed

    def value_facts() -> tuple[set, bool]:
        if not facts:
            value = current().body.value
            strided = {
                pos
                for pos, v in enumerate(store.indices)
                if any(_uses(i, v) for ld in _loads(value) for i in ld.indices[:-1])
            }
            facts.append((strided, _is_conditional(value)))
        return facts[0]

    for block in blocks:
        term = _product_term(block)
        if term is None:
            continue
        streams = _streams_inlined(block, term, out, store, lambda: current().body.value, written)
        if streams is not None:
            if not streams:
                return True
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
            strided, conditional = value_facts()
            if conditional or any(
                id(idx) in vector_axes and pos in strided for pos, idx in enumerate(ld.indices)
            ):
                return True
    return False


def _streams_inlined(
    block: Block, term: Any, out: Any, store: BufferStore, value: Callable[[], Any], written: Any
) -> bool | None:
    """For a dot-product block (a product of few static rows and one reduction axis k that the
    row rule can split: a decode step's `x @ W.T`), whether the producer (`store`, its value
    given by `value()`) inlined into it would be read contiguously along k; None for any other
    block (the caller's packing rules decide).

    True: inline it. The dot-product rule (`schedule_row_reduction`) streams W in place, and a
    copy first (the transpose of W) only adds a strided pass over the whole weight per call
    (a 32000 x 1024 lm_head at one row: 773 ms a call with the copy; BENCHMARKS.md "LLM").
    False: keep it a stage (a reshape of x to the flat k, `a[.., k // 64, k % 64]`: inlined,
    every vector of x would be a gather; staged it is one small contiguous copy). Other
    operands varying with k must be contiguous along k already, or intermediates (their own
    producers are judged by this same rule)."""
    iters = block.iter_vars
    if not iters or iters[-1].iter_type != IterType.CommReduce:
        return None
    if sum(iv.iter_type != IterType.DataPar for iv in iters) != 1:
        return None
    spatial = [iv for iv in iters if iv.iter_type == IterType.DataPar]
    rows = const_int(spatial[-2].dom.extent) if len(spatial) >= 2 else 1
    if rows is None or rows >= MATMUL_PACK_MIN_ROWS_TRANSPOSED:
        return None
    k, extent = iters[-1].var, const_int(iters[-1].dom.extent)
    if extent is None or extent % 4:  # the row rule's vector split must divide k
        return None
    reads = _loads(term)
    for ld in reads:
        if ld.buffer is out or not _uses(ld, k) or _contiguous_along(ld, k):
            continue
        if id(ld.buffer) not in written:
            return None  # a function input read strided: the row rule cannot take the block
    for ld in (ld for ld in reads if ld.buffer is out):
        at = [p for p, idx in enumerate(ld.indices) if idx is k]
        if len(at) > 1 or any(_uses(idx, k) for p, idx in enumerate(ld.indices) if p not in at):
            return False
        if not at:
            continue
        kv = store.indices[at[0]]
        if any(_uses(inner, kv) and not _contiguous_along(inner, kv) for inner in _loads(value())):
            return False
    return True
