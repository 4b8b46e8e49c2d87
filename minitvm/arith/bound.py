"""Constant integer bounds: an inclusive [min, max] of Python ints for every integer expression.

Values beyond the int64 range saturate to the sentinels NEG_INF / POS_INF; an expression is
assumed not to overflow its dtype (as in TVM), so every bound is clipped to its dtype's range.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..ir.dtype import DataType
from ..tir import expr as tx
from ..tir.expr import PrimExpr, Var
from ..tir.names import IF_THEN_ELSE, LIKELY, is_call
from .const_fold import trunc_div

if TYPE_CHECKING:
    from .analyzer import Analyzer

POS_INF = 2**63 - 1
NEG_INF = -POS_INF


@dataclass(frozen=True)
class ConstIntBound:
    """Inclusive constant bounds of an integer expression (POS_INF / NEG_INF when unbounded)."""

    min_value: int
    max_value: int

    POS_INF = POS_INF
    NEG_INF = NEG_INF

    def is_const(self) -> bool:
        return self.min_value == self.max_value

    def contains(self, value: int) -> bool:
        return self.min_value <= value <= self.max_value


def _clip(x: int) -> int:
    return POS_INF if x >= POS_INF else max(NEG_INF, x)


def _is_inf(x: int) -> bool:
    return x in (POS_INF, NEG_INF)


def _add(x: int, y: int, unknown: int) -> int:
    """x + y on saturated bounds. inf + -inf happens when a constant equals a sentinel
    (x - int64 max): the sum is then unknown, so a lower bound gives NEG_INF and an upper
    bound POS_INF (`unknown`), never a finite or one-sided guess."""
    if _is_inf(x):
        return unknown if _is_inf(y) and y != x else x
    return y if _is_inf(y) else _clip(x + y)


def _mul(x: int, y: int) -> int:
    if x == 0 or y == 0:
        return 0
    if _is_inf(x) or _is_inf(y):
        return POS_INF if (x > 0) == (y > 0) else NEG_INF
    return _clip(x * y)


def _neg(x: int) -> int:
    return -x  # the sentinels are symmetric


def dtype_bound(dtype: DataType) -> tuple[int, int]:
    """The range of values a scalar of `dtype` can hold (everything for non-integers)."""
    if dtype.is_bool:
        return 0, 1
    if dtype.is_int:
        return _clip(-(2 ** (dtype.bits - 1))), _clip(2 ** (dtype.bits - 1) - 1)
    if dtype.is_uint:
        return 0, _clip(2**dtype.bits - 1)
    return NEG_INF, POS_INF


def _corners(fn: Callable[[int, int], int], a: tuple[int, int], b: tuple[int, int]):
    values = [fn(x, y) for x in a for y in b]
    return min(values), max(values)


def _div_bound(a: tuple[int, int], b: tuple[int, int], floor: bool) -> tuple[int, int]:
    """Bound of a / b (floor or truncating) when b does not contain 0."""
    if b[0] <= 0 <= b[1]:
        if b[0] == 0 and b[1] > 0:
            b = (1, b[1])
        elif b[1] == 0 and b[0] < 0:
            b = (b[0], -1)
        else:
            m = max(abs(a[0]), abs(a[1]))
            return _neg(m), m

    def div(x: int, y: int) -> int:
        if _is_inf(y):
            return 0 if not _is_inf(x) else (POS_INF if (x > 0) == (y > 0) else NEG_INF)
        if _is_inf(x):
            return POS_INF if (x > 0) == (y > 0) else NEG_INF
        return x // y if floor else trunc_div(x, y)

    # x / y is monotone in each argument while y keeps its sign, and so are floor and trunc
    return _corners(div, a, b)


def _mod_bound(a: tuple[int, int], b: tuple[int, int], floor: bool) -> tuple[int, int]:
    if b[0] > 0:
        m = b[1] - 1 if not _is_inf(b[1]) else POS_INF
        if floor:
            if a[0] >= 0 and a[1] < b[0]:
                return a  # already smaller than any divisor
            return 0, m
        lo = 0 if a[0] >= 0 else max(a[0], _neg(m))
        hi = 0 if a[1] <= 0 else min(a[1], m)
        return lo, hi
    if b[1] < 0:
        m = -b[0] - 1 if not _is_inf(b[0]) else POS_INF
        if floor:
            return _neg(m), 0
        lo = 0 if a[0] >= 0 else max(a[0], _neg(m))
        hi = 0 if a[1] <= 0 else min(a[1], m)
        return lo, hi
    m = max(abs(b[0]), abs(b[1]))
    m = m - 1 if not _is_inf(m) else m
    return _neg(m), m


class ConstBoundCalc:
    """Computes bounds under an analyzer's variable ranges; memoised for one query."""

    def __init__(self, ana: Analyzer, var_override: dict[int, tuple[int, int]] | None = None):
        self.ana = ana
        self.override = var_override or {}
        self.memo: dict[int, tuple[PrimExpr, tuple[int, int]]] = {}

    def bound(self, e: PrimExpr) -> tuple[int, int]:
        hit = self.memo.get(id(e))
        if hit is not None:
            return hit[1]
        handler = _HANDLERS.get(type(e))
        if handler is None:
            for klass in type(e).__mro__:
                handler = _HANDLERS.get(klass)
                if handler is not None:
                    break
        lo_d, hi_d = dtype_bound(e.dtype.element_of())
        if handler is None or not (e.dtype.is_integer or e.dtype.is_bool):
            result = (lo_d, hi_d)
        else:
            lo, hi = handler(self, e)
            result = (max(lo, lo_d), min(hi, hi_d))
            if result[0] > result[1]:  # contradictory facts: keep the dtype range, never lie
                result = (lo_d, hi_d)
        self.memo[id(e)] = (e, result)
        return result

    def var(self, v: Var) -> tuple[int, int]:
        if id(v) in self.override:
            return self.override[id(v)]
        found = self.ana._var_const_bound(v)
        if found is not None:
            return found
        if isinstance(v, tx.SizeVar):
            return 0, POS_INF
        return NEG_INF, POS_INF


