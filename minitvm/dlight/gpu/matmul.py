"""Matmul: a kernel with one reduction block of matmul shape (dense, matmul, batch_matmul,
conv2d after legalization: two operands, each spatial iterator read by one of them or by both)
gets a shared-memory tiled schedule (`_schedule_gemm`): the block is viewed as a GEMM
C[b, i, j] += A[b, i, k] * B[b, j, k] by fusing its iterators (conv2d's data read becomes an
im2col gather), padded to whole tiles, each thread block computes a tile of C in registers
(threadIdx.y x threadIdx.x threads, a few rows and columns each) while the threads fetch the
A and B tiles of each K step into shared memory together (neighbouring threads load neighbouring
elements of the operand; the tiles are stored k-major, so a warp reading one k step of them
touches neighbouring words, not one bank); the fused elementwise epilogue (bias, relu,
residual) runs in the thread that holds the values. A kernel the rule does not fit raises
_NoMatch saying why (the default schedule logs it at debug level)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ...error import ScheduleError
from ...ir.module import IRModule
from ...tir.expr import Call, IterType, Select, Var, const_value
from ...tir.function import PrimFunc
from ...tir.functor import post_order_visit
from ...tir.stmt import BlockRealize, BufferStore
from ...tir.transform.lower_thread_binding import has_thread_bindings
from .base import GPUScheduleRule, limits
from .utils import _fuse, _loads, _realize_of, _uses_var

# (smallest extent, threads, elements per thread) for the i and j dimensions of a GEMM: the
# first row whose extent fits; the block tile is threads x elements (64 from 64 up), padded
_DIM_TILES = ((64, 16, 4), (32, 16, 2), (16, 16, 1), (8, 8, 1), (4, 4, 1), (2, 2, 1), (1, 1, 1))


_K_TILE = 16  # K step fetched into shared memory per barrier pair (8 when that divides and 16 not)


class _NoMatch(Exception):
    """The kernel is not one the GEMM rule schedules; the message says why."""


@dataclass(frozen=True)
class _Gemm:
    """A reduction block read as C[b, i, j] += A[b, i, k] * B[b, j, k]: the positions of its
    iterators in each group (b: read by both operands or neither, i: by A only, j: by B only,
    k: the reduction iterators)."""

    name: str
    batch: tuple[int, ...]
    i: tuple[int, ...]
    j: tuple[int, ...]
    k: tuple[int, ...]
    extents: tuple[int, ...]  # of every iterator, in block order

    def size(self, group: tuple[int, ...]) -> int:
        return math.prod(self.extents[p] for p in group)


def _match_gemm(func: PrimFunc) -> _Gemm:
    """The GEMM view of `func`'s one reduction block, or _NoMatch."""
    found: list = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, BlockRealize) else None)
    reductions = [
        r for r in found if any(iv.iter_type != IterType.DataPar for iv in r.block.iter_vars)
    ]
    if len(reductions) != 1:
        raise _NoMatch(f"{len(reductions)} reduction blocks (the rule tiles exactly one)")
    block, store = reductions[0].block, reductions[0].block.body
    if block.init is None or not isinstance(store, BufferStore):
        raise _NoMatch(f"block '{block.name_hint}' is not one store with an init")
    if const_value(reductions[0].predicate) != 1:
        raise _NoMatch(f"block '{block.name_hint}' has a predicate")
    if _has_conditional(store.value):  # a staged copy would load what the condition guards
        raise _NoMatch(f"block '{block.name_hint}' reads its operands under a condition")
    extents = tuple(const_value(iv.dom.extent) for iv in block.iter_vars)
    if not all(isinstance(e, int) for e in extents):
        raise _NoMatch(f"block '{block.name_hint}' has symbolic extents {list(extents)}")
    loads = [x for x in _loads(store.value) if x.buffer is not store.buffer]
    operands = list(dict.fromkeys(x.buffer for x in loads))
    if len(operands) != 2 or len(loads) != 2:
        names = [b.name for b in operands]
        raise _NoMatch(f"block '{block.name_hint}' reads {names} (a GEMM reads two operands once)")
    reads = [{id(v) for x in loads if x.buffer is b for i in x.indices for v in _vars(i)}
             for b in operands]  # fmt: skip
    groups: dict[str, list[int]] = {"batch": [], "i": [], "j": [], "k": []}
    for p, iv in enumerate(block.iter_vars):
        in_a, in_b = id(iv.var) in reads[0], id(iv.var) in reads[1]
        if iv.iter_type != IterType.DataPar:
            groups["k"].append(p)
        else:
            groups["i" if in_a and not in_b else "j" if in_b and not in_a else "batch"].append(p)
    if not groups["i"] or not groups["j"]:
        raise _NoMatch(
            f"block '{block.name_hint}': no spatial iterator read by only one operand "
            f"(i {groups['i']}, j {groups['j']}): not a matmul or conv"
        )
    if math.prod(extents[p] for p in groups["batch"]) == 1:  # unit batch iterators: leading i's
        groups["i"] = sorted(groups["batch"] + groups["i"])
        groups["batch"] = []
    return _Gemm(block.name_hint, *(tuple(groups[g]) for g in ("batch", "i", "j", "k")), extents)


