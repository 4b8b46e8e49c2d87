"""Symbolic interval sets: inclusive [min, max] bounds that are expressions of the free vars."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..tir import expr as tx
from ..tir.expr import PrimExpr, Range, Var, make_const
from ..tir.names import LIKELY, is_call
from ..tir.op import max_value, min_value

if TYPE_CHECKING:
    from .analyzer import Analyzer


class IntSet:
    """TVM's `arith.IntSet`: the constructors; every set here is an IntervalSet."""

    @staticmethod
    def single_point(e: Any) -> IntervalSet:
        return IntervalSet.point(tx.as_expr(e))

    @staticmethod
    def interval(lo: Any, hi: Any) -> IntervalSet:
        return IntervalSet(lo, hi)

    @staticmethod
    def from_range(r: Range) -> IntervalSet:
        return IntervalSet.from_range(r)

    @staticmethod
    def vector(e: Any) -> IntervalSet:
        """The values of the lanes of `e`: a Ramp spans base .. base + (lanes - 1) * stride."""
        e = tx.as_expr(e)
        if isinstance(e, tx.Broadcast):
            return IntervalSet.point(e.value)
        if not isinstance(e, tx.Ramp):
            return IntervalSet.point(e)
        last = e.base + e.stride * (e.lanes - 1)
        ends = [e.base, last]
        from .analyzer import Analyzer

        ana = Analyzer()
        if not ana.can_prove(tx.GE(e.stride, make_const(e.stride.dtype, 0))):
            ends.reverse()
        return IntervalSet(ana.simplify(ends[0]), ana.simplify(ends[1]), e.base.dtype)


@dataclass(frozen=True, init=False)
class IntervalSet(IntSet):
    """Inclusive bounds; `None` for an unbounded side (use has_lower_bound/has_upper_bound).

    `min_value` / `max_value` are PrimExprs; an unbounded side reads as the dtype's limit,
    or as TVM's `neg_inf()` / `pos_inf()` marker where one was given (as TVM's
    `IntervalSet(min_value=neg_inf(), max_value=0)`). Plain ints become int32 constants.
    """

    lo: PrimExpr | None
    hi: PrimExpr | None
    dtype: Any = None

    def __init__(self, lo: Any = None, hi: Any = None, dtype: Any = None, *,
                 min_value: Any = None, max_value: Any = None) -> None:  # fmt: skip
        lo = min_value if lo is None else lo
        hi = max_value if hi is None else hi
        lo = tx.as_expr(lo) if isinstance(lo, int | float) else lo
        hi = tx.as_expr(hi) if isinstance(hi, int | float) else hi
        if dtype is None:
            bounds = [b for b in (lo, hi) if isinstance(b, PrimExpr) and not _is_marker(b)]
            dtype = bounds[0].dtype if bounds else None
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)
        object.__setattr__(self, "dtype", dtype)

    def unmarked(self) -> IntervalSet:
        """This set with TVM's infinity markers as `None` (what the set evaluator reads)."""
        if not (_is_marker(self.lo) or _is_marker(self.hi)):
            return self
        lo = None if self.lo is _NEG_INF else self.lo
        hi = None if self.hi is _POS_INF else self.hi
        return IntervalSet(lo, hi, self.dtype)

    @property
    def min_value(self) -> PrimExpr:
        return self.lo if self.lo is not None else min_value(self.dtype)

    @property
    def max_value(self) -> PrimExpr:
        return self.hi if self.hi is not None else max_value(self.dtype)

    def has_lower_bound(self) -> bool:
        return self.lo is not None and self.lo is not _NEG_INF

    def has_upper_bound(self) -> bool:
        return self.hi is not None and self.hi is not _POS_INF

    def is_single_point(self) -> bool:
        return self.lo is not None and (self.lo is self.hi)

    def is_everything(self) -> bool:
        return not self.has_lower_bound() and not self.has_upper_bound()

    def is_nothing(self) -> bool:
        """The empty set: TVM's [pos_inf, neg_inf] (what a failed deduce_bound returns)."""
        return self.lo is _POS_INF and self.hi is _NEG_INF

    @staticmethod
    def nothing() -> IntervalSet:
        return IntervalSet(_POS_INF, _NEG_INF)

    @staticmethod
    def point(e: PrimExpr) -> IntervalSet:
        return IntervalSet(e, e, e.dtype)

    @staticmethod
    def from_range(r: Range) -> IntervalSet:
        hi = r.min + r.extent - 1
        return IntervalSet(r.min, hi, r.min.dtype)


# TVM's symbolic infinities: markers for an unbounded side in the sets deduce_bound returns;
# they print as `pos_inf` / `neg_inf` and are never evaluated.
_POS_INF = Var("pos_inf", "handle")
_NEG_INF = Var("neg_inf", "handle")


