"""Run-time checks that turn what would trap or corrupt memory into an error return code.

* Integer `/ // %` (Div, Mod, FloorDiv, FloorMod): a divisor of 0 returns an error code (x86's
  `idiv` raises SIGFPE). A signed INT_MIN / -1, which also traps, is defined as numpy computes
  it: the quotient wraps to INT_MIN, the remainder is 0 (the division runs with divisor 1).
  Constant divisors that are neither 0 nor -1 get neither check: index arithmetic such as
  `i // 8` is emitted exactly as before.
* A load or store whose index depends on data (a loaded value, a scalar argument, an extern
  call, or a variable bound to one of these) is checked against the extent of its param buffer
  or allocation; `A[I[i]]` with a bad `I` returns an error code instead of reading anywhere.
  Indices made of loop variables and shape dims are not checked (lowering proves those).

Both emit `cg.fail_unless(ok, message)`: a branch to `ret k` (FuncInfo["errors"][k - 1] is
the message). Integer division has no vector instruction on x86, so a compare and a
well-predicted branch next to it cost nothing measurable; a divisor that is a loop invariant
(a symbolic split factor) is tested once before the loop (LLVM unswitches the exit).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from llvmlite import ir

from ..error import BuildError
from ..ir.dtype import DataType
from ..tir.expr import Broadcast, BufferLoad, Call, Div, FloorDiv, FloorMod, IntImm, Mod, Var
from ..tir.functor import Visitor
from .llvm_types import I64, cast_value, constant

if TYPE_CHECKING:
    from ..tir.expr import PrimExpr
    from .llvm import CodeGenLLVM

INTEGER_DIVISIONS = (Div, Mod, FloorDiv, FloorMod)
_SHOWN = 120  # characters of an expression quoted in an error message


def _constant(e: PrimExpr) -> int | None:
    """The value of an integer constant (or a splat of one), else None."""
    if isinstance(e, Broadcast):
        e = e.value
    return e.value if isinstance(e, IntImm) else None


def _show(e: PrimExpr) -> str:
    text = str(e)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _all_lanes(b: ir.IRBuilder, cond: ir.Value) -> ir.Value:
    """An i1 that is true when every lane of the (vector) i1 `cond` is."""
    if not isinstance(cond.type, ir.VectorType):
        return cond
    bits = b.bitcast(cond, ir.IntType(cond.type.count))
    return b.icmp_unsigned("==", bits, ir.Constant(bits.type, -1))


def safe_divisor(cg: CodeGenLLVM, e, x: ir.Value, y: ir.Value) -> ir.Value:
    """Check the divisor `y` of the integer division `e` (= x op y); return the divisor to use."""
    dtype: DataType = e.a.dtype
    divisor, dividend = _constant(e.b), _constant(e.a)
    b = cg.builder
    if divisor is None or divisor == 0:
        zero = constant(e.b.dtype, 0)
        nonzero = _all_lanes(b, b.icmp_unsigned("!=", y, zero))
        cg.fail_unless(
            nonzero,
            f"integer division by zero in '{cg.func_name}'{cg.where}: `{_show(e)}` has a "
            "divisor that is 0; numpy would give 0 with a warning, here it is an error: "
            "check the divisor data (or the split factor) before calling",
        )
    int_min = -(2 ** (dtype.bits - 1))
    if dtype.is_int and divisor in (None, -1) and dividend in (None, int_min) and not (
        isinstance(e.b, Var) and e.b in cg.shape_vars  # a shape dim is never -1
    ):
        overflows = b.and_(
            b.icmp_signed("==", x, constant(dtype, int_min)),
            b.icmp_signed("==", y, constant(e.b.dtype, -1)),
        )
        y = b.select(overflows, constant(e.b.dtype, 1), y)  # INT_MIN / 1: wraps like numpy
    return y


# --------------------------------------------------------------------------- memory indices


class DataDependence(Visitor):
    """Finds whether an index expression depends on values the compiler cannot bound: a load,
    an extern call's result, or a variable in `data_ids` (ids of Vars bound to such values).
    Shared by the LLVM and OpenCL code generators' index checks."""

    def __init__(self, data_ids: set[int]) -> None:
        self.data_ids = data_ids
        self.found = False

    def visit(self, n) -> None:
        if not self.found:
            super().visit(n)

    def visit_BufferLoad(self, n: BufferLoad) -> None:
        self.found = True

    def visit_Call(self, n: Call) -> None:
        if isinstance(n.op, str):  # an extern function's result
            self.found = True
        else:
            self.generic_visit(n)

    def visit_Var(self, n: Var) -> None:
        if id(n) in self.data_ids:
            self.found = True


def depends_on_data(cg: CodeGenLLVM, e: PrimExpr) -> bool:
    """Whether `e` reads memory, a scalar argument or a variable bound to such a value."""
    v = DataDependence({id(x) for x in cg.data_vars})
    v.visit(e)
    return v.found


def check_index(
    cg: CodeGenLLVM, buf, index: PrimExpr, values: list[tuple[ir.Value, DataType]], access: str
) -> None:
    """Fail unless every index value (scalar or vector, with its dtype) is in [0, extent) of
    the memory behind `buf`; emitted only for indices that depend on data."""
    if not depends_on_data(cg, index):
        return
    extent, shown = _extent(cg, buf)
    b = cg.builder
    ok = None
    for value, dtype in values:
        wide = cast_value(b, value, dtype, DataType("int64").with_lanes(dtype.lanes))
        bound = extent if dtype.lanes == 1 else cg.splat(extent, dtype.lanes)
        inside = _all_lanes(b, b.icmp_unsigned("<", wide, bound))  # negative: huge unsigned
        ok = inside if ok is None else b.and_(ok, inside)
    cg.fail_unless(
        ok,
        f"index out of bounds {access} '{buf.name}' in '{cg.func_name}': the index "
        f"`{_show(index)}` depends on data and fell outside [0, {shown}); check the index "
        "data (e.g. a gather's indices) before calling",
    )


def _extent(cg: CodeGenLLVM, buf) -> tuple[ir.Value, str]:
    """The number of `buf`-typed elements in the param or allocation behind `buf.data` (i64)."""
    known = cg.extents.get(buf.data)
    if known is None:
        raise BuildError(
            f"building '{cg.func_name}': buffer '{buf.name}' is indexed with data-dependent "
            "values, but its memory is neither a parameter nor an allocation, so the index "
            "cannot be checked; index a parameter or an allocated buffer"
        )
    dims, dtype = known
    b = cg.builder
    total = ir.Constant(I64, 1)
    for d in dims:
        total = b.mul(total, cast_value(b, cg.expr(d), d.dtype, DataType("int64")))
    access = buf.dtype.element_of()
    if access.bits != dtype.element_of().bits:  # a view of the memory with another element size
        total = b.udiv(b.mul(total, ir.Constant(I64, dtype.bytes)), ir.Constant(I64, access.bytes))
    shown = " * ".join(str(d) for d in dims) if dims else "1"
    if all(isinstance(d, IntImm) for d in dims):
        shown = str(math.prod(d.value for d in dims))
    return total, shown
