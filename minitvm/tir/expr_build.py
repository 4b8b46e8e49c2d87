"""Building TIR expressions: operand matching and dtype promotion, binary operators with constant
folding, casts, logical and bitwise operators, and constant tests (is_const_int, const_value).
PrimExpr operators (expr.py) call these, which expr.py re-exports."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from ..error import DTypeError, TVMError
from ..ir.dtype import DataType
from . import expr as tx
from .expr import (
    And,
    Broadcast,
    Call,
    Cast,
    EqualOp,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    IterVar,
    Not,
    Op,
    Or,
    PrimExpr,
    as_expr,
)
from .names import BITWISE_AND, SHIFT_RIGHT


def _lift(x: Any) -> Any:
    if isinstance(x, IterVar):
        return x.var
    if isinstance(x, EqualOp):
        return x.asobject()
    return x


def _match_operands(a: Any, b: Any) -> tuple[PrimExpr, PrimExpr]:
    """Convert both operands to PrimExprs of one dtype (TVM's promotion rules)."""
    a, b = _lift(a), _lift(b)
    if not isinstance(a, PrimExpr) and not isinstance(b, PrimExpr):
        a, b = as_expr(a), as_expr(b)
    elif not isinstance(a, PrimExpr):
        b = as_expr(b)
        a = as_expr(a, like=b.dtype)
    elif not isinstance(b, PrimExpr):
        b = as_expr(b, like=a.dtype)
    return _promote(a, b)


def _promote(a: PrimExpr, b: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    ta, tb = a.dtype, b.dtype
    if ta == tb:
        return a, b
    if ta.lanes != tb.lanes:
        if ta.lanes == 1:
            a = Broadcast(a, tb.lanes)
        elif tb.lanes == 1:
            b = Broadcast(b, ta.lanes)
        else:
            raise DTypeError(f"vector lanes differ: `{a}` is {ta}, `{b}` is {tb}")
        return _promote(a, b)
    ea, eb = ta.element_of(), tb.element_of()
    target = _promoted_type(ea, eb)
    return cast(target.with_lanes(ta.lanes), a), cast(target.with_lanes(tb.lanes), b)


def _promoted_type(x: DataType, y: DataType) -> DataType:
    if x.is_handle or y.is_handle:
        raise DTypeError(f"cannot combine {x} and {y} in arithmetic")
    if x.is_float != y.is_float:
        return x if x.is_float else y
    if x.is_bool != y.is_bool:
        return y if x.is_bool else x
    if x.code == y.code:
        return x if x.bits >= y.bits else y
    # int vs uint: the wider one, int on ties (TVM behaves the same way)
    if x.bits != y.bits:
        return x if x.bits > y.bits else y
    return x if x.is_int else y


# node class -> the Python operator with its meaning on integers (Python's // and % are floor
# division and modulo). Evaluators of index expressions start from this table and replace the
# entries their values need otherwise (numpy arrays, a division by zero).
INT_OPERATORS: dict[type, Callable[[Any, Any], Any]] = {
    tx.Add: operator.add,
    tx.Sub: operator.sub,
    tx.Mul: operator.mul,
    tx.FloorDiv: operator.floordiv,
    tx.FloorMod: operator.mod,
    tx.Min: min,
    tx.Max: max,
    tx.EQ: operator.eq,
    tx.NE: operator.ne,
    tx.LT: operator.lt,
    tx.LE: operator.le,
    tx.GT: operator.gt,
    tx.GE: operator.ge,
    tx.And: operator.and_,
    tx.Or: operator.or_,
}

# the arithmetic `binary` folds on integer constants (a comparison's result is a bool)
_FOLD = {
    cls: INT_OPERATORS[cls]
    for cls in (tx.Add, tx.Sub, tx.Mul, tx.Min, tx.Max, tx.FloorDiv, tx.FloorMod)
}


def binary(cls: type, a: Any, b: Any) -> PrimExpr:
    """Build `cls(a, b)` after promotion, folding when both sides are integer constants."""
    a, b = _match_operands(a, b)
    if isinstance(a, IntImm) and isinstance(b, IntImm) and a.dtype.is_integer:
        fold = _FOLD.get(cls)
        if fold is not None and not (b.value == 0 and cls in (FloorDiv, FloorMod)):
            value = fold(a.value, b.value)
            try:
                return IntImm(a.dtype, value)
            except DTypeError:
                pass
    return cls(a, b)


def cast(dtype: str | DataType, value: Any) -> PrimExpr:
    """Cast `value` to `dtype`; a no-op when it already has that dtype; folds constants."""
    dtype = DataType(dtype)
    value = as_expr(_lift(value), like=dtype)
    if value.dtype == dtype:
        return value
    if value.dtype.is_handle and not dtype.is_handle:  # TVM's cast() refuses it too
        raise TVMError(
            f"cast({value}, {dtype}): Can't cast a handle to other types; take the address "
            "of an element (T.address_of) or reinterpret instead"
        )
    if dtype.lanes > 1 and value.dtype.lanes == 1:
        return Broadcast(cast(dtype.element_of(), value), dtype.lanes)
    if isinstance(value, IntImm | FloatImm) and dtype.lanes == 1:
        if dtype.is_float:
            return FloatImm(dtype, float(value.value))
        if dtype.is_bool:
            return IntImm(dtype, int(value.value != 0))
        if dtype.is_integer and isinstance(value, IntImm):
            try:
                return IntImm(dtype, value.value)
            except DTypeError:
                pass
    return Cast(dtype, value)


def logical_and(a: Any, b: Any) -> PrimExpr:
    """`a & b`: logical and on bools, bitwise and on integers."""
    a, b = _match_operands(a, b)
    return And(a, b) if a.dtype.is_bool else bitwise("&", a, b)


def logical_or(a: Any, b: Any) -> PrimExpr:
    """`a | b`: logical or on bools, bitwise or on integers."""
    a, b = _match_operands(a, b)
    return Or(a, b) if a.dtype.is_bool else bitwise("|", a, b)


# operator -> (intrinsic, accepts bool operands). Shifts of a bool have no meaning.
_BITWISE = {
    "&": (BITWISE_AND, True),
    "|": ("tir.bitwise_or", True),
    "^": ("tir.bitwise_xor", True),
    "<<": ("tir.shift_left", False),
    ">>": (SHIFT_RIGHT, False),
}


def _check_bitwise(symbol: str, allow_bool: bool, *operands: PrimExpr) -> None:
    if all(x.dtype.is_integer or (allow_bool and x.dtype.is_bool) for x in operands):
        return
    kinds = "integer or bool operands" if allow_bool else "integer operands"
    got = " and ".join(str(x.dtype) for x in operands)
    if len(operands) > 1:
        text = f" {symbol} ".join(str(x) for x in operands)
    else:
        text = f"{symbol}{operands[0]}"
    text = text if len(text) <= 80 else text[:77] + "..."
    raise DTypeError(
        f"bitwise '{symbol}' needs {kinds}, got {got} in `{text}`; cast with .astype('int32')"
    )


def bitwise(symbol: str, a: Any, b: Any) -> PrimExpr:
    """`a <symbol> b` for a bitwise operator symbol (&, |, ^, <<, >>) on integers (or bools)."""
    name, allow_bool = _BITWISE[symbol]
    a, b = _lift(a), _lift(b)
    a, b = _match_operands(a, b)  # float32 & int32 promotes to float32 and is refused
    _check_bitwise(symbol, allow_bool, a, b)
    return Call(a.dtype, Op.get(name), (a, b))


def bitwise_not(a: Any) -> PrimExpr:
    """`~a`: logical not on a bool, bitwise complement on an integer."""
    a = as_expr(_lift(a))
    if a.dtype.is_bool:
        return Not(a)
    _check_bitwise("~", True, a)
    return Call(a.dtype, Op.get("tir.bitwise_not"), (a,))


def is_const_int(x: Any, value: int | None = None) -> bool:
    """True for an integer constant (equal to `value` when given)."""
    if isinstance(x, int) and not isinstance(x, bool):
        return value is None or x == value
    return isinstance(x, IntImm) and (value is None or x.value == value)


def const_value(x: Any) -> int | float | None:
    """The Python value of a constant expression, or None when it is not constant."""
    if isinstance(x, int | float):
        return x
    if isinstance(x, IntImm | FloatImm):
        return x.value
    return None


def flatten_operands(e: Any, cls: type) -> list[Any]:
    """The operands of a chain of `cls` nodes, left to right: `flatten_operands(a & (b & c),
    And)` is [a, b, c], the conjuncts; anything else is its own single operand."""
    out, stack = [], [e]
    while stack:  # a loop, not recursion: a long chain of guards must not hit the limit
        x = stack.pop()
        if isinstance(x, cls):
            stack += [x.b, x.a]
        else:
            out.append(x)
    return out


# ----------------------------------------------------------------------------- Range(begin, end)
# TVM's constructor (tir/expr.py keeps the node's fields min/extent): positional arguments are
# (begin, end) or (end,); the keywords min=/extent= are the fields, which dataclasses.replace,
# JSON loading and Range.from_min_extent pass.
_UNSET: Any = object()
_range_fields_init = tx._range_fields_init


def _range_init(self, begin=_UNSET, end=None, span=None, *, min=_UNSET, extent=_UNSET):
    # keywords min=/extent= are the fields (dataclasses.replace, JSON loading, from_min_extent);
    # positional arguments are TVM's (begin, end)
    if min is not _UNSET or extent is not _UNSET:
        if begin is not _UNSET or min is _UNSET or extent is _UNSET:
            raise tx.MiniTVMError(
                "Range: give either (begin, end) as TVM does, or both min= and extent="
            )
        _range_fields_init(self, min, extent)
        return
    if begin is _UNSET:
        raise tx.MiniTVMError("Range: give (begin, end) or (end,), e.g. tvm.ir.Range(0, n)")
    if end is None:
        begin, end = 0, begin
    lo = tx.as_expr(begin, like=DataType("int32"))
    hi = tx.as_expr(end, like=lo.dtype)
    zero = isinstance(lo, tx.IntImm) and lo.value == 0
    _range_fields_init(self, lo, hi if zero else binary(tx.Sub, hi, lo))


tx.Range.__init__ = _range_init  # type: ignore[method-assign]