def pos_inf() -> Var:
    """TVM's `arith.int_set.pos_inf()`: the marker of an unbounded upper side."""
    return _POS_INF


def neg_inf() -> Var:
    """TVM's `arith.int_set.neg_inf()`: the marker of an unbounded lower side."""
    return _NEG_INF


def _is_marker(e: Any) -> bool:
    return e is _POS_INF or e is _NEG_INF


def _marked_min(a: PrimExpr, b: PrimExpr, ana: Analyzer) -> PrimExpr:
    if a is _NEG_INF or b is _NEG_INF:
        return _NEG_INF
    if a is _POS_INF or b is _POS_INF:
        return b if a is _POS_INF else a
    return ana.simplify(tx.Min(a, b))


def _marked_max(a: PrimExpr, b: PrimExpr, ana: Analyzer) -> PrimExpr:
    if a is _POS_INF or b is _POS_INF:
        return _POS_INF
    if a is _NEG_INF or b is _NEG_INF:
        return b if a is _NEG_INF else a
    return ana.simplify(tx.Max(a, b))


def union_lower_bound(sets: list) -> IntervalSet:
    """TVM's `arith.int_set.union_lower_bound`: the union of `sets`, merging two intervals
    only when they provably touch or overlap (so the result never claims values none of
    them has); empty sets are skipped. An unbounded side must be given as neg_inf()/pos_inf()."""
    from .analyzer import Analyzer

    ana = Analyzer()
    sets = [s for s in sets if not s.is_nothing()]
    if not sets:
        return IntervalSet.nothing()
    lo, hi = sets[0].min_value, sets[0].max_value
    for s in sets[1:]:
        new_lo, new_hi = s.min_value, s.max_value
        touches_hi = _is_marker(new_lo) or _is_marker(hi) or ana.can_prove(tx.LE(new_lo, hi + 1))
        touches_lo = _is_marker(lo) or _is_marker(new_hi) or ana.can_prove(tx.LE(lo, new_hi + 1))
        if touches_hi and touches_lo:
            lo, hi = _marked_min(lo, new_lo, ana), _marked_max(hi, new_hi, ana)
    return IntervalSet(lo, hi)


def _opt(fn: Callable, *xs: PrimExpr | None) -> PrimExpr | None:
    return None if any(x is None for x in xs) else fn(*xs)


class IntSetCalc:
    """Relax the vars of `dom` (and the analyzer's bound vars) to their ranges."""

    def __init__(self, ana: Analyzer, dom: dict[int, IntervalSet]):
        self.ana = ana
        self.dom = dom
        self.memo: dict[int, tuple[PrimExpr, IntervalSet]] = {}

    def eval(self, e: PrimExpr) -> IntervalSet:
        hit = self.memo.get(id(e))
        if hit is not None:
            return hit[1]
        handler = _HANDLERS.get(type(e))
        if handler is None:
            out = self._fallback(e)
        else:
            out = handler(self, e)
        self.memo[id(e)] = (e, out)
        return out

    def _has_relaxed_var(self, e: PrimExpr) -> bool:
        from ..tir.functor import post_order_visit

        found = []
        post_order_visit(
            e, lambda n: found.append(n) if isinstance(n, Var) and self.relaxed(n) else None
        )
        return bool(found)

    def relaxed(self, v: Var) -> IntervalSet | None:
        if id(v) in self.dom:
            return self.dom[id(v)].unmarked()
        r = self.ana._var_range(v)
        return None if r is None else IntervalSet.from_range(r)

    def _fallback(self, e: PrimExpr) -> IntervalSet:
        if not self._has_relaxed_var(e):
            return IntervalSet.point(e)
        return self.const_set(e)

    def const_set(self, e: PrimExpr) -> IntervalSet:
        lo, hi = self.ana._bound_with(e, {k: v for k, v in self.dom.items()})
        return self.ana._const_interval(lo, hi, e.dtype)

    def var(self, v: Var) -> IntervalSet:
        s = self.relaxed(v)
        return IntervalSet.point(v) if s is None else s


def _add(calc: IntSetCalc, e: tx.Add) -> IntervalSet:
    a, b = calc.eval(e.a), calc.eval(e.b)
    return IntervalSet(_opt(tx.Add, a.lo, b.lo), _opt(tx.Add, a.hi, b.hi), e.dtype)


def _sub(calc: IntSetCalc, e: tx.Sub) -> IntervalSet:
    a, b = calc.eval(e.a), calc.eval(e.b)
    return IntervalSet(_opt(tx.Sub, a.lo, b.hi), _opt(tx.Sub, a.hi, b.lo), e.dtype)


def _sign(calc: IntSetCalc, s: IntervalSet) -> int:
    """+1 when the set is provably >= 0, -1 when provably <= 0, 0 otherwise."""
    if s.lo is not None and calc.ana._min_of(s.lo) >= 0:
        return 1
    if s.hi is not None and calc.ana._max_of(s.hi) <= 0:
        return -1
    return 0


