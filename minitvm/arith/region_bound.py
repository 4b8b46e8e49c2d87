"""Bounds of a buffer region accessed across a loop nest (TVM's `estimate_region_*_bound`).

The region's starts are mapped to fused iterators with `detect_iter_map`; a start that is
`base + digit * scale` with a window of `extent >= |scale|` elements covers, without gaps,
[base, base + (digit_extent - 1) * scale + extent) (mirrored for a negative scale). That
interval is what every value of the loops touches together: a *strict* bound, hence a lower
bound of the region. The upper bound falls back to relaxing each dimension on its own.
Predicates are not supported by the iterator analysis yet: with one, the strict bound is
unknown (None) and the upper bound relaxes over the full loop domains.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..tir import expr as tx
from ..tir.expr import PrimExpr, Range, Var, make_const
from .analyzer import Analyzer
from .int_set import IntervalSet
from .iter_map import IterMapLevel, IterSumExpr, detect_iter_map


def _from_min_extent(ana: Analyzer, lo: PrimExpr, extent: PrimExpr) -> IntervalSet:
    return IntervalSet(ana.simplify(lo), ana.simplify(lo + extent - 1))


def _eval_iter_sum(ana: Analyzer, s: IterSumExpr, extent: PrimExpr) -> IntervalSet | None:
    """The values a window of `extent` elements starting at `s` covers, or None if gapped."""
    zero = make_const(extent.dtype, 0)
    if ana.can_prove(tx.EQ(extent, zero)):
        return IntervalSet.nothing()
    if not s.args:
        return _from_min_extent(ana, s.base, extent)
    (split,) = s.args  # detect_iter_map fuses each index into at most one digit
    if ana.can_prove(tx.EQ(split.extent, make_const(split.extent.dtype, 0))):
        return IntervalSet.nothing()
    if not ana.can_prove(tx.GE(extent, split.scale)):
        return None  # windows of a step wider than the window leave gaps
    span = (split.extent - 1) * split.scale
    if ana.can_prove(tx.LT(split.scale, zero)):
        return _from_min_extent(ana, s.base + span, extent - span)
    return _from_min_extent(ana, s.base, extent + span)


def _is_const(e: PrimExpr) -> bool:
    return isinstance(e, tx.IntImm)


def estimate_region_strict_bound(
    region: Sequence[Range], var_dom: Mapping[Var, Range], predicate: Any = True
) -> list[IntervalSet] | None:
    """Per dimension, the interval the region covers exactly over all values of `var_dom`'s
    loops, or None when the starts are not independent affine maps of them (or a window
    leaves gaps, or an extent is not constant)."""
    if not all(_is_const(tx.as_expr(r.extent)) for r in region):
        return None
    res = detect_iter_map([r.min for r in region], var_dom, predicate, IterMapLevel.Surjective)
    if not res.indices:
        return None
    ana = Analyzer()
    out = []
    for s, r in zip(res.indices, region):
        bound = _eval_iter_sum(ana, s, tx.as_expr(r.extent))
        if bound is None:
            return None
        out.append(bound)
    return out


estimate_region_lower_bound = estimate_region_strict_bound


def estimate_region_upper_bound(
    region: Sequence[Range], var_dom: Mapping[Var, Range], predicate: Any = True
) -> list[IntervalSet]:
    """Per dimension, an interval holding every element the region touches over `var_dom`:
    the strict bound where there is one, else each dimension on its own."""
    strict = estimate_region_strict_bound(region, var_dom, predicate)
    if strict is not None:
        return strict
    ana = Analyzer()
    out = []
    for r in region:
        res = detect_iter_map([r.min], var_dom, predicate, IterMapLevel.Surjective)
        bound = None
        if res.indices and _is_const(tx.as_expr(r.extent)):
            bound = _eval_iter_sum(ana, res.indices[0], tx.as_expr(r.extent))
        if bound is None:  # relax the window's first and last element over the loops
            lo = ana.int_set(r.min, var_dom)
            hi = ana.int_set(r.min + r.extent - 1, var_dom)
            bound = IntervalSet(lo.min_value, hi.max_value)
        out.append(bound)
    return out
