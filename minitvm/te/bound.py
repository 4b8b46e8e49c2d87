"""Bounds of a classic schedule's IterVars (`te.schedule.InferBound`) and the IterVar algebra.

A stage's loops come from its root IterVars (`op.axis + op.reduce_axis`) through its Split
and Fuse relations. `leaf_ranges` passes ranges down those relations; `root_exprs` and
`root_sets` pass values (expressions, or intervals) back up. InferBound then gives a stage
computed at a consumer's loop the region that consumer reads during one iteration of that
loop, as TVM does: the consumer's loops outside the attach point are fixed (their variables),
the ones inside it range over their bounds.
"""

from __future__ import annotations

import builtins
from typing import Any

from ..arith import Analyzer, affine_coeffs
from ..arith.int_set import IntervalSet
from ..error import ScheduleError
from ..ir.container import Map
from ..tir.analysis.thread_scope import STORAGE_RANK, storage_rank, thread_rank
from ..tir.expr import IterVar, PrimExpr, Range, Var, as_expr
from ..tir.functor import Visitor
from ..tir.op import floordiv, floormod, max, min
from .tensor import ProducerLoad, Tensor

builtins_max, builtins_min = builtins.max, builtins.min


def _const(e: Any) -> int | None:
    value = getattr(e, "value", e)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ceildiv(a: PrimExpr, b: Any, ana: Analyzer) -> PrimExpr:
    return ana.simplify(floordiv(as_expr(a) + b - 1, b))


def split_extents(parent: Range, factor: Any, nparts: Any, ana: Analyzer) -> tuple:
    """(outer extent, inner extent) of splitting a loop of range `parent`.

    A factor (or nparts) larger than a provably smaller extent shrinks to that extent, as
    TVM's bound inference does (splitting 8 by 32 leaves an inner loop of 8).
    """
    ext = parent.extent
    if factor is not None:
        if ana.can_prove(ext < factor):
            return as_expr(1), ext
        return _ceildiv(ext, factor, ana), as_expr(factor, like=ext.dtype)
    if ana.can_prove(ext < nparts):
        return ext, as_expr(1)
    return as_expr(nparts, like=ext.dtype), _ceildiv(ext, nparts, ana)


def leaf_ranges(stage: Any, root: dict, ana: Analyzer) -> dict:
    """Ranges of every IterVar of `stage`, from the ranges of its root IterVars."""
    out = dict(root)
    for rel in stage.relations:
        if hasattr(rel, "factor"):
            outer, inner = split_extents(out[rel.parent], rel.factor, rel.nparts, ana)
            out[rel.outer] = Range.from_min_extent(0, outer)
            out[rel.inner] = Range.from_min_extent(0, inner)
        else:
            ext = as_expr(1)
            for iv in rel.fused_from:
                ext = ana.simplify(ext * out[iv].extent)
            out[rel.fused] = Range.from_min_extent(0, ext)
    return out


def root_exprs(stage: Any, leaf: dict, ranges: dict, ana: Analyzer) -> dict:
    """Values of the root IterVars given values (`leaf`: IterVar -> expr) of the leaves."""
    vals = dict(leaf)
    for rel in reversed(stage.relations):
        if hasattr(rel, "factor"):
            parent = ranges[rel.parent]
            vals[rel.parent] = ana.simplify(
                parent.min + vals[rel.outer] * ranges[rel.inner].extent + vals[rel.inner]
            )
        else:
            rest = vals[rel.fused]
            for iv in reversed(rel.fused_from[1:]):
                ext = ranges[iv].extent
                vals[iv] = ana.simplify(floormod(rest, ext))
                rest = floordiv(rest, ext)
            vals[rel.fused_from[0]] = ana.simplify(rest)
    return vals


def _point(s: IntervalSet) -> bool:
    return s.lo is s.hi


def _split_up(outer: IntervalSet, inner: IntervalSet, parent: Range, inner_ext: PrimExpr):
    if _point(outer) and _point(inner):
        return IntervalSet.point(parent.min + outer.lo * inner_ext + inner.lo)
    lo = parent.min + outer.lo * inner_ext + inner.lo
    hi = parent.min + outer.hi * inner_ext + inner.hi
    return IntervalSet(lo, hi, lo.dtype)


