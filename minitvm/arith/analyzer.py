"""The Analyzer: variable ranges and facts, and the simplify / prove / bound queries over them."""

from __future__ import annotations

import contextlib
import enum
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from math import gcd
from typing import Any

from ..error import DTypeError, MiniTVMError
from ..ir.dtype import DataType
from ..ir.node import field_names
from ..ir.structural import structural_equal
from ..tir.expr import (
    EQ,
    LE,
    LT,
    NE,
    And,
    BufferLoad,
    Call,
    FloatImm,
    IntImm,
    Not,
    PrimExpr,
    Range,
    Select,
    SizeVar,
    StringImm,
    Sub,
    Var,
    as_expr,
    make_const,
)
from ..tir.functor import deep_recursion, pre_order_visit
from ..tir.names import IF_THEN_ELSE, LIKELY, is_call
from .bound import NEG_INF, POS_INF, ConstBoundCalc, ConstIntBound
from .canonical import Canonical, Poly, is_index_dtype
from .int_set import IntervalSet, IntSetCalc
from .mod_bounds import prove_with_mod_bounds
from .modular_set import ModularSet, modular_set
from .rewrite import rewrite_node

# rewrites tried at one node before giving up, and rewrites per query (never loop forever)
_MAX_NODE_STEPS = 8
_MAX_QUERY_STEPS = 20000
_MAX_ROUNDS = 4
_MAX_PROVE_DEPTH = 3
# an analyzer keeps its memo while its state (ranges, facts) is unchanged, up to this size
_MAX_CACHED_NODES = 100_000


@dataclass
class _Fact:
    cond: PrimExpr
    le0: PrimExpr | None  # an integer expression known to be <= 0, when the fact is linear


class Extension(enum.Flag):
    """TVM's optional simplifier extensions (`Analyzer.enabled_extensions`). minitvm's
    simplifier implements none of them: with any flag set it answers as with NoExtensions
    (every answer stays sound; some proofs TVM finds with an extension are not found)."""

    NoExtensions = 0
    TransitivelyProveInequalities = enum.auto()
    ConvertBooleanToAndOfOrs = enum.auto()
    ApplyConstraintsToBooleanBranches = enum.auto()
    ComparisonOfProductAndSum = enum.auto()


