"""Classic `s.rfactor(B, ki)`: a reduction split into partial results over `ki`, then combined.

`B = sum(A[i, k], k)` with `k` split into (ko, ki) becomes

    B.rf[ki, i] = sum(A[i, ko * f + ki], ko)      # where ko * f + ki < extent
    B[i]        = sum(B.rf[ki.v, i], ki.v)

as two compute operations. The schedule swaps them in for the old one (`s[B].op` is the new
combining op, consumers of B read it) and adds a stage for `B.rf`. The factored body is built
from B's Split/Fuse relations, with a guard for every split that may overshoot its parent.
"""

from __future__ import annotations

from typing import Any

from ..arith import Analyzer
from ..error import ScheduleError
from ..ir.node import FrozenDict
from ..tir.expr import IntImm, IterType, IterVar, PrimExpr, Range, Var, logical_and
from ..tir.functor import Mutator, substitute
from .bound import leaf_ranges, root_exprs
from .operation import ComputeOp
from .reduction import Reduce
from .tensor import ProducerLoad, Tensor


def _true() -> PrimExpr:
    return IntImm("bool", 1)


def _check(stage: Any, axis: Any, factor_axis: int) -> Reduce:
    op = stage.op
    first = op.body[0] if isinstance(op, ComputeOp) else None
    if not isinstance(first, Reduce):
        raise ScheduleError(
            f"rfactor of '{stage.name}': it is not a reduction (te.sum/max/min/comm_reducer "
            "as the whole body); rfactor splits a reduction into partial results"
        )
    stage._leaf(axis, "rfactor")
    if axis.iter_type is not IterType.CommReduce:
        raise ScheduleError(
            f"rfactor of '{stage.name}': '{axis.var.name}' is a data-parallel loop; pass a "
            f"reduction loop (one of s[{stage.name}].op.reduce_axis or what splitting it gave)"
        )
    if any(b.init for b in op.body):
        raise ScheduleError(
            f"rfactor of '{stage.name}': the reduction has init=; each partial result would "
            "start from it, so the sum of partials would count it several times. Drop init= "
            "and add the initial value to the result in a separate compute"
        )
    if not 0 <= factor_axis <= len(op.axis):
        raise ScheduleError(
            f"rfactor of '{stage.name}': factor_axis={factor_axis} is out of range; the "
            f"factored tensor has {len(op.axis) + 1} dimensions, so use 0..{len(op.axis)}"
        )
    if stage.attach.kind == "inline":
        raise ScheduleError(f"rfactor of '{stage.name}': the stage is inlined (compute_inline)")
    return first


def _guards(stage: Any, values: dict, ranges: dict, ana: Analyzer) -> list[PrimExpr]:
    """Conditions that keep every split's recombined parent inside the parent's range."""
    out = []
    for rel in stage.relations:
        if not hasattr(rel, "factor") or rel.parent.iter_type is not IterType.CommReduce:
            continue
        parent = ranges[rel.parent]
        inner = ranges[rel.inner].extent
        outer = ranges[rel.outer].extent
        if ana.can_prove(outer * inner <= parent.extent):
            continue  # the split divides its parent: no iteration overshoots
        out.append(values[rel.parent] < parent.min + parent.extent)
    return out


