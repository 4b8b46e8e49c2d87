"""Modular-set analysis: every value of an integer expression is `coeff * k + base`.

`Analyzer.modular_set(e)` answers TVM's `arith.ModularSet(coeff, base)`: coeff 0 means `e` is the
constant `base`; coeff 1, base 0 means nothing is known. The result is always a sound
over-approximation; where a rule needs a sign it does not know, it answers "anything".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import gcd
from typing import TYPE_CHECKING

from ..error import MiniTVMError
from ..tir import expr as tx
from ..tir.expr import PrimExpr, Var, as_expr
from ..tir.names import BITWISE_AND, SHIFT_RIGHT

if TYPE_CHECKING:
    from .analyzer import Analyzer


@dataclass(frozen=True)
class ModularSet:
    """The set {coeff * k + base | k integer}; coeff >= 0 and 0 <= base < coeff when coeff > 0."""

    coeff: int
    base: int

    def __post_init__(self) -> None:
        coeff, base = abs(int(self.coeff)), int(self.base)
        object.__setattr__(self, "coeff", coeff)
        object.__setattr__(self, "base", base % coeff if coeff else base)

    @property
    def is_const(self) -> bool:
        return self.coeff == 0


_EVERYTHING = ModularSet(1, 0)
_MANTISSA_BITS = {16: 11, 32: 24, 64: 53}  # integers a float dtype holds exactly


def _union(a: ModularSet, b: ModularSet) -> ModularSet:
    """The smallest modular set holding both (min, max, select)."""
    return ModularSet(gcd(gcd(a.coeff, b.coeff), a.base - b.base), a.base)


def _intersect(a: ModularSet, b: ModularSet) -> ModularSet:
    """x = a.base (mod a.coeff) and x = b.base (mod b.coeff), by the Chinese remainder theorem;
    `a` when the two contradict (the facts cannot all hold) or either is a constant."""
    if a.coeff == 0 or b.coeff == 0:
        return a if a.coeff == 0 else b
    g = gcd(a.coeff, b.coeff)
    if (b.base - a.base) % g:
        return a
    lcm = a.coeff // g * b.coeff
    # a.base + a.coeff * t = b.base (mod b.coeff)  ->  t = (b.base-a.base)/g * inv(a.coeff/g)
    t = (b.base - a.base) // g * pow(a.coeff // g, -1, b.coeff // g) if b.coeff // g > 1 else 0
    return ModularSet(lcm, a.base + a.coeff * t)


class ModularSetCalc:
    """One query's walk: facts and substitutions come from the analyzer, `let` vars from `env`."""

    def __init__(self, ana: Analyzer) -> None:
        self.ana = ana
        self.env: dict[int, ModularSet] = {}
        self.rules: dict[type, Callable[[PrimExpr], ModularSet]] = {
            tx.IntImm: lambda e: ModularSet(0, e.value),
            Var: self._var,
            tx.Add: lambda e: self._linear(e, 1),
            tx.Sub: lambda e: self._linear(e, -1),
            tx.Mul: self._mul,
            tx.FloorDiv: lambda e: self._div(e, floor=True),
            tx.Div: lambda e: self._div(e, floor=False),
            tx.FloorMod: lambda e: self._mod(e, floor=True),
            tx.Mod: lambda e: self._mod(e, floor=False),
            tx.Min: self._union_of_operands,
            tx.Max: self._union_of_operands,
            tx.Select: lambda e: _union(self.visit(e.true_value), self.visit(e.false_value)),
            tx.Cast: self._cast,
            tx.Let: self._let,
            tx.Call: self._call,
        }

    def visit(self, e: PrimExpr) -> ModularSet:
        rule = self.rules.get(type(e))
        if rule is None or not (e.dtype.is_integer or isinstance(e, tx.Cast)):
            return _EVERYTHING
        return rule(e)

    def _var(self, v: Var) -> ModularSet:
        if id(v) in self.env:
            return self.env[id(v)]
        sub = self.ana._subst_of(v)
        if sub is not None:
            return self.visit(sub[1])
        bound = self.ana.const_int_bound(v)
        if bound.min_value == bound.max_value:
            return ModularSet(0, bound.min_value)
        out = _EVERYTHING
        for fact in self.ana._facts:  # `v % c == k` (floor or trunc: both mean v = k mod c)
            c = fact.cond
            if (
                isinstance(c, tx.EQ)
                and isinstance(c.a, tx.Mod | tx.FloorMod)
                and c.a.a is v
                and isinstance(c.a.b, tx.IntImm)
                and isinstance(c.b, tx.IntImm)
                and c.a.b.value > 0
            ):
                out = _intersect(out, ModularSet(c.a.b.value, c.b.value))
        return out

    def _linear(self, e: PrimExpr, sign: int) -> ModularSet:
        a, b = self.visit(e.a), self.visit(e.b)
        return ModularSet(gcd(a.coeff, b.coeff), a.base + sign * b.base)

    def _mul(self, e: tx.Mul) -> ModularSet:
        # (c1*x + b1)(c2*y + b2) = c1*c2*xy + c1*b2*x + c2*b1*y + b1*b2
        a, b = self.visit(e.a), self.visit(e.b)
        return ModularSet(
            gcd(gcd(a.coeff * b.coeff, a.coeff * b.base), b.coeff * a.base), a.base * b.base
        )

    def _union_of_operands(self, e: PrimExpr) -> ModularSet:
        return _union(self.visit(e.a), self.visit(e.b))

    def _nonneg(self, e: PrimExpr) -> bool:
        return self.ana.const_int_bound(e).min_value >= 0

    def _divide(self, a: ModularSet, c: int, exact_needs_nonneg: bool, e: PrimExpr) -> ModularSet:
        if a.coeff == 0:
            return ModularSet(
                0, (a.base // c) if not exact_needs_nonneg or a.base >= 0 else -((-a.base) // c)
            )
        # c*k divides exactly whatever the sign (as TVM, only base 0 counts); else trunc needs x >= 0
        if a.coeff % c == 0 and (a.base == 0 or not exact_needs_nonneg or self._nonneg(e)):
            return ModularSet(a.coeff // c, a.base // c)
        return _EVERYTHING

    def _div(self, e: PrimExpr, floor: bool) -> ModularSet:
        b = self.visit(e.b)
        if not b.is_const or b.base <= 0:
            return _EVERYTHING
        return self._divide(self.visit(e.a), b.base, not floor, e.a)

    def _modulo(self, a: ModularSet, c: int) -> ModularSet:
        g = gcd(a.coeff, c)
        return ModularSet(g, a.base)

    def _mod(self, e: PrimExpr, floor: bool) -> ModularSet:
        b = self.visit(e.b)
        if not b.is_const or b.base <= 0:
            return _EVERYTHING
        a = self.visit(e.a)
        if a.is_const:
            r = a.base % b.base if floor or a.base >= 0 else -((-a.base) % b.base)
            return ModularSet(0, r)
        # trunc mod keeps the residue class only when the sign is known (or the residue is 0)
        if floor or a.base == 0 or self._nonneg(e.a):
            return self._modulo(a, b.base)
        return _EVERYTHING

    def _cast(self, e: tx.Cast) -> ModularSet:
        """Through casts that keep every value (as TVM, index arithmetic is taken not to wrap):
        int -> wider-or-equal int, and int -> float with the int fitting in the mantissa."""
        src, dst = e.value.dtype, e.dtype
        if src.is_float and isinstance(e.value, tx.Cast) and dst.is_integer:
            return self.visit(e.value)
        if not src.is_integer:
            return _EVERYTHING
        if dst.is_integer and dst.bits >= src.bits:
            return self.visit(e.value)
        if dst.is_float and src.bits < _MANTISSA_BITS.get(dst.bits, 0):
            return self.visit(e.value)
        return _EVERYTHING

    def _let(self, e: tx.Let) -> ModularSet:
        self.env[id(e.var)] = self.visit(e.value)
        try:
            return self.visit(e.body)
        finally:
            self.env.pop(id(e.var), None)

    def _call(self, e: tx.Call) -> ModularSet:
        name = getattr(e.op, "name", e.op)
        if len(e.args) != 2 or name not in (SHIFT_RIGHT, BITWISE_AND):
            return _EVERYTHING
        rhs = self.visit(e.args[1])
        if not rhs.is_const:
            return _EVERYTHING
        a = self.visit(e.args[0])
        if name == SHIFT_RIGHT:  # x >> k == floordiv(x, 2**k) for k >= 0
            return (
                self._divide(a, 1 << rhs.base, False, e.args[0])
                if 0 <= rhs.base < 63
                else _EVERYTHING
            )
        mask = rhs.base  # x & (2**p - 1) == floormod(x, 2**p) in two's complement
        if mask > 0 and mask & (mask + 1) == 0:
            return self._modulo(a, mask + 1)
        return _EVERYTHING


def modular_set(ana: Analyzer, expr: PrimExpr | int) -> ModularSet:
    """The modular set of `expr` under `ana`'s bindings and `v % c == k` constraints."""
    e = as_expr(expr)
    if not isinstance(e, PrimExpr):
        raise MiniTVMError(f"Analyzer.modular_set expects an integer expression, got {expr!r}")
    return ModularSetCalc(ana).visit(e)
