"""Which buffer params a lowered PrimFunc writes, and which (input, output) pairs may be the
same array without changing the result (FuncInfo "writes" and "alias_ok", contracts.md §3).

An input A may alias an output C when it is provably an elementwise in-place update:
  * every load of A sits in the value of a store to C, at an index structurally equal to that
    store's index (so A[e] is read in the same statement that then writes C[e]), and A's
    data pointer is used nowhere else;
  * every element of C is written at most once: each store site's index is affine in its
    enclosing loops with constant coefficients whose mixed-radix digits cannot collide, and
    the index ranges of different store sites are disjoint.
Anything the analysis cannot prove is reported as not aliasable; the runtime then refuses the
overlapping call instead of computing a wrong result.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from ...ir import structural_equal
from ..buffer import Buffer
from ..expr import (
    LT,
    And,
    BinaryOpExpr,
    BufferLoad,
    FloorDiv,
    FloorMod,
    IntImm,
    PrimExpr,
    Ramp,
    Var,
)
from ..function import PrimFunc
from ..functor import Mutator, Visitor, post_order_visit
from ..names import LIKELY, is_call
from ..stmt import Allocate, BufferStore, DeclBuffer, For, IfThenElse, While


@dataclass
class _Site:
    """One store statement: its enclosing loops (outer first) and its flat index."""

    loops: tuple
    index: PrimExpr
    value: PrimExpr
    guards: tuple  # conditions of the enclosing IfThenElse then-branches


@dataclass
class _Accesses:
    stores: dict = field(default_factory=dict)  # data var id -> [_Site]
    # data var id -> [(site or None, index)]: None when the load is outside any store value
    loads: dict = field(default_factory=dict)
    escaped: set = field(default_factory=set)  # data var ids used as a bare handle
    in_while: set = field(default_factory=set)  # data var ids stored inside a While loop


class _Collect(Visitor):
    def __init__(self) -> None:
        self.acc = _Accesses()
        self.loops: list[For] = []
        self.site: _Site | None = None
        self.whiles = 0
        self.guards: list[PrimExpr] = []

    def visit_For(self, s: For) -> None:
        self.visit(s.min)
        self.visit(s.extent)
        self.loops.append(s)
        self.visit(s.body)
        self.loops.pop()

    def visit_While(self, s: While) -> None:
        self.visit(s.condition)
        self.whiles += 1
        self.visit(s.body)
        self.whiles -= 1

    def visit_IfThenElse(self, s: IfThenElse) -> None:
        self.visit(s.condition)
        self.guards.append(s.condition)
        self.visit(s.then_case)
        self.guards.pop()
        self.visit(s.else_case)

    def visit_BufferStore(self, s: BufferStore) -> None:
        key = id(s.buffer.data)
        index = s.indices[0] if len(s.indices) == 1 else None
        site = _Site(tuple(self.loops), index, s.value, tuple(self.guards))
        self.acc.stores.setdefault(key, []).append(site)
        if self.whiles:
            self.acc.in_while.add(key)
        self.visit(s.indices)
        outer, self.site = self.site, site
        self.visit(s.value)
        self.site = outer

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        index = e.indices[0] if len(e.indices) == 1 else None
        self.acc.loads.setdefault(id(e.buffer.data), []).append((self.site, index))
        outer, self.site = self.site, None  # a load inside an index is not "in the value"
        self.visit(e.indices)
        self.site = outer

    def visit_Var(self, v: Var) -> None:
        self.acc.escaped.add(id(v))

    def visit_Allocate(self, s: Allocate) -> None:
        self.visit(s.extents)
        self.visit(s.condition)
        self.visit(s.body)

    def visit_DeclBuffer(self, s: DeclBuffer) -> None:
        self.visit(s.body)

    def visit_Buffer(self, b: Buffer) -> None:
        return None  # a buffer's own fields (data, shape) are declarations, not uses


def analyze_alias(func: PrimFunc) -> tuple[list[int], list[list[int]]]:
    """`(writes, alias_ok)` of a lowered PrimFunc: positions of the buffer params it writes
    (or whose pointer escapes), and [input, output] position pairs safe to pass as one array."""
    collect = _Collect()
    collect.visit(func.body)
    acc = collect.acc
    buffers = {i: func.buffer_map[p] for i, p in enumerate(func.params) if p in func.buffer_map}
    writes = [
        i for i, b in buffers.items() if id(b.data) in acc.stores or id(b.data) in acc.escaped
    ]
    outer_vars = _function_vars(func)
    alias_ok = [
        [i, o]
        for o in writes
        for i in buffers
        if i not in writes
        and buffers[i].dtype == buffers[o].dtype
        and _in_place_safe(acc, buffers[i].data, buffers[o].data, outer_vars)
    ]
    return writes, alias_ok


def _function_vars(func: PrimFunc) -> set[int]:
    """Variables fixed for a whole call: params and the buffers' symbolic dims."""
    found = {id(p) for p in func.params}
    for b in func.buffer_map.values():
        post_order_visit(b.shape, lambda n: found.add(id(n)) if isinstance(n, Var) else None)
    return found