def _has_conditional(expr: Any) -> bool:
    found: list = []

    def visit(n: Any) -> None:
        if isinstance(n, Select) or (isinstance(n, Call) and _op_name(n) == "tir.if_then_else"):
            found.append(n)

    post_order_visit(expr, visit)
    return bool(found)


def _op_name(call: Any) -> str:
    return getattr(call.op, "name", str(call.op))


def _vars(expr: Any) -> list:
    found: list = []
    post_order_visit(expr, lambda n: found.append(n) if isinstance(n, Var) else None)
    return found


@dataclass(frozen=True)
class _Tiles:
    ty: int  # threads along i
    vi: int  # rows of C per thread
    tx: int  # threads along j
    vj: int  # columns of C per thread
    tk: int  # K step


def _dim_tile(extent: int) -> tuple[int, int]:
    return next((t, v) for least, t, v in _DIM_TILES if extent >= least)


def _choose_tiles(gemm: _Gemm, max_threads: int, max_shared: int, itemsize: int) -> _Tiles:
    """Tile sizes for `gemm` within the target's limits, or _NoMatch."""
    (ty, vi), (tx, vj) = _dim_tile(gemm.size(gemm.i)), _dim_tile(gemm.size(gemm.j))
    while ty * tx > max_threads and max(ty, tx) > 1:  # fewer threads, same block tile
        if ty >= tx:
            ty, vi = ty // 2, vi * 2
        else:
            tx, vj = tx // 2, vj * 2
    k = gemm.size(gemm.k)
    tk = _K_TILE if k % _K_TILE == 0 or k % 8 else 8
    tk = min(tk, 1 << (k - 1).bit_length())  # a short K is not padded past a power of two
    shared = (ty * vi + tx * vj) * tk * itemsize
    if ty * tx > max_threads or shared > max_shared:
        raise _NoMatch(f"tiles {ty}x{tx} threads, {shared} B shared exceed the target's limits")
    return _Tiles(ty, vi, tx, vj, tk)


def _fused(vs: list, gemm: _Gemm, group: tuple[int, ...]) -> Any:
    """The row-major fusion of the iterators at `group` (0 when empty)."""
    out: Any = 0
    for p in group:
        out = out * gemm.extents[p] + vs[p]
    return out


def _schedule_gemm(func: PrimFunc, max_threads: int, max_shared: int) -> PrimFunc:
    """`func` with its GEMM block tiled through shared memory (the module doc), or _NoMatch /
    ScheduleError when it does not fit."""
    from ...tir.schedule import Schedule

    sch = Schedule(IRModule({"main": func}))
    schedule_gemm(sch, max_threads, max_shared)
    return sch.mod["main"]


def schedule_gemm(sch: Any, max_threads: int, max_shared: int) -> None:
    """The GEMM tiling of `_schedule_gemm` as steps on `sch` (meta-schedule replays them, so
    its default GPU point is this rule's kernel, with a trace)."""
    gemm = _match_gemm(sch.mod["main"])
    block = sch.get_block(gemm.name)
    _to_gemm_iterators(sch, block, gemm, _epilogue(sch, block, gemm))
    n = 1 if gemm.batch else 0  # position of the i iterator in the new block
    operands = _operand_indices(sch, block)
    itemsize = max(sch.get(block).reads[x].buffer.dtype.bytes for x in operands)
    tiles = _choose_tiles(gemm, max_threads, max_shared, itemsize)
    # staged copies laid out by the iterators each access uses, in block order: A[b, i, k],
    # B[b, j, k], C[b, i, j] (reads keep their positions when a buffer is swapped)
    sch.reindex_cache_read(block, operands[0], "shared", None)
    sch.reindex_cache_read(block, operands[1], "shared", None)
    sch.reindex_cache_write(block, 0, "local", None)
    sch.pad_einsum(block, [1] * n + [tiles.ty * tiles.vi, tiles.tx * tiles.vj, tiles.tk])
    fetches, (writeback,) = sch.get_producers(block), sch.get_consumers(block)
    for fetch in fetches:  # k-major tiles: the threads of a warp read neighbouring words
        sch.transform_layout(fetch, ("write", 0), _k_major)
    _inline_all_but(sch, [*fetches, block, writeback])
    _tile_gemm(sch, block, fetches, writeback, tiles, n)