def _stays_in_one_block(lo: PrimExpr, width: PrimExpr, ext: PrimExpr, ana: Analyzer) -> bool:
    """True when [lo, lo + width] never crosses a multiple of `ext` (for every value of lo)."""
    e, w = _const(ana.simplify(ext)), _const(ana.simplify(width))
    if e is None or w is None or e <= 0:
        return ana.can_prove(floordiv(lo, ext) == floordiv(lo + width, ext))
    lo = ana.simplify(lo)
    if _const(lo) is not None:
        return _const(lo) % e + w < e
    vars_ = _free_vars(lo)
    if len(vars_) != 1:
        return False
    got = affine_coeffs(lo, vars_, ana)
    if got is None:
        return False
    a, b = _const(got[0][vars_[0]]), _const(got[1])
    if a is None or b is None:
        return False
    from math import gcd

    g = gcd(a, e)
    largest = e - g + b % g  # the largest value lo % e takes
    return largest + w < e


def _fuse_up(fused: IntervalSet, ext: PrimExpr, ana: Analyzer) -> tuple:
    """(outer set, inner set) of `fused = outer * ext + inner` over the set `fused`."""
    if _point(fused):
        return IntervalSet.point(floordiv(fused.lo, ext)), IntervalSet.point(
            floormod(fused.lo, ext)
        )
    outer = IntervalSet(floordiv(fused.lo, ext), floordiv(fused.hi, ext), fused.dtype)
    if _stays_in_one_block(fused.lo, fused.hi - fused.lo, ext, ana):
        first = floormod(fused.lo, ext)
        inner = IntervalSet(first, first + (fused.hi - fused.lo), fused.dtype)
    else:
        inner = IntervalSet(as_expr(0, like=ext.dtype), ext - 1, ext.dtype)
    return outer, inner


def root_sets(stage: Any, leaf: dict, ranges: dict, ana: Analyzer) -> dict:
    """Interval of every root IterVar given intervals (`leaf`: IterVar -> set) of the leaves."""
    sets = dict(leaf)
    for rel in reversed(stage.relations):
        if hasattr(rel, "factor"):
            sets[rel.parent] = _split_up(
                sets[rel.outer], sets[rel.inner], ranges[rel.parent], ranges[rel.inner].extent
            )
        else:
            rest = sets[rel.fused]  # fused = ((a1 * e2 + a2) * e3 + a3) ...: peel inner first
            for iv in reversed(rel.fused_from[1:]):
                rest, sets[iv] = _fuse_up(rest, ranges[iv].extent, ana)
            sets[rel.fused_from[0]] = rest
    return sets


class _Vars(Visitor):
    def __init__(self) -> None:
        self.found: dict[int, Var] = {}

    def visit_Var(self, v: Var) -> None:
        self.found[id(v)] = v


def _free_vars(e: PrimExpr) -> list[Var]:
    finder = _Vars()
    finder.visit(e)
    return list(finder.found.values())


class _LoadsOf(Visitor):
    """Index tuples of every load of the tensors in `wanted`."""

    def __init__(self, wanted: list[Tensor]) -> None:
        self.wanted = wanted
        self.found: list[tuple] = []

    def visit_ProducerLoad(self, n: ProducerLoad) -> None:
        if any(n.producer == t for t in self.wanted):
            self.found.append(n.indices)
        self.generic_visit(n)


def loads_of(body: Any, tensors: list[Tensor]) -> list[tuple]:
    finder = _LoadsOf(tensors)
    finder.visit(body)
    return finder.found


# ----------------------------------------------------------------------------- InferBound


def _relax_bound_thread(tag: str, scope: str) -> bool:
    """Whether a loop bound to thread `tag` outside the attach point still ranges over its
    values for a stage in storage `scope` (threads that share the storage all need it): a
    storage scope is relaxed over every thread axis of its rank or finer (global: all,
    shared: threadIdx and vthread, local: none; warp: threadIdx.x)."""
    rank = storage_rank(scope)
    if rank == STORAGE_RANK["warp"] and tag == "threadIdx.x":
        return True
    t = thread_rank(tag)
    return t is not None and rank <= t


def _whole(r: Range) -> IntervalSet:
    return IntervalSet(r.min, r.min + r.extent - 1, r.extent.dtype)


def _bound_tags(stage: Any) -> dict[int, str]:
    """id(leaf IterVar) -> thread tag, for the leaves `stage` binds to threads."""
    return {id(a[2]): a[3][0] for a in stage.actions if a[0] == "kind" and a[1] == "bind"}


