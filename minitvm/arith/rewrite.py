"""The rewrite-rule table of local algebra, applied bottom-up to a fixpoint by one driver."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..error import DTypeError, TVMError
from ..tir import expr as tx
from ..tir.expr import PrimExpr, binary, make_const
from ..tir.names import IF_THEN_ELSE, LIKELY
from .bound import NEG_INF, POS_INF
from .canonical import is_index_dtype
from .const_fold import fold
from .pattern import (
    Match,
    PConst,
    PVar,
    Rule,
    RuleTable,
    and_,
    broadcast,
    call,
    cast,
    eq,
    max_,
    min_,
    ne,
    not_,
    or_,
    ramp,
    select,
    truncdiv,
    truncmod,
)
from .rewrite_index import CMP as INDEX_CMP_RULES
from .rewrite_index import RULES as INDEX_RULES

if TYPE_CHECKING:
    from .analyzer import Analyzer

x, y, z, w = PVar("x"), PVar("y"), PVar("z"), PVar("w")
c1, c2, c3 = PConst("c1"), PConst("c2"), PConst("c3")


# --- side conditions and computed rewrites ---------------------------------------------------
def _is_int(m: Match) -> bool:
    return m.node.dtype.element_of().is_int


def _is_int_and_y_keeps_dtype(m: Match) -> bool:
    """An integer node whose result `y` has the node's own dtype (imported IR can mix int32
    and int64 operands: v_i0 - int64(3) + int64(3) must not become the int32 v_i0)."""
    return _is_int(m) and m.y.dtype == m.node.dtype


def _pos(*names: str):
    return lambda m: all(m.binds[n].value > 0 for n in names)


def _nonneg_and_pos(m: Match) -> bool:
    """x >= 0 and y > 0: truncating division equals floor division."""
    return _is_int(m) and m.ana._min_of(m.x) >= 0 and m.ana._is_divisor_positive(m.y)


def _const_by_bound(m: Match) -> PrimExpr | None:
    """An integer expression whose bounds are one value is that value."""
    if not is_index_dtype(m.node.dtype):
        return None
    lo, hi = m.ana._bound_of(m.node)
    # a saturated bound (NEG_INF / POS_INF: the value left int64) is no value
    return make_const(m.node.dtype, lo) if lo == hi and lo not in (NEG_INF, POS_INF) else None


def _min_by_diff(m: Match) -> PrimExpr | None:
    """min(x, y) → x when x <= y is provable, → y when y <= x is."""
    if not is_index_dtype(m.node.dtype):
        return None
    le = m.ana._decide_le0(tx.Sub(m.x, m.y))
    if le is None:
        return None
    smaller, larger = (m.x, m.y) if le else (m.y, m.x)
    return smaller if type(m.node) is tx.Min else larger


def _le0_of(m: Match) -> PrimExpr:
    """The expression d with `node` true iff d <= 0 (for LT: a - b + 1)."""
    d = tx.Sub(m.x, m.y)
    return tx.Add(d, make_const(d.dtype, 1)) if type(m.node) is tx.LT else d


def _compare(m: Match) -> PrimExpr | None:
    """Decide x < y, x <= y, x == y, x != y on integers from bounds and facts, else normalise."""
    if not is_index_dtype(m.x.dtype):
        return None
    ana, cls, t = m.ana, type(m.node), make_const(m.node.dtype, 1)
    f = make_const(m.node.dtype, 0)
    if cls in (tx.LT, tx.LE):
        answer = ana._decide_le0(_le0_of(m))
    else:
        d = tx.Sub(m.x, m.y)
        le, ge = ana._decide_le0(d), ana._decide_le0(tx.Sub(make_const(d.dtype, 0), d))
        answer = None if le is None or ge is None else le and ge
        if le is False or ge is False:
            answer = False
        if answer is not None and cls is tx.NE:
            answer = not answer
    if answer is not None:
        return t if answer else f
    known = ana._known_literal(m.node)
    if known is not None:
        return t if known else f
    try:
        return ana._normal_compare(m.node)
    except DTypeError:  # a normal-form constant past the dtype (x - INT_MIN): keep the node
        return None


def _eq_of_nonneg_terms(m: Match) -> PrimExpr | None:
    """x == y where x - y = sum(c_i * v_i) with every c_i of one sign and every v_i >= 0: then
    the sum is 0 exactly when each v_i is 0 (`k_0*4 + k_1 == 0` -> `k_0 == 0 && k_1 == 0`, which
    LLVM can unswitch per loop)."""
    if not is_index_dtype(m.x.dtype):
        return None
    from .canonical import Canonical

    p = Canonical(m.ana).poly(tx.Sub(m.x, m.y))
    if p.const != 0 or len(p.terms) < 2 or len({c > 0 for c, _ in p.terms.values()}) != 1:
        return None
    atoms = [atoms[0] for _, atoms in p.terms.values() if len(atoms) == 1]
    if len(atoms) != len(p.terms) or any(m.ana.const_int_bound(a).min_value < 0 for a in atoms):
        return None
    zero = make_const(m.x.dtype, 0)
    out = tx.EQ(atoms[0], zero)
    for a in atoms[1:]:
        out = tx.And(out, tx.EQ(a, zero))
    return out


def _add_consts(m: Match) -> PrimExpr | None:
    dtype = m.node.dtype
    if m.x.dtype != dtype:  # mixed-width imported IR: leave it to the canonical form
        return None
    total = m.c1.value + m.c2.value
    lo, hi = -(2 ** (dtype.bits - 1)), 2 ** (dtype.bits - 1) - 1
    return binary(tx.Add, m.x, make_const(dtype, total)) if lo <= total <= hi else None


def _floordiv_nested(m: Match) -> PrimExpr:
    return binary(tx.FloorDiv, m.x, m.c1.value * m.c2.value)


def _floordiv_nested_offset(m: Match) -> PrimExpr:
    return binary(
        tx.FloorDiv, binary(tx.Add, m.x, m.c3.value * m.c1.value), m.c1.value * m.c2.value
    )


def _swapped(cls: type):
    return lambda m: binary(cls, m.y, m.x)


def _same(cls: type):
    return lambda m: binary(cls, m.x, m.y)


def _int_operands(m: Match) -> bool:
    """Integer, unsigned or bool operands: `x == x` holds for every value (unlike a float NaN)."""
    elem = m.x.dtype.element_of()
    return elem.is_integer or elem.is_bool


def _divisible(m: Match) -> bool:
    return m.c1.value > 0 and m.c2.value > 0 and m.c1.value % m.c2.value == 0


def _bcast(cls: type):
    """broadcast(x) op broadcast(y) → broadcast(x op y)."""
    return lambda m: tx.Broadcast(binary(cls, m.x, m.y), m.node.dtype.lanes)


def _bcast_ramp(cls: type):
    """broadcast(x) ± ramp(y, s) → ramp(x ± y, ±s)."""

    def rewrite(m: Match) -> PrimExpr:
        stride = m.z if cls is tx.Add else binary(tx.Sub, 0, m.z)
        return tx.Ramp(binary(cls, m.x, m.y), stride, m.node.dtype.lanes)

    return rewrite


def _ramp_sub(m: Match) -> PrimExpr:
    return tx.Ramp(binary(tx.Sub, m.x, m.z), binary(tx.Sub, m.y, m.w), m.node.dtype.lanes)


def _is_vector(m: Match) -> bool:
    return not m.node.dtype.is_scalar


# broadcast(x) op broadcast(y) -> broadcast(x op y)
_BCAST_OPS = (
    (truncdiv, tx.Div),
    (truncmod, tx.Mod),
    (lambda a, b: a // b, tx.FloorDiv),
    (lambda a, b: a % b, tx.FloorMod),
    (min_, tx.Min),
    (max_, tx.Max),
    (eq, tx.EQ),
    (ne, tx.NE),
    (lambda a, b: a < b, tx.LT),
    (lambda a, b: a <= b, tx.LE),
    (and_, tx.And),
    (or_, tx.Or),
)


def _ramp_shift(cls: type):
    """ramp(x, s) ± broadcast(z) → ramp(x ± z, s)."""
    return lambda m: tx.Ramp(binary(cls, m.x, m.z), m.y, m.node.dtype.lanes)


def _ramp_add(m: Match) -> PrimExpr:
    return tx.Ramp(binary(tx.Add, m.x, m.z), binary(tx.Add, m.y, m.w), m.node.dtype.lanes)


def _ramp_scale(m: Match) -> PrimExpr:
    return tx.Ramp(binary(tx.Mul, m.x, m.z), binary(tx.Mul, m.y, m.z), m.node.dtype.lanes)


def _ramp_divmod(m: Match) -> PrimExpr | None:
    """ramp(b, s, L) // c and % c when c | s, or when the whole ramp stays in one bucket of c."""
    if isinstance(m.z, tx.IntImm) and m.z.value == 0:
        raise TVMError(f"{m.node}: division by zero (a broadcast 0 divisor)")
    if not (isinstance(m.y, tx.IntImm) and isinstance(m.z, tx.IntImm) and m.z.value > 0):
        return None
    b, s, c, lanes = m.x, m.y.value, m.z.value, m.node.dtype.lanes
    is_div = type(m.node) is tx.FloorDiv
    if s % c == 0:  # floor((b + s*i) / c) == b//c + (s/c)*i
        if is_div:
            return tx.Ramp(binary(tx.FloorDiv, b, c), s // c, lanes)
        return tx.Broadcast(binary(tx.FloorMod, b, c), lanes)
    if lanes < 0:  # scalable (vscale * k lanes): the last lane is not a constant offset
        return None
    last = binary(tx.Add, b, s * (lanes - 1))
    if s > 0 and m.ana.can_prove_equal(binary(tx.FloorDiv, last, c), binary(tx.FloorDiv, b, c)):
        if is_div:
            return tx.Broadcast(binary(tx.FloorDiv, b, c), lanes)
        return tx.Ramp(binary(tx.FloorMod, b, c), s, lanes)
    if not is_div:  # b = k*coeff + base with c | coeff: (b + s*i) % c == (base%c + s*i) % c
        ms = m.ana.modular_set(b)
        if ms.coeff % c == 0 and not (isinstance(b, tx.IntImm) and b.value == ms.base % c):
            base = tx.Ramp(make_const(b.dtype, ms.base % c), s, lanes)
            return binary(tx.FloorMod, base, tx.Broadcast(make_const(b.dtype, c), lanes))
    return None


def _ramp_divzero(m: Match) -> None:
    if isinstance(m.z, tx.IntImm) and m.z.value == 0:
        raise TVMError(f"{m.node}: division by zero (a broadcast 0 divisor)")


def _cast_round_trip(m: Match) -> PrimExpr | None:
    """cast(T, cast(U, x)) → x when x has type T and U holds every value of T."""
    inner, outer = m.node.value.dtype, m.node.dtype
    if m.x.dtype != outer or not (inner.is_int and outer.is_int) or inner.bits < outer.bits:
        return None
    return m.x


def _is_linear_cmp(e: PrimExpr) -> bool:
    return isinstance(e, tx.LT | tx.LE | tx.EQ | tx.NE) and is_index_dtype(e.a.dtype)


def _and_implied(m: Match) -> PrimExpr | None:
    """x && y → x when x implies y; → false when x implies !y (x, y integer comparisons)."""
    if not (_is_linear_cmp(m.x) and _is_linear_cmp(m.y)):
        return None
    with m.ana.constraint_scope(m.x):
        if m.ana.can_prove(m.y):
            return m.x
        if m.ana.can_prove(tx.Not(m.y)):
            return make_const(m.node.dtype, 0)
    return None


def _or_implied(m: Match) -> PrimExpr | None:
    """x || y → y when x implies y; → true when !x implies y (x, y integer comparisons)."""
    if not (_is_linear_cmp(m.x) and _is_linear_cmp(m.y)):
        return None
    with m.ana.constraint_scope(m.x):
        if m.ana.can_prove(m.y):
            return m.y
    with m.ana.constraint_scope(tx.Not(m.x)):
        if m.ana.can_prove(m.y):
            return make_const(m.node.dtype, 1)
    return None


def _min_const(m: Match) -> PrimExpr:
    return binary(tx.Min, m.x, min(m.c1.value, m.c2.value))


def _max_const(m: Match) -> PrimExpr:
    return binary(tx.Max, m.x, max(m.c1.value, m.c2.value))


def _fits(m: Match, k: int) -> bool:
    bits = m.node.a.dtype.bits
    return -(2 ** (bits - 1)) <= k < 2 ** (bits - 1)


def _div_lt(m: Match) -> PrimExpr | None:
    k = m.c1.value * m.c2.value
    return binary(tx.LT, m.x, k) if _fits(m, k) else None


def _lt_div(m: Match) -> PrimExpr | None:
    k = (m.c2.value + 1) * m.c1.value - 1
    return binary(tx.LT, k, m.x) if _fits(m, k) else None


def _to_floor(cls: type):
    return lambda m: binary(cls, m.x, m.y)


# --- the table: one rule per line ------------------------------------------------------------
RULES = [
    # add / sub / mul identities (the canonical form collects the rest)
    Rule(x + 0, x),  # x+0 -> x
    Rule(x - 0, x),  # x-0 -> x
    Rule(x - x, 0, _int_operands),  # x-x -> 0 (uint too)
    Rule((x + y) - y, x, _is_int),  # (x+y)-y -> x
    Rule(x + (y - x), y, _is_int_and_y_keeps_dtype),  # x+(y-x) -> y (and (y-x)+x)
    Rule(x - (x + y), 0 - y, _is_int_and_y_keeps_dtype),  # x-(x+y) -> 0-y (and x-(y+x))
    Rule((x + c1) + c2, _add_consts, _is_int),  # (x+c1)+c2 -> x+(c1+c2) when that fits
    Rule(x * 1, x),  # x*1 -> x
    Rule(x * 0, 0, _is_int),  # x*0 -> 0 (not for floats: nan*0)
    # vectors
    Rule(broadcast(x) + ramp(y, z), _bcast_ramp(tx.Add), ordered=True),  # bx+ramp(y,s)
    Rule(broadcast(x) - ramp(y, z), _bcast_ramp(tx.Sub)),  # bx-ramp(y,s) -> ramp(x-y,-s)
    Rule(ramp(x, y) - ramp(z, w), _ramp_sub),  # ramp(x,s)-ramp(z,t) -> ramp(x-z,s-t)
    Rule(x + broadcast(0), x, _is_vector),  # x+b(0) -> x
    *(Rule(op(broadcast(x), broadcast(y)), _bcast(cls)) for op, cls in _BCAST_OPS),
    Rule(broadcast(x) + broadcast(y), _bcast(tx.Add)),  # bx+by -> b(x+y)
    Rule(broadcast(x) - broadcast(y), _bcast(tx.Sub)),  # bx-by -> b(x-y)
    Rule(broadcast(x) * broadcast(y), _bcast(tx.Mul)),  # bx*by -> b(x*y)
    Rule(ramp(x, y) + broadcast(z), _ramp_shift(tx.Add)),  # ramp(x,s)+bz -> ramp(x+z,s)
    Rule(ramp(x, y) - broadcast(z), _ramp_shift(tx.Sub)),  # ramp(x,s)-bz -> ramp(x-z,s)
    Rule(ramp(x, y) + ramp(z, w), _ramp_add),  # ramp(x,s)+ramp(z,t) -> ramp(x+z,s+t)
    Rule(ramp(x, y) * broadcast(z), _ramp_scale, _is_int),  # ramp(x,s)*bz -> ramp(x*z,s*z)
    Rule(ramp(x, y) // broadcast(z), _ramp_divmod),  # ramp(b,s)//c -> broadcast/ramp when exact
    Rule(ramp(x, y) % broadcast(z), _ramp_divmod),  # ramp(b,s)%c -> broadcast/ramp when exact
    Rule(truncdiv(ramp(x, y), broadcast(z)), _ramp_divzero),  # ramp/b(0) -> error
    Rule(truncmod(ramp(x, y), broadcast(z)), _ramp_divzero),  # ramp%b(0) -> error
    Rule(cast(cast(x)), _cast_round_trip),  # int32(int64(x)) -> x
    # truncating division / remainder
    Rule(truncdiv(x, 1), x, _is_int),  # x/1 -> x
    Rule(truncmod(x, 1), 0, _is_int),  # x%1 -> 0
    Rule(truncdiv(x, y), _to_floor(tx.FloorDiv), _nonneg_and_pos),  # x/y -> x//y if x>=0, y>0
    Rule(truncmod(x, y), _to_floor(tx.FloorMod), _nonneg_and_pos),  # x%y -> floormod if x>=0, y>0
    # floor division / modulo
    Rule(x // 1, x, _is_int),  # x//1 -> x
    Rule(x % 1, 0, _is_int),  # floormod(x,1) -> 0
    Rule(x % x, 0, _is_int),  # floormod(x,x) -> 0
    Rule((x // c1) // c2, _floordiv_nested, _pos("c1", "c2")),  # (x//c1)//c2 -> x//(c1*c2)
    Rule((x // c1 + c3) // c2, _floordiv_nested_offset, _pos("c1", "c2")),  # -> (x+c3*c1)//(c1*c2)
    Rule((x % c1) % c2, x % c2, _divisible),  # (x%c1)%c2 -> x%c2 when c2 divides c1
    Rule(x // y, _const_by_bound),  # x//y -> k when the bounds pin it
    Rule(x % y, _const_by_bound),  # x%y -> k when the bounds pin it
    # min / max
    Rule(min_(x, x), x),  # min(x,x) -> x
    Rule(max_(x, x), x),  # max(x,x) -> x
    Rule(min_(max_(x, y), x), x),  # min(max(x,y),x) -> x
    Rule(max_(min_(x, y), x), x),  # max(min(x,y),x) -> x
    Rule(min_(min_(x, c1), c2), _min_const),  # min(min(x,c1),c2) -> min(x,min(c1,c2))
    Rule(max_(max_(x, c1), c2), _max_const),  # max(max(x,c1),c2) -> max(x,max(c1,c2))
    Rule(min_(x, y), _min_by_diff),  # min(x,y) -> x when x <= y is provable (or y)
    Rule(max_(x, y), _min_by_diff),  # max(x,y) -> y when x <= y is provable (or x)
    # select and conditional calls
    Rule(select(True, x, y), x),  # select(true,x,y) -> x
    Rule(select(False, x, y), y),  # select(false,x,y) -> y
    Rule(select(z, x, x), x),  # select(c,x,x) -> x
    Rule(call(IF_THEN_ELSE, True, x, y), x),  # if_then_else(true,x,y) -> x
    Rule(call(IF_THEN_ELSE, False, x, y), y),  # if_then_else(false,x,y) -> y
    Rule(call(LIKELY, c1), c1),  # likely(c) -> c
    # comparisons: one direction, then decided or normalised
    Rule(x > y, y < x),  # x>y -> y<x
    Rule(x >= y, y <= x),  # x>=y -> y<=x
    Rule(eq(x, x), True, _int_operands),  # x==x -> true
    Rule(ne(x, x), False, _int_operands),  # x!=x -> false
    Rule(x // c1 < c2, _div_lt, _pos("c1")),  # x//c1 < c2 -> x < c1*c2
    Rule(c2 < x // c1, _lt_div, _pos("c1")),  # c2 < x//c1 -> (c2+1)*c1 - 1 < x
    *INDEX_CMP_RULES,  # x//c*c < x -> 0 < x%c, x//c <= k -> x <= k*c + c-1, ...
    Rule(x < y, _compare),  # decide / normalise x<y
    Rule(x <= y, _compare),  # decide / normalise x<=y
    Rule(eq(x, y), _eq_of_nonneg_terms),  # a*i + j == 0, i,j >= 0 -> i == 0 && j == 0
    Rule(eq(x, y), _compare),  # decide / normalise x==y
    Rule(ne(x, y), _compare),  # decide / normalise x!=y
    # boolean logic
    Rule(and_(x, True), x),  # x && true -> x
    Rule(and_(x, False), False),  # x && false -> false
    Rule(and_(x, x), x),  # x && x -> x
    Rule(and_(x, not_(x)), False),  # x && !x -> false
    Rule(or_(x, False), x),  # x || false -> x
    Rule(or_(x, True), True),  # x || true -> true
    Rule(or_(x, x), x),  # x || x -> x
    Rule(or_(x, not_(x)), True),  # x || !x -> true
    Rule(and_(x, y), _and_implied),  # x && y -> x when x implies y
    Rule(or_(x, y), _or_implied),  # x || y -> y when x implies y
    Rule(and_(x, and_(y, z)), and_(and_(x, y), z), ordered=True),  # x&&(y&&z) -> (x&&y)&&z
    Rule(or_(x, or_(y, z)), or_(or_(x, y), z), ordered=True),  # x||(y||z) -> (x||y)||z
    Rule(not_(not_(x)), x),  # !!x -> x
    Rule(not_(x < y), _swapped(tx.LE)),  # !(x<y) -> y<=x
    Rule(not_(x <= y), _swapped(tx.LT)),  # !(x<=y) -> y<x
    Rule(not_(eq(x, y)), _same(tx.NE)),  # !(x==y) -> x!=y
    Rule(not_(ne(x, y)), _same(tx.EQ)),  # !(x!=y) -> x==y
]

TABLE = RuleTable(RULES + [r for r in INDEX_RULES if r not in INDEX_CMP_RULES])


def rewrite_node(e: PrimExpr, ana: Analyzer) -> PrimExpr | None:
    """One rewrite step at the root of `e` (children already simplified), or None."""
    folded = fold(e)
    if folded is not None:
        return folded
    for r in TABLE.rules_for(e):
        out = r.apply(e, ana)
        if out is not None:
            return out
    return None
