"""read_at / write_at: stage the region a block reads (writes) in one iteration of a loop
through a buffer in another storage scope, copied at the start (end) of that iteration."""

from __future__ import annotations

from typing import Any

from ..buffer import Buffer, decl_buffer
from ..expr import BufferLoad, IntImm, IterType, IterVar, Range, Var, const_value
from ..function import PrimFunc
from ..functor import Mutator, substitute
from ..stmt import (
    Block,
    BlockRealize,
    BufferRegion,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    Stmt,
)
from .common import add_root_alloc, analyzer, schedule_error, unique_name
from .tree import Path, find_loop, insert_next_to, loops_above, replace_stmt, uses_var

# how far out a storage scope reaches: a loop bound to a thread of at least this rank is
# shared by the cache, so the copied region spans all of its iterations
_SCOPE_RANK = {"global": 0, "shared": 1, "warp": 2, "local": 3}


def _thread_rank(loop: For) -> int | None:
    tag = loop.thread_binding.thread_tag if loop.thread_binding is not None else ""
    if loop.kind != ForKind.THREAD_BINDING:
        return None
    return 0 if tag.startswith("blockIdx") else 1


def _relaxed_region(
    r: BlockRealize, path: Path, loop: For, buf: Buffer, regions: tuple, scope: str
) -> tuple[list, list[For]]:
    """((min, extent) per dim of what `r` accesses of `buf` in one iteration of `loop`, the
    loops the mins still depend on)."""
    above = loops_above(path)
    start = next(k for k, f in enumerate(above) if f is loop)
    rank = _SCOPE_RANK.get(scope.split(".")[0], 3)
    relax = {id(f) for f in above[start + 1 :]}
    for f in above[: start + 1]:
        t = _thread_rank(f)
        if t is not None and t >= rank:
            relax.add(id(f))
    binding = {iv.var: v for iv, v in zip(r.block.iter_vars, r.iter_values)}
    dom = {f.loop_var: Range.from_min_extent(f.min, f.extent) for f in above if id(f) in relax}
    ana = analyzer()
    out = []
    for region in regions:
        for d, rg in enumerate(region):
            lo = ana.int_set(substitute(rg.min, binding), dom)
            hi = ana.int_set(substitute(rg.min + rg.extent - 1, binding), dom)
            ext = const_value(ana.simplify(hi.max_value - lo.min_value + 1))
            if not isinstance(ext, int):
                return [], []
            if len(out) <= d:
                out.append((ana.simplify(lo.min_value), ext))
    free = [f for f in above if id(f) not in relax]
    return out, free


def _stage(
    func: PrimFunc,
    loop: For,
    r: BlockRealize,
    path: Path,
    index: int,
    scope: str,
    read: bool,
) -> tuple[PrimFunc, str]:
    block = r.block
    kind = "read" if read else "write"
    what = (
        f"{kind}_at(loop '{loop.loop_var.name}', block '{block.name_hint}', "
        f"{kind}_buffer_index={index}, storage_scope={scope!r})"
    )
    regions = block.reads if read else block.writes
    if not isinstance(index, int) or not 0 <= index < len(regions):
        raise schedule_error(
            func, f"{what}: the block {kind}s {len(regions)} buffers; index out of range", r
        )
    if not any(s is loop for s in path):
        raise schedule_error(func, f"{what}: the loop is not above the block", r)
    buf = regions[index].buffer
    accesses = tuple(rg.region for rg in regions if rg.buffer is buf)
    if read and any(w.buffer is buf for w in block.writes):
        raise schedule_error(func, f"{what}: the block also writes '{buf.name}'", r)
    window, free = _relaxed_region(r, path, loop, buf, accesses, scope)
    if not window:
        raise schedule_error(
            func, f"{what}: the region of '{buf.name}' it touches has no constant size", r
        )
    _check_alone(func, loop, r, buf, what)
    name = unique_name(func, f"{buf.name}_{scope.replace('.', '_')}")
    cache = decl_buffer(buf.shape, buf.dtype, name, scope=scope)
    copy = _copy_block(window, free, buf, cache, read, name)
    new_block = _Swap(buf, cache).visit(block)
    new_r = r.replace(block=new_block)
    func = replace_stmt(func, r, new_r)
    node, _ = find_loop(func, loop.loop_var)
    func = replace_stmt(func, node, node.replace(body=insert_next_to(node.body, new_r, copy, read)))
    return add_root_alloc(func, cache), name


