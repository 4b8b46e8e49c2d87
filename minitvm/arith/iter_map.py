"""Iterator maps: recognise index expressions as fused/split loop iterators (TVM's
`detect_iter_map`), check that they are independent, and turn them back into expressions.

An index is rewritten as an `IterSumExpr`: a sum of `IterSplitExpr` digits plus a base free of
the iterators. A digit `IterSplitExpr(mark, lower_factor, extent, scale)` stands for
`floormod(floordiv(mark.source, lower_factor), extent) * scale`; an `IterMark` is an iterator
(an input variable, or a sum of digits fused into a new mixed-radix number) with its extent.
The map is accepted only when every digit of a mark covers its own range of the mark's value
(no two indices read the same part of an iterator), which is what makes the indices
independent. Forms this module cannot prove are reported as failures (empty `indices` and a
message in `errors`), never guessed: that includes predicates, padding and overlapping fuses,
which TVM accepts in some cases.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any

from ..error import ArgumentError
from ..ir.dtype import DataType
from ..ir.node import Node, node, setfield
from ..tir.expr import (
    Add,
    FloorDiv,
    FloorMod,
    IntImm,
    Mul,
    PrimExpr,
    Sub,
    Var,
    as_expr,
    binary,
    make_const,
)
from ..tir.functor import post_order_visit
from .analyzer import Analyzer


class IterMapLevel(enum.IntEnum):
    """How much `detect_iter_map` checks: every input iterator used exactly (Bijective),
    outputs independent (Surjective), or nothing (NoCheck)."""

    Bijective = 0
    Surjective = 1
    NoCheck = 3

    @staticmethod
    def from_str(level: Any) -> IterMapLevel:
        if isinstance(level, IterMapLevel):
            return level
        table = {"bijective": 0, "surjective": 1, "no_check": 3, "nocheck": 3}
        key = str(level).lower()
        if key not in table:
            raise ArgumentError(
                f"detect_iter_map: check_level {level!r} is not one of "
                "'bijective', 'surjective', 'no_check'"
            )
        return IterMapLevel(table[key])


class IterMapExpr(Node):
    """Base of the iterator-map nodes."""

    __slots__ = ()

    def __str__(self) -> str:
        return (
            f"{type(self).__name__}({', '.join(str(getattr(self, f)) for f in self._field_names)})"
        )

    __repr__ = __str__


@node
class IterMark(IterMapExpr):
    """An iterator: `source` (a Var or an IterSumExpr) ranging over [0, extent)."""

    source: Any
    extent: PrimExpr

    def __post_init__(self):
        setfield(self, "extent", as_expr(self.extent, like=_dtype_of(self.source)))


@node
class IterSplitExpr(IterMapExpr):
    """The digit `floormod(floordiv(source, lower_factor), extent) * scale` of a mark."""

    source: IterMark
    lower_factor: PrimExpr = None  # type: ignore[assignment]
    extent: PrimExpr = None  # type: ignore[assignment]
    scale: PrimExpr = None  # type: ignore[assignment]

    def __post_init__(self):
        if not isinstance(self.source, IterMark):
            mark = IterMark(self.source, 1) if self.extent is None else None
            if mark is None:
                raise ArgumentError("IterSplitExpr: source must be an IterMark")
            setfield(self, "source", mark)
        like = self.source.extent.dtype
        lf = 1 if self.lower_factor is None else self.lower_factor
        ext = self.source.extent if self.extent is None else self.extent
        scale = 1 if self.scale is None else self.scale
        setfield(self, "lower_factor", as_expr(lf, like=like))
        setfield(self, "extent", as_expr(ext, like=like))
        setfield(self, "scale", as_expr(scale, like=like))

    @property
    def dtype(self) -> DataType:
        return self.source.extent.dtype


@node
class IterSumExpr(IterMapExpr):
    """`sum(args) + base`; `base` is free of the iterators."""

    args: tuple
    base: PrimExpr

    def __post_init__(self):
        args = tuple(self.args)
        for a in args:
            if not isinstance(a, IterSplitExpr):
                raise ArgumentError(f"IterSumExpr: args must be IterSplitExprs, got {a!r}")
        like = args[0].dtype if args else None
        setfield(self, "args", args)
        setfield(self, "base", as_expr(self.base, like=like))

    @property
    def dtype(self) -> DataType:
        return self.base.dtype


class IterMapResult:
    """What `detect_iter_map` found: `indices` (empty on failure), `errors`, `padding_predicate`."""

    def __init__(self, indices: Sequence[IterSumExpr], errors: Sequence[str], dtype: Any):
        self.indices = list(indices)
        self.errors = list(errors)
        self.padding_predicate = IntImm(DataType("bool"), 0)
        del dtype


def _dtype_of(x: Any) -> DataType | None:
    return getattr(x, "dtype", None)


class _Fail(Exception):
    """This index is not an affine map of the iterators (the message says why)."""


class _Detector:
    def __init__(self, input_iters: Mapping[Var, Any], level: IterMapLevel, trivial: bool):
        self.ana = Analyzer()
        self.level = level
        self.trivial = trivial
        self.dom = dict(input_iters)
        self.marks: dict[int, IterMark] = {}
        self.fused: dict[tuple, IterMark] = {}
        for v, r in self.dom.items():
            self.ana.bind(v, r)

    # --- small arithmetic helpers -----------------------------------------------------------
    def simp(self, e: Any) -> PrimExpr:
        return self.ana.simplify(e)

    def equal(self, a: Any, b: Any) -> bool:
        return self.ana.can_prove_equal(a, b)

    def is_const(self, e: Any, value: int) -> bool:
        e = self.simp(e)
        return isinstance(e, IntImm) and e.value == value

    def divides(self, b: PrimExpr, a: PrimExpr) -> bool:
        """`b` divides `a` for every value of the free variables."""
        return self.quotient(a, b) is not None

    def quotient(self, a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
        """`a / b` when `b` provably divides `a`: by constant folding, or as products of the
        same symbolic factors (`n * n * 32` / `n * n` -> 32), which the simplifier can miss."""
        a, b = self.simp(a), self.simp(b)
        if isinstance(a, IntImm) and a.value == 0:
            return a
        if isinstance(a, IntImm) and isinstance(b, IntImm):
            return (
                make_const(a.dtype, a.value // b.value)
                if b.value and not a.value % b.value
                else None
            )
        ca, fa = _factors(a)
        cb, fb = _factors(b)
        if cb == 0 or ca % cb:
            return None
        rest = list(fa)
        for key, f in fb:
            hit = next((k for k, item in enumerate(rest) if item[0] == key), None)
            if hit is None:
                return None
            rest.pop(hit)
        out: PrimExpr = make_const(a.dtype, ca // cb)
        for _, f in rest:
            out = f if _is_one(out) else out * f
        return self.simp(out)

    def positive(self, e: PrimExpr) -> bool:
        return self.ana.can_prove(self.simp(e) > 0)

    def divisor_ok(self, e: PrimExpr) -> bool:
        """A divisor must be positive; a symbolic size (SizeVar, >= 0) is taken as one, as
        dividing by zero is undefined anyway."""
        return self.positive(e) or self.ana.can_prove(self.simp(e) >= 0)

    # --- expression -> IterSumExpr ----------------------------------------------------------
    def uses_iter(self, e: Any) -> bool:
        found: list = []
        dom = self.dom

        def visit(n: Any) -> None:
            if n in dom if isinstance(n, Var) else False:
                r = dom[n]
                if not (self.trivial and self.is_const(r.extent, 1)):
                    found.append(n)

        post_order_visit(e, visit)
        return bool(found)

    def mark_of(self, v: Var) -> IterMark:
        if id(v) not in self.marks:
            self.marks[id(v)] = IterMark(v, self.dom[v].extent)
        return self.marks[id(v)]

    def to_sum(self, e: Any) -> IterSumExpr:
        e = as_expr(e)
        dtype = e.dtype
        if not self.uses_iter(e):
            if not self.trivial and isinstance(e, Var) and e in self.dom:
                return IterSumExpr((IterSplitExpr(self.mark_of(e)),), self.dom[e].min)
            return IterSumExpr((), self.free_value(e))
        if isinstance(e, Var):
            r = self.dom[e]
            return (
                IterSumExpr((IterSplitExpr(self.mark_of(e)),), r.min)
                if self.is_const(r.min, 0)
                else self.shifted(e, r)
            )
        if isinstance(e, Add | Sub):
            a, b = self.to_sum(e.a), self.to_sum(e.b)
            return self.add(a, b, -1 if isinstance(e, Sub) else 1)
        if isinstance(e, Mul):
            if not self.uses_iter(e.a):
                return self.scaled(self.to_sum(e.b), e.a)
            if not self.uses_iter(e.b):
                return self.scaled(self.to_sum(e.a), e.b)
            raise _Fail(f"{e}: a product of two iterator expressions is not affine")
        if isinstance(e, FloorDiv | FloorMod):
            if self.uses_iter(e.b):
                raise _Fail(f"{e}: the divisor depends on an iterator")
            return self.divmod(self.to_sum(e.a), self.simp(e.b), isinstance(e, FloorDiv), dtype)
        raise _Fail(f"{e}: {type(e).__name__} of an iterator is not an affine form")

    def free_value(self, e: PrimExpr) -> PrimExpr:
        """An iterator-free expression, kept as written; a trivial iterator (extent 1) standing
        alone becomes its start value."""
        if self.trivial and isinstance(e, Var) and e in self.dom:
            return self.dom[e].min
        return e

    def shifted(self, v: Var, r: Any) -> IterSumExpr:
        mark = IterMark(self.simp(v - r.min), r.extent)
        self.marks[id(v)] = mark
        return IterSumExpr((IterSplitExpr(mark),), r.min)

    def add(self, a: IterSumExpr, b: IterSumExpr, sign: int) -> IterSumExpr:
        args = list(a.args)
        for s in b.args:
            scale = s.scale if sign > 0 else self.simp(-s.scale)
            for k, t in enumerate(args):
                if (
                    t.source is s.source
                    and self.equal(t.lower_factor, s.lower_factor)
                    and self.equal(t.extent, s.extent)
                ):
                    args[k] = t.replace(scale=self.simp(t.scale + scale))
                    break
            else:
                args.append(s.replace(scale=scale))
        args = [t for t in args if not self.is_const(t.scale, 0)]
        base = self.simp(a.base + b.base if sign > 0 else a.base - b.base)
        return IterSumExpr(tuple(args), base)

    def scaled(self, a: IterSumExpr, factor: PrimExpr) -> IterSumExpr:
        factor = self.free_value(factor)
        args = tuple(t.replace(scale=self.simp(t.scale * factor)) for t in a.args)
        return IterSumExpr(
            tuple(t for t in args if not self.is_const(t.scale, 0)), self.simp(a.base * factor)
        )

    def divmod(self, a: IterSumExpr, c: PrimExpr, is_div: bool, dtype: DataType) -> IterSumExpr:
        what = "floordiv" if is_div else "floormod"
        if not self.divisor_ok(c):
            raise _Fail(f"{what} by {c}: the divisor must be provably positive")
        split = self.fuse(a)
        base = a.base
        if not self.divides(c, base):
            raise _Fail(f"{what} by {c}: the offset {base} is not a multiple of it")
        zero = make_const(dtype, 0)
        if split is None:
            value = self.simp(binary(FloorDiv if is_div else FloorMod, base, c))
            return IterSumExpr((), value)
        s = split.scale
        if self.divides(c, s):  # the digit moves whole: (x*6)//3 = x*2, (x*6)%3 = 0
            if not is_div:
                return IterSumExpr((), zero)
            return IterSumExpr(
                (split.replace(scale=self.quotient(s, c)),), self.simp(binary(FloorDiv, base, c))
            )
        if not self.divides(s, c):
            raise _Fail(f"{what} by {c}: it does not divide, nor is divided by, the scale {s}")
        d = self.quotient(c, s)
        if not self.divides(d, split.extent):
            raise _Fail(f"{what} by {c}: the iterator's extent {split.extent} is not a multiple")
        if is_div:
            out = split.replace(
                lower_factor=self.simp(split.lower_factor * d),
                extent=self.quotient(split.extent, d),
                scale=make_const(dtype, 1),
            )
            if self.is_const(out.extent, 1) and not self.is_const(split.source.extent, 1):
                out = None  # x // 128 with x < 128: always 0
            args = () if out is None else (out,)
            return IterSumExpr(args, self.simp(binary(FloorDiv, base, c)))
        return IterSumExpr((split.replace(extent=d),), zero)

    # --- fusing a sum of digits into one digit ----------------------------------------------
    def fuse(self, a: IterSumExpr) -> IterSplitExpr | None:
        """One digit equal to `sum(a.args)`, or None when there are none."""
        if not a.args:
            return None
        if len(a.args) == 1:
            return a.args[0]
        for first in a.args:
            chain = self.chain_from(first, a.args)
            if chain is not None:
                return self.fused_digit(chain, a.args)
        raise _Fail(f"{a}: the scales and extents do not form one fused iterator")

    def chain_from(self, first: IterSplitExpr, args: Sequence[IterSplitExpr]) -> list | None:
        if not self.divisor_ok(first.scale):
            return None
        chain, rest = [first], [t for t in args if t is not first]
        while rest:
            last = chain[-1]
            want = self.simp(last.scale * last.extent)
            nxt = next((t for t in rest if self.equal(t.scale, want)), None)
            if nxt is None:
                return None
            chain.append(nxt)
            rest.remove(nxt)
        return chain

    def fused_digit(self, chain: list[IterSplitExpr], args: tuple) -> IterSplitExpr:
        base_scale = chain[0].scale
        merged: list[IterSplitExpr] = []
        for t in chain:  # adjacent digits of one mark become one digit: x//3*3 + x%3 -> x
            prev = merged[-1] if merged else None
            if (
                prev is not None
                and prev.source is t.source
                and self.equal(self.simp(prev.lower_factor * prev.extent), t.lower_factor)
            ):
                merged[-1] = prev.replace(extent=self.simp(prev.extent * t.extent))
            else:
                merged.append(t)
        if len(merged) == 1:
            return merged[0].replace(scale=base_scale)
        extent = make_const(base_scale.dtype, 1)
        for t in merged:
            extent = self.simp(extent * t.extent)
        # largest scale first; among equal scales (extent-1 iterators beside another) the
        # iterator with a real extent comes first, then the rest in the written order (TVM's)
        pos = {id(t): k for k, t in enumerate(args)}
        groups: list[list[IterSplitExpr]] = []
        for t in merged:
            if groups and self.equal(groups[-1][0].scale, t.scale):
                groups[-1].append(t)
            else:
                groups.append([t])
        ordered = [
            t
            for g in reversed(groups)
            for t in sorted(g, key=lambda t: (self.is_const(t.extent, 1), pos.get(id(t), -1)))
        ]
        inner = tuple(t.replace(scale=self.quotient(t.scale, base_scale)) for t in ordered)
        key = tuple((id(t.source), str(t.lower_factor), str(t.extent), str(t.scale)) for t in inner)
        if key not in self.fused:
            self.fused[key] = IterMark(IterSumExpr(inner, make_const(base_scale.dtype, 0)), extent)
        return IterSplitExpr(self.fused[key], 1, extent, base_scale)

    # --- independence checks ----------------------------------------------------------------
    def check(self, results: list[IterSumExpr]) -> None:
        uses: dict[int, list[IterSplitExpr]] = {}
        marks: dict[int, IterMark] = {}
        todo = [t for r in results for t in r.args]
        seen_marks: set[int] = set()
        while todo:
            t = todo.pop()
            uses.setdefault(id(t.source), []).append(t)
            marks[id(t.source)] = t.source
            if id(t.source) not in seen_marks:
                seen_marks.add(id(t.source))
                if isinstance(t.source.source, IterSumExpr):
                    todo.extend(t.source.source.args)
        for key, splits in uses.items():
            self.check_mark(marks[key], splits)
        if self.level == IterMapLevel.Bijective:
            for v, r in self.dom.items():
                used = id(v) in self.marks and id(self.marks[id(v)]) in uses
                if not used and not self.is_const(r.extent, 1):
                    raise _Fail(f"iterator {v.name} is not used (bijective map required)")

    def check_mark(self, mark: IterMark, splits: list[IterSplitExpr]) -> None:
        expected = make_const(mark.extent.dtype, 1)
        rest = list(splits)
        while rest:
            nxt = next((t for t in rest if self.equal(t.lower_factor, expected)), None)
            if nxt is None and self.level != IterMapLevel.Bijective:
                later = [t for t in rest if self.divides(expected, t.lower_factor)]
                consts = [t for t in later if isinstance(self.simp(t.lower_factor), IntImm)]
                if consts:
                    nxt = min(consts, key=lambda t: self.simp(t.lower_factor).value)
                elif len(later) == 1:
                    nxt = later[0]
            if nxt is None:
                raise _Fail(f"iterator {mark.source} is used by overlapping or strided parts")
            rest.remove(nxt)
            expected = self.simp(nxt.lower_factor * nxt.extent)
        if self.level == IterMapLevel.Bijective and not self.equal(expected, mark.extent):
            raise _Fail(f"iterator {mark.source} is not fully covered (bijective map required)")
        if not (self.equal(expected, mark.extent) or self.divides(expected, mark.extent)):
            raise _Fail(f"iterator {mark.source}: its parts do not tile its extent {mark.extent}")


def _predicate_is_true(predicate: Any) -> bool:
    if predicate is True:
        return True
    return isinstance(predicate, IntImm) and predicate.value != 0


def detect_iter_map(
    indices: Sequence[Any],
    input_iters: Mapping[Var, Any],
    predicate: Any = True,
    check_level: Any = IterMapLevel.Surjective,
    simplify_trivial_iterators: bool = True,
) -> IterMapResult:
    """Each index as an `IterSumExpr` of at most one fused digit, when the indices are
    independent affine maps of `input_iters` ({Var: Range}); otherwise empty `indices`.

    >>> detect_iter_map([x // 4, x % 4], {x: Range(0, 16)}).indices   # two digits of x
    """
    level = IterMapLevel.from_str(check_level)
    if not _predicate_is_true(predicate):
        return IterMapResult([], [f"minitvm: predicates are not supported yet ({predicate})"], None)
    det = _Detector(input_iters, level, simplify_trivial_iterators)
    out = []
    try:
        for e in indices:
            s = det.to_sum(e)
            digit = det.fuse(s)
            out.append(IterSumExpr(() if digit is None else (digit,), s.base))
        if level != IterMapLevel.NoCheck:
            det.check(out)
    except _Fail as err:
        return IterMapResult([], [str(err)], None)
    return IterMapResult(out, [], None)


def normalize_iter_map_to_expr(expr: Any) -> PrimExpr:
    """The plain TIR expression an iterator-map node stands for."""
    if isinstance(expr, IterSumExpr):
        out = None
        for t in expr.args:
            term = normalize_iter_map_to_expr(t)
            out = term if out is None else out + term
        if out is None:
            return expr.base
        if not (isinstance(expr.base, IntImm) and expr.base.value == 0):
            out = out + expr.base
        return out
    if isinstance(expr, IterSplitExpr):
        ana = Analyzer()
        mark = expr.source
        src = mark.source
        src = normalize_iter_map_to_expr(src) if isinstance(src, IterMapExpr) else src
        top = ana.simplify(expr.lower_factor * expr.extent)
        whole = ana.can_prove_equal(top, mark.extent)
        if not _is_one(expr.lower_factor):
            src = binary(FloorDiv, src, expr.lower_factor)
        if not whole:
            src = binary(FloorMod, src, expr.extent)
        if not _is_one(expr.scale):
            src = src * expr.scale
        return src
    if isinstance(expr, IterMark):
        return normalize_iter_map_to_expr(IterSplitExpr(expr))
    return as_expr(expr)


def _factors(e: PrimExpr) -> tuple[int, list[tuple[str, PrimExpr]]]:
    """`e` as constant * product of factors, each keyed by its printed form."""
    if isinstance(e, IntImm):
        return e.value, []
    if isinstance(e, Mul):
        ca, fa = _factors(e.a)
        cb, fb = _factors(e.b)
        return ca * cb, fa + fb
    return 1, [(str(e), e)]


def _is_one(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 1


def iter_map_simplify(
    indices: Sequence[Any],
    input_iters: Mapping[Var, Any],
    predicate: Any = True,
    check_level: Any = IterMapLevel.Surjective,
    simplify_trivial_iterators: bool = True,
) -> list[PrimExpr]:
    """`indices` rewritten through `detect_iter_map` (`x // 4 * 4 + x % 4` -> `x`); unchanged
    when they are not an iterator map."""
    res = detect_iter_map(indices, input_iters, predicate, check_level, simplify_trivial_iterators)
    if not res.indices:
        return [as_expr(e) for e in indices]
    return [normalize_iter_map_to_expr(s) for s in res.indices]


__all__ = [
    "IterMapExpr",
    "IterMapLevel",
    "IterMapResult",
    "IterMark",
    "IterSplitExpr",
    "IterSumExpr",
    "detect_iter_map",
    "iter_map_simplify",
    "normalize_iter_map_to_expr",
]
