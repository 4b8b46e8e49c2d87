"""Narrow a predicate so that it no longer mentions some free parameters.

`narrow_predicate_expression(expr, {n: Range(0, 8)})` returns an expression without `n` that
implies `expr` for every `n` in its range (TVM's `NarrowPredicateExpression`): `i > n` becomes
`i > 7`, `i == n` becomes `i <= 0 && 7 <= i`. Each free parameter is replaced by the end of its
range that makes the comparison hardest to satisfy. Where that is not sound (a modulo, a
division by a free parameter, a buffer load, a call) the enclosing `&&`/`||` operand becomes
`false` (or `true` under a `!`), which still implies the original.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..error import MiniTVMError
from ..ir.dtype import DataType
from ..tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    IntImm,
    Max,
    Min,
    Mul,
    Not,
    Or,
    PrimExpr,
    Range,
    Sub,
    Var,
    as_expr,
    make_const,
)


class _Bail(Exception):
    """This sub-expression cannot be narrowed soundly."""


class _Narrower:
    def __init__(self, free: Mapping[Var, Range]) -> None:
        self.free: dict[int, tuple[int, int]] = {}
        for var, rng in free.items():
            if not isinstance(var, Var) or not isinstance(rng, Range):
                raise MiniTVMError(
                    f"narrow_predicate_expression: free_parameters must map tir.Var to tir.Range, "
                    f"got {var!r}: {rng!r}"
                )
            if not (isinstance(rng.min, IntImm) and isinstance(rng.extent, IntImm)) or rng.extent.value < 1:
                raise MiniTVMError(
                    f"narrow_predicate_expression: the range of '{var.name}' must be constant and "
                    f"non-empty, got {rng}"
                )
            self.free[id(var)] = (rng.min.value, rng.min.value + rng.extent.value - 1)

    # --- boolean structure: `narrow` makes the result imply the input, `not narrow` the reverse
    def boolean(self, e: PrimExpr, narrow: bool) -> PrimExpr:
        if isinstance(e, And | Or):
            return type(e)(self.operand(e.a, narrow), self.operand(e.b, narrow))
        if isinstance(e, Not):
            return Not(self.boolean(e.a, not narrow))
        if isinstance(e, LT | LE | GT | GE | EQ | NE):
            return self.compare(e, narrow)
        return self.value(e, up=None)  # a bool var or constant: only checked to be narrowable

    def operand(self, e: PrimExpr, narrow: bool) -> PrimExpr:
        try:
            return self.boolean(e, narrow)
        except _Bail:
            return make_const(DataType("bool"), not narrow)

    def compare(self, e: PrimExpr, narrow: bool) -> PrimExpr:
        a, b = e.a, e.b
        # a < b is hardest to satisfy with a at its largest and b at its smallest
        small, big = narrow, not narrow  # `up` for the side that should be small
        if isinstance(e, LT | LE):
            return type(e)(self.value(a, up=small), self.value(b, up=big))
        if isinstance(e, GT | GE):
            return type(e)(self.value(a, up=big), self.value(b, up=small))
        le = LE if narrow else LT
        first = le(self.value(a, up=small), self.value(b, up=big))
        second = le(self.value(b, up=small), self.value(a, up=big))
        if isinstance(e, EQ) == narrow:  # a == b (narrowed) or a != b (widened): both orders hold
            return And(first, second) if narrow else Or(first, second)
        lt = LT if narrow else LE  # a != b narrowed: a strictly below b or strictly above
        first = lt(self.value(a, up=small), self.value(b, up=big))
        second = lt(self.value(b, up=small), self.value(a, up=big))
        return Or(first, second) if narrow else And(first, second)

    # --- arithmetic: `up` True gives the largest value over the free parameters, False the least
    def value(self, e: PrimExpr, up: bool | None) -> PrimExpr:
        if isinstance(e, IntImm | FloatImm):
            return e
        if isinstance(e, Var):
            if id(e) not in self.free:
                return e
            if up is None:
                raise _Bail
            lo, hi = self.free[id(e)]
            return make_const(e.dtype, hi if up else lo)
        if isinstance(e, Add | Min | Max):
            return type(e)(self.value(e.a, up), self.value(e.b, up))
        if isinstance(e, Sub):
            return Sub(self.value(e.a, up), self.value(e.b, _flip(up)))
        if isinstance(e, Mul | FloorDiv | Div):
            return self.scaled(e, up)
        widening = isinstance(e, Cast) and e.dtype.is_integer and e.value.dtype.is_integer
        if widening and e.dtype.bits >= e.value.dtype.bits:
            return Cast(e.dtype, self.value(e.value, up))
        raise _Bail  # modulo, select, loads, calls: not monotonic in their operands

    def scaled(self, e: PrimExpr, up: bool | None) -> PrimExpr:
        """x * c, c * x, x // c: monotonic for a constant c (decreasing when c < 0 for `*`)."""
        if isinstance(e, Mul) and isinstance(e.a, IntImm):
            const, other, rebuild = e.a, e.b, lambda v: Mul(e.a, v)
        elif isinstance(e.b, IntImm):
            const, other, rebuild = e.b, e.a, lambda v: type(e)(v, e.b)
        else:
            raise _Bail
        if not isinstance(e, Mul) and const.value <= 0:
            raise _Bail
        return rebuild(self.value(other, _flip(up) if const.value < 0 else up))


def _flip(up: bool | None) -> bool | None:
    return None if up is None else not up


def narrow_predicate_expression(expr: PrimExpr | bool, free_parameters: Mapping[Var, Range]) -> PrimExpr:
    """An expression without the free parameters that, when true, makes `expr` true for every
    value of each free parameter in its range (`tvm.arith` NarrowPredicateExpression)."""
    e = as_expr(expr)
    if not (e.dtype.is_bool and e.dtype.lanes == 1):
        raise MiniTVMError(f"narrow_predicate_expression: expected a boolean predicate, got {e} ({e.dtype})")
    return _Narrower(free_parameters).operand(e, narrow=True)