class Analyzer:
    """Simplifies and reasons about integer expressions under variable ranges and constraints.

    >>> ana = Analyzer(); ana.bind(i, tir.Range(0, 32)); ana.can_prove(i < 32)
    True
    """

    def __init__(self) -> None:
        self.enabled_extensions = Extension.NoExtensions  # recorded; see Extension
        self._ranges: dict[int, tuple[Var, Range]] = {}
        self._subst: dict[int, tuple[Var, PrimExpr]] = {}
        self._tight: dict[int, tuple[Var, tuple[int, int]]] = {}
        self._facts: list[_Fact] = []
        self._range_bounds: dict[int, tuple[Var, tuple[int, int]]] = {}
        self._cache: _Caches | None = None  # memo of the current state (see `_rebound`)
        # ids of the vars whose binding some memoised answer read (a superset; emptied only
        # when every memo goes): binding a var outside it cannot change any memoised answer,
        # so a pass that binds each new loop var as it enters the loop keeps its memo
        self._read: set[int] = set()
        self._epoch = 0  # bumped when every memo goes, saved ones in constraint_scope too
        self._session_depth = 0
        self._prove_depth = 0
        self._symbolic_ranges = False

    # --- state ---------------------------------------------------------------------------
    def bind(self, var: Var, value: Range | PrimExpr | int, allow_override: bool = False) -> None:
        """Bind `var` to a Range (its values) or to an expression (substituted when simplifying)."""
        if not isinstance(var, Var):
            raise MiniTVMError(f"Analyzer.bind expects a tir.Var, got {var!r}")
        old = self._ranges.get(id(var)) or self._subst.get(id(var))
        if isinstance(value, Range):
            new: Any = value
        elif isinstance(value, PrimExpr | int):
            new = as_expr(value, like=var.dtype)
        else:
            raise MiniTVMError(
                f"Analyzer.bind({var.name}, ...): expected a tir.Range or an expression, got "
                f"{type(value).__name__}; use tir.Range(lo, hi_exclusive) for a range"
            )
        if old is not None and not allow_override:
            if structural_equal(old[1], new):
                return
            raise MiniTVMError(
                f"Analyzer.bind: variable '{var.name}' is already bound to {old[1]}, now {new}; "
                "pass allow_override=True to rebind it"
            )
        symbolic = self._symbolic_ranges
        self._ranges.pop(id(var), None)
        self._subst.pop(id(var), None)
        if isinstance(new, Range):
            self._ranges[id(var)] = (var, new)
            if not (isinstance(new.min, IntImm) and isinstance(new.extent, IntImm)):
                self._symbolic_ranges = True
        else:
            self._subst[id(var)] = (var, new)
        self._rebound(var, symbolic)

    def update(self, var: Var, bound: ConstIntBound, override: bool = False) -> None:
        """Record constant bounds of `var` (intersected with what is known unless `override`)."""
        if not isinstance(var, Var) or not isinstance(bound, ConstIntBound):
            raise MiniTVMError(
                f"Analyzer.update expects (tir.Var, arith.ConstIntBound), got ({var!r}, {bound!r})"
            )
        lo, hi = bound.min_value, bound.max_value
        if not override and id(var) in self._tight:
            old = self._tight[id(var)][1]
            lo, hi = max(lo, old[0]), min(hi, old[1])
        self._tight = {**self._tight, id(var): (var, (lo, hi))}
        self._forget_all()

    @contextlib.contextmanager
    def constraint_scope(self, cond: PrimExpr) -> Iterator[None]:
        """Assume `cond` holds inside the `with` block."""
        cond = self.simplify(as_expr(cond))
        saved = self._tight, self._facts, self._cache, self._range_bounds
        epoch = self._epoch
        self._tight, self._facts = dict(self._tight), list(self._facts)
        self._changed()
        for c in _conjuncts(cond):
            if not _reads_buffer(c):
                self._add_fact(c)
        self._changed()
        try:
            yield
        finally:
            # the state is back to what it was, and so are the memo tables that describe it,
            # unless a binding they read changed inside the block
            self._tight, self._facts, self._cache, self._range_bounds = saved
            if self._epoch != epoch:
                self._cache, self._range_bounds = None, {}

    @contextlib.contextmanager
    def _bind_scope(self, var: Var, value: Range | PrimExpr) -> Iterator[None]:
        """Bind `var` for the duration of a `with` block (loop vars while simplifying a body)."""
        saved = self._ranges.get(id(var)), self._subst.get(id(var))
        saved_symbolic = self._symbolic_ranges
        self.bind(var, value, allow_override=True)
        try:
            yield
        finally:
            symbolic = self._symbolic_ranges
            self._ranges.pop(id(var), None)
            self._subst.pop(id(var), None)
            if saved[0] is not None:
                self._ranges[id(var)] = saved[0]
            if saved[1] is not None:
                self._subst[id(var)] = saved[1]
            self._symbolic_ranges = saved_symbolic
            self._rebound(var, symbolic)

    def _changed(self) -> None:
        """Drop the memo of the current state (constraint_scope restores the one it saved)."""
        self._cache = None
        self._range_bounds = {}

    def _forget_all(self) -> None:
        """Drop every memo, the ones constraint_scope saved too: a binding they read changed."""
        self._changed()
        self._read = set()
        self._epoch += 1

    def _rebound(self, var: Var, symbolic_before: bool) -> None:
        """`var`'s binding changed: memos go only when one of them read it (or when symbolic
        ranges appeared, which changes how every comparison is decided)."""
        if id(var) in self._read or symbolic_before != self._symbolic_ranges:
            self._forget_all()

    def _subst_of(self, v: Var) -> tuple[Var, PrimExpr] | None:
        """`v`'s substitution, recorded as read (see `_rebound`)."""
        self._read.add(id(v))
        return self._subst.get(id(v))

    def _caches(self) -> _Caches:
        if self._cache is None:
            # the memo tables reach back to the analyzer through a weak proxy: a reference
            # cycle would leave every dropped memo (100,000s of tuples and nodes per build)
            # to the cyclic garbage collector instead of freeing it on the spot
            self._cache = _Caches(weakref.proxy(self))
        return self._cache

    def _session(self) -> _Session:
        """One public query: a fresh rewrite budget, and the memo is capped when it ends."""
        return _Session(self)

    # --- public queries ------------------------------------------------------------------
    def simplify(self, expr: PrimExpr | int, steps: int = _MAX_ROUNDS) -> PrimExpr:
        """Rewrite and canonicalise `expr` until nothing changes (at most `steps` rounds)."""
        e = as_expr(expr)
        if isinstance(e, IntImm | FloatImm | StringImm):
            return e
        with self._session():
            if isinstance(e, Var):
                return self._rewrite(e)  # substitution or a pinned value; nothing else applies
            for _ in range(steps):
                prev = e
                e = self._canonical(self._rewrite(e))
                # the rewrite form (x*(y+1)) and the canonical one (x*y + x) may differ: a
                # round that only rebuilds the same canonical expression is a fixpoint too
                if e is prev or structural_equal(e, prev):
                    e = prev
                    break
            return e

    def rewrite_simplify(self, expr: PrimExpr | int) -> PrimExpr:
        """Apply the rewrite-rule table bottom-up to a fixpoint."""
        with self._session():
            return self._rewrite(as_expr(expr))

    def canonical_simplify(self, expr: PrimExpr | int) -> PrimExpr:
        """Normalise integer sub-expressions to the canonical sum-of-terms form."""
        with self._session():
            return self._canonical(as_expr(expr))

    def can_prove(self, cond: PrimExpr | bool) -> bool:
        """True only when `cond` holds for every value of the bound variables."""
        cond = as_expr(cond)
        with self._session():
            out = self.simplify(cond)
            if isinstance(out, IntImm):
                return out.value != 0
            if self._known_literal(out) is True:
                return True
            if getattr(self, "_in_mod_bounds", False):
                return False
            self._in_mod_bounds = True  # one level: the divisors' own proofs do not recurse
            try:
                return prove_with_mod_bounds(self, out)
            finally:
                self._in_mod_bounds = False

    def can_prove_equal(self, a: PrimExpr | int, b: PrimExpr | int) -> bool:
        """True when `a == b` holds for every value of the bound variables."""
        a, b = as_expr(a), as_expr(b, like=as_expr(a).dtype)
        if is_index_dtype(a.dtype) and a.dtype == b.dtype:
            with self._session():
                diff = self.simplify(Sub(a, b))
                return self._bound_of(diff) == (0, 0)
        return self.can_prove(a == b)

    def const_int_bound(self, expr: PrimExpr | int) -> ConstIntBound:
        """Constant inclusive bounds of `expr` (NEG_INF / POS_INF when unbounded)."""
        with self._session():
            lo, hi = self._bound_of(as_expr(expr))
        return ConstIntBound(lo, hi)

    def modular_set(self, expr: PrimExpr | int) -> ModularSet:
        """Every value of `expr` is `coeff * k + base` (arith/modular_set.py)."""
        with self._session():
            return modular_set(self, expr)

    def int_set(self, expr: PrimExpr | int, dom_map: Mapping | None = None) -> IntervalSet:
        """Symbolic inclusive bounds of `expr` over the bound var ranges and `dom_map`.

        `dom_map` maps Var → Range or IntervalSet and takes precedence over bound ranges.
        """
        e = as_expr(expr)
        dom = {}
        for v, r in (dom_map or {}).items():
            if isinstance(r, Range):
                dom[id(v)] = IntervalSet.from_range(r)
            elif isinstance(r, IntervalSet):
                dom[id(v)] = r
            else:
                raise MiniTVMError(
                    f"Analyzer.int_set: dom_map['{getattr(v, 'name', v)}'] must be a tir.Range "
                    f"or an IntervalSet, got {type(r).__name__}"
                )
        with self._session():
            s = IntSetCalc(self, dom).eval(e)
            lo = None if s.lo is None else self.simplify(s.lo)
            hi = None if s.hi is None else self.simplify(s.hi)
        return IntervalSet(lo, hi, e.dtype)

    # --- the two simplifiers -------------------------------------------------------------
    def _rewrite(self, e: PrimExpr) -> PrimExpr:
        return self._caches().rewriter.visit(e)

    def _canonical(self, e: PrimExpr) -> PrimExpr:
        return self._caches().canon.visit(e)

    def _rebuild(self, e: PrimExpr, fn: Callable[[PrimExpr], PrimExpr]) -> PrimExpr:
        """`e` with `fn` applied to each expression operand; `e` itself when none changed."""
        changes = {}
        cls = type(e)
        for name in field_names(cls):
            if name in cls._def_fields:
                continue
            value = getattr(e, name)
            if isinstance(value, PrimExpr):
                new = fn(value)
            elif isinstance(value, tuple) and value and isinstance(value[0], PrimExpr):
                items = tuple(fn(v) for v in value)
                new = value if all(a is b for a, b in zip(items, value)) else items
            else:
                continue
            if new is not value:
                changes[name] = new
        return e.replace(**changes) if changes else e

    # --- bounds --------------------------------------------------------------------------
    def _bound_of(self, e: PrimExpr) -> tuple[int, int]:
        return self._caches().calc.bound(e)

    def _min_of(self, e: PrimExpr) -> int:
        return self._bound_of(e)[0]

    def _max_of(self, e: PrimExpr) -> int:
        return self._bound_of(e)[1]

    def _is_divisor_positive(self, e: PrimExpr) -> bool:
        """A divisor known to be >= 0 is >= 1: division by zero is undefined, so it never is 0."""
        return self._min_of(e) >= 0

    def _bound_with(self, e: PrimExpr, dom: dict[int, IntervalSet]) -> tuple[int, int]:
        override = {}
        for key, s in dom.items():
            lo = NEG_INF if s.lo is None else self._min_of(s.lo)
            hi = POS_INF if s.hi is None else self._max_of(s.hi)
            override[key] = (lo, hi)
        if not override:
            return self._bound_of(e)
        return ConstBoundCalc(self, override).bound(e)

    @staticmethod
    def _const_interval(lo: int, hi: int, dtype: DataType) -> IntervalSet:
        def const(v: int) -> PrimExpr | None:
            if v in (NEG_INF, POS_INF):
                return None
            try:
                return make_const(dtype, v)
            except DTypeError:
                return None

        return IntervalSet(const(lo), const(hi), dtype)

    def _var_range(self, v: Var) -> Range | None:
        self._read.add(id(v))
        hit = self._ranges.get(id(v))
        return None if hit is None else hit[1]

    def _var_const_bound(self, v: Var) -> tuple[int, int] | None:
        """Bounds of a var from its range or substitution, narrowed by facts; None if unknown."""
        self._read.add(id(v))
        hit = self._range_bounds.get(id(v))
        if hit is not None:
            return hit[1]
        bound = None
        if id(v) in self._subst:
            bound = self._bound_of(self._subst[id(v)][1])
        elif id(v) in self._ranges:
            r = self._ranges[id(v)][1]
            lo = self._min_of(r.min)
            hi = self._max_of(r.min + r.extent - 1)
            bound = (lo, hi)
        elif isinstance(v, SizeVar):
            bound = (0, POS_INF)
        if id(v) in self._tight:
            t = self._tight[id(v)][1]
            base = bound or (NEG_INF, POS_INF)
            bound = (max(base[0], t[0]), min(base[1], t[1]))
        if bound is not None:
            self._range_bounds[id(v)] = (v, bound)
        return bound

    # --- proving ---------------------------------------------------------------------------
    def _decide_le0(self, d: PrimExpr) -> bool | None:
        """True when d <= 0 always, False when d > 0 always, None when unknown."""
        if self._prove_depth >= _MAX_PROVE_DEPTH:
            return None
        self._prove_depth += 1
        try:
            return self._decide_le0_inner(d)
        finally:
            self._prove_depth -= 1

    def _decide_le0_inner(self, d: PrimExpr) -> bool | None:
        d = self._canonical(d)
        lo, hi = self._bound_of(d)
        if hi <= 0:
            return True
        if lo > 0:
            return False
        if self._symbolic_ranges and not isinstance(d, IntImm):
            s = IntSetCalc(self, {}).eval(d)
            if s.hi is not None and self._max_of(self._canonical(s.hi)) <= 0:
                return True
            if s.lo is not None and self._min_of(self._canonical(s.lo)) > 0:
                return False
        one = make_const(d.dtype, 1)
        for fact in self._facts:
            if fact.le0 is None or fact.le0.dtype != d.dtype:
                continue
            if self._max_of(self._canonical(Sub(d, fact.le0))) <= 0:
                return True
            if self._max_of(self._canonical(Sub(Sub(one, d), fact.le0))) <= 0:
                return False
        return None

    def _prove_lt(self, a: PrimExpr, b: PrimExpr) -> bool:
        """a < b for all values (integers)."""
        return self._decide_le0(Sub(a, b) + 1) is True

    def _known_literal(self, cond: PrimExpr) -> bool | None:
        """True/False when `cond` (or its negation) is literally one of the assumed facts."""
        for fact in self._facts:
            if structural_equal(fact.cond, cond):
                return True
            if isinstance(fact.cond, Not) and structural_equal(fact.cond.a, cond):
                return False
            if isinstance(cond, Not) and structural_equal(cond.a, fact.cond):
                return False
        return None

    def _normal_compare(self, node: PrimExpr) -> PrimExpr:
        """`a op b` as `positive terms op negative terms` of the canonical a - b, with the common
        factor of the coefficients divided out (`x*4 < 10` → `x < 3`)."""
        canon = self._caches().canon
        p = canon.poly(Sub(node.a, node.b))
        cls = type(node)
        g = gcd(*(coeff for coeff, _ in p.terms.values()))
        if g > 1:
            k = p.const
            if cls in (EQ, NE) and k % g:
                return make_const(node.dtype, cls is NE)
            # g*s + k <= 0  <=>  s + ceil(k/g) <= 0;  g*s + k < 0  <=>  s + ceil((k+1)/g) - 1 < 0
            const = {LE: _ceil_div(k, g), LT: _ceil_div(k + 1, g) - 1}.get(cls, k // g)
            p = Poly(p.dtype, {key: (c // g, atoms) for key, (c, atoms) in p.terms.items()}, const)
        lhs, rhs = Poly(p.dtype), Poly(p.dtype)
        for key, (coeff, atoms) in p.terms.items():
            (lhs if coeff > 0 else rhs).add_term(key, abs(coeff), atoms)
        # the constant goes to the side without terms (`x <= -1`, `-1 <= x`, `x == 10`); not
        # for 8/16-bit integers, whose sums wrap in the generated code (`a + 1 < 0` with
        # a = 127 is true there, `a < -1` is not), so their constant stays where it was
        if p.dtype.bits < 32:
            (lhs if p.const > 0 else rhs).const = abs(p.const)
        elif not rhs.terms:
            rhs.const = -p.const
        elif not lhs.terms or p.const <= 0:
            lhs.const, rhs.const = (p.const, 0) if not lhs.terms else (0, -p.const)
        else:
            lhs.const = p.const
        if cls in (EQ, NE) and not lhs.terms:
            lhs, rhs = rhs, lhs
        if cls is LT and lhs.terms and rhs.terms and (lhs.const, rhs.const) == (0, 1):
            cls, rhs.const = LE, 0  # x < y + 1 -> x <= y
        return cls(canon.to_expr(lhs), canon.to_expr(rhs))

    def _add_fact(self, c: PrimExpr) -> None:
        les: list[PrimExpr] = []
        if isinstance(c, LT | LE | EQ) and is_index_dtype(c.a.dtype):
            d = Sub(c.a, c.b)
            les = [d + 1] if isinstance(c, LT) else [d]
            if isinstance(c, EQ):
                les.append(Sub(c.b, c.a))
        if not les:
            self._facts.append(_Fact(c, None))
        for le in les:
            le = self._canonical(le)
            self._facts.append(_Fact(c, le))
            self._tighten(le)

    def _tighten(self, le0: PrimExpr) -> None:
        """From `coeff*v + k <= 0` narrow the constant bounds of `v`."""
        p = self._caches().canon.poly(le0)
        if len(p.terms) != 1:
            return
        ((coeff, atoms),) = p.terms.values()
        if len(atoms) != 1 or not isinstance(atoms[0], Var):
            return
        v, k = atoms[0], p.const
        lo, hi = self._tight.get(id(v), (v, (NEG_INF, POS_INF)))[1]
        if coeff > 0:
            hi = min(hi, (-k) // coeff)
        else:
            lo = max(lo, _ceil_div(k, -coeff))
        self._tight[id(v)] = (v, (lo, hi))


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


def _conjuncts(c: PrimExpr) -> list[PrimExpr]:
    out, stack = [], [c]
    while stack:
        x = stack.pop()
        if isinstance(x, And):
            stack += [x.b, x.a]
        elif _is_likely(x):
            stack.append(x.args[0])
        elif not (isinstance(x, IntImm) and x.value == 1):
            out.append(x)
    return out


def _reads_buffer(e: PrimExpr) -> bool:
    """Does `e` load from a buffer? Such a fact stops holding once the buffer is written, which
    the analyzer cannot see, so it is not remembered (as TVM keeps only pure constraints)."""
    found = []

    def look(n: Any) -> bool:
        if isinstance(n, BufferLoad):
            found.append(n)
            return False  # no need to look inside
        return True

    pre_order_visit(e, look)
    return bool(found)


def _is_likely(e: PrimExpr) -> bool:
    return is_call(e, LIKELY)


def _branches(e: PrimExpr) -> tuple[str, str, str] | None:
    """Field names (condition, then, else) of a conditional expression, else None."""
    if isinstance(e, Select):
        return "condition", "true_value", "false_value"
    if is_call(e, IF_THEN_ELSE):
        return "args", "args", "args"
    return None


class _Session:
    """The context of Analyzer._session; a class, not a generator-based context manager: every
    query enters one (~20,000 while lowering a ResNet-18), and a generator costs several more
    calls per entry."""

    __slots__ = ("ana", "deep")

    def __init__(self, ana: Analyzer) -> None:
        self.ana = ana
        self.deep: Any = None

    def __enter__(self) -> None:
        ana = self.ana
        if ana._session_depth == 0:
            if ana._cache is not None:
                ana._cache.rewriter.steps = 0
            self.deep = deep_recursion()  # simplifying a 10,000-term sum recurses 10,000 deep
            self.deep.__enter__()
        ana._session_depth += 1

    def __exit__(self, *exc: object) -> bool:
        ana = self.ana
        try:
            # deep_recursion turns a RecursionError into ExpressionTooDeep (raised from here)
            return bool(self.deep is not None and self.deep.__exit__(*exc))
        finally:
            ana._session_depth -= 1
            cache = ana._cache
            if ana._session_depth == 0 and cache is not None and cache.size() > _MAX_CACHED_NODES:
                ana._forget_all()  # the read-vars record goes too, so it stays bounded


class _Caches:
    """Memo tables valid for one state of an Analyzer."""

    __slots__ = ("calc", "canon", "rewriter")

    def __init__(self, ana: Analyzer):
        self.calc = ConstBoundCalc(ana)
        self.canon = Canonical(ana)
        self.rewriter = _Rewriter(ana)

    def size(self) -> int:
        canon = self.canon
        return (
            len(self.calc.memo)
            + len(canon.memo)
            + len(canon.poly_memo)
            + len(canon.key_memo)
            + len(self.rewriter.memo)
        )


class _Rewriter:
    """Bottom-up application of the rule table; memoised by node identity for one query."""

    def __init__(self, ana: Analyzer):
        self.ana = ana
        self.memo: dict[int, tuple[PrimExpr, PrimExpr]] = {}
        self.steps = 0

    def visit(self, e: PrimExpr) -> PrimExpr:
        hit = self.memo.get(id(e))
        if hit is not None:
            return hit[1]
        out = self._visit(e)
        self.memo[id(e)] = (e, out)
        self.memo.setdefault(id(out), (out, out))
        return out

    def _visit(self, e: PrimExpr) -> PrimExpr:
        if isinstance(e, Var):
            sub = self.ana._subst_of(e)
            if sub is not None:
                return self.visit(sub[1])
            if is_index_dtype(e.dtype):
                lo, hi = self.ana._bound_of(e)
                if lo == hi and lo not in (NEG_INF, POS_INF):  # pinned by its range or facts
                    return make_const(e.dtype, lo)
            return e
        cur = self._visit_conditional(e) if _branches(e) else self.ana._rebuild(e, self.visit)
        for _ in range(_MAX_NODE_STEPS):
            if self.steps >= _MAX_QUERY_STEPS:
                break
            self.steps += 1
            out = rewrite_node(cur, self.ana)
            if out is None or out is cur or structural_equal(out, cur):
                break
            assert out.dtype == cur.dtype, f"rewrite changed dtype: {cur} -> {out}"
            cur = self.ana._rebuild(out, self.visit)
        return cur

    def _visit_conditional(self, e: PrimExpr) -> PrimExpr:
        """Simplify each branch of a select / if_then_else assuming its condition (or not)."""
        is_call = isinstance(e, Call)
        cond, t, f = e.args if is_call else (e.condition, e.true_value, e.false_value)
        cond = self.visit(cond)
        if isinstance(cond, IntImm) or not cond.dtype.is_scalar:
            t, f = self.visit(t), self.visit(f)
        else:
            with self.ana.constraint_scope(cond):
                t = self.ana._rewrite(t)
            with self.ana.constraint_scope(Not(cond)):
                f = self.ana._rewrite(f)
        if is_call:
            same = all(a is b for a, b in zip((cond, t, f), e.args))
            return e if same else e.replace(args=(cond, t, f))
        return e.replace(condition=cond, true_value=t, false_value=f)
