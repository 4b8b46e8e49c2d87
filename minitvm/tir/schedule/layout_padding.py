"""The padding side of transform_layout: when the new layout is larger than the buffer, the
padding is written in the loops of the block that writes the buffer, or by a producer stage of
its own, with the pad value given."""

from __future__ import annotations

import itertools
from typing import Any

from ...error import ScheduleError
from ...ir.dtype import DataType
from ..buffer import Buffer
from ..expr import (
    BufferLoad,
    FloatImm,
    IntImm,
    IterType,
    IterVar,
    PrimExpr,
    Range,
    Var,
    as_expr,
    const_value,
)
from ..function import PrimFunc
from ..functor import Mutator, post_order_visit, substitute
from ..index_map import IndexMap, retype, retype_vars
from ..stmt import (
    Block,
    BlockRealize,
    BufferRegion,
    BufferStore,
    For,
    ForKind,
    SeqStmt,
    Stmt,
)
from .common import SimplifyIndices, analyzer, insert_in_scope, schedule_error, unique_name
from .layout import _perfect_loops, _same_extent, _writers
from .tree import replace_stmt, root_realize, scope_body, walk


def _row_major_loops(func: PrimFunc, buf: Buffer) -> list[For] | None:
    """The perfectly nested loops `for i0, i1, ...` over `buf`'s shape inside which every store
    to `buf` is `buf[i0, i1, ...]` and nothing else is stored (opaque blocks with no
    iterators); None when the producer does not have that shape."""
    stores = [x for x, _ in walk(func.body) if isinstance(x, BufferStore)]
    mine = [x for x in stores if x.buffer is buf]
    if not mine:
        return None
    first = mine[0]
    found = next(((x, p) for x, p in walk(func.body) if x is first), None)
    loops = [f for f in found[1] if isinstance(f, For)] if found else []
    by_var = {id(f.loop_var): f for f in loops}
    chain = [by_var.get(id(i)) for i in first.indices]
    if None in chain or len({id(f) for f in chain}) != len(chain) or not chain:
        return None
    for f, d in zip(chain, buf.shape):
        if const_value(f.min) != 0 or not _same_extent(f.extent, d) or f.kind != ForKind.SERIAL:
            return None
    if any(a.body is not b for a, b in itertools.pairwise(chain)):
        return None
    inside = [x for x, _ in walk(chain[0])]
    if any(isinstance(x, BufferStore) and x.buffer is not buf for x in inside):
        return None
    if any(isinstance(x, Block) and x.iter_vars for x in inside):
        return None
    outside_stores = [x for x in mine if not any(x is y for y in inside)]
    if outside_stores or any(
        tuple(id(i) for i in x.indices) != tuple(id(f.loop_var) for f in chain)
        for x in inside
        if isinstance(x, BufferStore)
    ):
        return None
    return chain


class _PadStores(Mutator):
    """Rewrites a producer of the old layout over the new indices `ys`: the old variables
    `old_vars` become the inverse map of `ys`, and every store writes
    `if_then_else(padding, pad_value, value)`."""

    def __init__(
        self,
        old_vars: list[Var],
        ys: list[Var],
        inverse: IndexMap,
        pred: PrimExpr,
        pmap: IndexMap,
        dtype: Any,
    ) -> None:
        super().__init__()
        inv_vars = retype_vars(inverse.initial_indices, dtype)
        olds = retype(inverse.final_indices, inverse.initial_indices, dtype)
        to_ys = dict(zip(inv_vars, ys))
        self.vmap = {v: substitute(e, to_ys) for v, e in zip(old_vars, olds)}
        self.cond = substitute(retype([pred], inverse.initial_indices, dtype)[0], to_ys)
        self.pad = pmap.map_indices(list(ys))[0]

    def visit_BufferStore(self, st: BufferStore) -> Any:
        from ..op import if_then_else

        value = if_then_else(self.cond, self.pad, substitute(st.value, self.vmap))
        return st.replace(value=value, indices=substitute(st.indices, self.vmap))

    def visit_PrimExpr(self, e: Any) -> Any:
        return substitute(e, self.vmap)


def _pad_in_loops(
    func: PrimFunc, chain: list[For], layout: Any, inverse: IndexMap, pred: PrimExpr, pmap: IndexMap
) -> tuple[PrimFunc, Var]:
    """The loops `chain` over the buffer become loops over the transformed shape; each store
    writes `if_then_else(padding, pad_value, value)` (old loop variables through the inverse)."""
    dtype = chain[0].loop_var.dtype
    ys = [
        Var(chain[j].loop_var.name if j < len(chain) else f"ax{j}", dtype)
        for j in range(len(layout.extents))
    ]
    guard = _PadStores([f.loop_var for f in chain], ys, inverse, pred, pmap, dtype)
    body = guard.visit(chain[-1].body)
    for y, ext in reversed(list(zip(ys, layout.extents))):
        body = For(y, IntImm(dtype, 0), as_expr(ext, like=dtype), ForKind.SERIAL, body)
    return replace_stmt(func, chain[0], body), ys[0]