def _in_place_safe(acc: _Accesses, a: Var, c: Var, outer_vars: set[int]) -> bool:
    if id(a) in acc.escaped or id(c) in acc.escaped or id(c) in acc.in_while:
        return False
    sites = acc.stores.get(id(c), [])
    for site, index in acc.loads.get(id(a), []):
        if site is None or index is None or not any(site is s for s in sites):
            return False
        if not _same_index(index, site.index):
            return False
    return _written_once(sites, outer_vars)


def _same_index(x: PrimExpr, y: PrimExpr | None) -> bool:
    return y is not None and structural_equal(x, y)


# --- each element of the output written at most once -------------------------------------
def _written_once(sites: list[_Site], outer_vars: set[int]) -> bool:
    """Every store site is injective over its loops and no two sites write the same element.

    With several sites, the loops enclosing all of them (a LoopPartition main part and tail
    share the row loop) are digits of the whole; per site, the other digits make an inner
    range; inner ranges must be disjoint and their hull must fit under the shared digits."""
    if len(sites) <= 1:
        form = _affine_form(sites[0], outer_vars) if sites else (None, [], [])
        return form is not None and _mixed_radix(form[1], form[2]) is not None
    shared = 0
    while all(len(s.loops) > shared for s in sites) and all(
        s.loops[shared] is sites[0].loops[shared] for s in sites
    ):
        shared += 1
    shared_keys = {id(f.loop_var) for f in sites[0].loops[:shared]}
    forms = [_affine_form(s, outer_vars) for s in sites]
    if any(f is None for f in forms):
        return False
    outer = sorted(d for d in forms[0][1] if d[3] in shared_keys)
    inner = []
    for base, digits, guards in forms:  # each base must be the first one's plus a constant
        if sorted(d for d in digits if d[3] in shared_keys) != outer:
            return False
        shift = _constant_difference(base, forms[0][0])
        span = _mixed_radix([d for d in digits if d[3] not in shared_keys], guards)
        if shift is None or span is None:
            return False
        inner.append((span[0] + shift, span[1] + shift))
    spans = sorted(inner)
    if any(prev[1] >= nxt[0] for prev, nxt in itertools.pairwise(spans)):
        return False
    return _mixed_radix(outer, [], (spans[0][0], max(hi for _, hi in spans))) is not None


def _constant_difference(a: PrimExpr, b: PrimExpr) -> int | None:
    from ...arith import Analyzer

    if structural_equal(a, b):
        return 0
    if a.dtype != b.dtype:
        return None  # not comparable without casts: refuse rather than guess
    diff = Analyzer().simplify(a - b)
    return diff.value if isinstance(diff, IntImm) else None


