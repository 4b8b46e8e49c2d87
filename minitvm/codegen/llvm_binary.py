"""The table from (binary node class, dtype kind) to the llvmlite builder calls that emit it.

Integer Div/Mod truncate (C); FloorDiv/FloorMod round toward -inf (numpy's // and %).
Float Min/Max are `llvm.minimum`/`llvm.maximum`: NaN propagates, as in np.minimum/np.maximum.
Float `!=` is unordered (NaN != x is true); the other float comparisons are ordered.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from .. import tir
from .llvm_intrinsics import declare_intrinsic

_FP_FLAGS = ("contract",)  # FMA fusion only: results stay within rounding of numpy's


def _floor_div_int(b: ir.IRBuilder, x: ir.Value, y: ir.Value, name: str) -> ir.Value:
    """Signed floor division: truncate, then step down when the remainder's sign differs."""
    q, r = b.sdiv(x, y), b.srem(x, y)
    return b.sub(q, b.zext(_floor_adjust(b, r, y), q.type), name)


def _floor_mod_int(b: ir.IRBuilder, x: ir.Value, y: ir.Value, name: str) -> ir.Value:
    r = b.srem(x, y)
    return b.select(_floor_adjust(b, r, y), b.add(r, y), r, name)


def _floor_adjust(b: ir.IRBuilder, r: ir.Value, y: ir.Value) -> ir.Value:
    zero = ir.Constant(r.type, None)
    nonzero = b.icmp_signed("!=", r, zero)
    signs_differ = b.xor(b.icmp_signed("<", r, zero), b.icmp_signed("<", y, zero))
    return b.and_(nonzero, signs_differ)


def _floor_div_float(b: ir.IRBuilder, x: ir.Value, y: ir.Value, name: str) -> ir.Value:
    q = b.fdiv(x, y)
    return b.call(declare_intrinsic(b.module, "llvm.floor", q.type, [q.type]), [q], name)


def _floor_mod_float(b: ir.IRBuilder, x: ir.Value, y: ir.Value, name: str) -> ir.Value:
    """numpy's float remainder: fmod, moved into the divisor's sign."""
    r = b.frem(x, y)
    zero = ir.Constant(r.type, None)
    nonzero = b.fcmp_ordered("!=", r, zero)
    signs_differ = b.xor(b.fcmp_ordered("<", r, zero), b.fcmp_ordered("<", y, zero))
    return b.select(b.and_(nonzero, signs_differ), b.fadd(r, y), r, name)


def _fminmax(intrinsic: str):
    def emit(b: ir.IRBuilder, x: ir.Value, y: ir.Value, name: str) -> ir.Value:
        return b.call(
            declare_intrinsic(b.module, intrinsic, x.type, [x.type, x.type]), [x, y], name
        )

    return emit


def _select_cmp(compare: Callable, op: str):
    def emit(b: ir.IRBuilder, x: ir.Value, y: ir.Value, name: str) -> ir.Value:
        return b.select(compare(b, op, x, y), x, y, name)

    return emit


def _fp(method: Callable):
    return lambda b, x, y, name: method(b, x, y, name, flags=_FP_FLAGS)


def _cmp(compare: Callable, op: str):
    return lambda b, x, y, name: compare(b, op, x, y, name)


_B = ir.IRBuilder
_ICMP = {"int": _B.icmp_signed, "uint": _B.icmp_unsigned, "bool": _B.icmp_unsigned}
_CMP_OPS = {tir.EQ: "==", tir.NE: "!=", tir.LT: "<", tir.LE: "<=", tir.GT: ">", tir.GE: ">="}

