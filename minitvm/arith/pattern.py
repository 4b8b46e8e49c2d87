"""A tiny pattern language for rewrite rules over TIR expressions.

`x, y = PVar("x"), PVar("y")` match any expression (a name used twice must match equal
expressions); `c1 = PConst("c1")` matches a scalar constant; Python numbers in a pattern match
constants of that value. Operators on patterns build patterns (`x + 0`, `x // c1`, `x < y`);
`min_`, `max_`, `select`, `eq`, `ne`, `truncdiv`, `truncmod`, `and_`, `or_`, `not_` name the rest.
A rule is `Rule(pattern, rewrite, when)`: `rewrite` is a pattern (instantiated with the match)
or a function of the Match; `when` is an optional side condition on the Match.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..ir.structural import structural_equal
from ..tir import expr as tx
from ..tir.expr import PrimExpr, binary, make_const

COMMUTATIVE = (tx.Add, tx.Mul, tx.Min, tx.Max, tx.EQ, tx.NE, tx.And, tx.Or)


def _node(cls: type, arity: int) -> Callable[..., Pattern]:
    """The builder of `cls` patterns from `arity` operands (patterns or Python numbers)."""

    def build(*operands: Any) -> Pattern:
        if len(operands) != arity:
            raise TypeError(f"a {cls.__name__} pattern takes {arity} operands, got {operands}")
        return PNode(cls, tuple(_p(o) for o in operands))

    return build


def _swapped(cls: type) -> Callable[[Pattern, Any], Pattern]:
    """The reflected operator (`1 + x` calls `x.__radd__(1)`): the other operand comes first."""
    build = _node(cls, 2)
    return lambda self, o: build(o, self)


class Pattern:
    """Base of patterns; Python operators build bigger patterns."""

    __add__, __radd__ = _node(tx.Add, 2), _swapped(tx.Add)
    __sub__, __rsub__ = _node(tx.Sub, 2), _swapped(tx.Sub)
    __mul__, __rmul__ = _node(tx.Mul, 2), _swapped(tx.Mul)
    __floordiv__ = _node(tx.FloorDiv, 2)
    __mod__ = _node(tx.FloorMod, 2)
    __lt__ = _node(tx.LT, 2)
    __le__ = _node(tx.LE, 2)
    __gt__ = _node(tx.GT, 2)
    __ge__ = _node(tx.GE, 2)
    __and__ = _node(tx.And, 2)
    __or__ = _node(tx.Or, 2)
    __invert__ = _node(tx.Not, 1)
    __hash__ = object.__hash__


@dataclass(eq=False)
class PVar(Pattern):
    """Matches any expression; the same PVar twice must match structurally equal expressions."""

    name: str


@dataclass(eq=False)
class PConst(Pattern):
    """Matches a scalar IntImm or FloatImm."""

    name: str


@dataclass(eq=False)
class PLit(Pattern):
    """Matches a scalar constant equal to `value` (True/False match bool constants only)."""

    value: int | float | bool


@dataclass(eq=False)
class PNode(Pattern):
    """Matches a node of class `cls` whose operands match `args`."""

    cls: type
    args: tuple


@dataclass(eq=False)
class PCall(Pattern):
    """Matches a Call of the intrinsic `op_name` with operands matching `args`."""

    op_name: str
    args: tuple


def _p(x: Any) -> Pattern:
    return x if isinstance(x, Pattern) else PLit(x)


min_ = _node(tx.Min, 2)
max_ = _node(tx.Max, 2)
eq = _node(tx.EQ, 2)
ne = _node(tx.NE, 2)
truncdiv = _node(tx.Div, 2)
truncmod = _node(tx.Mod, 2)
and_ = _node(tx.And, 2)
or_ = _node(tx.Or, 2)
not_ = _node(tx.Not, 1)
select = _node(tx.Select, 3)
ramp = _node(tx.Ramp, 2)
broadcast = _node(tx.Broadcast, 1)
cast = _node(tx.Cast, 1)  # a Cast to any dtype (side conditions inspect `m.node.dtype`)


def call(op_name: str, *args) -> Pattern:
    return PCall(op_name, tuple(_p(a) for a in args))


# the operand fields of each matchable node class, in pattern order
_OPERANDS: dict[type, tuple[str, ...]] = {
    tx.Select: ("condition", "true_value", "false_value"),
    tx.Not: ("a",),
    tx.Ramp: ("base", "stride"),
    tx.Broadcast: ("value",),
    tx.Cast: ("value",),
}


def operands(e: PrimExpr) -> tuple:
    return tuple(getattr(e, f) for f in _OPERANDS.get(type(e), ("a", "b")))


class Match:
    """The bindings of one successful match: `m.x` is the expression bound to PVar("x")."""

    __slots__ = ("ana", "binds", "node")

    def __init__(self, binds: dict[str, PrimExpr], node: PrimExpr, ana: Any):
        self.binds, self.node, self.ana = binds, node, ana

    def __getattr__(self, name: str) -> Any:
        try:
            return self.binds[name]
        except KeyError:
            raise AttributeError(name) from None


def _is_scalar_const(e: Any) -> bool:
    return isinstance(e, tx.IntImm | tx.FloatImm) and e.dtype.lanes == 1


def _matches(
    p: Pattern, e: PrimExpr, binds: dict[str, PrimExpr], ordered: bool = False
) -> Iterator[dict]:
    """Every way `e` matches `p` extending `binds` (commutative nodes try both operand orders
    unless `ordered`)."""
    if isinstance(p, PVar | PConst):
        if isinstance(p, PConst) and not _is_scalar_const(e):
            return
        bound = binds.get(p.name)
        if bound is None:
            yield {**binds, p.name: e}
        elif bound is e or structural_equal(bound, e):
            yield binds
        return
    if isinstance(p, PLit):
        if _is_scalar_const(e) and (
            e.dtype.is_bool and e.value == int(p.value)
            if isinstance(p.value, bool)
            else not e.dtype.is_bool and e.value == p.value
        ):
            yield binds
        return
    if isinstance(p, PCall):
        same_op = type(e) is tx.Call and isinstance(e.op, tx.Op) and e.op.name == p.op_name
        if same_op and len(e.args) == len(p.args):
            yield from _matches_seq(p.args, e.args, binds, ordered)
        return
    if type(e) is not p.cls:
        return
    args = operands(e)
    yield from _matches_seq(p.args, args, binds, ordered)
    if p.cls in COMMUTATIVE and not ordered:
        yield from _matches_seq(p.args, args[::-1], binds, ordered)


def _matches_seq(
    ps: tuple, es: tuple, binds: dict[str, PrimExpr], ordered: bool = False
) -> Iterator[dict]:
    if not ps:
        yield binds
        return
    for first in _matches(ps[0], es[0], binds, ordered):
        yield from _matches_seq(ps[1:], es[1:], first, ordered)


def instantiate(p: Any, m: Match, top: bool = True) -> Any:
    """Build the expression a rewrite pattern denotes under the bindings of `m`."""
    if isinstance(p, PVar | PConst):
        return m.binds[p.name]
    if isinstance(p, PLit):
        return make_const(m.node.dtype, p.value) if top else p.value
    if isinstance(p, PCall):
        args = tuple(instantiate(a, m, top=False) for a in p.args)
        assert top, "a call inside a rewrite template has no dtype to take"
        return tx.Call(m.node.dtype, p.op_name, args)
    args = [instantiate(a, m, top=False) for a in p.args]
    if p.cls in (tx.Select, tx.Not, tx.Ramp, tx.Broadcast):
        if p.cls is tx.Ramp:
            return tx.Ramp(args[0], args[1], m.node.dtype.lanes)
        if p.cls is tx.Broadcast:
            return tx.Broadcast(args[0], m.node.dtype.lanes)
        return p.cls(*args)
    return binary(p.cls, *args)


@dataclass
class Rule:
    """`pattern → rewrite` when `when(match)`; `rewrite` is a Pattern or a function of the Match
    returning the new expression (or None to decline). An `ordered` rule matches commutative
    nodes in the written operand order only (rules that fix which operand a result keeps)."""

    pattern: Pattern
    rewrite: Pattern | Callable[[Match], PrimExpr | None]
    when: Callable[[Match], bool] | None = None
    ordered: bool = False
    root: type = field(init=False)

    def __post_init__(self):
        if isinstance(self.rewrite, int | float | bool):
            self.rewrite = PLit(self.rewrite)
        self.root = tx.Call if isinstance(self.pattern, PCall) else self.pattern.cls

    def apply(self, e: PrimExpr, ana: Any) -> PrimExpr | None:
        for binds in _matches(self.pattern, e, {}, self.ordered):
            m = Match(binds, e, ana)
            if self.when is not None and not self.when(m):
                continue
            if isinstance(self.rewrite, Pattern):
                return instantiate(self.rewrite, m)
            out = self.rewrite(m)
            if out is not None:
                return out
        return None


class RuleTable:
    """Rules by the node class at their root, in order; `rules_for(e)` leaves out the rules
    that an operand of `e` rules out by its class alone (most of them, on index arithmetic:
    trying each one built a generator per rule and node)."""

    def __init__(self, rules: list[Rule]) -> None:
        by_root: dict[type, list[Rule]] = {}
        for r in rules:
            by_root.setdefault(r.root, []).append(r)
        self.by_root = {cls: tuple(rs) for cls, rs in by_root.items()}
        # (root class, (operand class, operand lanes)...) -> rules; bounded by the classes
        self._by_heads: dict[tuple, tuple[Rule, ...]] = {}

    def rules_for(self, e: PrimExpr) -> tuple[Rule, ...]:
        """The rules that may match at the root of `e`, in table order."""
        cls = type(e)
        rules = self.by_root.get(cls, ())
        if not rules or cls is tx.Call:
            return rules
        heads = tuple((type(a), a.dtype.lanes) for a in operands(e))
        key = (cls, heads)
        hit = self._by_heads.get(key)
        if hit is None:
            hit = tuple(r for r in rules if _heads_may_match(r, cls, heads))
            self._by_heads[key] = hit
        return hit


def _head_may_match(p: Pattern, cls: type, lanes: int) -> bool:
    """False only when no operand of class `cls` with `lanes` matches `p` (what `_matches`
    checks first), so a rule left out for it is one `_matches` would refuse."""
    if isinstance(p, PVar):
        return True
    if isinstance(p, PConst | PLit):
        return cls in (tx.IntImm, tx.FloatImm) and lanes == 1
    return cls is (tx.Call if isinstance(p, PCall) else p.cls)


def _heads_may_match(r: Rule, cls: type, heads: tuple) -> bool:
    """Whether operands with these (class, lanes) heads may match `r`'s in an allowed order."""
    p = r.pattern
    if all(_head_may_match(q, *h) for q, h in zip(p.args, heads)):
        return True
    if r.ordered or cls not in COMMUTATIVE:
        return False
    return all(_head_may_match(q, *h) for q, h in zip(p.args, heads[::-1]))
