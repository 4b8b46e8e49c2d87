"""compute_inline and reverse_compute_inline: fold an elementwise block into its neighbour."""

from __future__ import annotations

from typing import Any

from ...ir.structural import structural_equal
from ..analysis.region import infer_access_regions
from ..expr import BufferLoad, IterType, Var
from ..function import PrimFunc
from ..functor import Mutator, Visitor, substitute
from ..stmt import Block, BlockRealize, BufferStore
from .common import analyzer, schedule_error
from .compute_location import _scope_of, scope_blocks
from .tree import Path, replace_stmts, root_realize, walk


def _single_store(func: PrimFunc, r: BlockRealize, what: str) -> BufferStore:
    block = r.block
    name = block.name_hint
    if block.init is not None or any(iv.iter_type == IterType.CommReduce for iv in block.iter_vars):
        raise schedule_error(
            func,
            f"{what}: block '{name}' is a reduction; only blocks that compute each "
            "element once (no T.init, no reduction iterators) can be inlined",
            r,
        )
    if len(block.writes) != 1:
        raise schedule_error(
            func,
            f"{what}: block '{name}' writes {len(block.writes)} buffers; it must write exactly one",
            r,
        )
    if not isinstance(block.body, BufferStore):
        raise schedule_error(
            func,
            f"{what}: the body of block '{name}' is not a single store to "
            f"{block.writes[0].buffer.name}",
            r,
        )
    return block.body


def _as_distinct_iters(
    func: PrimFunc, r: BlockRealize, indices: tuple, buf: Any, what: str
) -> list[Var]:
    """The iter vars `indices` consist of; each iter var exactly once."""
    ids = {id(iv.var) for iv in r.block.iter_vars}
    seen: list[Var] = []
    for i in indices:
        if not (isinstance(i, Var) and id(i) in ids) or any(i is s for s in seen):
            shown = ", ".join(str(x) for x in indices)
            raise schedule_error(
                func,
                f"{what}: block '{r.block.name_hint}' accesses {buf.name}[{shown}]; each "
                "index must be a different iterator of the block, so that every element maps "
                "to one iteration",
                r,
            )
        seen.append(i)
    if len(seen) != len(r.block.iter_vars):
        raise schedule_error(
            func,
            f"{what}: block '{r.block.name_hint}' has iterators that do not index "
            f"{buf.name}; it cannot be inlined",
            r,
        )
    return seen


def _is_param_buffer(func: PrimFunc, buf: Any) -> bool:
    return any(b is buf for b in func.buffer_map.values())


def _drop_alloc(func: PrimFunc, buf: Any) -> PrimFunc:
    root = root_realize(func)
    if root is None or not any(b is buf for b in root.block.alloc_buffers):
        return func
    kept = tuple(b for b in root.block.alloc_buffers if b is not buf)
    return func.replace(body=root.replace(block=root.block.replace(alloc_buffers=kept)))


def _refresh_reads(block: Block, gone: Any) -> Block:
    """Reads of `block` after its loads of buffer `gone` were replaced by other loads."""
    inferred, _ = infer_access_regions(block)
    kept = [rg for rg in block.reads if rg.buffer is not gone]
    have = {id(rg.buffer) for rg in kept} | {id(w.buffer) for w in block.writes}
    kept += [rg for rg in inferred if id(rg.buffer) not in have]
    return block.replace(reads=tuple(kept))


class _InlineLoads(Mutator):
    """Replace every load of `buf` by `value` with `params` bound to the load's indices."""

    def __init__(self, buf: Any, params: list[Var], value: Any) -> None:
        super().__init__()
        self.buf, self.params, self.value = buf, params, value
        self.ana = analyzer()

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        e = self.generic_visit(e)
        if e.buffer is not self.buf:
            return e
        return self.ana.simplify(substitute(self.value, dict(zip(self.params, e.indices))))

    def visit_Block(self, b: Block) -> Block:
        out = self.generic_visit(b)
        reads_it = any(rg.buffer is self.buf for rg in b.reads)
        return _refresh_reads(out, self.buf) if out is not b and reads_it else out


