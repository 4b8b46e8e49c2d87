"""Schedule transformations built from primitives (tvm.tir.schedule.transform).

`tile_with_tensor_intrin` finds which loops of a block play the roles of a tensor
intrinsic's loops, splits each by the intrinsic's extent and moves the inner parts innermost,
in the intrinsic's order, so that `tensorize` can be applied at the returned loop. It uses only
`split` and `reorder`, which check their own legality.
"""

from __future__ import annotations

from typing import Any

from ..expr import BufferLoad, Var
from ..functor import post_order_visit
from ..stmt import BlockRealize, BufferStore, For
from .common import const_int
from .tree import vars_in


def _accesses(block: Any) -> list[tuple[Any, tuple]]:
    """(buffer, indices) of the block's single store, then of its loads in program order."""
    store = block.body
    if not isinstance(store, BufferStore):
        return []
    loads: list[BufferLoad] = []
    post_order_visit(store.value, lambda n: loads.append(n) if isinstance(n, BufferLoad) else None)
    return [(store.buffer, store.indices)] + [(ld.buffer, ld.indices) for ld in loads]


def _desc_block(desc: Any) -> tuple[list[For], Any] | None:
    if not isinstance(desc.body, BlockRealize):
        return None
    loops, stmt = [], desc.body.block.body
    while isinstance(stmt, For):
        loops.append(stmt)
        stmt = stmt.body
    return (loops, stmt) if isinstance(stmt, BlockRealize) else None


def tensorize_iter_mapping(block: Any, desc: Any) -> list[tuple[Any, Any]] | None:
    """For each iterator of the description's block (in order), the block iterator in the same
    role: the one used, in every buffer dimension where the description uses its iterator
    alone, by the block's index of the matching buffer (accesses paired in program order,
    trailing dimensions aligned). None when some iterator has no unique, same-kind partner."""
    found = _desc_block(desc)
    if found is None:
        return None
    _, desc_realize = found
    d_block = desc_realize.block
    ours, theirs = _accesses(block), _accesses(d_block)
    if not ours or len(ours) != len(theirs):
        return None
    our_iters = {id(iv.var): iv for iv in block.iter_vars}
    mapping = []
    for d_iv in d_block.iter_vars:
        candidates: set[int] | None = None
        for (_, idx_a), (_, idx_b) in zip(ours, theirs):
            if len(idx_a) < len(idx_b):
                return None
            for a, b in zip(idx_a[len(idx_a) - len(idx_b) :], idx_b):
                if isinstance(b, Var) and b is d_iv.var:
                    used = {id(v) for v in vars_in(a) if id(v) in our_iters}
                    candidates = used if candidates is None else candidates & used
        if not candidates or len(candidates) != 1:
            return None
        iv = our_iters[next(iter(candidates))]
        if iv.iter_type != d_iv.iter_type or any(iv is m for m, _ in mapping):
            return None
        mapping.append((iv, d_iv))
    return mapping


def tile_with_tensor_intrin(
    sch: Any, block: Any, intrin_name: str, allow_padding: bool = False
) -> Any:
    """Split and reorder the block's loops for the intrinsic; the first tiled loop (or None)."""
    from ..tensor_intrin_base import TensorIntrin

    desc = TensorIntrin.get(intrin_name).desc
    realize = sch._block(block)[2]
    mapping = tensorize_iter_mapping(realize.block, desc)
    if mapping is None:
        return None
    binding = {id(iv.var): v for iv, v in zip(realize.block.iter_vars, realize.iter_values)}
    loops = sch.get_loops(block)
    loop_of = {id(sch.get(rv).loop_var): rv for rv in loops}
    plan = []
    for iv, d_iv in mapping:
        value = binding[id(iv.var)]
        rv = loop_of.get(id(value)) if isinstance(value, Var) else None
        total, inner = const_int(sch.get(rv).extent) if rv else None, const_int(d_iv.dom.extent)
        if rv is None or total is None or inner is None or total % inner != 0:
            return None  # padding (allow_padding) is not supported: the loop must divide
        plan.append((rv, inner))
    suffix = [sch.split(rv, factors=[None, inner])[1] for rv, inner in plan]
    inner_ids = {id(sch.get(rv).loop_var) for rv in suffix}
    order, met = [], False
    for rv in sch.get_loops(block):
        if id(sch.get(rv).loop_var) in inner_ids:
            met = True
        elif met:
            order.append(rv)
    sch.reorder(*order, *suffix)
    return suffix[0]


__all__ = ["tensorize_iter_mapping", "tile_with_tensor_intrin"]
