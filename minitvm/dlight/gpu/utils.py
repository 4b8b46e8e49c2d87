"""Helpers shared by the GPU rules: a block's spatial loops, its realize, inlining the
intermediate stages, and binding spatial loops to blockIdx.x/threadIdx.x."""

from __future__ import annotations

from typing import Any

from ...error import ScheduleError
from ...tir.expr import BufferLoad, IntImm, IterType
from ...tir.functor import post_order_visit
from ...tir.stmt import BlockRealize


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
    outputs = {id(sch.get(b)) for b in sch.get_output_blocks("root")}
    for block in sch.get_child_blocks(sch.get_block("root")):
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
    if not loops:
        loops = [sch.add_unit_loop(block)]
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