def _check_alone(func: PrimFunc, loop: For, r: BlockRealize, buf: Buffer, what: str) -> None:
    """No other block under the loop may touch the buffer: it would miss the staged copy."""
    from .tree import block_realizes

    for x, _ in block_realizes(loop.body):
        if x is r:
            continue
        touched = any(rg.buffer is buf for rg in x.block.reads + x.block.writes)
        if touched:
            raise schedule_error(
                func,
                f"{what}: block '{x.block.name_hint}' under the same loop also uses '{buf.name}'",
                r,
            )


def _copy_block(
    window: list, free: list[For], src: Buffer, cache: Buffer, read: bool, name: str
) -> Stmt:
    """A block over the loops the window moves with, copying the window element by element."""
    ivs, vmap, order = [], {}, []
    for lo, _ in window:  # one iterator per loop the window moves with, in dimension order
        seen = {id(f) for f in order}
        order += [f for f in free if uses_var(lo, {id(f.loop_var)}) and id(f) not in seen]
    for f in order:
        v = Var(f"v{len(ivs)}", f.loop_var.dtype)
        ivs.append(IterVar(Range.from_min_extent(f.min, f.extent), v, IterType.DataPar))
        vmap[f.loop_var] = v
    mins = [substitute(lo, vmap) for lo, _ in window]
    region = tuple(Range.from_min_extent(m, e) for m, (_, e) in zip(mins, window))
    axes = [Var(f"ax{d}", m.dtype) for d, m in enumerate(mins)]
    idx = tuple(m + a for m, a in zip(mins, axes))
    frm, to = (src, cache) if read else (cache, src)
    body: Stmt = BufferStore(to, BufferLoad(frm, idx), idx)
    guard = _bounds_guard(src, window, idx, [(v, iv) for v, iv in zip(order, ivs)], vmap)
    if guard is not None:  # a tile that hangs over the buffer's end (a guarded split tail)
        body = IfThenElse(guard, body)
    for a, (_, e) in reversed(list(zip(axes, window))):
        body = For(a, IntImm(a.dtype, 0), IntImm(a.dtype, e), ForKind.SERIAL, body)
    block = Block(
        tuple(ivs),
        (BufferRegion(frm, region),),
        (BufferRegion(to, region),),
        name,
        body,
        annotations={"auto_copy": 1},
    )
    values = tuple(f.loop_var for f in order)
    return BlockRealize(values, IntImm("bool", 1), block)


def _bounds_guard(src: Buffer, window: list, idx: tuple, loops: list, vmap: dict) -> Any:
    """`idx < shape` for the dimensions where the window may pass the buffer's end, else None."""
    from ..expr import And

    ana = analyzer()
    for _, iv in loops:
        ana.bind(iv.var, iv.dom)
    conds = []
    for (lo, ext), i, size in zip(window, idx, src.shape):
        last = substitute(lo, vmap) + (ext - 1)
        if not ana.can_prove(last < size):
            conds.append(i < size)
    guard = None
    for c in conds:
        guard = c if guard is None else And(guard, c)
    return guard


class _Swap(Mutator):
    def __init__(self, old: Buffer, new: Buffer) -> None:
        super().__init__()
        self.old, self.new = old, new

    def visit_Buffer(self, b: Any) -> Any:
        return self.new if b is self.old else b


def read_at(
    func: PrimFunc, loop: For, r: BlockRealize, path: Path, index: int, scope: str
) -> tuple[PrimFunc, str]:
    """(func, copy block name): the block's `index`-th read staged at the start of `loop`."""
    return _stage(func, loop, r, path, index, scope, read=True)


def write_at(
    func: PrimFunc, loop: For, r: BlockRealize, path: Path, index: int, scope: str
) -> tuple[PrimFunc, str]:
    """(func, copy block name): the block's `index`-th write staged, copied back at the end
    of each iteration of `loop`."""
    return _stage(func, loop, r, path, index, scope, read=False)


__all__ = ["read_at", "write_at"]
