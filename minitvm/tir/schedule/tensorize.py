"""tensorize: replace a block's computation by a tensor intrinsic's implementation.

The block (blockized first when a loop is given) must compute what the intrinsic's
description computes: the same loop nest, one inner block with the same iterators, and the
same body up to (1) which buffers are used, consistently, and (2) a constant-in-the-tile offset
added to each buffer's indices. Those offsets give the sub-regions that the implementation's
buffers are matched to (`T.match_buffer`), and the block's body becomes the implementation's.
Anything else raises ScheduleError: a block that only resembles the description is never
replaced.
"""

from __future__ import annotations

from typing import Any

from ...ir.node import FrozenDict, Node, field_names
from ..buffer import Buffer
from ..expr import BufferLoad, Call, IntImm, PrimExpr, Range, Var
from ..function import PrimFunc
from ..functor import Mutator, post_order_visit
from ..stmt import Block, BlockRealize, BufferRegion, BufferStore, For, MatchBufferRegion
from .common import analyzer, const_int, schedule_error
from .tree import uses_var


class _Mismatch(Exception):
    """The block differs from the description at `where`."""


class _Matcher:
    """Compares our tile (lhs) with the intrinsic description (rhs)."""

    def __init__(self, inner_ids: set[int]) -> None:
        self.vars: dict[int, Var] = {}  # rhs var id -> lhs expr var
        self.buffers: dict[int, Buffer] = {}  # rhs buffer id -> lhs buffer
        self.bases: dict[int, list] = {}  # lhs buffer id -> index offsets
        self.inner_ids = inner_ids
        self.ana = analyzer()

    def buffer(self, lhs: Buffer, rhs: Buffer) -> None:
        seen = self.buffers.setdefault(id(rhs), lhs)
        if seen is not lhs:
            raise _Mismatch(
                f"description buffer '{rhs.name}' is both '{seen.name}' and '{lhs.name}'"
            )
        if lhs.dtype != rhs.dtype:
            raise _Mismatch(
                f"buffer '{lhs.name}' is {lhs.dtype}, the description's '{rhs.name}' is {rhs.dtype}"
            )
        if lhs.scope() != rhs.scope():
            raise _Mismatch(
                f"buffer '{lhs.name}' is in scope '{lhs.scope()}', the description's '{rhs.name}' in '{rhs.scope()}'"
            )
        if len(lhs.shape) < len(rhs.shape):
            raise _Mismatch(f"buffer '{lhs.name}' has fewer dimensions than '{rhs.name}'")

    def indices(self, buf: Buffer, lhs: tuple, rhs: tuple) -> None:
        lead = len(lhs) - len(rhs)
        base = list(lhs[:lead])
        for a, b in zip(lhs[lead:], rhs):
            mapped = _Rebind(self.vars).visit(b)
            base.append(self.ana.simplify(a - mapped))
        for e in base:
            if uses_var(e, self.inner_ids):
                raise _Mismatch(
                    f"an index of buffer '{buf.name}' is not the description's plus a constant offset: {e}"
                )
        seen = self.bases.setdefault(id(buf), base)
        if seen is not base and not all(self.ana.can_prove_equal(x, y) for x, y in zip(seen, base)):
            raise _Mismatch(f"buffer '{buf.name}' is accessed at two different offsets")

    def expr(self, a: Any, b: Any) -> None:
        if isinstance(b, Var):
            mapped = self.vars.get(id(b))
            if mapped is None or a is not mapped:
                raise _Mismatch(f"{a} where the description has {b}")
            return
        if isinstance(b, BufferLoad):
            if not isinstance(a, BufferLoad):
                raise _Mismatch(f"{a} where the description loads {b}")
            self.buffer(a.buffer, b.buffer)
            self.indices(a.buffer, a.indices, b.indices)
            return
        if _index_like(a) and _index_like(b) and a.dtype == b.dtype:
            # integer arithmetic of iterators: equal values are enough (i % 8 is i for i < 8)
            if not self.ana.can_prove_equal(a, _Rebind(self.vars).visit(b)):
                raise _Mismatch(f"{a} where the description has {b}")
            return
        if type(a) is not type(b):
            raise _Mismatch(f"{a} ({type(a).__name__}) where the description has {b}")
        if isinstance(b, Node):
            for name in field_names(type(b)):
                self.expr(getattr(a, name), getattr(b, name))
        elif isinstance(b, tuple | list):
            if len(a) != len(b):
                raise _Mismatch(f"{a} where the description has {b}")
            for x, y in zip(a, b):
                self.expr(x, y)
        elif a != b:
            raise _Mismatch(f"{a!r} where the description has {b!r}")

    def store(self, a: Any, b: Any) -> None:
        if not isinstance(a, BufferStore) or not isinstance(b, BufferStore):
            raise _Mismatch("the block body is not a single store like the description's")
        self.buffer(a.buffer, b.buffer)
        self.indices(a.buffer, a.indices, b.indices)
        self.expr(a.value, b.value)
        # the implementation may read its inputs after writing its output (or all at once):
        # that is only the description's result when the output is no input's buffer
        shared = [d for d, ours in self.buffers.items() if ours is a.buffer and d != id(b.buffer)]
        if shared:
            raise _Mismatch(f"buffer '{a.buffer.name}' is both the output and an input of the tile")


