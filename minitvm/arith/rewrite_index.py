"""Index-arithmetic rules of the rewrite simplifier (add, sub, mul, min, max, floordiv, floormod).

These rules give `rewrite_simplify` TVM's result forms (`min(x, y) - x` -> `min(0, y - x)`), so
they match in the written operand order only (`ordered`): the order decides which operand a
result keeps. Each applies to a scalar int32/int64 node whose operands share its dtype.
`tests/arith/test_rewrite_rules_h9.py` instantiates every rule here with random values and checks
the two sides agree with exact integer semantics.
"""

from __future__ import annotations

from collections.abc import Callable

from ..tir import expr as tx
from ..tir.expr import PrimExpr, binary, make_const
from .bound import NEG_INF, POS_INF
from .canonical import is_index_dtype
from .pattern import Match, PConst, PVar, Rule, eq, max_, min_, or_, select, truncdiv, truncmod

x, y, z, w = PVar("x"), PVar("y"), PVar("z"), PVar("w")
s1, s2 = PVar("s1"), PVar("s2")
c1, c2, c3 = PConst("c1"), PConst("c2"), PConst("c3")


def _index(m: Match) -> bool:
    """A scalar index node whose bound operands all have its dtype (no mixed-width IR; a
    select's condition is bool)."""
    dtype = m.node.dtype
    if not (is_index_dtype(dtype) and dtype.lanes == 1):
        return False
    return all(b.dtype == dtype or b.dtype.is_bool for b in m.binds.values())


def _v(m: Match, name: str) -> int:
    return m.binds[name].value


def _rule(pattern, rewrite, cond: Callable[[Match], bool] | None = None) -> Rule:
    when = _index if cond is None else (lambda m: _index(m) and cond(m))
    return Rule(pattern, rewrite, when, ordered=True)


def _one_of(patterns, rewrite, cond=None) -> list[Rule]:
    return [_rule(p, rewrite, cond) for p in patterns]


def _neg(a: str, b: str):
    return lambda m: _v(m, a) == -_v(m, b)


def _nonzero(name: str):
    return lambda m: _v(m, name) != 0


def _positive(name: str):
    return lambda m: _v(m, name) > 0


def _c3_is_c1_c2(m: Match) -> bool:
    return _v(m, "c1") != 0 and _v(m, "c3") == _v(m, "c1") * _v(m, "c2")


def _ge(name: str, k: Callable[[Match], int] | int):
    """The analyzer proves binds[name] >= k."""
    return lambda m: m.ana._min_of(m.binds[name]) >= (k(m) if callable(k) else k)


def _const_of(m: Match, value: int) -> PrimExpr:
    return make_const(m.node.dtype, value)


def _is_zero(m: Match, e: PrimExpr) -> bool:
    """The bounds of canonical `e` pin it to 0 (a rule must not start a nested simplify: it
    would spend the rewriter's step budget)."""
    return m.ana._bound_of(m.ana._canonical(e)) == (0, 0)


def _negatable(name: str):
    """-binds[name] fits the node's dtype (it does not for the most negative value)."""
    return lambda m: -_v(m, name) < 2 ** (m.node.dtype.bits - 1)


def _not_const(name: str):
    return lambda m: not isinstance(m.binds[name], tx.IntImm)


def _not_minmax(name: str):
    return lambda m: not isinstance(m.binds[name], tx.Min | tx.Max)


