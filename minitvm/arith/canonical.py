"""Canonical form of integer expressions: a polynomial (sum of coeff * monomial + const).

A monomial is a product of *atoms* (anything that is not +, -, * or an integer constant: vars,
loads, min/max, and the floordiv/floormod that could not be removed). Like terms are collected,
and division by a constant or by a positive symbolic atom is pushed through the sum:
`floordiv(c*q + r, c) = q + floordiv(r, c)`, then `floordiv(r, c)` is decided by bounds.
"""

from __future__ import annotations

from collections import Counter
from math import gcd
from typing import TYPE_CHECKING, Any

from ..error import DTypeError
from ..ir.dtype import DataType
from ..ir.node import Node, field_names
from ..tir.expr import (
    Add,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Mod,
    Mul,
    PrimExpr,
    Sub,
    Var,
    make_const,
)

if TYPE_CHECKING:
    from .analyzer import Analyzer

# distributing a product of two sums is capped so (a+b)*(c+d)*... cannot blow up
_MAX_DISTRIBUTED_TERMS = 16
_POLY_OPS = (Add, Sub, Mul, FloorDiv, FloorMod, Div, Mod)


class Poly:
    """sum(coeff * product(atoms)) + const, for one scalar integer dtype."""

    __slots__ = ("const", "dtype", "terms")

    def __init__(self, dtype: DataType, terms: dict | None = None, const: int = 0):
        self.dtype = dtype
        self.terms: dict[frozenset, tuple[int, tuple]] = terms if terms is not None else {}
        self.const = const

    def copy(self) -> Poly:
        return Poly(self.dtype, dict(self.terms), self.const)

    def is_const(self) -> bool:
        return not self.terms

    def add_term(self, key: frozenset, coeff: int, atoms: tuple) -> None:
        old = self.terms.get(key)
        total = coeff + (old[0] if old else 0)
        if total == 0:
            self.terms.pop(key, None)
        elif old:
            self.terms[key] = (total, old[1])
        else:
            self.terms[key] = (total, atoms)

    def scaled(self, k: int) -> Poly:
        if k == 0:
            return Poly(self.dtype)
        terms = {key: (c * k, atoms) for key, (c, atoms) in self.terms.items()}
        return Poly(self.dtype, terms, self.const * k)

    def plus(self, other: Poly, sign: int = 1) -> Poly:
        out = self.copy()
        for key, (c, atoms) in other.terms.items():
            out.add_term(key, sign * c, atoms)
        out.const += sign * other.const
        return out


def _monomial_key(keys: list) -> frozenset:
    return frozenset(Counter(keys).items())