class _Inference:
    """InferBound over one te Schedule: consumers are bounded before their producers."""

    def __init__(self, sch: Any) -> None:
        self.sch = sch
        self.ana = Analyzer()
        self.ranges: dict = {}  # IterVar -> Range, for every stage done so far
        self.scope = {}  # id(stage) -> storage scope, from set_scope and the cache stages
        for a in sch._structural:
            if a[0] == "set_scope":
                self.scope[id(a[1])] = a[2]
            elif a[0] in ("cache_read", "cache_write"):
                self.scope[id(a[4])] = a[2]
        self.thread_vars: dict[str, Var] = {}  # one variable per thread tag

    def run(self) -> dict:
        for st in self.sch._consumers_first():
            if _eff(st).kind == "inline":
                continue
            self.ranges.update(leaf_ranges(st, self._root(st), self.ana))
        return self.ranges

    def _root(self, st: Any) -> dict:
        shape = list(st.op.shape) if not hasattr(st.op, "body") else []
        root = {}
        for k, iv in enumerate(st.initial):
            root[iv] = iv.dom if iv.dom is not None else Range.from_min_extent(0, shape[k])
        if any(st.op is op for op in self.sch.outputs):
            return root
        for iv, span in zip(st.op.axis, self._needed(st)):
            if span is not None:
                root[iv] = self._clip(span, root[iv], exact=_eff(st).kind == "at")
        return root

    def _clip(self, span: tuple, dom: Range, exact: bool) -> Range:
        """The request [lo, hi] within the axis' own range: a stage at root never computes
        outside its shape; an attached one is clipped only where both sides are constants."""
        lo, hi = (self.ana.simplify(x) for x in span)
        dlo, dhi = dom.min, self.ana.simplify(dom.min + dom.extent - 1)
        consts = all(_const(x) is not None for x in (lo, hi, dlo, dhi))
        if consts:
            lo, hi = (
                as_expr(builtins_max(_const(lo), _const(dlo))),
                as_expr(builtins_min(_const(hi), _const(dhi))),
            )
        elif not exact:
            lo = lo if self.ana.can_prove(lo >= dlo) else dlo
            hi = hi if self.ana.can_prove(hi <= dhi) else dhi
        return Range.from_min_extent(lo, self.ana.simplify(hi - lo + 1))

    def _needed(self, st: Any, ctx: Any = None) -> list:
        """Per output dimension of `st`, the (lo, hi) that its consumers read; `ctx` (st by
        default) is the stage whose attach point and storage scope decide what is relaxed."""
        ctx = ctx or st
        total: list = [None] * len(st.op.axis)
        for consumer in self.sch.stages:
            if st not in self.sch._deps.get(id(consumer), []):
                continue
            reads = self.sch._reads_of(consumer, st)
            if not reads:
                continue
            if _eff(consumer).kind == "inline":  # it is evaluated where its readers need it
                spans = self._needed(consumer, ctx)
                dom = {
                    iv.var: IntervalSet(span[0], span[1], iv.var.dtype)
                    for iv, span in zip(consumer.op.axis, spans)
                    if span is not None
                }
                relax: dict = {}
            else:
                dom, relax = self._consumer_domain(consumer, ctx)
            for idx in reads:
                for k, e in enumerate(idx[: len(total)]):
                    got = self.ana.int_set(e, dom)
                    lo, hi = (
                        self._relax(got.min_value, relax, True),
                        self._relax(got.max_value, relax, False),
                    )
                    old = total[k]
                    total[k] = (lo, hi) if old is None else (min(old[0], lo), max(old[1], hi))
        return total

    def _relax(self, e: PrimExpr, relax: dict, lower: bool) -> PrimExpr:
        """The least (or greatest) value of `e` over the loops in `relax` (nested ranges too)."""
        for _ in range(8):
            if not any(id(v) in relax for v in _free_vars(e)):
                return e
            got = self.ana.int_set(e, {v: relax[id(v)][1] for v in _free_vars(e) if id(v) in relax})
            e = got.min_value if lower else got.max_value
        return e

    def _consumer_domain(self, consumer: Any, st: Any) -> tuple:
        """(sets of `consumer`'s root vars, loops to relax afterwards: id(var) -> (var, set))."""
        scope_name = self.scope.get(id(st), "global")
        if _eff(st).kind != "at":  # at root: every iteration of every consumer
            sets = {iv: _whole(self.ranges[iv]) for iv in consumer.leaf_iter_vars}
            relax = self._ancestors_relax(consumer, None, scope_name, everything=True)
        elif consumer is _eff(st).parent:
            sets = self._leaf_sets(consumer, _eff(st).iv, st, scope_name)
            relax = self._ancestors_relax(consumer, _eff(st).iv, scope_name)
        elif self._attached_under(consumer, _eff(st).parent, _eff(st).iv):
            tags = _bound_tags(consumer)
            sets = {}
            for iv in consumer.leaf_iter_vars:
                tag = tags.get(id(iv))
                if tag is not None and not _relax_bound_thread(tag, scope_name):
                    var = self.thread_vars.setdefault(tag, Var(tag, iv.var.dtype))
                    sets[iv] = IntervalSet.point(var)
                else:
                    sets[iv] = _whole(self.ranges[iv])
            relax = self._ancestors_relax(_eff(st).parent, _eff(st).iv, scope_name)
        else:
            raise ScheduleError(
                f"InferBound: stage '{st.name}' is computed at loop '{_eff(st).iv.var.name}' of "
                f"'{_eff(st).parent.name}', but its consumer '{consumer.name}' is not computed "
                "inside that loop; attach the producer to a loop of each stage that reads it"
            )
        roots = root_sets(consumer, sets, self.ranges, self.ana)
        return {iv.var: roots[iv] for iv in consumer.initial}, relax

    def _ancestors_relax(self, parent: Any, scope: Any, scope_name: str, everything=False):
        """Loops of `parent` inside `scope`, and thread loops (of it and of the stages it is
        computed in) that the storage scope shares: their variables range over their bounds."""
        relax = {}
        st, at = parent, scope
        while st is not None:
            leaves = st.leaf_iter_vars
            pos = _index(leaves, at) if at is not None else -1
            tags = _bound_tags(st)
            for k, iv in enumerate(leaves):
                tag = tags.get(id(iv))
                inner = everything or (st is parent and at is not None and k > pos)
                if inner or (tag is not None and _relax_bound_thread(tag, scope_name)):
                    relax[id(iv.var)] = (iv.var, _whole(self.ranges[iv]))
            if _eff(st).kind != "at":
                break
            st, at = _eff(st).parent, _eff(st).iv
        return relax

    def _attached_under(self, consumer: Any, parent: Any, scope: Any) -> bool:
        """True when `consumer` is computed (maybe through other stages) inside `scope`."""
        st = consumer
        while _eff(st).kind == "at":
            if _eff(st).parent is parent:
                leaves = parent.leaf_iter_vars
                return _index(leaves, _eff(st).iv) >= _index(leaves, scope)
            st = _eff(st).parent
        return False

    def _leaf_sets(self, parent: Any, scope: Any, st: Any, scope_name: str) -> dict:
        leaves = parent.leaf_iter_vars
        at = _index(leaves, scope)
        if at < 0:
            raise ScheduleError(
                f"InferBound: stage '{st.name}' is computed at '{scope.var.name}', which is no "
                f"longer a loop of '{parent.name}' (it was split or fused afterwards); attach "
                "to one of the IterVars split/fuse returned"
            )
        tags = _bound_tags(parent)
        sets = {}
        for k, iv in enumerate(leaves):
            tag = tags.get(id(iv))
            if k > at or (tag is not None and _relax_bound_thread(tag, scope_name)):
                sets[iv] = _whole(self.ranges[iv])
            else:
                sets[iv] = IntervalSet.point(iv.var)
        return sets


