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
from ..tir import expr as tx
from ..tir.expr import PrimExpr, Range, Var, as_expr, make_const


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
            constant = isinstance(rng.min, tx.IntImm) and isinstance(rng.extent, tx.IntImm)
            if not constant or rng.extent.value < 1:
                raise MiniTVMError(
                    f"narrow_predicate_expression: the range of '{var.name}' must be constant and "
                    f"non-empty, got {rng}"
                )
            self.free[id(var)] = (rng.min.value, rng.min.value + rng.extent.value - 1)

    # --- boolean structure: `narrow` makes the result imply the input, `not narrow` the reverse
    def boolean(self, e: PrimExpr, narrow: bool) -> PrimExpr:
        if isinstance(e, tx.And | tx.Or):
            return type(e)(self.operand(e.a, narrow), self.operand(e.b, narrow))
        if isinstance(e, tx.Not):
            return tx.Not(self.boolean(e.a, not narrow))
        if isinstance(e, tx.LT | tx.LE | tx.GT | tx.GE | tx.EQ | tx.NE):
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
        if isinstance(e, tx.LT | tx.LE):
            return type(e)(self.value(a, up=small), self.value(b, up=big))
        if isinstance(e, tx.GT | tx.GE):
            return type(e)(self.value(a, up=big), self.value(b, up=small))
        le = tx.LE if narrow else tx.LT
        first = le(self.value(a, up=small), self.value(b, up=big))
        second = le(self.value(b, up=small), self.value(a, up=big))
        # a == b (narrowed) or a != b (widened): both orders hold
        if isinstance(e, tx.EQ) == narrow:
            return tx.And(first, second) if narrow else tx.Or(first, second)
        lt = tx.LT if narrow else tx.LE  # a != b narrowed: a strictly below b or strictly above
        first = lt(self.value(a, up=small), self.value(b, up=big))
        second = lt(self.value(b, up=small), self.value(a, up=big))
        return tx.Or(first, second) if narrow else tx.And(first, second)

    # --- arithmetic: `up` True gives the largest value over the free parameters, False the least
    def value(self, e: PrimExpr, up: bool | None) -> PrimExpr:
        if isinstance(e, tx.IntImm | tx.FloatImm):
            return e
        if isinstance(e, Var):
            if id(e) not in self.free:
                return e
            if up is None:
                raise _Bail
            lo, hi = self.free[id(e)]
            return make_const(e.dtype, hi if up else lo)
        if isinstance(e, tx.Add | tx.Min | tx.Max):
            return type(e)(self.value(e.a, up), self.value(e.b, up))
        if isinstance(e, tx.Sub):
            return tx.Sub(self.value(e.a, up), self.value(e.b, _flip(up)))
        if isinstance(e, tx.Mul | tx.FloorDiv | tx.Div):
            return self.scaled(e, up)
        widening = isinstance(e, tx.Cast) and e.dtype.is_integer and e.value.dtype.is_integer
        if widening and e.dtype.bits >= e.value.dtype.bits:
            return tx.Cast(e.dtype, self.value(e.value, up))
        raise _Bail  # modulo, select, loads, calls: not monotonic in their operands

    def scaled(self, e: PrimExpr, up: bool | None) -> PrimExpr:
        """x * c, c * x, x // c: monotonic for a constant c (decreasing when c < 0 for `*`)."""
        if isinstance(e, tx.Mul) and isinstance(e.a, tx.IntImm):
            const, other, rebuild = e.a, e.b, lambda v: tx.Mul(e.a, v)
        elif isinstance(e.b, tx.IntImm):
            const, other, rebuild = e.b, e.a, lambda v: type(e)(v, e.b)
        else:
            raise _Bail
        if not isinstance(e, tx.Mul) and const.value <= 0:
            raise _Bail
        return rebuild(self.value(other, _flip(up) if const.value < 0 else up))


def _flip(up: bool | None) -> bool | None:
    return None if up is None else not up


def narrow_predicate_expression(
    expr: PrimExpr | bool, free_parameters: Mapping[Var, Range]
) -> PrimExpr:
    """An expression without the free parameters that, when true, makes `expr` true for every
    value of each free parameter in its range (`tvm.arith` NarrowPredicateExpression)."""
    e = as_expr(expr)
    if not (e.dtype.is_bool and e.dtype.lanes == 1):
        raise MiniTVMError(
            f"narrow_predicate_expression: expected a boolean predicate, got {e} ({e.dtype})"
        )
    return _Narrower(free_parameters).operand(e, narrow=True)