def _k_major(*v: Any) -> list:
    """A staged tile's layout [..., rows, k] as [..., k, rows] (a 1-D tile stays)."""
    return [*v[:-2], v[-1], v[-2]] if len(v) > 1 else list(v)


@dataclass(frozen=True)
class _Epilogue:
    """The one block after the GEMM that reads its intermediate result C elementwise."""

    block: Any  # BlockRV
    c_dims: tuple[int, ...]  # C's dim d is written at the GEMM's iterator c_dims[d]
    e_dims: tuple[int, ...]  # ... and read at the epilogue's iterator e_dims[d]


def _epilogue(sch: Any, block: Any, gemm: _Gemm) -> _Epilogue | None:
    """The elementwise stages after the GEMM inlined into one epilogue block (None when the
    GEMM writes the function's output itself)."""
    store = _realize_of(sch, block).block.body
    if any(store.buffer is b for b in sch.mod["main"].buffer_map.values()):
        return None  # the copy-back of the accumulator writes the output
    children = sch.get_child_blocks(sch.get_block("root"))
    names = [sch.get(x).name_hint for x in children]
    for blk in children[names.index(gemm.name) + 1 :]:
        try:
            sch.compute_inline(blk)
        except ScheduleError:  # the output (or a stage the inliner refuses) stays
            continue
    consumers = sch.get_consumers(block)
    if len(consumers) != 1:
        raise _NoMatch(f"the result of '{gemm.name}' has {len(consumers)} consumers after inlining")
    r_block, e_block = _realize_of(sch, block).block, sch.get(consumers[0])
    c_dims = _iterator_positions(r_block, store.indices)
    reads = {tuple(id(i) for i in x.indices): x.indices
             for x in _loads(e_block.body) if x.buffer is store.buffer}  # fmt: skip
    e_dims = _iterator_positions(e_block, next(iter(reads.values()))) if len(reads) == 1 else None
    spatial = [p for p, iv in enumerate(r_block.iter_vars) if iv.iter_type == IterType.DataPar]
    if (
        c_dims is None
        or e_dims is None
        or sorted(c_dims) != spatial
        or len(e_block.iter_vars) != len(e_dims)
    ):
        raise _NoMatch(f"'{e_block.name_hint}' does not read '{store.buffer.name}' elementwise")
    return _Epilogue(consumers[0], tuple(c_dims), tuple(e_dims))


def _merge(slots: list, a: tuple, b: tuple, extent_b: int) -> tuple[Any, list]:
    """(index map fusing slot b into slot a as a * extent_b + b, the slots after it)."""
    ia, ib = slots.index(a), slots.index(b)

    def fmap(*v: Any) -> list:
        return [v[ia] * extent_b + v[ib] if x == ia else v[x] for x in range(len(v)) if x != ib]

    return fmap, [a + b if x == ia else s for x, s in enumerate(slots) if x != ib]


def _to_gemm_iterators(sch: Any, block: Any, gemm: _Gemm, epi: _Epilogue | None) -> None:
    """Re-lay the GEMM block out as iterators (b, i, j, k); C and the epilogue follow its
    spatial fusions so the epilogue reads C at its own iterators.

    Groups are fused two iterators at a time (innermost first): the inverse of one fusion,
    `v // e * e + v % e`, simplifies back to `v`, which a nested mixed-radix inverse does not
    always do, and C's indices must come out as plain iterators for the epilogue to inline."""
    r_slots = [(p,) for p in range(len(gemm.extents))]  # each iterator: the R positions it fuses
    if epi is not None:
        c_slots = [(p,) for p in epi.c_dims]
        e_slots = [None] * len(epi.e_dims)
        for d, q in enumerate(epi.e_dims):
            e_slots[q] = c_slots[d]
    spatial = [g for g in (gemm.batch, gemm.i, gemm.j) if g]
    for group in spatial:
        tail = (group[-1],)
        for p in reversed(group[:-1]):
            ext = math.prod(gemm.extents[x] for x in tail)
            if epi is not None:
                fmap, c_slots = _merge(c_slots, (p,), tail, ext)
                sch.transform_layout(block, ("write", 0), fmap)
                fmap, e_slots = _merge(e_slots, (p,), tail, ext)
                sch.transform_block_layout(epi.block, fmap)
            fmap, r_slots = _merge(r_slots, (p,), tail, ext)
            sch.transform_block_layout(block, fmap)
            tail = (p, *tail)
    order = [r_slots.index(tuple(g)) for g in spatial]
    k_at = {p: r_slots.index((p,)) for p in gemm.k}

    def final(*v: Any) -> list:  # (b, i, j) in that order, the reduction iterators fused
        return [v[x] for x in order] + [_fused({p: v[x] for p, x in k_at.items()}, gemm, gemm.k)]

    sch.transform_block_layout(block, final)


