"""ForceNarrowIndexToInt32: rewrite every int64 index computation of a function to int32.

Loop and block variables, scalar parameters, buffer shapes and strides, constants and casts
all become int32 (a cast between the two index types disappears). A buffer whose elements are
int64 cannot be narrowed and is an error, as is a constant that does not fit in int32.
`T.clz` of an int64 value counts 32 leading bits fewer on the narrowed value, so 32 is added.
"""

from __future__ import annotations

from typing import Any

from ...error import BuildError
from ...ir.dtype import DataType
from ..buffer import Buffer
from ..expr import Add, Call, Cast, IntImm, Op, PrimExpr, Sub
from ..function import PrimFunc
from ..functor import Mutator
from ._pass import prim_func_pass

_I64, _I32 = DataType("int64"), DataType("int32")


class _Narrow(Mutator):
    def visit_PrimExpr(self, e: PrimExpr) -> Any:
        out = self.generic_visit(e)
        return out.replace(dtype=_I32) if getattr(out, "dtype", None) == _I64 else out

    def visit_IntImm(self, imm: IntImm) -> Any:
        if imm.dtype != _I64:
            return imm
        if not -(2**31) <= imm.value < 2**31:
            raise BuildError(
                f"ForceNarrowIndexToInt32: the index constant {imm.value} does not fit in int32"
            )
        return IntImm(_I32, imm.value)

    def visit_Cast(self, cast: Cast) -> Any:
        value = self.visit(cast.value)
        dtype = _I32 if cast.dtype == _I64 else cast.dtype
        if value.dtype == dtype:
            return value
        return cast if value is cast.value and dtype == cast.dtype else Cast(dtype, value)

    def visit_Call(self, call: Call) -> Any:
        out = self.visit_PrimExpr(call)
        if isinstance(call.op, Op) and call.op.name == "tir.clz" and call.args[0].dtype == _I64:
            return Add(Sub(out, IntImm(_I32, 32)), IntImm(_I32, 64))
        return out

    def visit_Buffer(self, buf: Buffer) -> Any:
        if buf.dtype == _I64:
            raise BuildError(
                f"ForceNarrowIndexToInt32: buffer '{buf.name}' holds int64 elements, which "
                "cannot be narrowed; the pass only applies to functions whose data is not int64"
            )
        return self.generic_visit(buf)


def force_narrow_index_to_i32(func: PrimFunc) -> PrimFunc:
    """Every int64 index variable, constant, shape and cast of `func` as int32."""
    return _Narrow().visit(func)


ForceNarrowIndexToInt32 = prim_func_pass(force_narrow_index_to_i32, "ForceNarrowIndexToInt32")
