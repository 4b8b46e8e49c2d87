"""Compute bfloat16, float8 and float4 in float32: loads widen, stores and casts round back.

The code generator holds these types as bits (llvm_lowfloat.py), so before emitting a
function every expression of such a dtype is rewritten to float32: a load `B[i]` becomes
`float32(B[i])`, arithmetic runs on the float32 values, a store into a bfloat16 buffer casts
the result back (one rounding to nearest even), and an explicit cast to bfloat16 keeps its
rounding as `float32(bfloat16(x))`, and `reinterpret` reads or writes the bits themselves.
This is what TVM's BF16 legalization does.
"""

from __future__ import annotations

from .. import tir
from ..error import BuildError
from ..ir.dtype import DataType
from ..ir.node import FrozenDict, Node, field_names
from ..tir.buffer import Buffer
from ..tir.function import PrimFunc
from ..tir.functor import Mutator
from .llvm_lowfloat import F32, F64, is_low_float


def _mentions_low_float(func: PrimFunc) -> bool:
    """Whether an expression or buffer of `func` has a low-float dtype (buffers' shapes are not
    looked into). One pass over the distinct nodes with an explicit stack: with the Visitor's
    dispatch per node the check, which nearly every kernel fails, took ~1% of a serial
    ResNet-18 build."""
    stack: list = [func.body, *func.buffer_map.values()]
    seen: set[int] = set()
    while stack:
        n = stack.pop()
        if isinstance(n, Node):
            if id(n) in seen:
                continue
            seen.add(id(n))
            if isinstance(n, Buffer):
                if is_low_float(n.dtype):
                    return True
                continue
            if isinstance(n, tir.PrimExpr) and is_low_float(n.dtype):
                return True
            stack.extend(getattr(n, name) for name in field_names(type(n)))
        elif isinstance(n, tuple | list):
            stack.extend(n)
        elif isinstance(n, FrozenDict):  # annotations; the Visitor left plain dicts out too
            stack.extend(n.keys())
            stack.extend(n.values())
    return False


def _f32(dtype: DataType) -> DataType:
    return F32.with_lanes(dtype.lanes)


def _widened(e: tir.PrimExpr) -> tir.PrimExpr:
    """A float32 expression whose value is the low-float `e` (a load or a cast)."""
    return tir.Cast(_f32(e.dtype), e)


class _Legalize(Mutator):
    def __init__(self, func_name: str) -> None:
        super().__init__()
        self.func_name = func_name

    def visit_BufferLoad(self, e: tir.BufferLoad) -> tir.PrimExpr:
        out = self.generic_visit(e)
        return _widened(out) if is_low_float(e.dtype) else out

    def visit_BufferStore(self, s: tir.BufferStore) -> tir.Stmt:
        out = self.generic_visit(s)
        if is_low_float(s.buffer.dtype):
            value = self._narrow(out.value, s.buffer.dtype.with_lanes(out.value.dtype.lanes))
            out = out if value is out.value else out.replace(value=value)
        return out

    def visit_Cast(self, e: tir.Cast) -> tir.PrimExpr:
        value = self.visit(e.value)
        if is_low_float(e.value.dtype):
            # a computed low-float value is rounded to its dtype before it converts further
            # (after compute_inline, `float32(x + y)` of bfloat16 operands stands for a
            # bfloat16 intermediate); a load narrows back to itself, so costs nothing
            value = _widened(self._narrow(value, e.value.dtype))
        if is_low_float(e.dtype):
            return _widened(self._narrow(value, e.dtype))
        if value.dtype == e.dtype:
            return value
        return e if value is e.value else tir.Cast(e.dtype, value)

    def visit_Call(self, e: tir.Call) -> tir.PrimExpr:
        if getattr(e.op, "name", None) != "tir.reinterpret":
            return self.visit_PrimExpr(e)
        # reinterpret moves bits: its low-float operand is narrowed back to its bits, and a
        # low-float result keeps its dtype and is widened like a load
        (arg,) = e.args
        value = self.visit(arg)
        if is_low_float(arg.dtype):
            value = self._narrow(value, arg.dtype)
        out = e if value is arg else e.replace(args=(value,))
        return _widened(out) if is_low_float(e.dtype) else out

    def visit_FloatImm(self, e: tir.FloatImm) -> tir.PrimExpr:
        if not is_low_float(e.dtype):
            return e
        # rounded by the code generator from float64, so the constant is rounded once
        return _widened(tir.Cast(e.dtype, tir.FloatImm(F64, e.value)))

    def visit_Var(self, v: tir.Var) -> tir.PrimExpr:
        if is_low_float(v.dtype):
            raise BuildError(
                f"building '{self.func_name}': scalar variable '{v.name}' has dtype {v.dtype}, "
                "which the LLVM code generator only supports in buffers; pass it as float32 "
                "or as a one-element buffer"
            )
        return v

    def visit_PrimExpr(self, e: tir.PrimExpr) -> tir.PrimExpr:
        out = self.generic_visit(e)
        if is_low_float(e.dtype):  # arithmetic, select, broadcast, intrinsics: in float32
            out = out.replace(dtype=_f32(e.dtype))
        return out

    @staticmethod
    def _narrow(value: tir.PrimExpr, dtype: DataType) -> tir.PrimExpr:
        """`value` (legalized) as the low float `dtype`; a widened value of that dtype
        narrows back to itself (exact) instead of a second conversion."""
        if (
            isinstance(value, tir.Cast)
            and value.value.dtype == dtype
            and value.dtype == _f32(dtype)
        ):
            return value.value
        return tir.Cast(dtype, value)


def legalize_low_floats(func: PrimFunc) -> PrimFunc:
    """`func` with bfloat16/float8/float4 arithmetic done in float32 (the same function
    when it has none of these types)."""
    if not _mentions_low_float(func):
        return func
    body = _Legalize(func.attrs.get("global_symbol", "?")).visit(func.body)
    return func if body is func.body else func.replace(body=body)