def _simplify_loops(func: PrimFunc, outer: Var) -> PrimFunc:
    """Simplify indices under the loop of variable `outer` with its loops' ranges."""
    from .tree import find_loop

    node, _ = find_loop(func, outer)
    loops = [x for x, _ in walk(node) if isinstance(x, For)]
    ana = analyzer(f for f in loops if const_value(f.extent) != 1)
    return replace_stmt(func, node, SimplifyIndices(ana).visit(node))


def _root_allocs(func: PrimFunc) -> tuple:
    root = root_realize(func)
    return root.block.alloc_buffers if root is not None else ()


def _pad_value(
    func: PrimFunc, r: BlockRealize, buf: Buffer, imap: IndexMap, pad_value: Any, what: str
) -> IndexMap:
    """The padding value as an IndexMap over the transformed indices, checked for dtype."""
    n_out = len(imap.final_indices)
    if isinstance(pad_value, IndexMap):
        pmap = pad_value
    elif callable(pad_value):
        pmap = IndexMap.from_func(
            pad_value, ndim=n_out, index_dtype=str(imap.initial_indices[0].dtype)
        )
    else:
        value = pad_value
        if isinstance(value, bool) or not isinstance(value, int | float | PrimExpr):
            raise schedule_error(func, f"{what}: pad_value {value!r} is not a value", r)
        if isinstance(value, int) and buf.dtype.is_integer:
            value = IntImm(buf.dtype, value)
        elif isinstance(value, float) and buf.dtype.is_float:
            value = FloatImm(buf.dtype, value)
        else:
            value = as_expr(value)  # a Python int is int32, a float float32, as in TVM
        const = value
        pmap = IndexMap.from_func(lambda *ix: const, ndim=n_out)
    for e in pmap.final_indices:
        if e.dtype != buf.dtype:
            raise schedule_error(
                func,
                f"{what}: pad_value has dtype {e.dtype} but '{buf.name}' holds {buf.dtype}; "
                f"pass a {buf.dtype} value",
                r,
            )
        if any(b is not buf for b in _loaded_buffers(e)):
            raise schedule_error(
                func,
                f"{what}: pad_value reads another buffer; it may only read '{buf.name}' itself",
                r,
            )
    return pmap


def _write_padding(
    func: PrimFunc, new: Buffer, inverse: IndexMap, pred: PrimExpr, pmap: IndexMap
) -> PrimFunc:
    """Insert, after the last writer of `new`, a nest that stores the pad value where the
    transformed layout has padding (TVM's post-processing block)."""
    from ..stmt import SeqStmt

    writers = _writers(func, new)
    scope = scope_body(func)
    items = list(scope.seq) if isinstance(scope, SeqStmt) else [scope]
    writer_ids = {id(w) for w, _ in writers}
    last = max(i for i, s in enumerate(items) if any(id(x) in writer_ids for x, _ in walk(s)))
    first_writer = writers[-1][0]
    looped = any(isinstance(x, For) for x, _ in walk(items[last]))
    base = (
        f"{first_writer.block.name_hint}_pad_{new.name}" if looped else f"buffer_{new.name}_padding"
    )
    dtype = new.shape[0].dtype
    loop_vars = [Var(f"ax{d}", dtype) for d in range(len(new.shape))]
    ivs = [
        IterVar(Range.from_min_extent(0, s), Var(f"v{d}", dtype), IterType.DataPar) for d, s in enumerate(new.shape)
    ]
    idx = tuple(iv.var for iv in ivs)
    where = substitute(pred, dict(zip(retype_vars(inverse.initial_indices, dtype), loop_vars)))
    value = pmap.map_indices(list(idx))[0]
    point = tuple(Range.from_min_extent(i, 1) for i in idx)
    reads = tuple(BufferRegion.full_region(b) for b in _loaded_buffers(value))
    block = Block(
        tuple(ivs),
        reads,
        (BufferRegion(new, point),),
        unique_name(func, base),
        BufferStore(new, value, idx),
    )
    body: Stmt = BlockRealize(tuple(loop_vars), where, block)
    for v, s in reversed(list(zip(loop_vars, new.shape))):
        body = For(v, IntImm(v.dtype, 0), s, ForKind.SERIAL, body)
    return insert_in_scope(func, body, lambda _items: last + 1)


