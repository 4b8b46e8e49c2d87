"""rolling_buffer: fold an intermediate buffer, computed tile by tile under a shared loop,
into a circular buffer along one axis whose tiles overlap, and skip recomputing the overlap."""

from __future__ import annotations

from typing import Any

from ..buffer import Buffer
from ..expr import LT, And, BufferLoad, FloorDiv, IntImm, IterType, Or, PrimExpr, Range, const_value
from ..function import PrimFunc
from ..functor import Mutator, substitute
from ..stmt import Block, BlockRealize, BufferRegion, BufferStore, For, ForKind
from .common import analyzer, schedule_error
from .tree import Path, block_realizes, loops_above, replace_stmts, root_realize, uses_var


def _lca_loops(func: PrimFunc, paths: list[Path]) -> list[For]:
    """The For loops shared by every path (outermost first), up to their lowest common
    statement."""
    common: list = []
    for nodes in zip(*paths):
        if any(n is not nodes[0] for n in nodes):
            break
        common.append(nodes[0])
    return [s for s in common if isinstance(s, For)]


def _window(r: BlockRealize, buf: Buffer, inner: list[For], outer: list[For]) -> list | None:
    """Per dimension of `buf`: (min as an expression of the outer loops, constant extent) of
    what block `r` writes in one iteration of the outer loops; None when not constant."""
    region = next(w.region for w in r.block.writes if w.buffer is buf)
    binding = {iv.var: v for iv, v in zip(r.block.iter_vars, r.iter_values)}
    ana = analyzer()  # the outer loops stay symbolic: the window moves with them
    dom = {f.loop_var: Range.from_min_extent(f.min, f.extent) for f in inner}
    out = []
    for rg in region:
        lo_set = ana.int_set(substitute(rg.min, binding), dom)
        hi_set = ana.int_set(substitute(rg.min + rg.extent - 1, binding), dom)
        if not (lo_set.has_lower_bound() and hi_set.has_upper_bound()):
            return None
        lo = ana.simplify(lo_set.min_value)
        extent = const_value(ana.simplify(hi_set.max_value - lo + 1))
        if not isinstance(extent, int):
            return None
        out.append((lo, extent))
    return out


