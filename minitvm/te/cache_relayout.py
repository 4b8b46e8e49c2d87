"""`s.cache_write(C, scope)` on a stage already split/fused/reordered (or with several outputs).

As in TVM, the cache tensor takes the stage's loop layout: one dimension per spatial leaf
IterVar, in leaf order (a reorder transposes it, a split adds a dimension). The cache op
computes the original body with each root axis written in terms of the leaves (guarded where
a split overshoots); the stage itself becomes the copy `C[i, j] = C.cache[leaves of (i, j)]`
with fresh loops, as the rfactor swap does.
"""

from __future__ import annotations

from typing import Any

from ..arith import Analyzer
from ..error import ScheduleError
from ..ir.node import FrozenDict
from ..tir.expr import IterType, IterVar, PrimExpr, Range, Var, logical_and
from ..tir.functor import substitute
from ..tir.op import const, floordiv, floormod, if_then_else
from .bound import leaf_ranges, root_exprs
from .operation import ComputeOp
from .reduction import Reduce
from .tensor import ProducerLoad


class _Relations:
    """A stage's relations restricted to its spatial (or reduction) loops."""

    def __init__(self, stage: Any, reduce: bool) -> None:
        def kind(rel: Any) -> bool:
            head = rel.parent if hasattr(rel, "factor") else rel.fused_from[0]
            return (head.iter_type is IterType.CommReduce) == reduce

        self.relations = [r for r in stage.relations if kind(r)]


def _leaf_values(view: _Relations, root: dict, ranges: dict, ana: Analyzer) -> dict:
    """Values of the leaves given values of the roots (the inverse of root_exprs)."""
    vals = dict(root)
    for rel in view.relations:
        if hasattr(rel, "factor"):
            parent = ranges[rel.parent]
            offset = vals[rel.parent] - parent.min
            inner = ranges[rel.inner].extent
            vals[rel.outer] = ana.simplify(floordiv(offset, inner))
            vals[rel.inner] = ana.simplify(floormod(offset, inner))
        else:
            fused = vals[rel.fused_from[0]]
            for iv in rel.fused_from[1:]:
                fused = fused * ranges[iv].extent + vals[iv]
            vals[rel.fused] = ana.simplify(fused)
    return vals


def _overshoot_guards(view: _Relations, values: dict, ranges: dict, ana: Analyzer) -> list:
    out = []
    for rel in view.relations:
        if not hasattr(rel, "factor"):
            continue
        parent = ranges[rel.parent]
        if ana.can_prove(ranges[rel.outer].extent * ranges[rel.inner].extent <= parent.extent):
            continue
        out.append(values[rel.parent] < parent.min + parent.extent)
    return out


def _conj(conds: list) -> PrimExpr | None:
    out = None
    for c in conds:
        out = c if out is None else logical_and(out, c)
    return out


def _cache_body(op: ComputeOp, vmap: dict, guard: PrimExpr | None, red_axes: tuple) -> tuple:
    out = []
    for n, b in enumerate(op.body):
        if isinstance(b, Reduce):
            cond = substitute(b.condition, vmap)
            if guard is not None:
                cond = logical_and(cond, guard)
            source = tuple(substitute(x, vmap) for x in b.source)
            init = tuple(substitute(x, vmap) for x in b.init)
            out.append(Reduce(b.combiner, source, red_axes, cond, n, init))
        else:
            value = substitute(b, vmap)
            if guard is not None:  # points past the tensor's end compute nothing
                value = if_then_else(guard, value, const(0, value.dtype))
            out.append(value)
    return tuple(out)


def cache_write_relayout(sch: Any, tensors: list, scope: str) -> list:
    """Cache `tensors` (all outputs of one stage) in `scope`, in the stage's loop layout."""
    stage = sch[tensors[0]]
    op = stage.op
    names = ", ".join(t.name for t in tensors)
    if not isinstance(op, ComputeOp):
        raise ScheduleError(f"cache_write of '{names}': only a te.compute stage can be cached")
    if any(sch[t] is not stage for t in tensors) or len(tensors) != op.num_outputs:
        raise ScheduleError(
            f"cache_write of [{names}]: a list must hold every output of one compute "
            f"('{stage.name}' has {op.num_outputs}); pass them all, in order"
        )
    sch._check_not_cached(stage, "cache_write")
    for rel in stage.relations:
        if not hasattr(rel, "factor"):
            kinds = {iv.iter_type is IterType.CommReduce for iv in rel.fused_from}
            if len(kinds) > 1:
                raise ScheduleError(
                    f"cache_write of '{names}': loop '{rel.fused.var.name}' fuses spatial and "
                    "reduction loops, which gives the cache no layout; cache before that fuse"
                )
    ana = Analyzer()
    ranges = leaf_ranges(stage, {iv: iv.dom for iv in stage.initial}, ana)
    spatial = _Relations(stage, reduce=False)
    leaves = [iv for iv in stage.leaf_iter_vars if iv.iter_type is not IterType.CommReduce]
    axis = tuple(
        IterVar(Range.from_min_extent(0, ranges[lv].extent), Var(lv.var.name + ".c", lv.var.dtype)) for lv in leaves
    )
    values = root_exprs(spatial, {lv: a.var for lv, a in zip(leaves, axis)}, ranges, ana)
    red_axes = tuple(
        IterVar(iv.dom, Var(iv.var.name, iv.var.dtype), IterType.CommReduce)
        for iv in op.reduce_axis
    )
    vmap = {iv.var: values[iv] for iv in op.axis}
    vmap |= {a.var: b.var for a, b in zip(op.reduce_axis, red_axes)}
    guard = _conj(_overshoot_guards(spatial, values, ranges, ana))
    cache_op = ComputeOp(
        f"{op.name}.{scope}", op.tag, FrozenDict({}), axis, _cache_body(op, vmap, guard, red_axes)
    )
    where = _leaf_values(spatial, {iv: iv.var for iv in op.axis}, ranges, ana)
    index = tuple(where[lv] for lv in leaves)
    copy = tuple(ProducerLoad(cache_op.output(n), index) for n in range(op.num_outputs))
    sch._replace_op(stage, ComputeOp(op.name, op.tag, op.attrs, op.axis, copy), cache_op)
    if scope != "global":
        sch._structural.append(("set_scope", sch[cache_op.output(0)], scope))
    return list(cache_op.outputs)


__all__ = ["cache_write_relayout"]
