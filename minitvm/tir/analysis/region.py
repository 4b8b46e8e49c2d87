"""Buffer access regions of blocks, and symbolic interval bounds of index expressions.

The scheduler uses these to find which part of a buffer a loop nest touches
(compute_at, reverse_compute_at) and to rebuild a block's `reads`/`writes` after a rewrite.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..expr import (
    Add,
    BufferLoad,
    Cast,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    PrimExpr,
    Range,
    Sub,
    Var,
    binary,
)
from ..functor import Visitor
from ..stmt import Block, BufferRegion, BufferStore

Interval = tuple[PrimExpr, PrimExpr]  # inclusive [lo, hi]
Simplify = Callable[[PrimExpr], PrimExpr]


def _const(e: PrimExpr) -> int | None:
    return e.value if isinstance(e, IntImm) else None


def _mentions(e: PrimExpr, dom: Mapping[int, Interval]) -> bool:
    found = False

    class _Find(Visitor):
        def visit_Var(self, v: Var) -> None:
            nonlocal found
            found = found or id(v) in dom

    _Find().visit(e)
    return found


def _bound_add(a: Interval, b: Interval) -> Interval:
    return binary(Add, a[0], b[0]), binary(Add, a[1], b[1])


def _bound_sub(a: Interval, b: Interval) -> Interval:
    return binary(Sub, a[0], b[1]), binary(Sub, a[1], b[0])


def _scale(a: Interval, c: int, op: type) -> Interval:
    lo, hi = binary(op, a[0], c), binary(op, a[1], c)
    return (lo, hi) if c >= 0 else (hi, lo)


def _bound_mul(a: Interval, b: Interval, ea: PrimExpr, eb: PrimExpr) -> Interval | None:
    cb, ca = _const(eb), _const(ea)
    if cb is not None:
        return _scale(a, cb, Mul)
    if ca is not None:
        return _scale(b, ca, Mul)
    return None


def _bound_floordiv(a: Interval, b: Interval, ea: PrimExpr, eb: PrimExpr) -> Interval | None:
    c = _const(eb)
    if c is not None and c > 0:
        return _scale(a, c, FloorDiv)
    return None


def _bound_floormod(a: Interval, b: Interval, ea: PrimExpr, eb: PrimExpr) -> Interval | None:
    c = _const(eb)
    if c is not None and c > 0:
        return IntImm(eb.dtype, 0), IntImm(eb.dtype, c - 1)
    return None


def _bound_min(a: Interval, b: Interval) -> Interval:
    return binary(Min, a[0], b[0]), binary(Min, a[1], b[1])


def _bound_max(a: Interval, b: Interval) -> Interval:
    return binary(Max, a[0], b[0]), binary(Max, a[1], b[1])


# node class -> how its interval follows from its operands' intervals
_MONOTONE = {Add: _bound_add, Sub: _bound_sub, Min: _bound_min, Max: _bound_max}
_WITH_OPERANDS = {Mul: _bound_mul, FloorDiv: _bound_floordiv, FloorMod: _bound_floormod}


def eval_interval(e: PrimExpr, dom: Mapping[int, Interval]) -> Interval | None:
    """Inclusive symbolic bounds of integer `e` when each Var id in `dom` ranges over its interval.

    Returns None when `e` depends on a ranged variable in a way we cannot bound.
    """
    if not _mentions(e, dom):
        return e, e
    if isinstance(e, Var):
        return dom[id(e)]
    if isinstance(e, Cast):
        inner = eval_interval(e.value, dom)
        return None if inner is None else (Cast(e.dtype, inner[0]), Cast(e.dtype, inner[1]))
    cls = type(e)
    if cls in _MONOTONE or cls in _WITH_OPERANDS:
        a, b = eval_interval(e.a, dom), eval_interval(e.b, dom)
        if a is None or b is None:
            return None
        if cls in _MONOTONE:
            return _MONOTONE[cls](a, b)
        return _WITH_OPERANDS[cls](a, b, e.a, e.b)
    return None


def range_to_interval(r: Range) -> Interval:
    return r.min, binary(Sub, binary(Add, r.min, r.extent), 1)


def loop_domain(loops: Any) -> dict[int, Interval]:
    """The interval of each loop var of the given For loops."""
    return {id(f.loop_var): range_to_interval(Range.from_min_extent(f.min, f.extent)) for f in loops}


def region_interval(
    region: BufferRegion, dom: Mapping[int, Interval], simplify: Simplify
) -> list[Interval | None]:
    """Per dimension, the bounds of `region` (None where unbounded)."""
    out: list[Interval | None] = []
    for r in region.region:
        lo = eval_interval(r.min, dom)
        last = eval_interval(binary(Sub, binary(Add, r.min, r.extent), 1), dom)
        if lo is None or last is None:
            out.append(None)
        else:
            out.append((simplify(lo[0]), simplify(last[1])))
    return out


# ----------------------------------------------------------------------------- access regions


class _Accesses(Visitor):
    def __init__(self) -> None:
        self.reads: dict[int, tuple[Any, list[tuple]]] = {}
        self.writes: dict[int, tuple[Any, list[tuple]]] = {}
        self.loops: dict[int, Interval] = {}  # loops inside the analysed block

    def visit_For(self, loop: Any) -> None:
        self.loops[id(loop.loop_var)] = range_to_interval(Range.from_min_extent(loop.min, loop.extent))
        self.generic_visit(loop)

    def visit_BlockRealize(self, realize: Any) -> None:
        # a nested block declares its own accesses in its iter vars: put their bindings in,
        # then cover every value of the loops between the two blocks
        from ..functor import substitute

        block = realize.block
        vmap = {iv.var: v for iv, v in zip(block.iter_vars, realize.iter_values)}
        for table, regions in ((self.reads, block.reads), (self.writes, block.writes)):
            for r in regions:
                region = substitute(r, vmap) if vmap else r
                table.setdefault(id(r.buffer), (r.buffer, []))[1].append(self._relaxed(region))

    def visit_AttrStmt(self, s: Any) -> None:
        # a thread launched inside the block (T.launch_thread) ranges over [0, extent) there
        if s.attr_key in ("thread_extent", "virtual_thread") and hasattr(s.node, "var"):
            self.loops[id(s.node.var)] = range_to_interval(Range.from_min_extent(0, s.value))
        self.generic_visit(s)

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        self.reads.setdefault(id(e.buffer), (e.buffer, []))[1].append(self._point(e))
        self.generic_visit(e)

    def visit_BufferStore(self, s: BufferStore) -> None:
        self.writes.setdefault(id(s.buffer), (s.buffer, []))[1].append(self._point(s))
        self.generic_visit(s)

    def _point(self, access: Any) -> tuple:
        """The access's indices; relaxed to ranges over the loops and threads inside the block
        when they mention them (those variables do not exist outside the block)."""
        if not self.loops or not any(_mentions(i, self.loops) for i in access.indices):
            return access.indices
        region = BufferRegion(access.buffer, tuple(Range.from_min_extent(i, 1) for i in access.indices))
        return self._relaxed(region)

    def _relaxed(self, region: BufferRegion) -> tuple:
        out = []
        for dim, r in zip(region.buffer.shape, region.region):
            lo = eval_interval(r.min, self.loops)
            hi = eval_interval(binary(Sub, binary(Add, r.min, r.extent), 1), self.loops)
            if lo is None or hi is None:
                out.append(Range.from_min_extent(0, dim))  # not boundable: the whole dimension
            elif lo[0] is r.min and hi[1] is not None and _same(hi[0], hi[1]):
                out.append(r)  # no inner loop involved: as written
            else:  # relaxed over inner loops: simplified, as TVM's interval sets come out
                ana = _analyzer()
                extent = binary(Add, binary(Sub, hi[1], lo[0]), 1)
                out.append(Range.from_min_extent(ana.simplify(lo[0]), ana.simplify(extent)))
        return tuple(out)


def _analyzer() -> Any:
    from ...arith import Analyzer

    return Analyzer()


def _same(a: PrimExpr, b: PrimExpr) -> bool:
    from ...ir.structural import structural_equal

    return structural_equal(a, b)


def _union_dim(items: list, dim_extent: PrimExpr, simplify: Simplify) -> Range:
    """Union of the per-access indices (PrimExpr points or Ranges) along one dimension."""
    ranges = [x if isinstance(x, Range) else Range.from_min_extent(x, 1) for x in items]
    first = ranges[0]
    if all(_same(r.min, first.min) and _same(r.extent, first.extent) for r in ranges[1:]):
        return first
    offsets = _constant_offsets(ranges)
    if offsets is not None:  # A[i], A[i + 1], A[i + 2]: one window [i, i + 3)
        lo_off, hi_off = offsets
        lo = simplify(binary(Add, first.min, lo_off)) if lo_off else first.min
        return Range.from_min_extent(lo, IntImm(first.min.dtype, hi_off - lo_off))
    lo = ranges[0].min
    hi = binary(Add, ranges[0].min, ranges[0].extent)
    for r in ranges[1:]:
        lo = binary(Min, lo, r.min)
        hi = binary(Max, hi, binary(Add, r.min, r.extent))
    lo, hi = simplify(lo), simplify(hi)
    if isinstance(lo, Min | Max) or isinstance(hi, Min | Max):
        return Range.from_min_extent(0, dim_extent)  # not comparable symbolically: the whole dimension
    return Range.from_min_extent(lo, simplify(binary(Sub, hi, lo)))


def _constant_offsets(ranges: list) -> tuple[int, int] | None:
    """(lowest start, highest end) of `ranges` relative to the first one's start when every
    range has a constant extent and starts a constant away from it; else None."""
    first = ranges[0].min
    ana = None
    lo, hi = None, None
    for r in ranges:
        ext = _const(r.extent)
        if ext is None:
            return None
        if _same(r.min, first):
            off = 0
        else:
            ana = ana or _analyzer()
            off = _const(ana.simplify(binary(Sub, r.min, first)))
            if off is None:
                return None
        lo = off if lo is None else min(lo, off)
        hi = off + ext if hi is None else max(hi, off + ext)
    return lo, hi


def _regions(table: dict, simplify: Simplify) -> tuple[BufferRegion, ...]:
    out = []
    for buf, accesses in table.values():
        dims = []
        for d in range(len(buf.shape)):
            dims.append(_union_dim([acc[d] for acc in accesses], buf.shape[d], simplify))
        out.append(BufferRegion(buf, tuple(dims)))
    return tuple(out)


def infer_access_regions(
    block: Block, simplify: Simplify = lambda e: e
) -> tuple[tuple[BufferRegion, ...], tuple[BufferRegion, ...]]:
    """(reads, writes) of `block` from its body and init, in terms of its iter vars.

    As in TVM's script completion, a block with an init leaves the buffers it writes (a
    reduction's accumulator) out of its reads; a block without one lists them in both.
    """
    acc = _Accesses()
    if block.init is not None:
        acc.visit(block.init)
    acc.visit(block.body)
    local = {id(b) for b in block.alloc_buffers}
    unread = local | set(acc.writes) if block.init is not None else local
    reads = {k: v for k, v in acc.reads.items() if k not in unread}
    writes = {k: v for k, v in acc.writes.items() if k not in local}
    return _regions(reads, simplify), _regions(writes, simplify)
