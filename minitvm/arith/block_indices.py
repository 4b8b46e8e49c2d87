"""Simplify the buffer indices of a PrimFunc with each block's iter vars bound to their domains.

Legalized reshapes index their input with the flat offset split back into digits,
`A[(i * 256 + j * 64 + k) // 256 % 128, ...]`; a fused kernel that inlines them carries those
divisions into the consumer's inner loop (GPT-2's attention reads q and k this way). With the
block's domains known (j < 4, k < 64) the digits fold back to `A[i, j * 64 + k]`.
Sound: a block's iter vars take only values inside their domains (the block's contract, which
the schedule verifier checks), and only integer load indices (and read regions) holding a
division change, to expressions equal to them at every such value; store indices, values and
predicates are left as written.
"""

from __future__ import annotations

from typing import Any

from ..tir.buffer import Buffer
from ..tir.expr import BufferLoad, Div, FloorDiv, FloorMod, Mod, PrimExpr, Range
from ..tir.function import PrimFunc
from ..tir.functor import Mutator, post_order_visit
from ..tir.stmt import Block, BufferRegion, BufferStore, For, Stmt
from .analyzer import Analyzer
from .canonical import is_index_dtype
from .simplify_stmt import _binds

_DIVISIONS = (FloorDiv, FloorMod, Div, Mod)


class _IndexSimplifier(Mutator):
    def __init__(self, ana: Analyzer) -> None:
        super().__init__()
        self.ana = ana

    def visit(self, n: Any) -> Any:
        out = super().visit(n)
        if isinstance(n, Stmt):
            # one object may sit in two scopes with different bindings: never reuse results
            self._memo.clear()
        return out

    def _index(self, e: PrimExpr) -> PrimExpr:
        if not is_index_dtype(e.dtype) or e.dtype.lanes != 1 or not _divides(e):
            # vector (ramp) indices are the vectorizer's; an index without a division stays
            # as written, since block rules match it by form (`C[i, j] = C[i, j] + ...` is
            # a reduction update even where a unit domain would fold `i` to 0)
            return e
        out = self.ana.simplify(e)
        return e if out.same_as(e) else out

    def _indices(self, indices: tuple) -> tuple:
        new = tuple(self._index(self.visit(i)) for i in indices)
        return indices if all(a is b for a, b in zip(new, indices)) else new

    def visit_Buffer(self, op: Buffer) -> Buffer:
        return op  # buffers are shared by identity; their shapes are not ours to rewrite

    def visit_BufferLoad(self, op: BufferLoad) -> PrimExpr:
        indices = self._indices(op.indices)
        return op if indices is op.indices else op.replace(indices=indices)

    def visit_BufferStore(self, op: BufferStore) -> Stmt:
        # store indices stay: compute_inline and the block rules read them as the iter vars
        value = self.visit(op.value)
        return op if value is op.value else op.replace(value=value)

    def visit_BufferRegion(self, op: BufferRegion) -> BufferRegion:
        # a read region keeps following its loads (a write region holds no division)
        region = tuple(
            Range.from_min_extent(self._index(r.min), self._index(r.extent)) for r in op.region
        )
        if all(a.min is b.min and a.extent is b.extent for a, b in zip(region, op.region)):
            return op
        return op.replace(region=region)

    def visit_For(self, op: For) -> Stmt:
        with self.ana._bind_scope(op.loop_var, Range.from_min_extent(op.min, op.extent)):
            return self.generic_visit(op)

    def visit_Block(self, op: Block) -> Stmt:
        with _binds(self.ana, [(iv.var, iv.dom) for iv in op.iter_vars if iv.dom is not None]):
            return self.generic_visit(op)


def _divides(e: PrimExpr) -> bool:
    found: list = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, _DIVISIONS) else None)
    return bool(found)


def simplify_block_indices(func: PrimFunc) -> PrimFunc:
    """`func` with every buffer index simplified under its blocks' iter var domains and its
    loops' ranges; `func` itself when nothing changed.

    `A[(i * 64 + k) // 256]` in a block with i < 4, k < 64 becomes `A[0]`.
    """
    body = _IndexSimplifier(Analyzer()).visit(func.body)
    return func if body is func.body else func.replace(body=body)
