"""Helpers shared by the GPU rules: a block's spatial loops, its realize, inlining the
intermediate stages, and binding spatial loops to blockIdx.x/threadIdx.x."""

from __future__ import annotations

from typing import Any

from ...error import ScheduleError
from ...tir.expr import BufferLoad, IntImm, IterType
from ...tir.functor import post_order_visit
from ...tir.schedule.inline import _check_inline, _InlineIndex
from ...tir.stmt import BlockRealize
from ..base.analysis import blocks


def _uses_var(expr: Any, var: Any) -> bool:
    found = []
    post_order_visit(expr, lambda n: found.append(n) if n is var else None)
    return bool(found)


def _spatial_prefix(sch: Any, block: Any) -> list:
    """The leading loops of `block` that bind only spatial iterators."""
    realize = _realize_of(sch, block)
    reduce_values = [
        v for iv, v in zip(realize.block.iter_vars, realize.iter_values)
        if iv.iter_type != IterType.DataPar
    ]  # fmt: skip
    out = []
    for loop in sch.get_loops(block):
        var = sch.get(loop).loop_var
        if any(_uses_var(v, var) for v in reduce_values):
            break
        out.append(loop)
    return out


def _inline_intermediates(sch: Any) -> None:
    """compute_inline every intermediate stage under the root that compute_inline accepts, in
    one walk of the function (one by one, each inline walked the whole function: a kernel of N
    fused stages took N^2 time, as on CPU before dlight/cpu/inline.py).

    One by one in program order, a stage was inlined when compute_inline's check passed. That
    check reads the stage's own store, the other writers of its buffer and the opaque uses of
    it, which inlining other stages never changes (their loads move into their readers, still
    element loads), so the stages taken are those whose check passes on the function as given;
    `_compute_inline_names` checks each again as it inlines them."""
    root_children = sch.get_child_blocks(sch.get_block("root"))
    outputs = {id(sch.get(b)) for b in sch.get_output_blocks("root")}
    func = sch.mod["main"]
    realizes = blocks(func)
    names = [r.block.name_hint for r in realizes]
    if len(set(names)) != len(names):  # blocks are found by name below: inline them by handle
        _inline_one_by_one(sch, root_children, outputs)
        return
    by_block = {id(r.block): r for r in realizes}
    candidates = [by_block[id(sch.get(b))] for b in root_children]
    candidates = [r for r in candidates if id(r.block) not in outputs]
    index = _InlineIndex(func, [w.buffer for r in candidates for w in r.block.writes])
    chosen = []
    for r in candidates:
        try:
            _check_inline(func, r, index)
        except ScheduleError:  # the primitive would refuse it: the stage stays
            continue
        chosen.append(r.block.name_hint)
    if chosen:
        sch._compute_inline_names(chosen)


def _inline_one_by_one(sch: Any, children: list, outputs: set) -> None:
    for block in children:
        if id(sch.get(block)) in outputs:
            continue
        try:
            sch.compute_inline(block)
        except ScheduleError:  # the primitive proved it illegal: the stage stays
            continue


def _fuse(sch: Any, loops: list) -> Any:
    return sch.fuse(*loops) if len(loops) > 1 else loops[0]


def _bind_block(sch: Any, block: Any, threads: int) -> Any:
    """Bind `block`'s spatial loops; returns the threadIdx loop (None when it has none).

    The trailing loops of constant extent go to threads (fused, split by `threads` when
    longer); leading symbolic ones (a batch `n`) are fused onto blockIdx.x unsplit, so no
    binding needs a proof about a symbolic tail.
    """
    loops = _spatial_prefix(sch, block)
    if not loops:  # (a reduction loop outermost) one thread runs the whole nest
        nest = sch.get_loops(block)
        loops = [sch.add_unit_loop(nest[0] if nest else block)]
    n_const = 0
    for loop in reversed(loops):
        if not isinstance(sch.get(loop).extent, IntImm):
            break
        n_const += 1
    symbolic, const = loops[: len(loops) - n_const], loops[len(loops) - n_const :]
    if not const:  # every thread block runs one point of the symbolic loops
        sch.bind(_fuse(sch, symbolic), "blockIdx.x")
        return None
    fused = _fuse(sch, const)
    extent = sch.get(fused).extent.value
    if symbolic:
        sch.bind(_fuse(sch, symbolic), "blockIdx.x")
        if extent > threads:
            _, fused = sch.split(fused, [None, threads])
        sch.bind(fused, "threadIdx.x")
        return fused
    bx, tx = sch.split(fused, [None, min(threads, extent)])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return tx


def _realize_of(sch: Any, block: Any) -> BlockRealize:
    target = sch.get(block)
    found: list = []
    post_order_visit(
        sch.mod["main"].body,
        lambda n: found.append(n) if isinstance(n, BlockRealize) and n.block is target else None,
    )
    return found[0]


def _loads(stmt: Any) -> list:
    found: list = []
    post_order_visit(stmt, lambda n: found.append(n) if isinstance(n, BufferLoad) else None)
    return found