class _SplitLoopVars(Mutator):
    """`v // K` and `v % K` of a loop var v (K constant) become digit vars q and r: a fused
    loop decomposes into (q, r) one to one."""

    def __init__(self, loops: dict[int, For]) -> None:
        super().__init__()
        self.loops = loops
        self.digits: dict[tuple, tuple[Var, int, int]] = {}  # (kind, var id, K) -> digit

    def _digit(self, e: BinaryOpExpr, kind: str):
        loop = self.loops.get(id(e.a))
        if loop is None or not isinstance(e.b, IntImm) or e.b.value <= 0:
            return self.generic_visit(e)
        k, extent = e.b.value, _extent(loop)
        key = (kind, id(e.a), k)
        if key not in self.digits:
            if kind == "r":
                size = k if extent is None else min(k, extent)
            else:
                size = None if extent is None else -(-extent // k)
            self.digits[key] = (Var(f"{kind}{len(self.digits)}", e.dtype), size, id(e.a))
        return self.digits[key][0]

    def visit_FloorDiv(self, e: FloorDiv):
        return self._digit(e, "q")

    def visit_FloorMod(self, e: FloorMod):
        return self._digit(e, "r")


def _affine_form(site: _Site, outer_vars: set[int]):
    """`(base, digits, guards)`: the site's index is base + sum(c * d) over digits
    (c, start, extent, loop id), one per enclosing loop (two for a loop used as v // K and
    v % K) and one for the vector lanes; guards are `(terms, K)` with sum(terms) < K from
    enclosing conditions. None when the index is not of that form (non-affine, symbolic loop
    bounds or coefficients, variables bound inside the function)."""
    from ...arith import Analyzer
    from ...arith.affine import affine_coeffs

    if site.index is None:
        return None
    index, lanes = site.index, []
    if isinstance(index, Ramp):
        if not isinstance(index.stride, IntImm):
            return None
        lanes.append((index.stride.value, 0, index.lanes, "lanes"))
        index = index.base
    if index.dtype.lanes != 1:
        return None
    loops = site.loops
    if not all(isinstance(f.min, IntImm) for f in loops):
        return None
    split = _SplitLoopVars({id(f.loop_var): f for f in loops if f.min.value == 0})
    index = split.visit(index)
    guards = [split.visit(g) for g in site.guards]
    variables = [f.loop_var for f in loops] + [v for v, _, _ in split.digits.values()]
    ana = Analyzer()
    found = affine_coeffs(index, variables, ana)
    if found is None:
        return None
    coeffs, base = found
    if not _only_vars(base, outer_vars):
        return None
    split_ks: dict[int, set] = {}
    for kind, var_id, k in split.digits:
        split_ks.setdefault(var_id, set()).add((kind, k))
    if any(len(ks) != 2 or len({k for _, k in ks}) != 1 for ks in split_ks.values()):
        return None  # (v // K, v % K) identifies v only when both appear, with one K
    digits = []
    for f in loops:
        is_split = any(loop == id(f.loop_var) for _, _, loop in split.digits.values())
        if is_split and coeffs[f.loop_var]:
            return None  # v used whole and as v // K or v % K: not one digit per place
        if not is_split:
            digits.append((coeffs[f.loop_var], f.min.value, _extent(f), id(f.loop_var)))
    for v, size, loop in split.digits.values():
        digits.append((coeffs[v], 0, size, loop))
    keys = {id(f.loop_var): id(f.loop_var) for f in loops}
    keys |= {id(v): loop for v, _, loop in split.digits.values()}
    return base, digits + lanes, _guard_terms(guards, variables, keys, ana)


def _extent(loop: For) -> int | None:
    """A loop's constant extent, or None when symbolic (an unbounded digit)."""
    return loop.extent.value if isinstance(loop.extent, IntImm) else None


def _guard_terms(guards: list[PrimExpr], variables: list[Var], keys: dict, ana) -> list:
    """Conditions `affine(digits) < K` as (sorted (coefficient, loop id) terms, K)."""
    from ...arith.affine import affine_coeffs

    out, todo = [], list(guards)
    while todo:
        c = todo.pop()
        if is_call(c, LIKELY):
            todo.append(c.args[0])
        elif isinstance(c, And):
            todo += [c.a, c.b]
        elif isinstance(c, LT) and isinstance(c.b, IntImm):
            found = affine_coeffs(c.a, variables, ana)
            if found is not None and isinstance(found[1], IntImm):
                terms = sorted((k, keys[id(v)]) for v, k in found[0].items() if k)
                out.append((terms, c.b.value - found[1].value))
    return out


def _only_vars(e: PrimExpr, allowed: set[int]) -> bool:
    bad = []
    post_order_visit(
        e, lambda n: bad.append(n) if isinstance(n, Var) and id(n) not in allowed else None
    )
    return not bad


def _mixed_radix(digits: list, guards: list, window: tuple[int, int] = (0, 0)):
    """[lo, hi] of w + sum(c * d), w in `window`, d in [start, start + extent), or None when
    two choices can give the same sum (a digit's step does not clear what is below it).
    An extent of None is unbounded (a symbolic loop): fine for the largest step only.
    A guard `sum(terms) < K` over exactly the digits taken so far caps hi at K - 1."""
    lo, hi = window
    taken: list = []
    for c, start, extent, loop in sorted(digits, key=lambda d: abs(d[0])):
        if extent is not None and extent <= 0:
            return None  # a loop that never runs: nothing to prove, refused to stay simple
        if (extent is None or extent > 1) and abs(c) <= hi - lo:
            return None
        last = math.inf if extent is None else start + extent - 1
        lo += min(c * start, -math.inf if c < 0 and extent is None else c * last)
        hi += max(c * start, c * last if c >= 0 else c * start)
        taken = sorted([*taken, (c, loop)])
        if window == (0, 0):
            hi = min([hi] + [k - 1 for terms, k in guards if terms == taken])
    return lo, hi


__all__ = ["analyze_alias"]
