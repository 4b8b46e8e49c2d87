"""`Stage.transform_layout(fn)`: store a tensor in the layout `fn` maps its indices to.

On a placeholder the caller's array takes the new layout (the function's parameter changes
shape); on a compute stage its buffer does too, and its loops are rewritten to run over the
new layout: the IterVars returned (one per new dimension, then the reduction axes) replace
the stage's loops and can be split, fused and reordered. Replayed with the tir primitives
transform_layout, set_axis_separator and transform_block_layout.
"""

from __future__ import annotations

from typing import Any

from ..error import ScheduleError
from ..tir.expr import IterType, IterVar, Range, Var
from ..tir.index_map import IndexMap
from .operation import ComputeOp, PlaceholderOp


def _const(e: Any) -> int | None:
    v = getattr(e, "value", e)
    return v if isinstance(v, int) else None


def _check_no_padding(name: str, shape: tuple, imap: IndexMap) -> None:
    """A layout that needs padding (3 channels in blocks of 4) is refused, as in TVM's TE:
    every `x // c` and `x % c` must split a range whose length is a multiple of c."""
    from ..arith import Analyzer
    from ..tir.expr import FloorDiv, FloorMod
    from ..tir.functor import post_order_visit

    ana = Analyzer()
    for v, ext in zip(imap.initial_indices, shape):
        ana.bind(v, Range.from_min_extent(0, ext))
    bad = []

    def visit(n: Any) -> None:
        if isinstance(n, FloorDiv | FloorMod) and _const(n.b) is not None:
            bound = ana.const_int_bound(n.a)
            length = bound.max_value - bound.min_value + 1
            if bound.min_value == 0 and length % _const(n.b) != 0:
                bad.append(n)

    for e in imap.final_indices:
        post_order_visit(e, visit)
    if bad:
        raise ScheduleError(
            f"transform_layout of '{name}': `{bad[0]}` splits a dimension of shape "
            f"{tuple(_const(d) or d for d in shape)} unevenly, so the new layout would need "
            "padding; TE layouts must be a permutation of the elements (use "
            "tir.Schedule.transform_layout with pad_value)"
        )


def transform_layout(stage: Any, fn: Any) -> list | None:
    """Record the layout change of `stage`'s tensor; the new loop IterVars of a compute."""
    op = stage.op
    if not isinstance(op, PlaceholderOp | ComputeOp):
        raise ScheduleError(f"transform_layout of '{stage.name}': only placeholders and computes")
    if stage.actions:
        raise ScheduleError(
            f"transform_layout of '{stage.name}': the stage already has loop transformations; "
            "call transform_layout first, then split/fuse/reorder the IterVars it returns"
        )
    shape = tuple(op.shape)
    dtype = str(shape[0].dtype) if shape else "int32"
    imap, separators = IndexMap.from_func_with_separators(fn, len(shape), index_dtype=dtype)
    new_shape = [stage._sch._simplify(d) for d in imap.map_shape(shape)]
    _check_no_padding(stage.name, shape, imap)
    stage._sch._structural.append(("transform_layout", stage, imap, tuple(separators)))
    if isinstance(op, PlaceholderOp):
        return None
    new_ivs = [
        IterVar(Range.from_min_extent(0, ext), Var(f"{op.name}_ax{k}", ext.dtype), IterType.DataPar)
        for k, ext in enumerate(new_shape)
    ]
    reduce_axes = list(op.reduce_axis)
    stage.leaf_iter_vars = new_ivs + reduce_axes
    stage.all_iter_vars = list(stage.all_iter_vars) + new_ivs
    stage.actions.append(("relayout_loops", imap, tuple(new_ivs)))
    return list(new_ivs)


def block_map(imap: IndexMap, num_reduce: int) -> IndexMap:
    """`imap` extended to a block's reduction iterators, which it passes through unchanged."""
    if not num_reduce:
        return imap
    dtype = imap.initial_indices[0].dtype if imap.initial_indices else "int32"
    extra = [Var(f"r{k}", dtype) for k in range(num_reduce)]
    return IndexMap(list(imap.initial_indices) + extra, list(imap.final_indices) + extra)


__all__ = ["block_map", "transform_layout"]