BinaryRule = Callable[[ir.IRBuilder, ir.Value, ir.Value, str], ir.Value]
BINARY: dict[tuple[type, str], BinaryRule] = {
    (tir.Add, "float"): _fp(_B.fadd),
    (tir.Add, "int"): _B.add,
    (tir.Add, "uint"): _B.add,
    (tir.Sub, "float"): _fp(_B.fsub),
    (tir.Sub, "int"): _B.sub,
    (tir.Sub, "uint"): _B.sub,
    (tir.Mul, "float"): _fp(_B.fmul),
    (tir.Mul, "int"): _B.mul,
    (tir.Mul, "uint"): _B.mul,
    (tir.Div, "float"): _B.fdiv,
    (tir.Div, "int"): _B.sdiv,
    (tir.Div, "uint"): _B.udiv,  # ints: C truncation
    (tir.Mod, "float"): _B.frem,
    (tir.Mod, "int"): _B.srem,
    (tir.Mod, "uint"): _B.urem,
    (tir.FloorDiv, "float"): _floor_div_float,
    (tir.FloorDiv, "int"): _floor_div_int,
    (tir.FloorDiv, "uint"): _B.udiv,
    (tir.FloorMod, "float"): _floor_mod_float,
    (tir.FloorMod, "int"): _floor_mod_int,
    (tir.FloorMod, "uint"): _B.urem,
    (tir.Min, "float"): _fminmax("llvm.minimum"),
    (tir.Max, "float"): _fminmax("llvm.maximum"),
    (tir.Min, "int"): _select_cmp(_B.icmp_signed, "<"),
    (tir.Max, "int"): _select_cmp(_B.icmp_signed, ">"),
    (tir.Min, "uint"): _select_cmp(_B.icmp_unsigned, "<"),
    (tir.Max, "uint"): _select_cmp(_B.icmp_unsigned, ">"),
    (tir.Min, "bool"): _B.and_,
    (tir.Max, "bool"): _B.or_,
    (tir.And, "bool"): _B.and_,
    (tir.Or, "bool"): _B.or_,
    **{
        (cls, "float"): _cmp(_B.fcmp_ordered, op)
        for cls, op in _CMP_OPS.items()
        if cls is not tir.NE
    },
    (tir.NE, "float"): _cmp(_B.fcmp_unordered, "!="),  # NaN != x is true, as in numpy
    **{(cls, k): _cmp(_ICMP[k], op) for cls, op in _CMP_OPS.items() for k in _ICMP},
}


# ---------------------------------------------------------------- proven no-wrap (nsw) flags
# Integer ranges of scalar values, as (lo, hi), from loop bounds and constants. An add, sub or
# mul whose result range provably fits its type gets `nsw`: a fact, not an assumption (numpy's
# wrapping arithmetic is kept wherever wrapping could happen). It lets LLVM widen i32 index
# arithmetic to the i64 of addresses once per loop instead of re-deriving it per access
# (IndVarSimplify spent 80% of a blocked conv's optimisation time on i32 indices without it).
Range = tuple[int, int]


def _corners(a: Range, b: Range) -> Range:
    products = [x * y for x in a for y in b]
    return min(products), max(products)


def _floor_div_range(a: Range, b: Range) -> Range | None:
    if b[0] != b[1] or b[0] <= 0:
        return None  # only a positive constant divisor
    return a[0] // b[0], a[1] // b[0]


def _floor_mod_range(a: Range, b: Range) -> Range | None:
    if b[0] != b[1] or b[0] <= 0:
        return None
    if 0 <= a[0] and a[1] < b[0]:
        return a
    return 0, b[0] - 1


INT_RANGES: dict[type, Callable[[Range, Range], Range | None]] = {
    tir.Add: lambda a, b: (a[0] + b[0], a[1] + b[1]),
    tir.Sub: lambda a, b: (a[0] - b[1], a[1] - b[0]),
    tir.Mul: _corners,
    tir.Min: lambda a, b: (min(a[0], b[0]), min(a[1], b[1])),
    tir.Max: lambda a, b: (max(a[0], b[0]), max(a[1], b[1])),
    tir.FloorDiv: _floor_div_range,
    tir.FloorMod: _floor_mod_range,
}
NO_SIGNED_WRAP_FLAGGED = (tir.Add, tir.Sub, tir.Mul)  # the instructions that carry an nsw flag
