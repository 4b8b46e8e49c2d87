"""cache_read and cache_write: stage a buffer through a copy in another storage scope."""

from __future__ import annotations

from typing import Any

from ..buffer import Buffer, decl_buffer
from ..expr import BufferLoad, IntImm, IterType, IterVar, Range, Var
from ..function import PrimFunc
from ..functor import Mutator, post_order_visit
from ..stmt import Block, BlockRealize, BufferRegion, BufferStore, For, ForKind, Stmt
from .common import add_root_alloc, insert_in_scope, schedule_error, unique_name
from .compute_location import _scope_of, scope_blocks
from .tree import Path, replace_stmts, root_realize, scope_body, walk


def copy_nest(src: Buffer, dst: Buffer, name: str, loop_names: list[str] | None = None) -> Stmt:
    """Loops over the whole shape with a block `dst[v...] = src[v...]` named `name`."""
    ndim = len(src.shape)
    loop_names = loop_names or [f"ax{d}" for d in range(ndim)]
    loop_vars = [Var(n, s.dtype) for n, s in zip(loop_names, src.shape)]
    ivs = [
        IterVar(Range(0, s), Var(f"v{d}", s.dtype), IterType.DataPar)
        for d, s in enumerate(src.shape)
    ]
    idx = tuple(iv.var for iv in ivs)
    point = tuple(Range(i, 1) for i in idx)
    block = Block(
        tuple(ivs),
        (BufferRegion(src, point),),
        (BufferRegion(dst, point),),
        name,
        BufferStore(dst, BufferLoad(src, idx), idx),
    )
    body: Stmt = BlockRealize(tuple(loop_vars), IntImm("bool", 1), block)
    for v, s in reversed(list(zip(loop_vars, src.shape))):
        body = For(v, IntImm(v.dtype, 0), s, ForKind.SERIAL, body)
    return body


class _Rename(Mutator):
    """Replace buffer `old` by `new` in loads, stores and block regions."""

    def __init__(self, old: Buffer, new: Buffer, loads: bool = True, stores: bool = True) -> None:
        super().__init__()
        self.old, self.new, self.loads, self.stores = old, new, loads, stores

    def visit_Buffer(self, b: Buffer) -> Buffer:
        return self.new if b is self.old else b

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        e2 = e.replace(indices=self.visit(e.indices))
        return e2.replace(buffer=self.new) if self.loads and e.buffer is self.old else e2

    def visit_BufferStore(self, s: BufferStore) -> Any:
        s2 = s.replace(value=self.visit(s.value), indices=self.visit(s.indices))
        return s2.replace(buffer=self.new) if self.stores and s.buffer is self.old else s2


def _loads(stmt: Stmt, buf: Buffer) -> bool:
    found = []
    post_order_visit(
        stmt, lambda n: found.append(n) if isinstance(n, BufferLoad) and n.buffer is buf else None
    )
    return bool(found)


def _top_index(items: list, ids: set[int]) -> list[int]:
    """Positions in the scope list of the statements that contain a block with an id in `ids`."""
    return [i for i, s in enumerate(items) if any(id(x) in ids for x, _ in walk(s))]


def _scope_items(func: PrimFunc) -> list:
    from ..stmt import SeqStmt

    body = scope_body(func)
    return list(body.seq) if isinstance(body, SeqStmt) else [body]


def _check_top_level(func: PrimFunc, r_path: Path, what: str, r: BlockRealize) -> None:
    scope, _ = _scope_of(r_path)
    root = root_realize(func)
    if scope is not scope_body(func) or (root is None and scope is not func.body):
        raise schedule_error(
            func,
            f"{what}: block '{r.block.name_hint}' is inside a nested block "
            "scope; caching is supported at the function's root scope",
            r,
        )


# storage scopes a buffer may live in (a scope may carry a tag after a dot: "shared.dyn")
_SCOPES = ("global", "shared", "local", "warp", "wmma", "metal", "texture")


def _check_scope(func: PrimFunc, scope: Any, what: str, r: BlockRealize) -> None:
    if not isinstance(scope, str) or scope.split(".")[0] not in _SCOPES:
        raise schedule_error(
            func,
            f"{what}: {scope!r} is not a storage scope; use one of "
            f"{', '.join(repr(x) for x in _SCOPES)} (optionally tagged, e.g. 'shared.dyn')",
            r,
        )


def _buffer_index(index: Any, regions: tuple) -> Any:
    """A buffer given by name or object (TVM accepts both) as its position in `regions`."""
    named = isinstance(index, str | Buffer)
    for k, rg in enumerate(regions):
        if named and (rg.buffer is index or rg.buffer.name == index):
            return k
    return index


