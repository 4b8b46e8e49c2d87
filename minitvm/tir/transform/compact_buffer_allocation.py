"""Shrink each allocated buffer to the region its accesses touch inside the allocation.

After plan_and_update_buffer_allocation_location an intermediate lives inside the loop that
encloses all its uses, but still has its full shape: a `cache_write("local")` tile of a
1024x1024 output would be a 4 MiB stack array per tile. Here each dimension becomes the
extent of the accessed index range (the loops inside the allocation relaxed to their ranges)
when that extent is a constant smaller than the original, and every index is shifted by the
region's start, so the tile becomes a small constant-size array LLVM keeps in registers.

`Schedule.storage_align` asks for a padded row pitch: the writing block carries
`buffer_dim_align` entries, ConvertBlocksToLoops moves them onto the buffer's Allocate (as
(axis, factor, offset) triples, see `DimAligns`) and here the compacted buffer gets strides,
from the innermost dimension outwards, each raised to the next value with
stride % factor == offset. FlattenBuffer then indexes with those strides and sizes the flat
allocation by the padded extent.
"""

from __future__ import annotations

from typing import Any

from ...error import BuildError
from ...ir.node import FrozenDict
from ...ir.structural import structural_equal
from ..analysis.thread_scope import shares_storage
from ..buffer import Buffer
from ..expr import (
    Add,
    BufferLoad,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    PrimExpr,
    Range,
    Sub,
    binary,
    const_value,
)
from ..function import PrimFunc
from ..functor import Mutator, Visitor, post_order_visit
from ..stmt import Allocate, Block, BufferStore, DeclBuffer, For, ForKind, LetStmt, Stmt
from ._pass import prim_func_pass

# On a Block: TVM's [[buffer_index, axis, factor, offset], ...] (Schedule.storage_align). On an
# Allocate: ((axis, factor, offset), ...) for the buffer it allocates, consumed here.
DIM_ALIGN = "buffer_dim_align"


class DimAligns:
    """The storage_align requests of the blocks lowered so far, per written buffer; the block
    pass records each block and annotates the Allocate of each buffer it allocates."""

    def __init__(self) -> None:
        self.by_buffer: dict[int, dict[int, tuple[int, int, str]]] = {}  # axis -> req, block

    def record(self, block: Block) -> None:
        """Remember `block`'s buffer_dim_align entries (checked) against the buffers it writes."""
        raw = block.annotations.get(DIM_ALIGN)
        if raw is None:
            return
        for entry in raw if isinstance(raw, list | tuple) else [raw]:
            index, axis, factor, offset = _entry(block, entry)
            buf = block.writes[index].buffer
            if not -len(buf.shape) <= axis < len(buf.shape):
                raise BuildError(
                    f"block '{block.name_hint}': {DIM_ALIGN} entry {list(entry)!r} aligns axis "
                    f"{axis} of '{buf.name}', which has {len(buf.shape)} dimensions"
                )
            axis %= len(buf.shape)
            seen = self.by_buffer.setdefault(id(buf), {})
            old = seen.get(axis)
            if old is not None and old[:2] != (factor, offset % factor):
                raise BuildError(
                    f"'{buf.name}' axis {axis}: block '{old[2]}' aligns it with factor "
                    f"{old[0]}, offset {old[1]} but block '{block.name_hint}' with factor "
                    f"{factor}, offset {offset % factor}; give both blocks the same storage_align"
                )
            seen[axis] = (factor, offset % factor, block.name_hint)

    def annotate(self, alloc: Allocate, buf: Buffer) -> Allocate:
        """`alloc` (of `buf`) carrying the alignment the blocks asked for `buf`, if any."""
        seen = self.by_buffer.get(id(buf))
        if not seen:
            return alloc
        triples = tuple((axis, f, o) for axis, (f, o, _) in sorted(seen.items()))
        return alloc.replace(annotations=FrozenDict({**alloc.annotations, DIM_ALIGN: triples}))


def _entry(block: Block, entry: Any) -> tuple[int, int, int, int]:
    """One [buffer_index, axis, factor, offset] entry as ints, or a BuildError naming it."""
    vals = (
        [const_value(x) if isinstance(x, PrimExpr) else x for x in entry]
        if isinstance(entry, list | tuple)
        else []
    )
    ok = len(vals) == 4 and all(isinstance(v, int) for v in vals)
    if ok and 0 <= vals[0] < len(block.writes) and vals[2] > 0:
        return vals[0], vals[1], vals[2], vals[3]
    raise BuildError(
        f"block '{block.name_hint}': {DIM_ALIGN} entry {entry!r} is not [buffer_index, axis, "
        f"factor, offset] with buffer_index < {len(block.writes)} (the buffers the block "
        "writes) and factor > 0; use Schedule.storage_align to set it"
    )