def _stride(lo: PrimExpr, outer: list[For]) -> tuple[For, int] | None:
    """(loop, stride) when `lo` is `stride * loop_var + c` for one outer loop, or
    `(p * loop_var + c) // q`, whose steps are at most ceil(p / q): the overlap skipped on that
    bound never reaches past what the previous tile computed."""
    from ...arith import affine_coeffs

    q = const_value(lo.b) if isinstance(lo, FloorDiv) else None
    if isinstance(q, int) and q > 0:
        found = _stride(lo.a, outer)
        return None if found is None else (found[0], -(-found[1] // q))
    found = affine_coeffs(lo, [f.loop_var for f in outer])
    if found is None:
        return None
    coeffs, _ = found
    used = [(f, coeffs[f.loop_var]) for f in outer if coeffs[f.loop_var] != 0]
    if len(used) != 1 or used[0][1] <= 0:
        return None
    return used[0]


class _Fold(Mutator):
    """Accesses of `old` become accesses of `new` with dimension `dim` taken mod `size`."""

    def __init__(self, old: Buffer, new: Buffer, dim: int, size: int) -> None:
        super().__init__()
        self.old, self.new, self.dim, self.size = old, new, dim, size

    def _fold(self, indices: tuple) -> tuple:
        i = indices[self.dim]
        return indices[: self.dim] + (i % IntImm(i.dtype, self.size),) + indices[self.dim + 1 :]

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        e2 = e.replace(indices=self.visit(e.indices))
        if e.buffer is not self.old:
            return e2
        return BufferLoad(self.new, self._fold(e2.indices))

    def visit_BufferStore(self, s: BufferStore) -> Any:
        s2 = s.replace(value=self.visit(s.value), indices=self.visit(s.indices))
        if s.buffer is not self.old:
            return s2
        return s2.replace(buffer=self.new, indices=self._fold(s2.indices))

    def visit_BufferRegion(self, rg: BufferRegion) -> Any:
        if rg.buffer is not self.old:
            return rg
        region = list(rg.region)
        r = region[self.dim]
        whole = Range.from_min_extent(IntImm(r.min.dtype, 0), IntImm(r.min.dtype, self.size))
        region[self.dim] = (
            Range.from_min_extent(r.min % IntImm(r.min.dtype, self.size), 1)
            if const_value(r.extent) == 1
            else whole
        )
        return BufferRegion(self.new, tuple(region))

    def visit_Buffer(self, b: Buffer) -> Buffer:
        return self.new if b is self.old else b


def _opaque_iters(block: Block, buf: Buffer, dim: int) -> Block:
    """`block` with the spatial iterators that index dimension `dim` of `buf` made opaque
    (their values no longer name distinct elements)."""
    used: set[int] = set()
    for rg in block.reads + block.writes:
        if rg.buffer is buf:
            for iv in block.iter_vars:
                if uses_var(rg.region[dim].min, {id(iv.var)}):
                    used.add(id(iv.var))
    ivs = tuple(
        iv.replace(iter_type=IterType.Opaque)
        if id(iv.var) in used and iv.iter_type == IterType.DataPar
        else iv
        for iv in block.iter_vars
    )
    return block.replace(iter_vars=ivs)


def rolling_buffer(func: PrimFunc, r: BlockRealize, path: Path, index: int) -> PrimFunc:
    """`func` with the `index`-th buffer block `r` writes folded along its outermost
    overlapping axis, and `r` predicated to skip the elements an earlier tile computed."""
    block = r.block
    what = f"rolling_buffer(block '{block.name_hint}', write_buffer_index={index})"
    if not isinstance(index, int) or not 0 <= index < len(block.writes):
        raise schedule_error(
            func, f"{what}: the block writes {len(block.writes)} buffers; index out of range", r
        )
    buf = block.writes[index].buffer
    root = root_realize(func)
    if root is None or not any(b is buf for b in root.block.alloc_buffers):
        raise schedule_error(
            func, f"{what}: '{buf.name}' must be an intermediate allocated by alloc_buffer", r
        )
    realizes = [(x, p) for x, p in block_realizes(func.body) if x is not root]
    writers = [x for x, _ in realizes if any(w.buffer is buf for w in x.block.writes)]
    if len(writers) != 1:
        raise schedule_error(
            func, f"{what}: '{buf.name}' has {len(writers)} writers; it needs exactly one", r
        )
    readers = [
        (x, p)
        for x, p in realizes
        if x is not r and any(rg.buffer is buf for rg in x.block.reads)
    ]
    if not readers:
        raise schedule_error(func, f"{what}: '{buf.name}' has no consumer block", r)
    shared = _lca_loops(func, [path + (r,)] + [p + (x,) for x, p in readers])
    if not shared:
        raise schedule_error(
            func,
            f"{what}: the block and the consumers of '{buf.name}' share no loop; move the "
            "block under its consumer's loop with compute_at first",
            r,
        )
    outer = [f for f in loops_above(path) if any(f is s for s in shared)]
    inner = [f for f in loops_above(path) if not any(f is s for s in shared)]
    window = _window(r, buf, inner, outer)
    chosen = _choose_axis(window, outer) if window is not None else None
    if chosen is None:
        raise schedule_error(
            func,
            f"{what}: no axis of '{buf.name}' has tiles that overlap from one iteration of a "
            "shared loop to the next; rolling_buffer needs such an axis",
            r,
        )
    dim, loop, overlaps = chosen
    if any(f.kind != ForKind.SERIAL for f in outer) or const_value(loop.min) != 0:
        raise schedule_error(
            func, f"{what}: the shared loops must be serial loops starting at 0", r
        )
    size = window[dim][1]
    for x, p in readers:
        _check_reads_in_window(func, x, p, buf, dim, window[dim][0], size, shared, what)
    new = buf.replace(
        shape=buf.shape[:dim] + (IntImm(buf.shape[dim].dtype, size),) + buf.shape[dim + 1 :]
    )
    fold = _Fold(buf, new, dim, size)
    table = {}
    for x, _ in [(r, path)] + readers:
        new_block = _opaque_iters(fold.visit(x.block), new, dim)
        pred = x.predicate
        if x is r:
            pred = _skip_overlap(r, buf, window, overlaps, pred)
        table[id(x)] = x.replace(block=new_block, predicate=pred)
    func = replace_stmts(func, table, [r] + [x for x, _ in readers])
    root = root_realize(func)
    allocs = tuple(new if b is buf else b for b in root.block.alloc_buffers)
    return func.replace(body=root.replace(block=root.block.replace(alloc_buffers=allocs)))


def _check_reads_in_window(
    func: PrimFunc,
    x: BlockRealize,
    path: Path,
    buf: Buffer,
    dim: int,
    lo: PrimExpr,
    size: int,
    shared: list[For],
    what: str,
) -> None:
    """A consumer must read, in each iteration of the shared loops, only rows of the current
    tile: older rows are overwritten once the buffer is folded."""
    inner = [f for f in loops_above(path) if not any(f is s for s in shared)]
    binding = {iv.var: v for iv, v in zip(x.block.iter_vars, x.iter_values)}
    ana = analyzer()
    dom = {f.loop_var: Range.from_min_extent(f.min, f.extent) for f in inner}
    for iv in x.block.iter_vars:
        if not any(uses_var(v, {id(iv.var)}) for v in x.iter_values):
            dom[iv.var] = iv.dom
    for rg in (rg for rg in x.block.reads if rg.buffer is buf):
        r = rg.region[dim]
        first = ana.int_set(substitute(r.min, binding), dom)
        last = ana.int_set(substitute(r.min + r.extent - 1, binding), dom)
        inside = (
            first.has_lower_bound()
            and last.has_upper_bound()
            and ana.can_prove(lo <= first.min_value)
            and ana.can_prove(last.max_value < lo + size)
        )
        if not inside:
            raise schedule_error(
                func,
                f"{what}: block '{x.block.name_hint}' reads '{buf.name}' outside the tile its "
                "producer writes in the same iteration, so a folded buffer would lose rows",
                x,
            )


def _choose_axis(window: list, outer: list[For]) -> tuple | None:
    """(dim to fold, its loop, [(dim, loop, overlap)] of every overlapping axis), the folded
    dim being the one whose loop is outermost."""
    overlaps = []
    for d, (lo, extent) in enumerate(window):
        found = _stride(lo, outer)
        if found is not None and extent > found[1]:
            overlaps.append((d, found[0], extent - found[1]))
    if not overlaps:
        return None
    order = {id(f): k for k, f in enumerate(outer)}
    d, loop, _ = min(overlaps, key=lambda o: order[id(o[1])])
    return d, loop, overlaps


def _skip_overlap(
    r: BlockRealize, buf: Buffer, window: list, overlaps: list, pred: PrimExpr
) -> PrimExpr:
    """`pred` and, per overlapping axis, `loop == first or overlap <= offset in the tile`."""
    block = r.block
    write = next(w for w in block.writes if w.buffer is buf)
    binding = {iv.var: v for iv, v in zip(block.iter_vars, r.iter_values)}
    out = [] if const_value(pred) in (1, True) else [pred]
    ana = analyzer()
    for d, loop, overlap in overlaps:
        lo = window[d][0]
        offset = ana.simplify(substitute(write.region[d].min, binding) - lo)
        first = LT(loop.loop_var, IntImm(loop.loop_var.dtype, 1))
        out.append(Or(first, IntImm(offset.dtype, overlap) <= offset))
    acc = out[0]
    for c in out[1:]:
        acc = And(acc, c)
    return acc


__all__ = ["rolling_buffer"]
