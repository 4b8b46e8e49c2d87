"""Flatten every multi-dimensional buffer access to a 1-D access at the element offset."""

from __future__ import annotations

from functools import reduce

from ..buffer import Buffer
from ..expr import Add, BufferLoad, IntImm, Mul, PrimExpr, Sub, binary
from ..function import PrimFunc
from ..functor import Mutator
from ..stmt import Allocate, BufferStore, DeclBuffer, Stmt
from ._pass import prim_func_pass


def _is_flat(buf: Buffer) -> bool:
    offset = buf.elem_offset
    zero = isinstance(offset, IntImm) and offset.value == 0
    return len(buf.shape) == 1 and not buf.strides and zero


def flat_extent(buf: Buffer) -> PrimExpr:
    """Number of elements a flat view of `buf` spans (from its shape, or its strides)."""
    if not buf.shape:
        return IntImm("int32", 1)
    if not buf.strides:
        return reduce(lambda a, b: binary(Mul, a, b), buf.shape)
    last = [binary(Mul, binary(Sub, s, 1), st) for s, st in zip(buf.shape, buf.strides)]
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


class _Flatten(Mutator):
    def __init__(self) -> None:
        super().__init__()
        self.views: dict[int, tuple[Buffer, Buffer]] = {}

    def view(self, buf: Buffer) -> Buffer:
        if _is_flat(buf):
            return buf
        hit = self.views.get(id(buf))
        if hit is None:
            hit = self.views[id(buf)] = (buf, flat_view(buf))
        return hit[1]

    def visit_BufferLoad(self, load: BufferLoad) -> PrimExpr:
        indices = tuple(self.visit(i) for i in load.indices)
        buf = load.buffer
        if _is_flat(buf) and _same(indices, load.indices):
            return load
        return BufferLoad(self.view(buf), (buf.offset_of(indices),), load.dtype)

    def visit_BufferStore(self, store: BufferStore) -> Stmt:
        indices = tuple(self.visit(i) for i in store.indices)
        value = self.visit(store.value)
        buf = store.buffer
        if _is_flat(buf) and _same(indices, store.indices) and value is store.value:
            return store
        return BufferStore(self.view(buf), value, (buf.offset_of(indices),))

    def visit_Allocate(self, alloc: Allocate) -> Stmt:
        body = self.visit(alloc.body)
        extents = alloc.extents
        if len(extents) != 1:
            extents = (reduce(lambda a, b: binary(Mul, a, b), extents, IntImm("int32", 1)),)
        return alloc.replace(extents=extents, body=body)

    def visit_DeclBuffer(self, decl: DeclBuffer) -> Stmt:
        return self.visit(decl.body)


def flatten_buffer(func: PrimFunc) -> PrimFunc:
    """Rewrite loads/stores to flat views (same data var); param buffers keep their shape."""
    return func.replace(body=_Flatten().visit(func.body))


FlattenBuffer = prim_func_pass(flatten_buffer, "FlattenBuffer")


def _same(xs: tuple, ys: tuple) -> bool:
    return all(x is y for x, y in zip(xs, ys))