class Canonical:
    """Canonical simplification of one expression tree, memoised by node identity."""

    def __init__(self, ana: Analyzer):
        self.ana = ana
        self.memo: dict[int, tuple[PrimExpr, PrimExpr]] = {}
        self.poly_memo: dict[int, tuple[PrimExpr, Poly]] = {}
        self.key_memo: dict[int, tuple[Any, Any]] = {}

    # --- structural keys (exact; vars and buffers by identity) --------------------------
    def key(self, x: Any) -> Any:
        if isinstance(x, Node):
            hit = self.key_memo.get(id(x))
            if hit is not None:
                return hit[1]
            if isinstance(x, Var):
                k: Any = ("var", id(x))
            elif isinstance(x, IntImm | FloatImm):
                k = (type(x).__name__, str(x.dtype), x.value)
            elif getattr(type(x), "_is_buffer", False):
                k = ("buffer", id(x))
            else:
                k = (type(x).__name__,) + tuple(
                    self.key(getattr(x, f)) for f in field_names(type(x))
                )
            self.key_memo[id(x)] = (x, k)
            return k
        if isinstance(x, tuple | list):
            return tuple(self.key(v) for v in x)
        if isinstance(x, DataType):
            return str(x)
        if isinstance(x, int | float | str | bool) or x is None:
            return x
        return ("id", id(x))

    def same(self, a: PrimExpr, b: PrimExpr) -> bool:
        return a is b or self.key(a) == self.key(b)

    # --- expression → expression ---------------------------------------------------------
    def visit(self, e: PrimExpr) -> PrimExpr:
        hit = self.memo.get(id(e))
        if hit is not None:
            return hit[1]
        if is_index_dtype(e.dtype) and isinstance(e, _POLY_OPS):
            try:
                out = self.to_expr(self.poly(e))
            except DTypeError:  # a coefficient outside the dtype: keep the written form
                out = self.ana._rebuild(e, self.visit)
        else:
            out = self.ana._rebuild(e, self.visit)
        if out is not e and self.same(out, e):
            out = e
        self.memo[id(e)] = (e, out)
        self.memo.setdefault(id(out), (out, out))
        return out

    # --- expression → polynomial ---------------------------------------------------------
    def poly(self, e: PrimExpr) -> Poly:
        hit = self.poly_memo.get(id(e))
        if hit is not None:
            return hit[1]
        p = self._poly(e)
        self.poly_memo[id(e)] = (e, p)
        return p

    def _poly(self, e: PrimExpr) -> Poly:
        t = type(e)
        if t is IntImm:
            return Poly(e.dtype, const=e.value)
        if t is Add or t is Sub:
            return self.poly(e.a).plus(self.poly(e.b), 1 if t is Add else -1)
        if t is Mul:
            return self._mul(self.poly(e.a), self.poly(e.b), e)
        if t in (FloorDiv, FloorMod, Div, Mod):
            return self._divmod(t, self.poly(e.a), self.poly(e.b))
        return self.atom(self.visit(e))

    def atom(self, e: PrimExpr) -> Poly:
        if isinstance(e, IntImm):
            return Poly(e.dtype, const=e.value)
        if isinstance(e, _POLY_OPS) and is_index_dtype(e.dtype):
            return self.poly(e)
        return self._leaf(e)

    def _leaf(self, e: PrimExpr) -> Poly:
        """`e` as a single opaque term (never expanded again)."""
        return Poly(e.dtype, {_monomial_key([self.key(e)]): (1, (e,))})

    def _mul(self, a: Poly, b: Poly, e: PrimExpr) -> Poly:
        if a.is_const():
            return b.scaled(a.const)
        if b.is_const():
            return a.scaled(b.const)
        if (len(a.terms) + 1) * (len(b.terms) + 1) > _MAX_DISTRIBUTED_TERMS:
            return self._leaf(e.replace(a=self.to_expr(a), b=self.to_expr(b)))
        out = Poly(a.dtype, const=a.const * b.const)
        for ca, atoms_a in a.terms.values():
            for cb, atoms_b in b.terms.values():
                atoms = atoms_a + atoms_b
                out.add_term(_monomial_key([self.key(x) for x in atoms]), ca * cb, atoms)
        for p, q in ((a, b), (b, a)):
            if p.const:
                for key, (c, atoms) in q.terms.items():
                    out.add_term(key, c * p.const, atoms)
        return out

    # --- division -------------------------------------------------------------------------
    def _divmod(self, cls: type, a: Poly, b: Poly) -> Poly:
        if cls in (Div, Mod):
            if not (
                self.ana._min_of(self.to_expr(a)) >= 0
                and self.ana._is_divisor_positive(self.to_expr(b))
            ):
                return self._div_atom(cls, a, b)
            cls = FloorDiv if cls is Div else FloorMod
        a = self.merge_divmod(a)
        if b.is_const():
            c = b.const
            if c > 0:
                return self._by_const(cls, a, c)
            return self._div_atom(cls, a, b)
        single = _single_atom(b)
        if single is not None and self.ana._is_divisor_positive(single):
            return self._by_atom(cls, a, single)
        return self._div_atom(cls, a, b)

    def _div_atom(self, cls: type, a: Poly, b: Poly) -> Poly:
        return self._leaf(cls(self.to_expr(a), self.to_expr(b)))

    def _by_const(self, cls: type, a: Poly, c: int) -> Poly:
        if c == 1:
            return a if cls is FloorDiv else Poly(a.dtype)
        quot, rest = Poly(a.dtype, const=a.const // c), Poly(a.dtype, const=a.const % c)
        for key, (coeff, atoms) in a.terms.items():
            if coeff % c == 0:
                quot.add_term(key, coeff // c, atoms)
            else:
                rest.add_term(key, coeff, atoms)
        if cls is FloorDiv:
            return quot.plus(self._floordiv_rest(rest, c))
        return self._floormod_rest(rest, c)

    def _bucket(self, rest: Poly, c: int) -> int | None:
        """q when every value of `rest` lies in [q*c, q*c + c), else None."""
        if rest.is_const():
            return rest.const // c
        lo, hi = self.ana._bound_of(self.to_expr(rest))
        if lo // c == hi // c and -(2**62) < lo and hi < 2**62:
            return lo // c
        return None

    def _split_low(self, rest: Poly, c: int) -> tuple[Poly, Poly, int] | None:
        """(s, r, g) with rest == g*s + r, g a proper divisor of c and 0 <= r < g provable
        from the bounds of the terms of r: then floordiv(rest, c) == floordiv(s, c // g) and
        floormod(rest, c) == g*floormod(s, c // g) + r (GQA's `(h*8192 + k*64 + j) // 16384`
        with k < 128, j < 64 is h // 2). The largest such g is tried first."""
        for g in sorted({gcd(co, c) for co, _ in rest.terms.values()} - {1, c}, reverse=True):
            high, low = Poly(rest.dtype), Poly(rest.dtype, const=rest.const)
            for key, (co, atoms) in rest.terms.items():
                if co % g == 0:
                    high.add_term(key, co // g, atoms)
                else:
                    low.add_term(key, co, atoms)
            if high.is_const() or low.is_const():
                continue  # all of rest, or a constant offset: the gcd step's case
            q = self._bucket(low, g)
            if q is not None:
                high.const += q
                return high, low.plus(Poly(rest.dtype, const=q * g), -1), g
        return None

    def _floordiv_rest(self, rest: Poly, c: int) -> Poly:
        q = self._bucket(rest, c)
        if q is not None:
            return Poly(rest.dtype, const=q)
        split = self._split_low(rest, c)
        if split is not None:
            high, _, g = split
            return self._by_const(FloorDiv, high, c // g)
        g = gcd(c, *(coeff for coeff, _ in rest.terms.values()))
        if g > 1:  # floordiv(g*s + k, g*c') == floordiv(s + floordiv(k, g), c')
            reduced = Poly(
                rest.dtype,
                {k: (co // g, at) for k, (co, at) in rest.terms.items()},
                rest.const // g,
            )
            return self._by_const(FloorDiv, reduced, c // g)
        return self._div_atom(FloorDiv, rest, Poly(rest.dtype, const=c))

    def _floormod_rest(self, rest: Poly, c: int) -> Poly:
        q = self._bucket(rest, c)
        if q is not None:
            return rest.plus(Poly(rest.dtype, const=q * c), -1)
        split = self._split_low(rest, c)
        if split is not None:
            high, low, g = split
            return self._by_const(FloorMod, high, c // g).scaled(g).plus(low)
        g = gcd(c, *(coeff for coeff, _ in rest.terms.values()))
        if g > 1:  # floormod(g*s + g*k1 + k0, g*c') == g*floormod(s + k1, c') + k0
            reduced = Poly(
                rest.dtype,
                {k: (co // g, at) for k, (co, at) in rest.terms.items()},
                rest.const // g,
            )
            inner = self._by_const(FloorMod, reduced, c // g)
            return inner.scaled(g).plus(Poly(rest.dtype, const=rest.const % g))
        return self._div_atom(FloorMod, rest, Poly(rest.dtype, const=c))

    def _by_atom(self, cls: type, a: Poly, d: PrimExpr) -> Poly:
        """Divide by a positive symbolic atom `d`: terms with `d` as a factor divide exactly."""
        dkey = self.key(d)
        quot, rest = Poly(a.dtype), Poly(a.dtype, const=a.const)
        for key, (coeff, atoms) in a.terms.items():
            idx = next((i for i, x in enumerate(atoms) if self.key(x) == dkey), None)
            if idx is None:
                rest.add_term(key, coeff, atoms)
                continue
            left = atoms[:idx] + atoms[idx + 1 :]
            if left:
                quot.add_term(_monomial_key([self.key(x) for x in left]), coeff, left)
            else:
                quot.const += coeff
        rest_expr = self.to_expr(rest)
        in_range = self.ana._min_of(rest_expr) >= 0 and self.ana._prove_lt(rest_expr, d)
        if cls is FloorDiv:
            if in_range:
                return quot
            if quot.terms or quot.const:
                return quot.plus(self._div_atom(FloorDiv, rest, self.atom(d)))
            return self._div_atom(FloorDiv, a, self.atom(d))
        if in_range:
            return rest
        return self._div_atom(FloorMod, rest, self.atom(d))

    def merge_divmod(self, p: Poly) -> Poly:
        """floordiv(x, c)*c*k + floormod(x, c)*k → x*k (the split/fuse round trip)."""
        out = None
        for key, (coeff, atoms) in list(p.terms.items()):
            if len(atoms) != 1 or type(atoms[0]) is not FloorMod:
                continue
            mod = atoms[0]
            div = FloorDiv(mod.a, mod.b)
            if isinstance(mod.b, IntImm):
                div_key, div_coeff = _monomial_key([self.key(div)]), coeff * mod.b.value
            else:
                div_key = _monomial_key([self.key(div), self.key(mod.b)])
                div_coeff = coeff
            target = (out or p).terms.get(div_key)
            if target is None or target[0] != div_coeff or key not in (out or p).terms:
                continue
            out = (out or p).copy()
            out.terms.pop(key)
            out.terms.pop(div_key)
            out = out.plus(self.poly(mod.a).scaled(coeff))
        return self._merge_sub_div(out or p)

    def _merge_sub_div(self, p: Poly) -> Poly:
        """x*k - floordiv(x, c)*c*k → floormod(x, c)*k, when all of x*k is in the sum."""
        for key, (coeff, atoms) in list(p.terms.items()):
            if len(atoms) > 2 or type(atoms[0]) is not FloorDiv or key not in p.terms:
                continue
            div = atoms[0]
            if isinstance(div.b, IntImm) and len(atoms) == 1 and div.b.value > 0:
                if coeff % div.b.value:
                    continue
                k = -coeff // div.b.value
            elif len(atoms) == 2 and self.same(atoms[1], div.b):
                k = -coeff
            else:
                continue
            x = self.poly(div.a)
            if not x.terms or any(
                p.terms.get(tk, (None,))[0] != c * k for tk, (c, _) in x.terms.items()
            ):
                continue
            mod = FloorMod(div.a, div.b)
            p = p.copy()
            for tk in x.terms:
                p.terms.pop(tk)
            p.terms.pop(key)
            p.const -= x.const * k
            p.add_term(_monomial_key([self.key(mod)]), k, (mod,))
        return p

    # --- polynomial → expression ---------------------------------------------------------
    def to_expr(self, p: Poly) -> PrimExpr:
        p = self.merge_divmod(p)
        dtype = p.dtype
        pos = [(c, atoms) for c, atoms in p.terms.values() if c > 0]
        neg = [(-c, atoms) for c, atoms in p.terms.values() if c < 0]
        acc: PrimExpr | None = None
        for c, atoms in pos:
            t = _monomial(atoms, c, dtype)
            acc = t if acc is None else Add(acc, t)
        if acc is None and (p.const > 0 or neg):
            acc = make_const(dtype, max(0, p.const))
            const = min(p.const, 0)
        else:
            const = p.const
        for c, atoms in neg:
            acc = Sub(acc, _monomial(atoms, c, dtype))
        if acc is None:
            return make_const(dtype, const)
        if const > 0:
            acc = Add(acc, make_const(dtype, const))
        elif const < 0:
            acc = Sub(acc, make_const(dtype, -const))
        return acc


def _monomial(atoms: tuple, coeff: int, dtype: DataType) -> PrimExpr:
    out = atoms[0]
    for x in atoms[1:]:
        out = Mul(out, x)
    return out if coeff == 1 else Mul(out, make_const(dtype, coeff))


def _single_atom(p: Poly) -> PrimExpr | None:
    if p.const != 0 or len(p.terms) != 1:
        return None
    ((coeff, atoms),) = p.terms.values()
    return atoms[0] if coeff == 1 and len(atoms) == 1 else None


def is_index_dtype(dtype: DataType) -> bool:
    """Scalar int/uint: the dtypes the canonical form applies to."""
    return dtype.lanes == 1 and dtype.is_int
