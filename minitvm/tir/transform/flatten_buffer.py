"""Flatten every multi-dimensional buffer access to a 1-D access at the element offset.

With `keep_axis_separators=True` (TVM's FlattenBuffer, used for lowered-IR display) a dense
buffer with axis_separators instead becomes an N-d physical buffer, one dimension per group of
logical axes between separators. Codegen takes only 1-D accesses, so the build pipeline uses
the default: for dense memory the full flattening addresses the very same elements.

Offsets are computed in int32 when the buffer provably spans fewer than 2**31 elements (the
common case: cheaper arithmetic, and what vectorization expects) and in int64 otherwise: a
buffer with a symbolic dim, or a static one of 2**31 elements or more, would overflow int32
offsets (`i * m + j` wraps for an int8 (32769, 65536) array). Loop variables keep their
dtype; they are cast to int64 where such an offset is formed.
"""

from __future__ import annotations

from functools import reduce
from itertools import pairwise

from ...ir.dtype import DataType
from ..buffer import Buffer
from ..expr import Add, BufferLoad, IntImm, Mul, PrimExpr, Sub, binary, cast, const_value
from ..function import PrimFunc
from ..functor import Mutator
from ..stmt import Allocate, BufferStore, DeclBuffer, Stmt
from ._pass import prim_func_pass

INT32 = DataType("int32")
INT64 = DataType("int64")
_INT32_LIMIT = 2**31


def _is_flat(buf: Buffer) -> bool:
    offset = buf.elem_offset
    zero = isinstance(offset, IntImm) and offset.value == 0
    return len(buf.shape) == 1 and not buf.strides and zero


def _static_span(buf: Buffer) -> int | None:
    """One past the largest element offset of `buf` when its layout is all constants."""
    dims = [const_value(x) for x in (*buf.shape, *buf.strides, buf.elem_offset)]
    if any(d is None for d in dims):
        return None
    shape = dims[: len(buf.shape)]
    if any(s == 0 for s in shape):
        return 0
    if buf.strides:
        strides = dims[len(buf.shape) : -1]
        last = sum((s - 1) * abs(st) for s, st in zip(shape, strides))
        return dims[-1] + last + 1
    return dims[-1] + reduce(lambda a, b: a * b, shape, 1)


def index_dtype(buf: Buffer) -> DataType:
    """int64 unless every offset into `buf` provably fits in int32."""
    layout = (*buf.shape, *buf.strides, buf.elem_offset)
    if any(x.dtype.bits > 32 for x in layout):
        return INT64
    span = _static_span(buf)
    return INT32 if span is not None and span < _INT32_LIMIT else INT64


def _widen(x: PrimExpr, dtype: DataType) -> PrimExpr:
    return x if x.dtype.bits >= dtype.bits else cast(dtype, x)


def flat_extent(buf: Buffer) -> PrimExpr:
    """Number of elements a flat view of `buf` spans (from its shape, or its strides)."""
    dtype = index_dtype(buf)
    shape = [_widen(s, dtype) for s in buf.shape]
    if not shape:
        return IntImm(dtype, 1)
    if not buf.strides:
        return reduce(lambda a, b: binary(Mul, a, b), shape)
    strides = [_widen(st, dtype) for st in buf.strides]
    last = [binary(Mul, binary(Sub, s, 1), st) for s, st in zip(shape, strides)]
    return binary(Add, reduce(lambda a, b: binary(Add, a, b), last), 1)


def flat_view(buf: Buffer) -> Buffer:
    """A 1-D buffer over the same data var as `buf`."""
    return Buffer(
        buf.data,
        buf.dtype,
        (flat_extent(buf),),
        name=buf.name,
        storage_scope=buf.storage_scope,
        data_alignment=buf.data_alignment,
    )


def flat_offset(buf: Buffer, indices: tuple) -> PrimExpr:
    """The element offset of `buf[indices]`, in `index_dtype(buf)`."""
    dtype = index_dtype(buf)
    if dtype == INT32:
        return buf.offset_of(indices)
    wide = buf.replace(
        shape=tuple(_widen(s, dtype) for s in buf.shape),
        strides=tuple(_widen(s, dtype) for s in buf.strides),
        elem_offset=_widen(buf.elem_offset, dtype),
    )
    return wide.offset_of(tuple(_widen(i, dtype.with_lanes(i.dtype.lanes)) for i in indices))


def _flat_alloc_extent(extents: tuple) -> PrimExpr:
    """The product of an allocation's extents, in int64 when it may not fit int32."""
    values = [const_value(e) for e in extents]
    static = all(v is not None for v in values) and all(e.dtype.bits <= 32 for e in extents)
    small = static and reduce(lambda a, b: a * b, values, 1) < _INT32_LIMIT
    dtype = INT32 if small else INT64
    wide = (_widen(e, dtype) for e in extents)
    return reduce(lambda a, b: binary(Mul, a, b), wide, IntImm(dtype, 1))


