"""What a block's bindings reach: the points it runs, whether they fill its domain, and how to
invert an index map (`B[v // 16, v % 16]` back to `v`), so primitives can prove legality.

Two ways to know: enumerate the iterations of a constant loop nest of moderate size (exact),
or, for symbolic or large nests, structural facts the arithmetic analyzer can prove. A
question neither can answer gets None, and the primitive asking must refuse.
"""

from __future__ import annotations

import itertools
from typing import Any

from ..expr import FloorDiv, FloorMod, IntImm, PrimExpr, Var
from ..functor import substitute
from ..stmt import BlockRealize, For
from .common import analyzer, const_int
from .race import Unknown, eval_int
from .tree import uses_var

MAX_POINTS = 1 << 16


def _used_loops(r: BlockRealize, loops: list[For]) -> list[For]:
    """The loops whose variables the bindings or the predicate use (others only repeat)."""
    exprs = list(r.iter_values) + [r.predicate]
    return [f for f in loops if uses_var(exprs, {id(f.loop_var)})]


def block_points(r: BlockRealize, loops: list[For]) -> list[tuple[int, ...]] | None:
    """The iter-value tuples block `r` runs at under `loops`, in order; None if not countable."""
    used = _used_loops(r, loops)
    mins = [const_int(f.min) for f in used]
    extents = [const_int(f.extent) for f in used]
    if None in mins or None in extents:
        return None
    size = 1
    for e in extents:
        size *= max(e, 0)
    if size > MAX_POINTS:
        return None
    out = []
    try:
        for point in itertools.product(*(range(m, m + e) for m, e in zip(mins, extents))):
            env = {id(f.loop_var): p for f, p in zip(used, point)}
            if eval_int(r.predicate, env):
                out.append(tuple(eval_int(v, env) for v in r.iter_values))
    except Unknown:
        return None
    return out


def domain_points(r: BlockRealize) -> list[tuple[int, ...]] | None:
    """Every point of the block's iter domain; None when symbolic or too large."""
    ranges = []
    size = 1
    for iv in r.block.iter_vars:
        lo, ext = const_int(iv.dom.min), const_int(iv.dom.extent)
        if lo is None or ext is None:
            return None
        size *= max(ext, 0)
        ranges.append(range(lo, lo + ext))
    return None if size > MAX_POINTS else list(itertools.product(*ranges))


def _plain_cover(r: BlockRealize, loops: list[For]) -> bool:
    """Each binding is its own loop variable, and that loop spans exactly the iter's domain."""
    if const_int(r.predicate) != 1:
        return False
    by_var = {id(f.loop_var): f for f in loops}
    ana = analyzer(loops)
    seen: set[int] = set()
    for iv, v in zip(r.block.iter_vars, r.iter_values):
        if isinstance(v, IntImm) and const_int(iv.dom.extent) == 1:
            if not ana.can_prove_equal(v, iv.dom.min):
                return False
            continue
        f = by_var.get(id(v))
        if f is None or id(v) in seen:
            return False
        seen.add(id(v))
        if not (ana.can_prove_equal(f.min, iv.dom.min) and ana.can_prove_equal(f.extent, iv.dom.extent)):
            return False
    return True


def covers_domain(r: BlockRealize, loops: list[For]) -> bool | None:
    """True when the block runs every point of its domain exactly once; None when unknown."""
    if _plain_cover(r, loops):
        return True
    points, dom = block_points(r, loops), domain_points(r)
    if points is None or dom is None:
        return None
    return len(points) == len(dom) and set(points) == set(dom)


# ---------------------------------------------------------------- inverting an index map


def _mixed_radix(
    coeffs: dict[Var, int], base: PrimExpr, dom: dict[int, Any], target: PrimExpr
) -> dict[int, PrimExpr] | None:
    """Each var of `sum(c*v) + base == target` as a div/mod of target when the coefficients
    form a mixed radix over the vars' constant extents (the last place may be unbounded)."""
    terms = sorted(((c, v) for v, c in coeffs.items() if c != 0), key=lambda t: t[0])
    if not terms or any(c < 0 for c, _ in terms):
        return None
    if any(const_int(dom[id(v)].min) != 0 for _, v in terms):
        return None
    u = target - base
    out: dict[int, PrimExpr] = {}
    stride = 1
    for k, (c, v) in enumerate(terms):
        ext = const_int(dom[id(v)].extent)
        last = k == len(terms) - 1
        if c != stride or (ext is None and not last):
            return None
        q = u if stride == 1 else FloorDiv(u, stride)
        out[id(v)] = q if last else FloorMod(q, ext)
        stride *= ext if ext is not None else 1
    return out


def _divmod_pairs(indices: list[PrimExpr], targets: list[PrimExpr]) -> list[tuple[PrimExpr, PrimExpr]]:
    """(inner expression, its value) for each `x // c` and `x % c` pair among the indices."""
    pairs = []
    for a, ta in zip(indices, targets):
        for b, tb in zip(indices, targets):
            if (
                isinstance(a, FloorDiv)
                and isinstance(b, FloorMod)
                and const_int(a.b) is not None
                and const_int(a.b) == const_int(b.b)
                and analyzer().can_prove_equal(a.a, b.a)
            ):
                pairs.append((a.a, ta * a.b + tb))
    return pairs


def invert_indices(
    iter_vars: list[Any], indices: list[PrimExpr], targets: list[PrimExpr]
) -> dict[Any, PrimExpr] | None:
    """For index expressions over `iter_vars`, each iter var as an expression of `targets`
    (the values the indices take), or None when no simple inverse is known. The caller must
    still prove the round trip `indices[inverse] == targets`."""
    from ...arith import affine_coeffs

    ana = analyzer()
    dom = {id(iv.var): iv.dom for iv in iter_vars}
    ivars = [iv.var for iv in iter_vars]
    simple = [ana.simplify(i) for i in indices]
    found: dict[int, PrimExpr] = {}
    # the simplifier may split `(a*128 + b) // 128` apart, so pair up the written form too
    candidates = (
        list(zip(simple, targets))
        + _divmod_pairs(list(indices), targets)
        + _divmod_pairs(simple, targets)
    )
    for expr, value in candidates:
        got = affine_coeffs(expr, ivars, ana)
        if got is None:
            continue
        coeffs, base = got
        live = {v: c for v, c in coeffs.items() if c != 0 and id(v) not in found}
        if not live:
            continue
        if len(live) == 1:
            ((v, c),) = live.items()
            rest = sum((c2 * v2 for v2, c2 in coeffs.items() if id(v2) in found), base)
            rest = substitute(rest, {v2: found[id(v2)] for v2 in ivars if id(v2) in found})
            if c in (1, -1):
                found[id(v)] = (value - rest) * c
            elif c > 1:
                found[id(v)] = FloorDiv(value - rest, c)
            continue
        if any(id(v) in found for v, c in coeffs.items() if c != 0):
            continue
        solved = _mixed_radix(live, base, dom, value)
        if solved is not None:
            found.update(solved)
    for iv in iter_vars:  # a unit iterator the indices do not mention sits at its minimum
        if id(iv.var) not in found and const_int(iv.dom.extent) == 1:
            found[id(iv.var)] = iv.dom.min
    if len(found) != len(ivars):
        return None
    return {v: ana.simplify(found[id(v)]) for v in ivars}


__all__ = ["block_points", "covers_domain", "domain_points", "invert_indices", "MAX_POINTS"]