def _index_like(e: Any) -> bool:
    """An integer expression over variables and constants only (no loads, no calls)."""
    if not isinstance(e, PrimExpr) or not e.dtype.is_int:
        return False
    ok = True

    def visit(node: Any) -> None:
        nonlocal ok
        if isinstance(node, BufferLoad | Call):
            ok = False

    post_order_visit(e, visit)
    return ok


class _Rebind(Mutator):
    """Replaces the variables in `vmap` (id -> new); one instance keeps the buffers it rebuilt
    the same objects everywhere they occur."""

    def __init__(self, vmap: dict[int, Any]) -> None:
        super().__init__()
        self.vmap = vmap

    def visit_Var(self, v: Var) -> Any:
        return self.vmap.get(id(v), v)


def _nest(stmt: Any) -> tuple[list[For], Any]:
    loops = []
    while isinstance(stmt, For):
        loops.append(stmt)
        stmt = stmt.body
    return loops, stmt


def _match(func: PrimFunc, outer: Block, desc: PrimFunc) -> _Matcher:
    """Check the tile under `outer` against the description; the buffer/offset mapping."""
    desc_root = desc.body.block if isinstance(desc.body, BlockRealize) else None
    if desc_root is None:
        raise schedule_error(func, "tensorize: the intrinsic's description has no root block")
    our_loops, our_inner = _nest(outer.body)
    desc_loops, desc_inner = _nest(desc_root.body)
    m = _Matcher({id(f.loop_var) for f in our_loops})
    try:
        if outer.init is not None:
            raise _Mismatch("the block still has an init statement; decompose_reduction first")
        if len(our_loops) != len(desc_loops):
            raise _Mismatch(f"{len(our_loops)} loops where the description has {len(desc_loops)}")
        for a, b in zip(our_loops, desc_loops):
            if const_int(a.min) != 0 or const_int(b.min) != 0:
                raise _Mismatch(f"loop '{a.loop_var.name}' starts at {a.min}, not 0")
            if const_int(a.extent) != const_int(b.extent) or const_int(a.extent) is None:
                raise _Mismatch(
                    f"loop '{a.loop_var.name}' has extent {a.extent}, the description's '{b.loop_var.name}' {b.extent}"
                )
            m.vars[id(b.loop_var)] = a.loop_var
        if not isinstance(our_inner, BlockRealize) or not isinstance(desc_inner, BlockRealize):
            raise _Mismatch("the tile is not one block under its loops as in the description")
        a_blk, b_blk = our_inner.block, desc_inner.block
        if len(a_blk.iter_vars) != len(b_blk.iter_vars):
            raise _Mismatch(
                f"block '{a_blk.name_hint}' has {len(a_blk.iter_vars)} iterators, the description's {len(b_blk.iter_vars)}"
            )
        for iv_a, iv_b, va, vb in zip(
            a_blk.iter_vars, b_blk.iter_vars, our_inner.iter_values, desc_inner.iter_values
        ):
            if not m.ana.can_prove_equal(iv_a.dom.extent, iv_b.dom.extent):
                raise _Mismatch(
                    f"iterator {iv_a.var.name} has extent {iv_a.dom.extent}, the "
                    f"description's {iv_b.dom.extent}"
                )
            if iv_a.iter_type != iv_b.iter_type:
                raise _Mismatch(
                    f"iterator {iv_a.var.name} is {iv_a.iter_type.name}, the description's {iv_b.iter_type.name}"
                )
            m.expr(va, vb)
            m.vars[id(iv_b.var)] = iv_a.var
        m.inner_ids |= {id(iv.var) for iv in a_blk.iter_vars}
        for iv in a_blk.iter_vars:  # offsets simplify within the tile: (8o + i) // 8 - i // 8 -> o
            m.ana.bind(iv.var, iv.dom)
        m.expr(our_inner.predicate, desc_inner.predicate)
        if a_blk.init is not None or b_blk.init is not None:
            raise _Mismatch("the inner block has an init statement; decompose_reduction first")
        m.store(a_blk.body, b_blk.body)
    except _Mismatch as err:
        raise schedule_error(
            func,
            f"tensorize: block '{outer.name_hint}' does not match the intrinsic's description: "
            f"{err}",
            outer,
        ) from err
    return m


def _impl_copy(impl: PrimFunc) -> tuple[list[Buffer], Block]:
    params = [impl.buffer_map[p] for p in impl.params]
    fresh: dict[int, Var] = {}
    for buf in params:
        fresh[id(buf.data)] = Var(buf.data.name, buf.data.dtype)
        if isinstance(buf.elem_offset, Var):
            fresh[id(buf.elem_offset)] = Var(buf.elem_offset.name, buf.elem_offset.dtype)
    mut = _Rebind(fresh)  # copies: one intrinsic can be used twice
    new_params = [mut.visit(b) for b in params]
    block = mut.visit(impl.body.block)
    return new_params, block