def cache_read(
    func: PrimFunc,
    r: BlockRealize,
    r_path: Path,
    index: int,
    scope: str,
    consumers: list[BlockRealize] | None = None,
    loop_names: list[str] | None = None,
) -> tuple[PrimFunc, str]:
    """Copy the `index`-th buffer `r` reads into a new buffer in `scope` and read that instead."""
    name = r.block.name_hint
    what = f"cache_read(block '{name}', read_buffer_index={index}, storage_scope={scope!r})"
    reads = r.block.reads
    index = _buffer_index(index, reads)
    if not isinstance(index, int) or not -len(reads) <= index < len(reads):
        shown = ", ".join(rg.buffer.name for rg in reads)
        raise schedule_error(
            func,
            f"{what}: block '{name}' reads {len(reads)} buffers ({shown}); use an index in "
            f"0..{len(reads) - 1}",
            r,
        )
    _check_scope(func, scope, what, r)
    _check_top_level(func, r_path, what, r)
    buf = reads[index].buffer
    cache_name = unique_name(func, f"{buf.name}_{scope}")
    cache = decl_buffer(buf.shape, buf.dtype, cache_name, scope=scope)
    blocks = scope_blocks(*_scope_of(r_path))
    readers = [
        b
        for b, _ in blocks
        if any(rg.buffer is buf for rg in b.block.reads)
        and not any(w.buffer is buf for w in b.block.writes)
    ]
    if consumers is not None:
        wanted = {id(c) for c in consumers}
        readers = [b for b in readers if id(b) in wanted]
    writers = [b for b, _ in blocks if any(w.buffer is buf for w in b.block.writes)]
    items = _scope_items(func)
    read_pos = _top_index(items, {id(b) for b in readers})
    write_pos = _top_index(items, {id(b) for b in writers})
    if write_pos and read_pos and max(write_pos) >= min(read_pos):
        raise schedule_error(
            func,
            f"{what}: {buf.name} is written and read inside one loop nest; cache it before "
            "moving its producer with compute_at",
            r,
        )
    rename = _Rename(buf, cache, stores=False)
    table = {id(b): b.replace(block=rename.visit(b.block)) for b in readers}
    func = replace_stmts(func, table, readers)
    nest = copy_nest(buf, cache, cache_name, loop_names)
    func = insert_in_scope(func, nest, lambda items: min(read_pos))
    return add_root_alloc(func, cache), cache_name


def cache_write(
    func: PrimFunc,
    r: BlockRealize,
    r_path: Path,
    index: int,
    scope: str,
    loop_names: list[str] | None = None,
) -> tuple[PrimFunc, str]:
    """Make `r` write its `index`-th output into a new buffer in `scope`, copied back after."""
    name = r.block.name_hint
    what = f"cache_write(block '{name}', write_buffer_index={index}, storage_scope={scope!r})"
    writes = r.block.writes
    index = _buffer_index(index, writes)
    if not isinstance(index, int) or not -len(writes) <= index < len(writes):
        shown = ", ".join(rg.buffer.name for rg in writes)
        raise schedule_error(
            func,
            f"{what}: block '{name}' writes {len(writes)} buffers ({shown}); use an index "
            f"in 0..{len(writes) - 1}",
            r,
        )
    _check_scope(func, scope, what, r)
    _check_top_level(func, r_path, what, r)
    buf = writes[index].buffer
    if r.block.init is None and _loads(r.block.body, buf):
        raise schedule_error(
            func,
            f"{what}: block '{name}' reads {buf.name} before updating it (it has no init, "
            f"e.g. after decompose_reduction), so a fresh cache would lose the old values; "
            "call cache_write before decompose_reduction",
            r,
        )
    cache_name = unique_name(func, f"{buf.name}_{scope}")
    cache = decl_buffer(buf.shape, buf.dtype, cache_name, scope=scope)
    blocks = scope_blocks(*_scope_of(r_path))
    items = _scope_items(func)
    (pos,) = _top_index(items, {id(r)})
    for b, _ in blocks:
        if b is not r and any(w.buffer is buf for w in b.block.writes):
            # the copy back writes every element of the cache; another writer's would be lost
            raise schedule_error(
                func,
                f"{what}: block '{b.block.name_hint}' also writes {buf.name}; cache_write "
                f"needs '{name}' to be the only block that writes it",
                r,
            )
        if b is not r and any(rg.buffer is buf for rg in b.block.reads + b.block.writes):
            if _top_index(items, {id(b)}) == [pos]:
                raise schedule_error(
                    func,
                    f"{what}: block '{b.block.name_hint}' in the same loop nest also uses "
                    f"{buf.name}; cache before moving blocks with compute_at",
                    r,
                )
    new_block = _Rename(buf, cache).visit(r.block)
    func = replace_stmts(func, {id(r): r.replace(block=new_block)}, [r])
    nest = copy_nest(cache, buf, cache_name, loop_names)
    func = insert_in_scope(func, nest, lambda items: pos + 1)
    return add_root_alloc(func, cache), cache_name


def set_scope(func: PrimFunc, r: BlockRealize, index: int, scope: str) -> PrimFunc:
    """Move the `index`-th buffer that `r` writes (an intermediate) to storage `scope`."""
    name = r.block.name_hint
    what = f"set_scope(block '{name}', buffer_index={index}, storage_scope={scope!r})"
    writes = r.block.writes
    if not isinstance(index, int) or not -len(writes) <= index < len(writes):
        raise schedule_error(
            func,
            f"{what}: block '{name}' writes {len(writes)} buffers; use an index in "
            f"0..{len(writes) - 1}",
            r,
        )
    buf = writes[index].buffer
    if any(b is buf for b in func.buffer_map.values()):
        raise schedule_error(
            func,
            f"{what}: {buf.name} is a parameter of the function; its memory belongs to the "
            "caller. Use cache_write to stage it in another scope",
            r,
        )
    new = buf.replace(storage_scope=scope)
    return func.replace(body=_Rename(buf, new).visit(func.body))
