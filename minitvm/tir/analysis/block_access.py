"""`get_block_access_region` / `get_block_read_write_region`: a block's buffer regions from its body.

Only buffers whose data var is a key of `buffer_var_map` are reported (TVM's contract: the
caller names the buffers visible outside the block). A buffer used through its data var (an
extern call's argument, `T.evaluate(D.data)`, `access_ptr("rw")`) is an *opaque* access to its
whole region; `access_ptr("r")` / `("w")` are whole-region reads / writes. Accesses through a
block's match_buffers are mapped back onto their source buffer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..expr import Add, BufferLoad, Call, IntImm, Range, Var, binary
from ..names import TVM_ACCESS_PTR
from ..stmt import Block, BufferStore
from .region import _Accesses, _regions

_READ, _WRITE = 1, 2  # tvm_access_ptr's access mask bits


def _full(buf: Any) -> tuple:
    return tuple(Range.from_min_extent(0, d) for d in buf.shape)


class _BlockAccesses(_Accesses):
    """Reads, writes and opaque accesses of one block, restricted to the visible buffers."""

    def __init__(self, buffer_var_map: Mapping[Var, Any]) -> None:
        super().__init__()
        self.visible = {id(v): b for v, b in buffer_var_map.items()}
        self.opaques: dict[int, tuple[Any, list[tuple]]] = {}
        self.matched: dict[int, Any] = {}  # id(match buffer's data) -> MatchBufferRegion
        self.lets: dict[Var, Any] = {}

    def start(self, block: Block) -> None:
        for m in block.match_buffers:
            if id(m.source.buffer.data) in self.visible:
                self.matched[id(m.buffer.data)] = m
                self.visible[id(m.buffer.data)] = m.buffer

    def record(self, table: dict, buf: Any, access: tuple) -> None:
        if id(buf.data) not in self.visible:
            return
        match = self.matched.get(id(buf.data))
        if match is not None:
            buf, access = match.source.buffer, _onto_source(match, access)
        table.setdefault(id(buf), (buf, []))[1].append(access)

    def _substituted(self, access: Any) -> Any:
        if not self.lets:
            return access
        from ..functor import substitute

        return access.replace(indices=tuple(substitute(i, self.lets) for i in access.indices))

    def visit_LetStmt(self, s: Any) -> None:
        self.visit(s.value)
        self.lets[s.var] = s.value
        self.visit(s.body)

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        self.record(self.reads, e.buffer, self._point(self._substituted(e)))
        self.visit(e.indices)

    def visit_BufferStore(self, s: BufferStore) -> None:
        self.record(self.writes, s.buffer, self._point(self._substituted(s)))
        self.visit(s.value)
        self.visit(s.indices)

    def visit_BlockRealize(self, realize: Any) -> None:
        saved = self.reads, self.writes
        self.reads, self.writes = {}, {}
        super().visit_BlockRealize(realize)  # the child's declared regions, relaxed
        inner = self.reads, self.writes
        self.reads, self.writes = saved
        for mine, theirs in zip((self.reads, self.writes), inner):
            for buf, accesses in theirs.values():
                for access in accesses:
                    self.record(mine, buf, access)

    def visit_Var(self, v: Var) -> None:
        buf = self.visible.get(id(v))
        if buf is not None:
            self.record(self.opaques, buf, _full(buf))

    def visit_Call(self, e: Call) -> None:
        if getattr(e.op, "name", None) == TVM_ACCESS_PTR and isinstance(e.args[1], Var):
            mask = e.args[4]
            buf = self.visible.get(id(e.args[1]))
            if buf is not None and isinstance(mask, IntImm):
                both = mask.value & _READ and mask.value & _WRITE
                table = self.opaques if both else self.reads if mask.value & _READ else self.writes
                self.record(table, buf, _full(buf))
            return
        self.generic_visit(e)

    def visit_Allocate(self, s: Any) -> None:  # defines its buffer var: not a use
        self.visit(s.extents)
        self.visit(s.condition)
        self.visit(s.body)


def _onto_source(match: Any, access: tuple) -> tuple:
    """An access to a match buffer as the region of its source buffer it touches."""
    source = match.source.region
    lead = len(source) - len(access)
    out = list(source[:lead])
    for r, a in zip(source[lead:], access):
        a = a if isinstance(a, Range) else Range.from_min_extent(a, 1)
        at_start = isinstance(a.min, IntImm) and a.min.value == 0
        out.append(
            Range.from_min_extent(r.min if at_start else binary(Add, r.min, a.min), a.extent)
        )
    return tuple(out)


def _detect(block: Block, buffer_var_map: Mapping[Var, Any]) -> tuple[_BlockAccesses, Any]:
    from ...arith import Analyzer

    acc = _BlockAccesses(buffer_var_map)
    acc.start(block)
    if block.init is not None:
        acc.visit(block.init)
    acc.visit(block.body)
    return acc, Analyzer().simplify


def get_block_access_region(block: Block, buffer_var_map: Mapping[Var, Any]) -> list[list]:
    """[reads, writes, opaque accesses] of `block` (each a list of BufferRegion), as TVM's
    `tir.analysis.get_block_access_region`; a block with an init leaves its written buffers
    out of the reads."""
    acc, simplify = _detect(block, buffer_var_map)
    writes = _regions(acc.writes, simplify)
    skip = {id(w.buffer) for w in writes} if block.init is not None else set()
    reads = _regions({k: v for k, v in acc.reads.items() if k not in skip}, simplify)
    return [list(reads), list(writes), list(_regions(acc.opaques, simplify))]


def get_block_read_write_region(block: Block, buffer_var_map: Mapping[Var, Any]) -> list[list]:
    """[reads, writes] of `block`, with each opaque access counted as both a read and a write
    of its buffer (and that buffer's precise accesses dropped), as TVM's function of that name."""
    acc, simplify = _detect(block, buffer_var_map)
    opaques = _regions(acc.opaques, simplify)
    skip = {id(o.buffer) for o in opaques}
    writes = _regions({k: v for k, v in acc.writes.items() if k not in skip}, simplify)
    if block.init is not None:
        skip |= {id(w.buffer) for w in writes}
    reads = _regions({k: v for k, v in acc.reads.items() if k not in skip}, simplify)
    return [list(reads) + list(opaques), list(writes) + list(opaques)]