def axis_groups(buf: Buffer) -> list[range] | None:
    """The logical axes of each physical dimension of a dense `buf` with axis_separators
    (separator 2 of a 3-d buffer: axes 0-1, then axis 2); None when it flattens to 1-D."""
    seps = sorted(set(buf.axis_separators))
    dense = not buf.strides and const_value(buf.elem_offset) == 0
    if not seps or not dense or seps[0] <= 0 or seps[-1] >= len(buf.shape):
        return None  # a strided or offset view, or an out-of-range separator: plain 1-D
    bounds = [0, *seps, len(buf.shape)]
    return [range(a, b) for a, b in pairwise(bounds)]


def _group_view(buf: Buffer, groups: list[range]) -> Buffer:
    """An N-d buffer over `buf`'s data, one dimension per group (their extents' product)."""
    parts = [buf.replace(shape=tuple(buf.shape[k] for k in g), axis_separators=()) for g in groups]
    return Buffer(
        buf.data,
        buf.dtype,
        tuple(flat_extent(p) for p in parts),
        name=buf.name,
        storage_scope=buf.storage_scope,
        data_alignment=buf.data_alignment,
        axis_separators=tuple(range(1, len(groups))),
    )


def _group_offsets(buf: Buffer, groups: list[range], indices: tuple) -> tuple:
    """One row-major offset per group of `indices`."""
    out = []
    for g in groups:
        part = buf.replace(shape=tuple(buf.shape[k] for k in g), axis_separators=())
        out.append(flat_offset(part, tuple(indices[k] for k in g)))
    return tuple(out)


class _Flatten(Mutator):
    def __init__(self, keep_axis_separators: bool = False) -> None:
        super().__init__()
        self.keep = keep_axis_separators
        self.views: dict[int, tuple[Buffer, Buffer]] = {}
        self.alloc_groups: dict[int, list[range]] = {}  # data var id -> groups of its buffer

    def groups(self, buf: Buffer) -> list[range] | None:
        return axis_groups(buf) if self.keep else None

    def view(self, buf: Buffer) -> Buffer:
        hit = self.views.get(id(buf))
        if hit is None:
            groups = self.groups(buf)
            new = _group_view(buf, groups) if groups else flat_view(buf)
            hit = self.views[id(buf)] = (buf, new)
            if groups:
                self.alloc_groups[id(buf.data)] = [len(g) for g in groups]
        return hit[1]

    def offsets(self, buf: Buffer, indices: tuple) -> tuple:
        groups = self.groups(buf)
        if groups:
            return _group_offsets(buf, groups, indices)
        return (flat_offset(buf, indices),)

    def visit_BufferLoad(self, load: BufferLoad) -> PrimExpr:
        indices = tuple(self.visit(i) for i in load.indices)
        buf = load.buffer
        if _is_flat(buf) and _same(indices, load.indices):
            return load
        if _is_flat(buf):
            return BufferLoad(buf, indices, load.dtype)
        return BufferLoad(self.view(buf), self.offsets(buf, indices), load.dtype)

    def visit_BufferStore(self, store: BufferStore) -> Stmt:
        indices = tuple(self.visit(i) for i in store.indices)
        value = self.visit(store.value)
        buf = store.buffer
        if _is_flat(buf) and _same(indices, store.indices) and value is store.value:
            return store
        if _is_flat(buf):
            return BufferStore(buf, value, indices)
        return BufferStore(self.view(buf), value, self.offsets(buf, indices))

    def visit_Allocate(self, alloc: Allocate) -> Stmt:
        body = self.visit(alloc.body)
        extents = alloc.extents
        decl = alloc.body
        own = isinstance(decl, DeclBuffer) and decl.buffer.data is alloc.buffer_var
        if own and decl.buffer.strides:  # padded by storage_align: the strides set the size
            return alloc.replace(extents=(flat_extent(decl.buffer),), body=body)
        sizes = self.alloc_groups.get(id(alloc.buffer_var)) if self.keep else None
        if sizes and sum(sizes) == len(extents):
            grouped, start = [], 0
            for n in sizes:
                grouped.append(_flat_alloc_extent(extents[start : start + n]))
                start += n
            extents = tuple(grouped)
        elif len(extents) != 1:
            extents = (_flat_alloc_extent(extents),)
        return alloc.replace(extents=extents, body=body)

    def visit_DeclBuffer(self, decl: DeclBuffer) -> Stmt:
        return self.visit(decl.body)


def flatten_buffer(func: PrimFunc, keep_axis_separators: bool = False) -> PrimFunc:
    """Rewrite loads/stores to flat views (same data var); param buffers keep their shape.
    `keep_axis_separators`: a dense buffer with separators gets one dimension per group."""
    return func.replace(body=_Flatten(keep_axis_separators).visit(func.body))


FlattenBuffer = prim_func_pass(flatten_buffer, "FlattenBuffer")


def _same(xs: tuple, ys: tuple) -> bool:
    return all(x is y for x, y in zip(xs, ys))