def _row_major_producer(func: PrimFunc, buf: Buffer) -> tuple | None:
    """(realize, path) of the one block that writes `buf`, writes nothing else, and stores
    every element `buf[v0, v1, ...]` at its own iterators over loops that wrap only it; else
    None (the padding then goes to a separate block)."""
    writers = _writers(func, buf)
    if len(writers) != 1:
        return None
    r, path = writers[0]
    block = r.block
    if len(block.writes) != 1:
        return None
    stores: list = []
    post_order_visit(block, lambda n: stores.append(n) if isinstance(n, Stmt) else None)
    if any(not isinstance(x, BufferStore | Block) for x in stores if not isinstance(x, SeqStmt)):
        return None
    pos = {id(iv.var): iv for iv in block.iter_vars}
    for st in (x for x in stores if isinstance(x, BufferStore)):
        ivs = [pos.get(id(i)) for i in st.indices]
        if st.buffer is not buf or None in ivs or len({id(iv) for iv in ivs}) != len(ivs):
            return None
        if any(
            iv.iter_type != IterType.DataPar or not _same_extent(iv.dom.extent, d)
            for iv, d in zip(ivs, buf.shape)
        ):
            return None
    try:
        _perfect_loops(func, r, path, "transform_layout")
    except ScheduleError:
        return None
    return r, path


def _pad_in_producer(
    func: PrimFunc, producer: tuple, layout: Any, inverse: IndexMap, pred: PrimExpr, pmap: IndexMap
) -> tuple[PrimFunc, str]:
    """The producer iterates over the transformed shape and stores
    `if_then_else(padding, pad_value, value)` (the old iterators through the inverse)."""
    r, path = producer
    block = r.block
    loops = _perfect_loops(func, r, path, "transform_layout")
    store = next(x for x, _ in walk(block.body) if isinstance(x, BufferStore))
    by_id = {id(iv.var): iv for iv in block.iter_vars}
    stored = [by_id[id(i)] for i in store.indices]
    stored_ids = {id(iv) for iv in stored}
    others = [(iv, v) for iv, v in zip(block.iter_vars, r.iter_values) if id(iv) not in stored_ids]
    dtype = stored[0].var.dtype if stored else DataType("int32")
    ys = [Var(f"v{j}", dtype) for j in range(len(layout.extents))]
    new_loops = [Var(f"ax{j}", dtype) for j in range(len(ys))]
    ys_ivs = [
        IterVar(Range.from_min_extent(0, as_expr(e, like=dtype)), y, IterType.DataPar)
        for y, e in zip(ys, layout.extents)
    ]
    guard = _PadStores([iv.var for iv in stored], ys, inverse, pred, pmap, dtype)
    new_block = block.replace(
        iter_vars=tuple(ys_ivs) + tuple(iv for iv, _ in others),
        body=guard.visit(block.body),
        init=guard.visit(block.init) if block.init is not None else None,
        reads=substitute(block.reads, guard.vmap),
        writes=substitute(block.writes, guard.vmap),
    )
    values = tuple(new_loops) + tuple(v for _, v in others)
    stmt: Stmt = BlockRealize(values, r.predicate, new_block)
    by_loop = {id(f.loop_var): f for f in loops}
    for _, v in reversed(others):
        f = by_loop[id(v)]
        stmt = f.replace(body=stmt)
    for v, iv in reversed(list(zip(new_loops, ys_ivs))):
        stmt = For(v, IntImm(dtype, 0), iv.dom.extent, ForKind.SERIAL, stmt)
    return replace_stmt(func, loops[0] if loops else r, stmt), block.name_hint


def _simplify_block(func: PrimFunc, name: str) -> PrimFunc:
    """Simplify the indices and regions of block `name` under its iterators' ranges."""
    from .tree import find_block

    r, _ = find_block(func, name)
    ana = analyzer()
    for iv in r.block.iter_vars:
        if const_value(iv.dom.extent) != 1:
            ana.bind(iv.var, iv.dom)
    simp = SimplifyIndices(ana)
    block = r.block
    new = block.replace(
        body=simp.visit(block.body),
        init=simp.visit(block.init) if block.init is not None else None,
        reads=simp.visit(block.reads),
        writes=simp.visit(block.writes),
    )
    return replace_stmt(func, r, r.replace(block=new))


def _loaded_buffers(e: PrimExpr) -> list[Buffer]:
    out: dict[int, Buffer] = {}
    post_order_visit(
        e, lambda n: out.setdefault(id(n.buffer), n.buffer) if isinstance(n, BufferLoad) else None
    )
    return list(out.values())