def aligned_strides(shape: tuple, aligns: tuple) -> tuple:
    """Strides of `shape` (innermost first) with stride[axis] raised to the next value that is
    offset modulo factor, for each (axis, factor, offset) of `aligns`."""
    from ...arith import Analyzer

    ana = Analyzer()
    table = {axis: (factor, offset) for axis, factor, offset in aligns}
    if not shape:
        return ()
    dtype = shape[0].dtype
    stride: PrimExpr = IntImm(dtype, 1)
    out: list[PrimExpr] = [stride] * len(shape)
    for dim in reversed(range(len(shape))):
        if dim in table:
            factor, offset = (IntImm(dtype, v) for v in table[dim])
            pad = binary(
                FloorMod,
                binary(Sub, binary(Add, factor, offset), binary(FloorMod, stride, factor)),
                factor,
            )
            stride = ana.simplify(binary(Add, stride, pad))
        out[dim] = stride
        stride = ana.simplify(binary(Mul, stride, shape[dim]))
    return tuple(out)


def _allocate_aligns(alloc: Allocate, buf: Buffer) -> tuple | None:
    """The (axis, factor, offset) triples on `alloc` as ints (checked), or None."""
    raw = alloc.annotations.get(DIM_ALIGN)
    if raw is None:
        return None
    out = []
    for triple in raw:
        vals = tuple(const_value(x) if isinstance(x, PrimExpr) else x for x in triple)
        ok = len(vals) == 3 and all(isinstance(v, int) for v in vals)
        if not (ok and 0 <= vals[0] < len(buf.shape) and vals[1] > 0):
            raise BuildError(
                f"allocation of '{buf.name}': {DIM_ALIGN} {raw!r} must hold (axis, factor, "
                f"offset) triples with 0 <= axis < {len(buf.shape)} and factor > 0"
            )
        out.append((vals[0], vals[1], vals[2] % vals[1]))
    return tuple(out)


class _Accesses(Visitor):
    """Index tuples of every access to `buf` in a statement, and the loops defined inside it."""

    def __init__(self, buf: Buffer) -> None:
        self.buf = buf
        self.indices: list[tuple] = []
        self.loops: dict[Any, Range] = {}
        self.inner: set[int] = set()  # ids of every var defined inside the statement

    def visit_LetStmt(self, let: LetStmt) -> None:
        self.inner.add(id(let.var))
        self.generic_visit(let)

    def visit_For(self, loop: For) -> None:
        self.loops[loop.loop_var] = Range.from_min_extent(loop.min, loop.extent)
        self.inner.add(id(loop.loop_var))
        self.generic_visit(loop)

    def visit_BufferLoad(self, load: BufferLoad) -> None:
        if load.buffer is self.buf:
            self.indices.append(load.indices)
        self.generic_visit(load)

    def visit_BufferStore(self, store: BufferStore) -> None:
        if store.buffer is self.buf:
            self.indices.append(store.indices)
        self.generic_visit(store)


def _region(
    buf: Buffer, body: Stmt, shared: tuple[For, ...] = (), outer: tuple[For, ...] = ()
) -> list[tuple[PrimExpr, PrimExpr]] | None:
    """(start, extent) per dimension of what `body` touches, or None when nothing shrinks;
    `shared` are the enclosing thread loops whose threads all use the one allocation, `outer`
    every enclosing loop (a unit one's var equals its start)."""
    from ...arith import Analyzer  # arith sits below tir.transform in the pipeline

    acc = _Accesses(buf)
    acc.visit(body)
    for loop in shared:  # every thread of the block fills its part of a shared buffer
        acc.loops[loop.loop_var] = Range.from_min_extent(loop.min, loop.extent)
        acc.inner.add(id(loop.loop_var))
    if not acc.indices:
        return None
    ana = Analyzer()
    for loop in outer:  # a unit loop's var is its start (a TE stage's `yy_c` of extent 1)
        if isinstance(loop.extent, IntImm) and loop.extent.value == 1:
            ana.bind(loop.loop_var, loop.min)
    out, shrunk = [], False
    for dim, extent in enumerate(buf.shape):
        sets = [_index_set(ana, i, acc) for i in _distinct(idx[dim] for idx in acc.indices)]
        if not all(s.has_lower_bound() and s.has_upper_bound() for s in sets):
            out.append((IntImm(extent.dtype, 0), extent))
            continue
        lo = _bound(ana, Min, min, [s.min_value for s in sets])
        hi = _bound(ana, Max, max, [s.max_value for s in sets])
        new = ana.simplify(binary(Sub, hi, lo) + 1)
        smaller = isinstance(new, IntImm) and (
            not isinstance(extent, IntImm) or new.value < extent.value
        )
        if smaller and new.value > 0 and not _uses(lo, acc.inner):
            out.append((lo, new))
            shrunk = True
        else:
            out.append((IntImm(extent.dtype, 0), extent))
    return out if shrunk else None


