"""reindex, reindex_cache_read, reindex_cache_write: stage a buffer that one block accesses
through a copy laid out by that block's iterators (optionally through an IndexMap)."""

from __future__ import annotations

from typing import Any

from ...ir.structural import structural_equal
from ..buffer import Buffer, decl_buffer
from ..expr import BufferLoad, IntImm, IterType, IterVar, Range, Var, const_value
from ..function import PrimFunc
from ..functor import Mutator, post_order_visit, substitute
from ..index_map import IndexMap
from ..stmt import Block, BlockRealize, BufferRegion, BufferStore, For, ForKind, SeqStmt, Stmt
from .common import add_root_alloc, analyzer, insert_in_scope, schedule_error, unique_name
from .layout import as_index_map, block_index_dtype, resolve_buffer
from .tree import Path, replace_stmt, root_realize, scope_body, uses_var, walk


def _accesses(block: Block, buf: Buffer) -> list[tuple]:
    """Index tuples of every load and store of `buf` in the block's body and init."""
    out: list[tuple] = []

    def visit(n: Any) -> None:
        if isinstance(n, BufferLoad | BufferStore) and n.buffer is buf:
            out.append(n.indices)

    for stmt in (block.init, block.body):
        if stmt is not None:
            post_order_visit(stmt, visit)
    return out


class _Swap(Mutator):
    """Accesses of `old` become accesses of `new` at `indices`; regions follow."""

    def __init__(self, old: Buffer, new: Buffer, indices: tuple) -> None:
        super().__init__()
        self.old, self.new, self.indices = old, new, indices

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        if e.buffer is self.old:
            return BufferLoad(self.new, self.indices)
        return self.generic_visit(e)

    def visit_BufferStore(self, s: BufferStore) -> Any:
        value = self.visit(s.value)
        if s.buffer is self.old:
            return BufferStore(self.new, value, self.indices)
        return s.replace(value=value, indices=self.visit(s.indices))

    def visit_BufferRegion(self, rg: BufferRegion) -> Any:
        if rg.buffer is self.old:
            return BufferRegion(self.new, tuple(Range(i, 1) for i in self.indices))
        return rg


def _top_position(func: PrimFunc, stmt: Stmt) -> tuple[list, int]:
    body = scope_body(func)
    items = list(body.seq) if isinstance(body, SeqStmt) else [body]
    for k, item in enumerate(items):
        if any(s is stmt for s, _ in walk(item)):
            return items, k
    raise AssertionError("block not under the root scope")


def reindex(
    func: PrimFunc,
    r: BlockRealize,
    path: Path,
    spec: Any,
    scope: str | None = None,
    index_map: Any = None,
    what: str = "reindex",
) -> tuple[PrimFunc, str]:
    """(func, name of the copy block): the buffer `spec` of block `r` is staged through a new
    buffer indexed by the block's iterators (through `index_map` when given)."""
    block = r.block
    kind, _, buf = resolve_buffer(func, r, spec, f"{what}(block '{block.name_hint}')")
    what = f"{what}(block '{block.name_hint}', buffer '{buf.name}')"
    enclosing = [s for s in path if isinstance(s, Block)]
    root = root_realize(func)
    if len(enclosing) > 1 or (enclosing and (root is None or enclosing[0] is not root.block)):
        raise schedule_error(func, f"{what}: the block must be at the function's root scope", r)
    ana = analyzer()
    for iv in block.iter_vars:
        if const_value(iv.dom.extent) != 1:  # a unit iterator stays a variable, as in TVM
            ana.bind(iv.var, iv.dom)
    found = _accesses(block, buf)
    if not found:
        raise schedule_error(func, f"{what}: the block does not load or store '{buf.name}'", r)
    idx = tuple(ana.simplify(i) for i in found[0])
    for other in found[1:]:
        other = tuple(ana.simplify(i) for i in other)
        if not all(structural_equal(a, b) for a, b in zip(idx, other)):
            raise schedule_error(
                func,
                f"{what}: the block accesses '{buf.name}' at {list(idx)} and at {list(other)}; "
                "it must access it at one index",
                r,
            )
    writes = any(w.buffer is buf for w in block.writes)
    loads: list = []
    post_order_visit(
        block.body,
        lambda n: loads.append(n) if isinstance(n, BufferLoad) and n.buffer is buf else None,
    )
    if kind == "read" and writes:
        raise schedule_error(
            func,
            f"{what}: the block also writes '{buf.name}'; a read copy would hide its result. "
            "Stage it as a write buffer instead",
            r,
        )
    if kind == "write" and loads and block.init is None:
        raise schedule_error(
            func,
            f"{what}: the block reads '{buf.name}' before updating it and has no init, so a "
            "fresh copy would lose the old values",
            r,
        )
    used = [iv for iv in block.iter_vars if uses_var(idx, {id(iv.var)})]
    if index_map is None:
        cache_idx = tuple(iv.var for iv in used)
        shape = tuple(iv.dom.extent for iv in used)
    else:
        imap, _ = as_index_map(index_map, len(block.iter_vars), block_index_dtype(block), what)
        if imap.ndim != len(block.iter_vars):
            raise schedule_error(
                func,
                f"{what}: the index map takes {imap.ndim} indices but the block has "
                f"{len(block.iter_vars)} iterators",
                r,
            )
        cache_idx = tuple(imap.map_indices([iv.var for iv in block.iter_vars]))
        used_ids = {id(iv) for iv in used}
        unused = {id(iv.var) for iv in block.iter_vars if id(iv) not in used_ids}
        if any(uses_var(e, unused) for e in cache_idx):
            raise schedule_error(
                func,
                f"{what}: the index map uses iterators that the access of '{buf.name}' does "
                "not; map only the iterators its indices use",
                r,
            )
        shape = tuple(
            IndexMap(imap.initial_indices, imap.final_indices).map_shape(
                [iv.dom.extent for iv in block.iter_vars]
            )
        )
    suffix = "reindex" if scope is None else scope
    name = unique_name(func, f"{buf.name}_{suffix}")
    cache = decl_buffer(shape, buf.dtype, name, scope=scope or buf.storage_scope)
    _check_order(func, r, buf, kind, what)
    swap = _Swap(buf, cache, cache_idx)
    new_block = block.replace(
        body=swap.visit(block.body),
        init=swap.visit(block.init) if block.init is not None else None,
        reads=swap.visit(block.reads),
        writes=swap.visit(block.writes),
    )
    _, pos = _top_position(func, r)
    nest = _copy_nest(block, used, buf, idx, cache, cache_idx, kind, name)
    func = replace_stmt(func, r, r.replace(block=new_block))
    func = insert_in_scope(func, nest, lambda _items: pos if kind == "read" else pos + 1)
    return add_root_alloc(func, cache), name


