"""The table from (binary node class, dtype kind) to the llvmlite builder calls that emit it.

Integer Div/Mod truncate (C); FloorDiv/FloorMod round toward -inf (numpy's // and %).
Float Min/Max are `llvm.minimum`/`llvm.maximum`: NaN propagates, as in np.minimum/np.maximum.
Float `!=` is unordered (NaN != x is true); the other float comparisons are ordered.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from ..tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Div,
    FloorDiv,
    FloorMod,
    Max,
    Min,
    Mod,
    Mul,
    Or,
    Sub,
)
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
_CMP_OPS = {EQ: "==", NE: "!=", LT: "<", LE: "<=", GT: ">", GE: ">="}

BinaryRule = Callable[[ir.IRBuilder, ir.Value, ir.Value, str], ir.Value]
BINARY: dict[tuple[type, str], BinaryRule] = {
    (Add, "float"): _fp(_B.fadd),
    (Add, "int"): _B.add,
    (Add, "uint"): _B.add,
    (Sub, "float"): _fp(_B.fsub),
    (Sub, "int"): _B.sub,
    (Sub, "uint"): _B.sub,
    (Mul, "float"): _fp(_B.fmul),
    (Mul, "int"): _B.mul,
    (Mul, "uint"): _B.mul,
    (Div, "float"): _B.fdiv,
    (Div, "int"): _B.sdiv,
    (Div, "uint"): _B.udiv,  # ints: C truncation
    (Mod, "float"): _B.frem,
    (Mod, "int"): _B.srem,
    (Mod, "uint"): _B.urem,
    (FloorDiv, "float"): _floor_div_float,
    (FloorDiv, "int"): _floor_div_int,
    (FloorDiv, "uint"): _B.udiv,
    (FloorMod, "float"): _floor_mod_float,
    (FloorMod, "int"): _floor_mod_int,
    (FloorMod, "uint"): _B.urem,
    (Min, "float"): _fminmax("llvm.minimum"),
    (Max, "float"): _fminmax("llvm.maximum"),
    (Min, "int"): _select_cmp(_B.icmp_signed, "<"),
    (Max, "int"): _select_cmp(_B.icmp_signed, ">"),
    (Min, "uint"): _select_cmp(_B.icmp_unsigned, "<"),
    (Max, "uint"): _select_cmp(_B.icmp_unsigned, ">"),
    (Min, "bool"): _B.and_,
    (Max, "bool"): _B.or_,
    (And, "bool"): _B.and_,
    (Or, "bool"): _B.or_,
    **{(cls, "float"): _cmp(_B.fcmp_ordered, op) for cls, op in _CMP_OPS.items() if cls is not NE},
    (NE, "float"): _cmp(_B.fcmp_unordered, "!="),  # NaN != x is true, as in numpy
    **{(cls, k): _cmp(_ICMP[k], op) for cls, op in _CMP_OPS.items() for k in _ICMP},
}