class _WidenIndex(Mutator):
    """The implementation's index arithmetic in int64 (for blocks indexed in int64): buffer
    shapes and offsets, loops and access indices; data values keep their types."""

    def __init__(self, index_vars: set[int]) -> None:
        super().__init__()
        self.index_vars = index_vars
        self.new: dict[int, Var] = {}

    def wide(self, e: Any) -> Any:
        if isinstance(e, IntImm) and e.dtype == "int32":
            return IntImm("int64", e.value)
        e = self.visit(e)
        return e.astype("int64") if isinstance(e, PrimExpr) and e.dtype == "int32" else e

    def visit_Var(self, v: Var) -> Any:
        if id(v) not in self.index_vars or v.dtype != "int32":
            return v
        if id(v) not in self.new:
            self.new[id(v)] = Var(v.name, "int64")
        return self.new[id(v)]

    def visit_BinaryOpExpr(self, e: Any) -> Any:
        a, b = self.visit(e.a), self.visit(e.b)
        return e if (a is e.a and b is e.b) else type(e)(a, b)

    def visit_Buffer(self, b: Buffer) -> Buffer:
        return b.replace(
            shape=tuple(self.wide(x) for x in b.shape),
            strides=tuple(self.wide(x) for x in b.strides),
            elem_offset=self.wide(b.elem_offset),
        )

    def visit_For(self, f: For) -> For:
        return f.replace(
            loop_var=self.visit(f.loop_var),
            min=self.wide(f.min),
            extent=self.wide(f.extent),
            body=self.visit(f.body),
        )

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        return e.replace(
            buffer=self.visit(e.buffer), indices=tuple(self.wide(i) for i in e.indices)
        )

    def visit_BufferStore(self, s: BufferStore) -> Any:
        return s.replace(
            buffer=self.visit(s.buffer),
            value=self.visit(s.value),
            indices=tuple(self.wide(i) for i in s.indices),
        )

    def visit_BufferRegion(self, r: BufferRegion) -> Any:
        ranges = tuple(Range.from_min_extent(self.wide(x.min), self.wide(x.extent)) for x in r.region)
        return BufferRegion(self.visit(r.buffer), ranges)


def _widen_to_int64(params: list[Buffer], block: Block) -> tuple[list[Buffer], Block]:
    index_vars: set[int] = set()
    for buf in params:
        index_vars |= {
            id(v) for v in (buf.elem_offset, *buf.strides, *buf.shape) if isinstance(v, Var)
        }
    post_order_visit(
        block, lambda n: index_vars.add(id(n.loop_var)) if isinstance(n, For) else None
    )
    mut = _WidenIndex(index_vars)
    return [mut.visit(b) for b in params], mut.visit(block)


def _index_bits(block: Block) -> int:
    return max(
        (r.min.dtype.bits for region in (*block.reads, *block.writes) for r in region.region),
        default=32,
    )


def tensorize_block(
    func: PrimFunc, outer: BlockRealize, desc: PrimFunc, impl: PrimFunc
) -> BlockRealize:
    """The block realize `outer` with its body replaced by the intrinsic's implementation."""
    block = outer.block
    m = _match(func, block, desc)
    desc_params = [desc.buffer_map[p] for p in desc.params]
    impl_params, impl_block = _impl_copy(impl)
    if _index_bits(block) == 64:  # as TVM: the implementation indexes like the block it replaces
        impl_params, impl_block = _widen_to_int64(impl_params, impl_block)
    regions = {id(r.buffer): r.region for r in (*impl_block.reads, *impl_block.writes)}
    matches = []
    for d_buf, i_buf, orig in zip(
        desc_params, impl_params, [impl.buffer_map[p] for p in impl.params]
    ):
        ours = m.buffers.get(id(d_buf))
        if ours is None:
            raise schedule_error(
                func, f"tensorize: the description never uses its buffer '{d_buf.name}'"
            )
        base = m.bases[id(ours)]
        extents = [r.extent for r in regions.get(id(i_buf), ())] or list(i_buf.shape)
        lead = len(base) - len(extents)
        ranges = [Range.from_min_extent(b, IntImm(b.dtype, 1)) for b in base[:lead]]
        ranges += [Range.from_min_extent(b, _cast_like(e, b)) for b, e in zip(base[lead:], extents)]
        matches.append(MatchBufferRegion(i_buf, BufferRegion(ours, tuple(ranges))))
        del orig
    annotations = dict(block.annotations)
    for key, value in impl_block.annotations.items():
        annotations.setdefault(key, value)
    new_block = block.replace(
        body=impl_block.body,
        match_buffers=tuple(matches),
        annotations=FrozenDict(annotations),
    )
    return outer.replace(block=new_block)


def _cast_like(e: PrimExpr, like: PrimExpr) -> PrimExpr:
    if e.dtype == like.dtype:
        return e
    value = const_int(e)
    return IntImm(like.dtype, value) if value is not None else e.astype(like.dtype)


__all__ = ["tensorize_block"]