def _check_order(func: PrimFunc, r: BlockRealize, buf: Buffer, kind: str, what: str) -> None:
    """A read copy runs before the block: every other writer of `buf` must come earlier; a
    write copy runs after: the block is the only writer and every reader comes later."""
    items, pos = _top_position(func, r)
    for k, item in enumerate(items):
        for s, _ in walk(item):
            if not isinstance(s, BlockRealize) or s is r or s is root_realize(func):
                continue
            writes = any(w.buffer is buf for w in s.block.writes)
            reads = any(rg.buffer is buf for rg in s.block.reads)
            bad = (kind == "read" and writes and k >= pos) or (
                kind == "write" and (writes or (reads and k <= pos))
            )
            if bad:
                raise schedule_error(
                    func,
                    f"{what}: block '{s.block.name_hint}' also "
                    f"{'writes' if writes else 'reads'} '{buf.name}' where the copy would "
                    "change what it sees",
                    r,
                )


def _copy_nest(
    block: Block,
    used: list[IterVar],
    buf: Buffer,
    idx: tuple,
    cache: Buffer,
    cache_idx: tuple,
    kind: str,
    name: str,
) -> Stmt:
    """Loops over the used iterators around `cache[cache_idx] = buf[idx]` (or back)."""
    pos = {id(iv.var): k for k, iv in enumerate(block.iter_vars)}
    loops = [Var(f"ax{pos[id(iv.var)]}", iv.var.dtype) for iv in used]
    ivs = [
        IterVar(iv.dom, Var(f"v{pos[id(iv.var)]}", iv.var.dtype), IterType.DataPar) for iv in used
    ]
    vmap = {old.var: new.var for old, new in zip(used, ivs)}
    src_idx = tuple(substitute(i, vmap) for i in idx)
    dst_idx = tuple(substitute(i, vmap) for i in cache_idx)
    if kind == "read":
        store = BufferStore(cache, BufferLoad(buf, src_idx), dst_idx)
        reads, writes = (buf, src_idx), (cache, dst_idx)
    else:
        store = BufferStore(buf, BufferLoad(cache, dst_idx), src_idx)
        reads, writes = (cache, dst_idx), (buf, src_idx)
    new = Block(
        tuple(ivs),
        (BufferRegion(reads[0], tuple(Range(i, 1) for i in reads[1])),),
        (BufferRegion(writes[0], tuple(Range(i, 1) for i in writes[1])),),
        name,
        store,
    )
    stmt: Stmt = BlockRealize(tuple(loops), IntImm("bool", 1), new)
    for v, iv in reversed(list(zip(loops, used))):
        stmt = For(v, IntImm(v.dtype, 0), iv.dom.extent, ForKind.SERIAL, stmt)
    return stmt


__all__ = ["reindex"]
