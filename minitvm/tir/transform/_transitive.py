"""Transitive proofs of integer comparisons from the conditions in scope (what TVM's Simplify
does under `transitively_prove_inequalities`): `i < j and j < k` proves `i < k`.

Each known comparison of scalar integers that is linear with unit coefficients, `u - w <= c`
(or `u <= c`, `-w <= c`), is an edge of a difference-bound graph; the shortest paths
(Floyd-Warshall over the few variables involved) bound every difference, and a goal holds
when its difference is bounded tightly enough.
"""

from __future__ import annotations

from itertools import product
from typing import Any

from ..expr import EQ, GE, GT, LE, LT, NE, Add, And, IntImm, Mul, PrimExpr, Sub, Var

_ZERO = 0  # the node standing for the constant 0; a Var's node is its id (Vars' == builds IR)
_INF = float("inf")


def _linear(e: Any) -> tuple[dict, int] | None:
    """e as ({id(Var): coefficient}, constant), or None when it is not linear in Vars."""
    if isinstance(e, IntImm):
        return {}, e.value
    if isinstance(e, Var):
        return {id(e): 1}, 0
    if isinstance(e, Add | Sub):
        a, b = _linear(e.a), _linear(e.b)
        if a is None or b is None:
            return None
        sign = 1 if isinstance(e, Add) else -1
        coeffs = dict(a[0])
        for v, c in b[0].items():
            coeffs[v] = coeffs.get(v, 0) + sign * c
        return {v: c for v, c in coeffs.items() if c}, a[1] + sign * b[1]
    if isinstance(e, Mul):
        for k, x in ((e.a, e.b), (e.b, e.a)):
            if isinstance(k, IntImm):
                inner = _linear(x)
                if inner is None:
                    return None
                return {v: c * k.value for v, c in inner[0].items()}, inner[1] * k.value
        return None
    return None


def _difference(lhs: PrimExpr, rhs: PrimExpr) -> tuple[Any, Any, int] | None:
    """`lhs - rhs` as (u, w, c) meaning u - w + c, u/w a Var's id or _ZERO; None otherwise."""
    if not (lhs.dtype.is_int or lhs.dtype.is_uint) or lhs.dtype.lanes != 1:
        return None
    a, b = _linear(lhs), _linear(rhs)
    if a is None or b is None:
        return None
    coeffs = dict(a[0])
    for v, c in b[0].items():
        coeffs[v] = coeffs.get(v, 0) - c
    coeffs = {v: c for v, c in coeffs.items() if c}
    plus = [v for v, c in coeffs.items() if c == 1]
    minus = [v for v, c in coeffs.items() if c == -1]
    if len(plus) > 1 or len(minus) > 1 or len(plus) + len(minus) != len(coeffs):
        return None
    return (plus[0] if plus else _ZERO), (minus[0] if minus else _ZERO), a[1] - b[1]


def _upper_bounds(cmp: PrimExpr) -> list[tuple[Any, Any, int]]:
    """The facts `u - w <= c` that the comparison states (none if it is of another shape)."""
    if not isinstance(cmp, EQ | LT | LE | GT | GE):
        return []
    if isinstance(cmp, GT | GE):
        d = _difference(cmp.b, cmp.a)  # a > b is b < a
        strict = isinstance(cmp, GT)
    else:
        d = _difference(cmp.a, cmp.b)
        strict = isinstance(cmp, LT)
    if d is None:
        return []
    u, w, c = d  # u - w + c (<, <=, ==) 0
    bound = -c - 1 if strict else -c
    facts = [(u, w, bound)]
    if isinstance(cmp, EQ):
        facts.append((w, u, c))
    return facts


def _atoms(cond: PrimExpr) -> list[PrimExpr]:
    if isinstance(cond, And):
        return _atoms(cond.a) + _atoms(cond.b)
    return [cond]


class TransitiveProver:
    """Bounds on differences of variables implied by the known comparisons."""

    def __init__(self, known: list[PrimExpr]) -> None:
        edges: dict[tuple, int] = {}
        self.unequal: list[tuple[Any, Any, int]] = []  # known `u - w + c != 0`
        for cond in known:
            for atom in _atoms(cond):
                for u, w, c in _upper_bounds(atom):
                    edges[(u, w)] = min(edges.get((u, w), c), c)
                if isinstance(atom, NE):
                    d = _difference(atom.a, atom.b)
                    if d is not None:
                        self.unequal.append(d)
        nodes = list(dict.fromkeys([n for key in edges for n in key]))
        dist: dict[tuple, float] = {(n, n): 0 for n in nodes}
        dist.update(edges)
        for k, i, j in product(nodes, nodes, nodes):  # k outermost: Floyd-Warshall
            through = dist.get((i, k), _INF) + dist.get((k, j), _INF)
            if through < dist.get((i, j), _INF):
                dist[(i, j)] = through
        self.dist = dist

    def _holds(self, u: Any, w: Any, c: int) -> bool:
        """Whether `u - w <= c` follows."""
        return (u == w and c >= 0) or self.dist.get((u, w), _INF) <= c

    def _exact(self, u: Any, w: Any) -> float | None:
        """`u - w` when the facts pin it to one value."""
        if u == w:
            return 0
        hi, lo = self.dist.get((u, w), _INF), -self.dist.get((w, u), _INF)
        return hi if hi == lo else None

    def _same_as_unequal(self, u: Any, w: Any, c: int) -> bool:
        """Whether `u - w + c` equals a known nonzero `u2 - w2 + c2` (either way round)."""
        for u2, w2, c2 in self.unequal:
            for a, b, k in ((u2, w2, c2), (w2, u2, -c2)):
                du, dw = self._exact(u, a), self._exact(w, b)
                if du is not None and dw is not None and du - dw + c - k == 0:
                    return True
        return False

    def prove(self, goal: PrimExpr) -> bool:
        """Whether the comparison `goal` follows from the known facts."""
        if isinstance(goal, NE):
            d = _difference(goal.a, goal.b)
            if d is not None and self._same_as_unequal(*d):
                return True
            return self.prove(LT(goal.a, goal.b)) or self.prove(GT(goal.a, goal.b))
        facts = _upper_bounds(goal)
        return bool(facts) and all(self._holds(u, w, c) for u, w, c in facts)