def _iterator_positions(block: Any, indices: tuple) -> list[int] | None:
    """For each index, the position of the block iterator it is (None unless all are, once)."""
    pos = {id(iv.var): p for p, iv in enumerate(block.iter_vars)}
    out = [pos.get(id(i)) for i in indices]
    return out if None not in out and len(set(out)) == len(out) else None


def _operand_indices(sch: Any, block: Any) -> list[int]:
    """Positions in `block`'s reads of the two operands (not the accumulator)."""
    b = sch.get(block)
    out = b.writes[0].buffer
    return [x for x, rg in enumerate(b.reads) if rg.buffer is not out]


def _inline_all_but(sch: Any, keep: list) -> None:
    """Inline every other block of the root (producers forward, epilogues backward)."""
    kept = {sch.get(x).name_hint for x in keep}  # names survive the rewrites, objects do not

    def others() -> list:
        blocks = sch.get_child_blocks(sch.get_block("root"))
        return [x for x in blocks if sch.get(x).name_hint not in kept]

    progress = True
    while progress:
        progress = False
        for blk in others():
            for inline in (sch.compute_inline, sch.reverse_compute_inline):
                try:
                    inline(blk)
                except ScheduleError:
                    continue
                progress = True
                break
    left = [sch.get(x).name_hint for x in others()]
    if left:
        raise _NoMatch(f"blocks {left} could not be inlined into the tiled kernel")


def _tile_gemm(sch: Any, block: Any, fetches: list, writeback: Any, t: _Tiles, n: int) -> None:
    """Blocks of C tiles, threads of register tiles, K steps through shared memory."""
    loops = sch.get_loops(block)
    li, lj, lk = loops[n:]
    by, ty, vi = sch.split(li, [None, t.ty, t.vi])
    bx, tx, vj = sch.split(lj, [None, t.tx, t.vj])
    ko, ki = sch.split(lk, [None, t.tk])
    sch.reorder(*loops[:n], by, bx, ty, tx, ko, ki, vi, vj)
    if n:
        sch.bind(loops[0], "blockIdx.z")
    for loop, tag in zip(
        (by, bx, ty, tx), ("blockIdx.y", "blockIdx.x", "threadIdx.y", "threadIdx.x")
    ):
        sch.bind(loop, tag)
    for fetch in fetches:  # every thread of the block copies a share of the tile
        sch.compute_at(fetch, ko)
        copy = _coalesced(sch, fetch, sch.get_loops(fetch)[n + 5 :])  # below ko: the copy loops
        fused = _fuse(sch, copy) if copy else sch.add_unit_loop(fetch)
        _, fy, fx = sch.split(fused, [None, t.ty, t.tx])
        sch.bind(fy, "threadIdx.y")
        sch.bind(fx, "threadIdx.x")
    sch.reverse_compute_at(writeback, tx)
    sch.decompose_reduction(block, ko)


def _coalesced(sch: Any, fetch: Any, copy: list) -> list:
    """`copy` (the fetch's copy loops) reordered so that the loop along the operand's last,
    contiguous dimension is innermost: neighbouring threads then load neighbouring elements.
    Unchanged when that index mixes several copy loops (conv's im2col gather)."""
    loads = [x for x in _loads(sch.get(fetch).body) if x.buffer.scope() == "global"]
    if len(loads) != 1:
        return copy
    realize = _realize_of(sch, fetch)
    last = loads[0].indices[-1]
    at = [p for p, iv in enumerate(realize.block.iter_vars) if _uses_var(last, iv.var)]
    if len(at) != 1:
        return copy
    value = realize.iter_values[at[0]]
    inner = [x for x in copy if _uses_var(value, sch.get(x).loop_var)]
    if len(inner) != 1 or inner[0] is copy[-1]:
        return copy
    order = [x for x in copy if x is not inner[0]] + inner
    sch.reorder(*order)
    return order


class Matmul(GPUScheduleRule):
    """Kernels with one matmul-shaped reduction (matmul, dense, batch matmul, conv2d): C tiles
    through shared memory (`_schedule_gemm`); None for any other kernel.

    with tvm.target.Target("opencl"):
        mod = dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.Fallback())(mod)
    """

    def apply(self, func: PrimFunc, target: Any, tunable: bool) -> PrimFunc | None:
        if has_thread_bindings(func):
            return None
        try:
            return _schedule_gemm(func, *limits(target))
        except (_NoMatch, ScheduleError):
            return None