def _mul(calc: IntSetCalc, e: tx.Mul) -> IntervalSet:
    a, b = calc.eval(e.a), calc.eval(e.b)
    for x, y in ((a, b), (b, a)):
        if y.is_single_point():
            sign = _sign(calc, y)
            if sign > 0:
                return IntervalSet(_opt(tx.Mul, x.lo, y.lo), _opt(tx.Mul, x.hi, y.lo), e.dtype)
            if sign < 0:
                return IntervalSet(_opt(tx.Mul, x.hi, y.lo), _opt(tx.Mul, x.lo, y.lo), e.dtype)
    if a.is_single_point() and b.is_single_point():
        return IntervalSet.point(tx.Mul(a.lo, b.lo))
    return calc.const_set(e)


def _division(calc: IntSetCalc, e: PrimExpr) -> IntervalSet:
    """FloorDiv/FloorMod by a positive divisor; Div/Mod too once the dividend is known >= 0
    (where C's truncation rounds as floor does)."""
    a, b = calc.eval(e.a), calc.eval(e.b)
    if type(e) in (tx.Div, tx.Mod) and _sign(calc, a) <= 0:
        return calc.const_set(e)
    if not (b.is_single_point() and calc.ana._is_divisor_positive(b.lo)):
        return calc.const_set(e)
    if a.is_single_point():
        return IntervalSet.point(type(e)(a.lo, b.lo))
    if type(e) in (tx.FloorDiv, tx.Div):
        return IntervalSet(_opt(tx.FloorDiv, a.lo, b.lo), _opt(tx.FloorDiv, a.hi, b.lo), e.dtype)
    if isinstance(b.lo, tx.IntImm):
        return calc.const_set(e)  # [0, c-1] or tighter, from constant bounds
    return IntervalSet(make_const(e.dtype, 0), tx.Sub(b.lo, make_const(e.dtype, 1)), e.dtype)


def _minmax(cls: type) -> Callable[[IntSetCalc, PrimExpr], IntervalSet]:
    def handler(calc: IntSetCalc, e: PrimExpr) -> IntervalSet:
        a, b = calc.eval(e.a), calc.eval(e.b)
        if cls is tx.Min:
            lo = _opt(tx.Min, a.lo, b.lo)
            hi = a.hi if b.hi is None else b.hi if a.hi is None else tx.Min(a.hi, b.hi)
        else:
            lo = a.lo if b.lo is None else b.lo if a.lo is None else tx.Max(a.lo, b.lo)
            hi = _opt(tx.Max, a.hi, b.hi)
        return IntervalSet(lo, hi, e.dtype)

    return handler


def _select(calc: IntSetCalc, e: tx.Select) -> IntervalSet:
    t, f = calc.eval(e.true_value), calc.eval(e.false_value)
    return IntervalSet(_opt(tx.Min, t.lo, f.lo), _opt(tx.Max, t.hi, f.hi), e.dtype)


def _cast(calc: IntSetCalc, e: tx.Cast) -> IntervalSet:
    """A widening integer cast keeps the operand's bounds; so does a narrowing one whose
    operand provably fits the narrower type (`int32(f // 48)` with `f < int64(m) * 48` is
    [0, m - 1], not the whole int32 range, which sized a buffer at 2**31 rows)."""
    src, dst = e.value.dtype, e.dtype
    if src.is_int and dst.is_int:
        s = calc.eval(e.value)
        if dst.bits < src.bits and not (
            s.lo is not None
            and s.hi is not None
            and calc.ana.can_prove(tx.GE(s.lo, make_const(src, min_value(dst).value)))
            and calc.ana.can_prove(tx.LE(s.hi, make_const(src, max_value(dst).value)))
        ):
            return calc._fallback(e)
        return IntervalSet(
            _opt(lambda x: tx.Cast(dst, x), s.lo), _opt(lambda x: tx.Cast(dst, x), s.hi), dst
        )
    return calc._fallback(e)


def _call(calc: IntSetCalc, e: tx.Call) -> IntervalSet:
    if is_call(e, LIKELY):
        return calc.eval(e.args[0])
    return calc._fallback(e)


_HANDLERS: dict[type, Callable[[IntSetCalc, Any], IntervalSet]] = {
    tx.IntImm: lambda calc, e: IntervalSet.point(e),
    tx.Add: _add,
    tx.Sub: _sub,
    tx.Mul: _mul,
    tx.FloorDiv: _division,
    tx.Div: _division,
    tx.FloorMod: _division,
    tx.Mod: _division,
    tx.Min: _minmax(tx.Min),
    tx.Max: _minmax(tx.Max),
    tx.Select: _select,
    tx.Cast: _cast,
    tx.Call: _call,
    Var: lambda calc, e: calc.var(e),
    tx.SizeVar: lambda calc, e: calc.var(e),
}