class _Where:
    """A stage's effective attachment: its own, or where its group was computed."""

    def __init__(self, kind: str, parent: Any = None, iv: Any = None) -> None:
        self.kind, self.parent, self.iv = kind, parent, iv


def _eff(st: Any) -> _Where:
    kind, parent, iv = st.attach.kind, st.attach.parent, st.attach.iv
    if kind == "root" and getattr(st, "group", None) is not None:
        from .group import group_attachment

        placed = group_attachment(st)
        if placed is not None:
            kind, (parent, iv) = "at", placed
    if kind == "at":
        iv = parent._legal_attach(iv)
    return _Where(kind, parent, iv)


def _index(items: list, x: Any) -> int:
    return next((i for i, y in enumerate(items) if y is x), -1)


def infer_bound(sch: Any) -> dict[IterVar, Range]:
    """The Range of every IterVar of every (not inlined) stage of `sch`."""
    out = _Inference(sch).run()
    # a scan's time axis runs over its declared range (its steps are not split or moved)
    ops = list(sch.outputs) + [t.op for st in sch.stages for t in st.op.input_tensors]
    for op in ops:
        scan_axis = getattr(op, "scan_axis", None)
        if isinstance(scan_axis, IterVar) and scan_axis not in out:
            out[scan_axis] = scan_axis.dom
    return Map((iv, Range.from_min_extent(r.min, r.extent) if isinstance(r, Range) else r) for iv, r in out.items())


__all__ = ["infer_bound", "leaf_ranges", "loads_of", "root_exprs", "root_sets", "split_extents"]