def _index_set(ana: Any, index: PrimExpr, acc: _Accesses) -> Any:
    """The values of `index` over the relaxed loops; a point when it uses none of them (the
    interval analysis cannot bound `i // 14` of a free `i`, but it is one element)."""
    from ...arith.int_set import IntervalSet

    if not _uses(index, {id(v) for v in acc.loops}):
        return IntervalSet.point(index)
    return ana.int_set(index, acc.loops)


def _distinct(exprs: Any) -> list[PrimExpr]:
    """`exprs` without repeats (the load and store of `C[i, j] += ...` index alike)."""
    out: list[PrimExpr] = []
    for e in exprs:
        if not any(e is o or structural_equal(e, o) for o in out):
            out.append(e)
    return out


def _bound(ana: Any, cls: type, pick: Any, items: list[PrimExpr]) -> PrimExpr:
    """The Min (or Max) of `items`: computed directly when all are constants (most tiles)."""
    if all(isinstance(x, IntImm) for x in items):
        return IntImm(items[0].dtype, pick(x.value for x in items))
    return ana.simplify(_fold(cls, items))


def _uses(e: PrimExpr, var_ids: set[int]) -> bool:
    found = []
    post_order_visit(e, lambda n: found.append(n) if id(n) in var_ids else None)
    return bool(found)


def _fold(cls: type, items: list[PrimExpr]) -> PrimExpr:
    acc = items[0]
    for x in items[1:]:
        acc = binary(cls, acc, x)
    return acc


class _Rebase(Mutator):
    """Point every access of `old` at `new`, indices shifted by the region start."""

    def __init__(self, old: Buffer, new: Buffer, starts: list[PrimExpr]) -> None:
        from ...arith import Analyzer

        super().__init__()
        self.old, self.new, self.starts = old, new, starts
        self.ana = Analyzer()

    def _shift(self, indices: tuple) -> tuple:
        return tuple(self.ana.simplify(binary(Sub, i, s)) for i, s in zip(indices, self.starts))

    def visit_BufferLoad(self, load: BufferLoad) -> PrimExpr:
        load = self.generic_visit(load)
        if load.buffer is not self.old:
            return load
        return BufferLoad(self.new, self._shift(load.indices), load.dtype)

    def visit_BufferStore(self, store: BufferStore) -> Stmt:
        store = self.generic_visit(store)
        if store.buffer is not self.old:
            return store
        return BufferStore(self.new, store.value, self._shift(store.indices))


class _Compact(Mutator):
    def __init__(self) -> None:
        super().__init__()
        self.loops: list[For] = []  # enclosing loops, outermost first

    def visit_For(self, loop: For) -> Stmt:
        self.loops.append(loop)
        try:
            return self.generic_visit(loop)
        finally:
            self.loops.pop()

    def visit_Allocate(self, alloc: Allocate) -> Stmt:
        alloc = self.generic_visit(alloc)
        decl = alloc.body
        if not isinstance(decl, DeclBuffer) or decl.buffer.data is not alloc.buffer_var:
            return alloc
        buf = decl.buffer
        scope = buf.scope()
        shared = tuple(
            f
            for f in self.loops
            if f.kind == ForKind.THREAD_BINDING
            and f.thread_binding is not None
            and shares_storage(f.thread_binding.thread_tag, scope)
        )
        outer = tuple(f for f in self.loops if not any(f is g for g in shared))
        region = _region(buf, decl.body, shared, outer)
        aligns = _allocate_aligns(alloc, buf)
        if region is None and aligns is None:
            return alloc
        if region is None:
            region = [(IntImm(e.dtype, 0), e) for e in buf.shape]
        shape = tuple(ext for _, ext in region)
        strides = aligned_strides(shape, aligns) if aligns is not None else ()
        new = buf.replace(shape=shape, strides=strides)
        body = _Rebase(buf, new, [lo for lo, _ in region]).visit(decl.body)
        annotations = FrozenDict({k: v for k, v in alloc.annotations.items() if k != DIM_ALIGN})
        return alloc.replace(extents=shape, body=DeclBuffer(new, body), annotations=annotations)


def compact_buffer_allocation(func: PrimFunc) -> PrimFunc:
    """Shrink allocations to the constant-size region their accesses touch (see module doc)."""
    return func.replace(body=_Compact().visit(func.body))


def CompactBufferAllocation(is_strict: bool = True) -> Any:
    """TVM's pass: compact the `T.alloc_buffer`s of opaque blocks (`compact_buffer_region`,
    `is_strict` keeps regions inside the original shape) and of Allocate + DeclBuffer pairs."""
    from .compact_buffer_region import compact_buffer_region

    def run(func: PrimFunc) -> PrimFunc:
        return compact_buffer_region(func, is_strict)

    run.__name__ = "compact_buffer_allocation"
    return prim_func_pass(run, "CompactBufferAllocation")()