def _binary(fn: Callable) -> Callable[[ConstBoundCalc, Any], tuple[int, int]]:
    return lambda calc, e: fn(calc.bound(e.a), calc.bound(e.b))


def _select(calc: ConstBoundCalc, e: tx.Select) -> tuple[int, int]:
    cond = calc.bound(e.condition)
    if cond == (1, 1):
        return calc.bound(e.true_value)
    if cond == (0, 0):
        return calc.bound(e.false_value)
    t, f = calc.bound(e.true_value), calc.bound(e.false_value)
    return min(t[0], f[0]), max(t[1], f[1])


def _cast(calc: ConstBoundCalc, e: tx.Cast) -> tuple[int, int]:
    src = e.value.dtype
    inner = calc.bound(e.value) if (src.is_integer or src.is_bool) else dtype_bound(e.dtype)
    lo, hi = dtype_bound(e.dtype.element_of())
    if lo <= inner[0] and inner[1] <= hi:
        return inner
    return lo, hi  # narrowing may wrap


def _call(calc: ConstBoundCalc, e: tx.Call) -> tuple[int, int]:
    if is_call(e, LIKELY):
        return calc.bound(e.args[0])
    if is_call(e, IF_THEN_ELSE):
        t, f = calc.bound(e.args[1]), calc.bound(e.args[2])
        return min(t[0], f[0]), max(t[1], f[1])
    if tx.is_vscale(e):  # vector length / 128 bits: at least 1 on every machine that has it
        return 1, dtype_bound(e.dtype)[1]
    return dtype_bound(e.dtype.element_of())


def _ramp(calc: ConstBoundCalc, e: tx.Ramp) -> tuple[int, int]:
    base, stride = calc.bound(e.base), calc.bound(e.stride)
    # a scalable ramp has vscale * k lanes: at least 1, at most what vscale's bound allows
    lanes = (e.lanes, e.lanes) if isinstance(e.lanes, int) else calc.bound(e.lanes)
    hi = lanes[1] if _is_inf(lanes[1]) else lanes[1] - 1
    last = _corners(_mul, stride, (max(lanes[0], 1) - 1, hi))
    end = (_add(base[0], last[0], NEG_INF), _add(base[1], last[1], POS_INF))
    return min(base[0], end[0]), max(base[1], end[1])


def _let(calc: ConstBoundCalc, e: tx.Let) -> tuple[int, int]:
    calc.override[id(e.var)] = calc.bound(e.value)
    return calc.bound(e.body)


def _compare(calc: ConstBoundCalc, e: PrimExpr) -> tuple[int, int]:
    return 0, 1


_HANDLERS: dict[type, Callable[[ConstBoundCalc, Any], tuple[int, int]]] = {
    tx.IntImm: lambda calc, e: (e.value, e.value),
    tx.FloatImm: lambda calc, e: (NEG_INF, POS_INF),
    Var: lambda calc, e: calc.var(e),
    tx.Add: _binary(lambda a, b: (_add(a[0], b[0], NEG_INF), _add(a[1], b[1], POS_INF))),
    tx.Sub: _binary(
        lambda a, b: (_add(a[0], _neg(b[1]), NEG_INF), _add(a[1], _neg(b[0]), POS_INF))
    ),
    tx.Mul: _binary(lambda a, b: _corners(_mul, a, b)),
    tx.FloorDiv: _binary(lambda a, b: _div_bound(a, b, floor=True)),
    tx.Div: _binary(lambda a, b: _div_bound(a, b, floor=False)),
    tx.FloorMod: _binary(lambda a, b: _mod_bound(a, b, floor=True)),
    tx.Mod: _binary(lambda a, b: _mod_bound(a, b, floor=False)),
    tx.Min: _binary(lambda a, b: (min(a[0], b[0]), min(a[1], b[1]))),
    tx.Max: _binary(lambda a, b: (max(a[0], b[0]), max(a[1], b[1]))),
    tx.Select: _select,
    tx.Cast: _cast,
    tx.Call: _call,
    tx.Ramp: _ramp,
    tx.Broadcast: lambda calc, e: calc.bound(e.value),
    tx.Let: _let,
    tx.CmpOpExpr: _compare,
    tx.Not: _compare,
}