# --- add ---------------------------------------------------------------------------------------
ADD = [
    _rule((x - y) + y, x),  # (x-y)+y -> x
    _rule((x - y) + (y - z), x - z),  # (x-y)+(y-z) -> x-z
    _rule((x - y) + (z - x), z - y),  # (x-y)+(z-x) -> z-y
    _rule(min_(x, y - z) + z, min_(x + z, y)),  # min(x,y-z)+z -> min(x+z,y)
    _rule(min_(x - z, y) + z, min_(x, y + z)),  # min(x-z,y)+z -> min(x,y+z)
    _rule(max_(x, y - z) + z, max_(x + z, y)),  # max(x,y-z)+z -> max(x+z,y)
    _rule(max_(x - z, y) + z, max_(x, y + z)),  # max(x-z,y)+z -> max(x,y+z)
    _rule(min_(x, y + z * c1) + z * c2, min_(x + z * c2, y), _neg("c1", "c2")),
    _rule(max_(x, y + z * c1) + z * c2, max_(x + z * c2, y), _neg("c1", "c2")),
    _rule(min_(y + z * c1, x) + z * c2, min_(x + z * c2, y), _neg("c1", "c2")),
    _rule(max_(y + z * c1, x) + z * c2, max_(x + z * c2, y), _neg("c1", "c2")),
    *_one_of(  # max(x,y)+min(x,y) -> x+y
        (max_(x, y) + min_(x, y), min_(x, y) + max_(x, y)),
        x + y,
    ),
    *_one_of((max_(x, y) + min_(y, x), min_(x, y) + max_(y, x)), x + y),
    _rule(min_(x, y + c1) + c2, min_(x + c2, y), _neg("c1", "c2")),  # min(x,y+c)-c -> min(x-c,y)
    _rule(min_(x + c1, y) + c2, min_(x, y + c2), _neg("c1", "c2")),  # min(x+c,y)-c -> min(x,y-c)
    _rule(max_(x, y + c1) + c2, max_(x + c2, y), _neg("c1", "c2")),  # max(x,y+c)-c -> max(x-c,y)
    _rule(max_(x + c1, y) + c2, max_(x, y + c2), _neg("c1", "c2")),  # max(x+c,y)-c -> max(x,y-c)
    _rule(x + x, x * 2),  # x+x -> x*2
    *_one_of(  # x*y+x -> x*(y+1)
        (x * y + x, y * x + x, x + y * x, x + x * y), x * (y + 1), _not_const("x")
    ),
    *_one_of(  # x*y+x*z -> x*(y+z)
        (x * y + x * z, y * x + x * z, x * y + z * x, y * x + z * x), x * (y + z)
    ),
    _rule(truncdiv(x, c1) * c1 + truncmod(x, c1), x),  # x/c*c + x%c -> x
    *_one_of(  # x//y*y + x%y -> x
        (x // y * y + x % y, y * (x // y) + x % y, x % y + x // y * y, x % y + y * (x // y)), x
    ),
    _rule((x % c2 + c1) // c2 + x // c2, (x + c1) // c2, _positive("c2")),
    _rule(x // 2 + x % 2, (x + 1) // 2),  # x//2 + x%2 -> (x+1)//2
    _rule((x + c1) % 2 + x % 2, 1, lambda m: _v(m, "c1") % 2 == 1),  # (x+1)%2 + x%2 -> 1
    _rule(x % 2 + (x + c1) % 2, 1, lambda m: _v(m, "c1") % 2 == 1),
    # canonical order: constants last, min/max first, x*c before a remainder
    *_one_of((x + (c1 - y), (c1 - y) + x), (x - y) + c1),  # x+(c-y) -> (x-y)+c
    *_one_of(  # (x+c)+y -> (x+y)+c
        ((x + c1) + y, x + (c1 + y), x + (y + c1)), (x + y) + c1, _not_const("y")
    ),
    _rule(x + max_(y, z), max_(y, z) + x, _not_minmax("x")),  # x+max(y,z) -> max(y,z)+x
    _rule(x + min_(y, z), min_(y, z) + x, _not_minmax("x")),  # x+min(y,z) -> min(y,z)+x
    _rule(select(x, y, z) + select(x, s1, s2), select(x, y + s1, z + s2)),
    _rule(truncmod(y, c1) + x * c1, x * c1 + truncmod(y, c1)),  # y%c + x*c -> x*c + y%c
    _rule(y % c1 + x * c1, x * c1 + y % c1),  # floormod(y,c) + x*c -> x*c + floormod(y,c)
]

# --- sub ---------------------------------------------------------------------------------------
SUB = [
    _rule((y + x) - y, x),  # (y+x)-y -> x
    *_one_of((x - (y + x), x - (x + y)), 0 - y),  # x-(y+x) -> 0-y
    *_one_of((min_(x, y) - y, x - max_(y, x)), min_(x - y, 0)),  # min(x,y)-y -> min(x-y,0)
    *_one_of((x - max_(x, y), min_(y, x) - y), min_(0, x - y)),  # x-max(x,y) -> min(0,x-y)
    *_one_of((max_(x, y) - y, x - min_(y, x)), max_(x - y, 0)),  # max(x,y)-y -> max(x-y,0)
    *_one_of((x - min_(x, y), max_(y, x) - y), max_(0, x - y)),  # x-min(x,y) -> max(0,x-y)
    *_one_of((x * y - x, y * x - x), x * (y - 1), _not_const("x")),  # x*y-x -> x*(y-1)
    *_one_of((x - y * x, x - x * y), x * (1 - y), _not_const("x")),  # x-x*y -> x*(1-y)
    *_one_of(  # x*y-x*z -> x*(y-z)
        (x * y - x * z, y * x - x * z, x * y - z * x, y * x - z * x), x * (y - z)
    ),
    _rule((x + c1) - c2, x + (c1 - c2)),  # (x+c1)-c2 -> x+(c1-c2)
    _rule((c1 - x) - (c2 - y), (y - x) + (c1 - c2)),  # (c1-x)-(c2-y) -> (y-x)+(c1-c2)
    *_one_of(  # (x+y)-(x+z) -> y-z
        ((x + y) - (x + z), (x + y) - (z + x), (y + x) - (z + x), (y + x) - (x + z)), y - z
    ),
    *_one_of((min_(x + y, z) - x, min_(y + x, z) - x), min_(y, z - x)),
    *_one_of((min_(z, x + y) - x, min_(z, y + x) - x), min_(z - x, y)),
    *_one_of((max_(x + y, z) - x, max_(y + x, z) - x), max_(y, z - x)),
    *_one_of((max_(z, x + y) - x, max_(z, y + x) - x), max_(z - x, y)),
    *_one_of((x - min_(x + y, z), x - min_(y + x, z)), max_(0 - y, x - z)),
    *_one_of((x - min_(z, x + y), x - min_(z, y + x)), max_(x - z, 0 - y)),
    *_one_of((x - max_(x + y, z), x - max_(y + x, z)), min_(0 - y, x - z)),
    *_one_of((x - max_(z, x + y), x - max_(z, y + x)), min_(x - z, 0 - y)),
    _rule(min_(x, y) - min_(y, x), 0),  # min(x,y)-min(y,x) -> 0
    _rule(max_(x, y) - max_(y, x), 0),  # max(x,y)-max(y,x) -> 0
    # min(b1,b2)-min(s1,s2) -> b1-s1 when b1-s1 == b2-s2
    *_one_of(
        (min_(x, y) - min_(s1, s2), max_(x, y) - max_(s1, s2)),
        x - s1,
        lambda m: _is_zero(m, binary(tx.Sub, binary(tx.Sub, m.x, m.s1), binary(tx.Sub, m.y, m.s2))),
    ),
    *_one_of(
        (min_(x, y) - min_(s2, s1), max_(x, y) - max_(s2, s1)),
        x - s1,
        lambda m: _is_zero(m, binary(tx.Sub, binary(tx.Sub, m.x, m.s1), binary(tx.Sub, m.y, m.s2))),
    ),
    # x - x/c*c -> x%c, for truncating and floor division alike
    _rule(x - truncdiv(x, c1) * c1, truncmod(x, c1), _nonzero("c1")),
    _rule(truncdiv(x, c1) * c1 - x, 0 - truncmod(x, c1), _nonzero("c1")),
    _rule(x - truncdiv(x + y, c1) * c1, truncmod(x + y, c1) - y, _nonzero("c1")),
    _rule(truncdiv(x + y, c1) * c1 - x, y - truncmod(x + y, c1), _nonzero("c1")),
    _rule(x - truncdiv(x - y, c1) * c1, truncmod(x - y, c1) + y, _nonzero("c1")),
    _rule(truncdiv(x - y, c1) * c1 - x, 0 - truncmod(x - y, c1) - y, _nonzero("c1")),
    _rule(x * c2 - truncdiv(x, c1) * c3, truncmod(x, c1) * c2, _c3_is_c1_c2),
    _rule(truncdiv(x, c1) * c3 - x * c2, 0 - truncmod(x, c1) * c2, _c3_is_c1_c2),
    _rule(x * c2 - truncdiv(x + y, c1) * c3, (truncmod(x + y, c1) - y) * c2, _c3_is_c1_c2),
    _rule(truncdiv(x + y, c1) * c3 - x * c2, (y - truncmod(x + y, c1)) * c2, _c3_is_c1_c2),
    _rule(x * c2 - truncdiv(x - y, c1) * c3, (truncmod(x - y, c1) + y) * c2, _c3_is_c1_c2),
    _rule(truncdiv(x - y, c1) * c3 - x * c2, (0 - truncmod(x - y, c1) - y) * c2, _c3_is_c1_c2),
    _rule(x - x // c1 * c1, x % c1, _nonzero("c1")),  # x - x//c*c -> x%c
    _rule(x // c1 * c1 - x, 0 - x % c1, _nonzero("c1")),
    _rule(x - (x + y) // c1 * c1, (x + y) % c1 - y, _nonzero("c1")),
    _rule((x + y) // c1 * c1 - x, y - (x + y) % c1, _nonzero("c1")),
    _rule(x - (x - y) // c1 * c1, (x - y) % c1 + y, _nonzero("c1")),
    _rule((x - y) // c1 * c1 - x, 0 - (x - y) % c1 - y, _nonzero("c1")),
    _rule(x * c2 - x // c1 * c3, x % c1 * c2, _c3_is_c1_c2),
    _rule(x // c1 * c3 - x * c2, 0 - x % c1 * c2, _c3_is_c1_c2),
    _rule(x * c2 - (x + y) // c1 * c3, ((x + y) % c1 - y) * c2, _c3_is_c1_c2),
    _rule((x + y) // c1 * c3 - x * c2, (y - (x + y) % c1) * c2, _c3_is_c1_c2),
    _rule(x * c2 - (x - y) // c1 * c3, ((x - y) % c1 + y) * c2, _c3_is_c1_c2),
    _rule((x - y) // c1 * c3 - x * c2, (0 - (x - y) % c1 - y) * c2, _c3_is_c1_c2),
    # (x+c1)/c3 - (x+c2)/c3 with truncation: x+c2 >= 0 so it is floor division
    _rule(
        truncdiv(x + c1, c3) - truncdiv(x + c2, c3),
        lambda m: binary(
            tx.Div,
            binary(
                tx.Add,
                binary(tx.Mod, m.x + (_v(m, "c2") % _v(m, "c3")), m.c3),
                _v(m, "c1") - _v(m, "c2"),
            ),
            m.c3,
        ),
        # x + c2%c3 >= 0 too (TVM asks only x + c2 >= 0, which leaves the truncmod negative
        # for x = -3, c2 = 6, c3 = 4: (x+12)/4 - (x+6)/4 is 2, the rewrite gave 1)
        lambda m: (
            _v(m, "c3") > 0
            and _v(m, "c1") >= _v(m, "c2")
            and _ge("x", -_v(m, "c2"))(m)
            and _ge("x", -(_v(m, "c2") % _v(m, "c3")))(m)
        ),
    ),
    _rule(
        truncdiv(x + c1, c3) - truncdiv(x, c3),
        truncdiv(truncmod(x, c3) + c1, c3),
        lambda m: _v(m, "c3") > 0 and _v(m, "c1") >= 0 and _ge("x", 0)(m),
    ),
    _rule((x + 1) // 2 - x % 2, x // 2),  # (x+1)//2 - x%2 -> x//2
    # (x+c1)//2 - (x+c2)//2 -> x%2*(c1%2 - c2%2) + (c1//2 - c2//2)
    _rule(
        (x + c1) // 2 - (x + c2) // 2,
        lambda m: binary(
            tx.Add,
            binary(tx.Mul, m.x % 2, _v(m, "c1") % 2 - _v(m, "c2") % 2),
            _v(m, "c1") // 2 - _v(m, "c2") // 2,
        ),
    ),
    _rule(
        x // 2 - (x + c2) // 2,
        lambda m: binary(tx.Sub, binary(tx.Mul, m.x % 2, -(_v(m, "c2") % 2)), _v(m, "c2") // 2),
    ),
    _rule(
        (x + c1) // 2 - x // 2,
        lambda m: binary(tx.Add, binary(tx.Mul, m.x % 2, _v(m, "c1") % 2), _v(m, "c1") // 2),
    ),
    _rule(
        (x + c1) // c3 - (x + c2) // c3,
        lambda m: binary(
            tx.FloorDiv,
            binary(tx.Add, (m.x + (_v(m, "c2") % _v(m, "c3"))) % m.c3, _v(m, "c1") - _v(m, "c2")),
            m.c3,
        ),
        _positive("c3"),
    ),
    _rule((x + c1) // c3 - x // c3, (x % c3 + c1) // c3, _positive("c3")),
    # canonical order: constants last, no subtraction of a product by a constant
    _rule(x - c1, lambda m: binary(tx.Add, m.x, -_v(m, "c1")), _negatable("c1")),  # x-c -> x+(-c)
    _rule((x + c1) - y, (x - y) + c1),  # (x+c)-y -> (x-y)+c
    _rule(x - (y + c1), lambda m: binary(tx.Add, m.x - m.y, -_v(m, "c1")), _negatable("c1")),
    _rule(x - (y - z), (x + z) - y),  # x-(y-z) -> (x+z)-y
    _rule(x - y * c1, lambda m: binary(tx.Add, m.x, m.y * -_v(m, "c1")), _negatable("c1")),
    _rule(select(x, y, z) - select(x, s1, s2), select(x, y - s1, z - s2)),
    _rule(select(x, y, z) - z, select(x, y - z, 0)),  # select(c,y,z)-z -> select(c,y-z,0)
    _rule(select(x, y, z) - y, select(x, 0, z - y)),  # select(c,y,z)-y -> select(c,0,z-y)
]


# --- comparisons of index expressions ---------------------------------------------------------
def _index_cmp(cond: Callable[[Match], bool] | None = None):
    def when(m: Match) -> bool:
        dtype = m.node.a.dtype
        if not (is_index_dtype(dtype) and dtype.lanes == 1):
            return False
        if not all(b.dtype == dtype for b in m.binds.values()):
            return False
        return cond is None or cond(m)

    return when


def _cmp_const(m: Match, cls: type, a, b) -> PrimExpr | None:
    """`a cls b` where one side is a Python int, or None when that int leaves the dtype."""
    k = a if isinstance(a, int) else b
    limit = 2 ** (m.node.a.dtype.bits - 1)
    return binary(cls, a, b) if -limit <= k < limit else None


def _cmp(pattern, rewrite, cond=None) -> Rule:
    return Rule(pattern, rewrite, _index_cmp(cond), ordered=True)


CMP = [
    _cmp(  # x*y == 0 -> x == 0 || y == 0
        eq(x * y, 0), or_(eq(x, 0), eq(y, 0)), lambda m: _not_const("x")(m) and _not_const("y")(m)
    ),
    _cmp(  # x//c1 <= c2 -> x <= (c2+1)*c1 - 1
        x // c1 <= c2,
        lambda m: _cmp_const(m, tx.LE, m.x, (_v(m, "c2") + 1) * _v(m, "c1") - 1),
        _positive("c1"),
    ),
    _cmp(  # c2 <= x//c1 -> c2*c1 <= x
        c2 <= x // c1,
        lambda m: _cmp_const(m, tx.LE, _v(m, "c2") * _v(m, "c1"), m.x),
        _positive("c1"),
    ),
    # x//c*c = x - x%c: compare the remainder
    _cmp(x // c1 * c1 < x, 0 < x % c1, _positive("c1")),  # x//c*c < x -> 0 < x%c
    _cmp(x // c1 * c1 < x + y, 0 < x % c1 + y, _positive("c1")),
    _cmp(x // c1 * c1 < x - y, y < x % c1, _positive("c1")),
    _cmp(x // c1 * c1 + y < x, y < x % c1, _positive("c1")),  # (the normal form of the above)
    _cmp(  # x <= (x+c2)//c1*c1 -> (x+c2)%c1 <= c2
        x <= (x + c2) // c1 * c1, (x + c2) % c1 <= c2, _positive("c1")
    ),
    _cmp(x + y <= (x + c2) // c1 * c1, (x + c2) % c1 + y <= c2, _positive("c1")),
    _cmp(x <= y + (x + c2) // c1 * c1, (x + c2) % c1 <= y + c2, _positive("c1")),
]

# --- mul ---------------------------------------------------------------------------------------
MUL = [
    _rule((x + c1) * c2, x * c2 + c1 * c2),  # (x+c1)*c2 -> x*c2 + c1*c2
    _rule((x * c1) * c2, x * (c1 * c2)),  # (x*c1)*c2 -> x*(c1*c2)
    *_one_of((min_(x, y) * max_(x, y), max_(x, y) * min_(x, y)), x * y),
    _rule((x - x % c2) // c1 * c1, x - x % c2, _neg("c1", "c2")),
    _rule(x * (c1 * y), (x * y) * c1),  # x*(c*y) -> (x*y)*c
    _rule(c1 * x, x * c1),  # c*x -> x*c
    _rule(  # (x-y)*-c -> (y-x)*c
        (x - y) * c1, (y - x) * (0 - c1), lambda m: _v(m, "c1") < 0 and _negatable("c1")(m)
    ),
]


# --- min / max: each rule with its dual (min <-> max) ----------------------------------------
def _dual(make: Callable[[Callable, Callable], list[Rule]]) -> list[Rule]:
    return make(min_, max_) + make(max_, min_)


def _lattice(lo, hi) -> list[Rule]:
    """Rules true in any lattice: they hold with min and max swapped."""
    return [
        *_one_of(  # min(max(x,y),min(x,y)) -> min(x,y)
            (
                lo(hi(x, y), lo(x, y)),
                lo(hi(x, y), lo(y, x)),
                lo(lo(x, y), hi(x, y)),
                lo(lo(x, y), hi(y, x)),
                lo(lo(x, y), x),
                lo(lo(x, y), y),
                lo(x, lo(x, y)),
                lo(y, lo(x, y)),
            ),
            lo(x, y),
        ),
        *_one_of((lo(hi(x, y), x), lo(hi(y, x), x), lo(x, hi(x, y)), lo(x, hi(y, x))), x),
        _rule(lo(lo(lo(x, y), z), y), lo(lo(x, y), z)),
        _rule(lo(lo(lo(lo(x, y), z), s1), y), lo(lo(lo(x, y), z), s1)),
        _rule(lo(lo(lo(lo(lo(x, y), z), s1), s2), y), lo(lo(lo(lo(x, y), z), s1), s2)),
        *_one_of(  # min(max(x,y),max(x,z)) -> max(min(y,z),x)
            (lo(hi(x, y), hi(x, z)), lo(hi(x, y), hi(z, x)), lo(hi(y, x), hi(x, z))),
            hi(lo(y, z), x),
        ),
        _rule(lo(hi(y, x), hi(z, x)), hi(lo(y, z), x)),
        *_one_of(  # min(min(x,y),min(x,z)) -> min(min(y,z),x)
            (lo(lo(x, y), lo(x, z)), lo(lo(x, y), lo(z, x)), lo(lo(y, x), lo(x, z))),
            lo(lo(y, z), x),
        ),
        _rule(lo(lo(y, x), lo(z, x)), lo(lo(y, z), x)),
        *_one_of(  # min(y+x,z+x) -> min(y,z)+x
            (lo(y + x, z + x), lo(y + x, x + z), lo(x + y, x + z), lo(x + y, z + x)), lo(y, z) + x
        ),
        _rule(lo(y - x, z - x), lo(y, z) - x),  # min(y-x,z-x) -> min(y,z)-x
        _rule(lo(x - y, x - z), x - hi(y, z)),  # min(x-y,x-z) -> x-max(y,z)
        _rule(lo(lo(x, c1), y), lo(lo(x, y), c1), _not_const("y")),  # min(min(x,c),y) -> ..
        _rule(lo(select(x, y, z), select(x, s1, s2)), select(x, lo(y, s1), lo(z, s2))),
    ]


def _scaled(m: Match) -> PrimExpr | None:
    """min/max(x*c1, y*c1) -> min/max(x, y)*c1 (the other one when c1 < 0); same for //c1."""
    k = _v(m, "c1")
    if k == 0:
        return None
    is_min = type(m.node) is tx.Min
    inner = tx.Min if is_min == (k > 0) else tx.Max
    outer = type(m.node.a)
    return binary(outer, binary(inner, m.x, m.y), m.c1)


def _scaled_by_const(m: Match) -> PrimExpr | None:
    """min(x*c1, c2) -> min(x, c2/c1)*c1 when c1 divides c2 (max when c1 < 0)."""
    k, c = _v(m, "c1"), _v(m, "c2")
    if k == 0 or c % k:
        return None
    is_min = type(m.node) is tx.Min
    inner = tx.Min if is_min == (k > 0) else tx.Max
    return binary(tx.Mul, binary(inner, m.x, c // k), k)


MINMAX = [
    *_dual(_lattice),
    _rule(min_(truncdiv(x, c1), truncdiv(y, c1)), _scaled),  # min(x/c,y/c) -> min(x,y)/c
    _rule(max_(truncdiv(x, c1), truncdiv(y, c1)), _scaled),
    _rule(min_(x // c1, y // c1), _scaled),  # min(x//c,y//c) -> min(x,y)//c (c > 0)
    _rule(max_(x // c1, y // c1), _scaled),
    _rule(min_(x * c1, y * c1), _scaled),  # min(x*c,y*c) -> min(x,y)*c (c > 0)
    _rule(max_(x * c1, y * c1), _scaled),
    _rule(min_(x * c1, c2), _scaled_by_const),  # min(x*c1,c2) -> min(x,c2/c1)*c1
    _rule(max_(x * c1, c2), _scaled_by_const),
    # min(x//c*c, x) -> x//c*c, and the ceil-style round-up is >= x
    *_one_of((min_(x, x // c2 * c2), min_(x // c2 * c2, x)), x // c2 * c2, _positive("c2")),
    *_one_of((max_(x, x // c2 * c2), max_(x // c2 * c2, x)), x, _positive("c2")),
    *_one_of(
        (min_((x + c1) // c2 * c2, x), min_(x, (x + c1) // c2 * c2)),
        x,
        lambda m: _v(m, "c2") > 0 and _v(m, "c1") + 1 == _v(m, "c2"),
    ),
    *_one_of(
        (max_((x + c1) // c2 * c2, x), max_(x, (x + c1) // c2 * c2)),
        (x + c1) // c2 * c2,
        lambda m: _v(m, "c2") > 0 and _v(m, "c1") + 1 == _v(m, "c2"),
    ),
    *_one_of(  # truncdiv rounds up from floordiv: truncdiv(x+c-1, c)*c >= x too
        (min_(truncdiv(x + c1, c2) * c2, x), min_(x, truncdiv(x + c1, c2) * c2)),
        x,
        lambda m: _v(m, "c2") > 0 and _v(m, "c1") + 1 == _v(m, "c2"),
    ),
    *_one_of(
        (max_(truncdiv(x + c1, c2) * c2, x), max_(x, truncdiv(x + c1, c2) * c2)),
        truncdiv(x + c1, c2) * c2,
        lambda m: _v(m, "c2") > 0 and _v(m, "c1") + 1 == _v(m, "c2"),
    ),
    *_one_of(  # x >= 1: the round-up of x to c2 is >= max(x, c2)
        (
            min_(truncdiv(x + c1, c2) * c2, max_(x, c2)),
            min_(max_(x, c2), truncdiv(x + c1, c2) * c2),
            min_((x + c1) // c2 * c2, max_(x, c2)),
            min_(max_(x, c2), (x + c1) // c2 * c2),
        ),
        max_(x, c2),
        lambda m: _v(m, "c2") > 0 and _v(m, "c1") + 1 == _v(m, "c2") and _ge("x", 1)(m),
    ),
    _rule(  # min(c1-x, c2) -> c1 - max(x, c1-c2)
        min_(c1 - x, c2), c1 - max_(x, c1 - c2), _nonzero("c2")
    ),
    _rule(max_(c1 - x, c2), c1 - min_(x, c1 - c2), _nonzero("c2")),  # dual
]


# --- floordiv / floormod -----------------------------------------------------------------------
def _product_fits(m: Match, k: int) -> bool:
    """x*k stays in the dtype for every x (bounds of an overflowing product are not its
    values, so a bound-based rewrite over one must not be trusted)."""
    lo, hi = m.ana._bound_of(m.x)
    limit = 2 ** (m.node.dtype.bits - 1)
    return -limit < lo * k < limit and -limit < hi * k < limit


def _fdiv_linear(m: Match) -> PrimExpr | None:
    """(x*c1 + y) // c2 with c1 = q1*c2 + r1, y = q2*c2 + r2: x*q1 + y//c2 + (x*r1 + r2)//c2,
    kept when the last term is one constant; or x // (c2/c1) + y//c2 when c1 | c2 and r2 < c1."""
    k1, k2 = _v(m, "c1"), _v(m, "c2")
    if k2 == 0:
        return None
    ana, dtype = m.ana, m.node.dtype
    yv = m.binds.get("y", make_const(dtype, 0))
    y_mod = binary(tx.FloorMod, yv, k2)
    residue = binary(tx.FloorDiv, binary(tx.Add, binary(tx.Mul, m.x, k1 % k2), y_mod), k2)
    y_div = binary(tx.FloorDiv, yv, k2)
    if _is_zero(m, y_div):
        y_div = make_const(dtype, 0)
    lo, hi = ana._bound_of(residue)
    if lo == hi and lo not in (NEG_INF, POS_INF) and _product_fits(m, k1 % k2):
        return binary(tx.Add, binary(tx.Mul, m.x, k1 // k2), binary(tx.Add, y_div, lo))
    if k1 > 0 and k2 > 0 and k2 % k1 == 0 and ana._max_of(y_mod) < k1:
        return binary(tx.Add, binary(tx.FloorDiv, m.x, k2 // k1), y_div)
    return None


def _fmod_mod_set(m: Match) -> PrimExpr | None:
    """x % c -> base % c when every x is coeff*k + base with c | coeff; -> x when 0 <= x < c."""
    k = _v(m, "c1")
    if k <= 0:
        return None
    ms = m.ana.modular_set(m.x)
    if ms.coeff % k == 0:
        return _const_of(m, ms.base % k)
    lo, hi = m.ana._bound_of(m.x)
    return m.x if lo >= 0 and hi < k else None


def _divides(a: str, b: str):
    """binds[b] > 0 and binds[b] divides binds[a]."""
    return lambda m: _v(m, b) > 0 and _v(m, a) % _v(m, b) == 0


def _fdiv_k(a: str, b: str):
    """The constant binds[a] // binds[b]."""
    return lambda m: _v(m, a) // _v(m, b)


# Not here, on purpose: TVM's coefficient reductions inside floormod ((x*16 + y) % 10 ->
# (x*6 + y) % 10, (x + 12) % 10 -> (x + 2) % 10). They are true, but the floordiv beside them
# keeps the original sum, so a flattened index (a // 10) * 10 + a % 10 no longer folds back to
# a: the generated code keeps the div/mod pair and the in-place alias analysis (which needs a
# load's index to equal its store's) refuses an SGD update it proved before.
DIVMOD = [
    *_one_of(((x * c1 + y) // c2, (x * c1) // c2, (y + x * c1) // c2), _fdiv_linear),
    _rule(
        (x * c1 + y + z) // c2,
        lambda m: m.x * _fdiv_k("c1", "c2")(m) + (m.y + m.z) // m.c2,
        _divides("c1", "c2"),
    ),
    _rule(
        (x * c1 + y + z) // c2,
        lambda m: m.x // (_v(m, "c2") // _v(m, "c1")),
        lambda m: _divides("c2", "c1")(m) and _v(m, "c2") > 0 and _is_zero(m, (m.y + m.z) // m.c1),
    ),
    *_one_of(
        ((x * c1 - y + z) // c2, (x * c1 + z - y) // c2),
        lambda m: m.x * _fdiv_k("c1", "c2")(m) + (m.z - m.y) // m.c2,
        _divides("c1", "c2"),
    ),
    _rule(
        (y + x * c1 + z) // c2,
        lambda m: m.x * _fdiv_k("c1", "c2")(m) + (m.y + m.z) // m.c2,
        _divides("c1", "c2"),
    ),
    *_one_of(  # (x+y+z)//x -> (y+z)//x + 1
        ((x + y + z) // x, (y + x + z) // x, (y + (z + x)) // x, (y + (x + z)) // x),
        (y + z) // x + 1,
        _ge("x", 0),
    ),
    _rule(
        (x * z * c1 + y) // (z * c1), x + y // (z * c1), lambda m: m.ana._min_of(m.z * m.c1) >= 0
    ),
    _rule(
        min_(y, x * c1) // c2,
        lambda m: binary(tx.Min, m.y // m.c2, m.x * _fdiv_k("c1", "c2")(m)),
        _divides("c1", "c2"),
    ),
    _rule(
        max_(y, x * c1) // c2,
        lambda m: binary(tx.Max, m.y // m.c2, m.x * _fdiv_k("c1", "c2")(m)),
        _divides("c1", "c2"),
    ),
    _rule(  # (x*c1 + y) % c2 -> x % (c2/c1) * c1 + y when c1 | c2 and 0 <= y < c1
        (x * c1 + y) % c2,
        lambda m: m.x % (_v(m, "c2") // _v(m, "c1")) * m.c1 + m.y,
        lambda m: _v(m, "c2") > 0 and _divides("c2", "c1")(m) and _is_zero(m, m.y // m.c1),
    ),
    _rule((x * z * c1 + y) % (z * c1), y % (z * c1), lambda m: m.ana._min_of(m.z * m.c1) >= 0),
    *_one_of(((x + z % y) % y, (z % y + x) % y), 0, lambda m: _is_zero(m, (m.x + m.z) % m.y)),
    _rule(truncmod(x, c1), truncmod(x, 0 - c1), lambda m: _v(m, "c1") < 0 and _negatable("c1")(m)),
    *_one_of(  # (x - x%z) % y -> 0 when y == z or y == -z
        ((x - x % z) % y, (x % z - x) % y),
        0,
        lambda m: _is_zero(m, m.y - m.z) or _is_zero(m, m.y + m.z),
    ),
    _rule(x % c1, _fmod_mod_set),  # x % c -> x when 0 <= x < c (or base % c by modular set)
    _rule(x // x, 1),  # x//x -> 1 (x == 0 is undefined)
    *_one_of((x * c1 // x, c1 * x // x), c1),  # x*c//x -> c
    _rule((x % 2 + 1) // 2, x % 2),  # (x%2+1)//2 -> x%2
    _rule(
        min_(x * c1, y) // c2,
        lambda m: binary(tx.Min, m.x * (_v(m, "c1") // _v(m, "c2")), m.y // m.c2),
        lambda m: _v(m, "c2") > 0 and _v(m, "c1") % _v(m, "c2") == 0,
    ),
    _rule(
        max_(x * c1, y) // c2,
        lambda m: binary(tx.Max, m.x * (_v(m, "c1") // _v(m, "c2")), m.y // m.c2),
        lambda m: _v(m, "c2") > 0 and _v(m, "c1") % _v(m, "c2") == 0,
    ),
    _rule(
        (x + c1) // c2,
        lambda m: m.x // m.c2 + _v(m, "c1") // _v(m, "c2"),
        lambda m: _v(m, "c2") > 0 and _v(m, "c1") % _v(m, "c2") == 0,
    ),
    _rule(x * c1 // (x * c2), lambda m: _const_of(m, _v(m, "c1") // _v(m, "c2")), _positive("c2")),
    *_one_of(((x + y) // x, (y + x) // x), y // x + 1, _ge("x", 0)),  # (x+y)//x -> y//x+1
    *_one_of((x * y // y, y * x // y), x, _ge("y", 0)),  # x*y//y -> x
    *_one_of(((x * z + y) // z, (z * x + y) // z), x + y // z, _ge("z", 0)),
    *_one_of(((y + x * z) // z, (y + z * x) // z), y // z + x, _ge("z", 0)),
    _rule((x - x % c1) // c1, x // c1, _nonzero("c1")),  # (x - x%c)//c -> x//c
    _rule(x * c1 % (x * c2), lambda m: m.x * (_v(m, "c1") % _v(m, "c2")), _nonzero("c2")),
    *_one_of((x * y % y, y * x % y), 0),  # x*y % y -> 0
]

RULES = ADD + SUB + MUL + MINMAX + DIVMOD + CMP