def rfactor(sch: Any, tensor: Tensor, axis: IterVar, factor_axis: int = 0) -> Any:
    """Factor `tensor`'s reduction over the loop `axis`; returns the factored tensor(s)."""
    stage = sch[tensor]
    sch._check_not_cached(stage, "rfactor")
    red = _check(stage, axis, factor_axis)
    op: ComputeOp = stage.op
    ana = Analyzer()
    root = {iv: iv.dom for iv in stage.initial}
    ranges = leaf_ranges(stage, root, ana)
    reduce_leaves = [iv for iv in stage.leaf_iter_vars if iv.iter_type is IterType.CommReduce]

    # the factored op: B's data axes plus `axis` as a data axis, the other reduce leaves
    data = [IterVar(iv.dom, Var(iv.var.name, iv.var.dtype), IterType.DataPar) for iv in op.axis]
    new_axis = IterVar(Range.from_min_extent(0, ranges[axis].extent), Var(axis.var.name, axis.var.dtype))
    data.insert(factor_axis, new_axis)
    # as TVM: reduce axes the schedule left untouched are kept as they are (first); the
    # other leaves become reduce axes over their ranges, under the same variables
    others = [iv for iv in reduce_leaves if iv is not axis]
    untouched = [iv for iv in others if any(iv is r for r in op.reduce_axis)]
    touched = [iv for iv in others if not any(iv is r for r in op.reduce_axis)]
    kept_for = {id(iv): iv for iv in untouched}
    for iv in touched:
        kept_for[id(iv)] = IterVar(Range.from_min_extent(0, ranges[iv].extent), iv.var, IterType.CommReduce)
    kept = [kept_for[id(iv)] for iv in untouched + touched]
    leaf_values = {axis: new_axis.var} | {iv: kept_for[id(iv)].var for iv in others}
    # data-parallel leaves do not matter for the reduction: pass the original axes through
    values = root_exprs(_reduce_relations_only(stage), leaf_values, ranges, ana)
    vmap = {iv.var: values[iv] for iv in red.axis}
    vmap |= {iv.var: d.var for iv, d in zip(op.axis, (x for x in data if x is not new_axis))}
    cond = substitute(red.condition, vmap)
    for g in _guards(stage, values, ranges, ana):
        cond = g if _is_true(cond) else logical_and(cond, g)
    rf_body = tuple(
        Reduce(b.combiner, tuple(substitute(x, vmap) for x in b.source), tuple(kept), cond, n)
        for n, b in enumerate(op.body)
    )
    rf_op = ComputeOp(f"{op.name}.rf", op.tag, FrozenDict({}), tuple(data), rf_body)

    # the combining op keeps B's axes (so s[B].op.axis stays valid) and reduces over `axis`
    rv = IterVar(
        Range.from_min_extent(0, ranges[axis].extent),
        Var(axis.var.name + ".v", axis.var.dtype),
        IterType.CommReduce,
    )
    index = [iv.var for iv in op.axis]
    index.insert(factor_axis, rv.var)
    loads = tuple(ProducerLoad(rf_op.output(n), tuple(index)) for n in range(rf_op.num_outputs))
    combine_body = tuple(
        Reduce(b.combiner, loads, (rv,), _true(), n) for n, b in enumerate(op.body)
    )
    new_op = ComputeOp(op.name, op.tag, op.attrs, op.axis, combine_body)
    sch._replace_op(stage, new_op, rf_op)
    outs = list(rf_op.outputs)
    return outs[0] if len(outs) == 1 else outs


def _is_true(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 1


class _ReduceOnly:
    """A view of a stage with only the relations among its reduction loops."""

    def __init__(self, stage: Any) -> None:
        self.relations = [
            r
            for r in stage.relations
            if (r.parent if hasattr(r, "factor") else r.fused_from[0]).iter_type
            is IterType.CommReduce
        ]


def _reduce_relations_only(stage: Any) -> _ReduceOnly:
    return _ReduceOnly(stage)


class ReplaceLoads(Mutator):
    """Re-point loads of old tensors to their replacements (`{old tensor: new tensor}`)."""

    def __init__(self, mapping: dict) -> None:
        super().__init__()
        self.mapping = mapping

    def visit_ProducerLoad(self, n: ProducerLoad) -> PrimExpr:
        indices = self.visit(n.indices)
        new = self.mapping.get(n.producer)
        if new is None and indices is n.indices:
            return n
        return ProducerLoad(new if new is not None else n.producer, indices)


def replace_loads(op: Any, mapping: dict) -> Any:
    """`op` with its loads of the old tensors in `mapping` re-pointed; `op` if none."""
    if not isinstance(op, ComputeOp):
        return op
    body = ReplaceLoads(mapping).visit(op.body)
    if body is op.body:
        return op
    return ComputeOp(op.name, op.tag, op.attrs, op.axis, body)


__all__ = ["replace_loads", "rfactor"]