def compute_inline(func: PrimFunc, r: BlockRealize, path: Path) -> PrimFunc:
    """Remove block r and substitute its value at every load of the buffer it writes."""
    what = f"compute_inline(block '{r.block.name_hint}')"
    store = _single_store(func, r, what)
    buf = store.buffer
    if _is_param_buffer(func, buf):
        raise schedule_error(
            func,
            f"{what}: it writes {buf.name}, an output of the function; an output cannot "
            "be inlined (inline the consumer into it with reverse_compute_inline instead)",
            r,
        )
    params = _as_distinct_iters(func, r, store.indices, buf, what)
    for other, _ in walk(func.body):
        if isinstance(other, BlockRealize) and other is not r:
            if any(w.buffer is buf for w in other.block.writes):
                raise schedule_error(
                    func,
                    f"{what}: block '{other.block.name_hint}' also writes {buf.name}; only "
                    "a buffer with a single producer can be inlined",
                    r,
                )
    func = replace_stmts(func, {id(r): None}, [r])
    func = func.replace(body=_InlineLoads(buf, params, store.value).visit(func.body))
    return _drop_alloc(func, buf)


class _Loads(Visitor):
    def __init__(self, buf: Any) -> None:
        self.buf, self.found = buf, []

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        if e.buffer is self.buf:
            self.found.append(e)
        self.generic_visit(e)


def reverse_compute_inline(func: PrimFunc, r: BlockRealize, path: Path) -> PrimFunc:
    """Remove consumer block r, making its producer write r's output directly."""
    name = r.block.name_hint
    what = f"reverse_compute_inline(block '{name}')"
    store = _single_store(func, r, what)
    scope, scope_path = _scope_of(path)
    blocks = scope_blocks(scope, scope_path)
    read_ids = {id(rg.buffer) for rg in r.block.reads}
    producers = [
        (b, p)
        for b, p in blocks
        if b is not r and read_ids & {id(w.buffer) for w in b.block.writes}
    ]
    bufs = {
        id(w.buffer): w.buffer
        for b, _ in producers
        for w in b.block.writes
        if id(w.buffer) in read_ids
    }
    if len(bufs) != 1 or len(producers) != 1:
        raise schedule_error(
            func,
            f"{what}: it must read exactly one buffer written by exactly one other block; "
            f"it reads {len(bufs)} produced buffers from {len(producers)} blocks",
            r,
        )
    (buf,) = bufs.values()
    producer, _ = producers[0]
    pstore = _single_store(func, producer, what.replace(name, producer.block.name_hint))
    if _is_param_buffer(func, buf):
        raise schedule_error(
            func,
            f"{what}: {buf.name}, which it reads, is an output of the function and must "
            "still be written",
            r,
        )
    loads = _Loads(buf)
    loads.visit(store.value)
    first = loads.found[0].indices
    for ld in loads.found[1:]:
        if not all(structural_equal(a, b) for a, b in zip(ld.indices, first)):
            raise schedule_error(
                func,
                f"{what}: it reads {buf.name} at more than one place; reverse inlining "
                "needs a single elementwise read",
                r,
            )
    for b, _ in blocks:
        if b is not r and b is not producer and any(rg.buffer is buf for rg in b.block.reads):
            raise schedule_error(
                func,
                f"{what}: block '{b.block.name_hint}' also reads {buf.name}; it would no "
                "longer be computed",
                r,
            )
    iters = _as_distinct_iters(func, r, first, buf, what)
    vmap = dict(zip(iters, pstore.indices))
    ana = analyzer()
    new_value = ana.simplify(substitute(_replace_load(store.value, buf, pstore.value), vmap))
    new_store = BufferStore(
        store.buffer, new_value, tuple(ana.simplify(substitute(i, vmap)) for i in store.indices)
    )
    block = producer.block.replace(body=new_store)
    reads, writes = infer_access_regions(block)
    block = block.replace(
        reads=tuple(rg for rg in reads if rg.buffer is not store.buffer), writes=writes
    )
    new_producer = producer.replace(block=block)
    func = replace_stmts(func, {id(r): None, id(producer): new_producer}, [r, producer])
    return _drop_alloc(func, buf)


def _replace_load(expr: Any, buf: Any, value: Any) -> Any:
    class _R(Mutator):
        def visit_BufferLoad(self, e: BufferLoad) -> Any:
            return value if e.buffer is buf else self.generic_visit(e)

    return _R().visit(expr)
