"""Run-time checks in OpenCL kernels: the CPU build's guarantees (llvm_checks.py) on the device.

A kernel cannot return an error code, so a failed check writes its code into an error flag, a
`__global int*` parameter the runtime appends to the kernel's arguments (first failure wins:
`atomic_cmpxchg`); the host reads the flag after the launch and raises the CPU build's error
(RuntimeError_ "calling 'f': <message>", FuncInfo-style messages in the kernel's info["errors"]).

* Integer `/ // %` whose divisor is not a constant other than 0 and -1 goes through a helper
  that flags a zero divisor (and divides by 1 instead) and wraps INT_MIN / -1 as numpy does.
* A load or store whose index depends on data (a loaded value, a data scalar argument, an
  extern call or a variable bound to one) is checked against the memory behind the buffer: a
  kernel buffer parameter's element count arrives as an extra `long` argument the runtime
  computes from the array it passes; a shared/local allocation has a constant size. A failed
  load yields 0 and a failed store is skipped.

The extra parameters are listed in the kernel's info["params"] after the TIR parameters:
{"kind": "error_flag"} and {"kind": "extent", "of": k, "elem_bytes": b} (the extent of
parameter k in elements of b bytes).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..error import BuildError
from ..ir.dtype import DataType
from ..tir.expr import Broadcast, Div, FloorDiv, FloorMod, IntImm, Mod, Var
from .llvm_checks import DataDependence

if TYPE_CHECKING:
    from ..tir.expr import PrimExpr
    from .opencl import CodeGenOpenCL

ERROR_FLAG = "minitvm_error"
_SHOWN = 120  # characters of an expression quoted in an error message
_OP_NAMES = {Div: "div", Mod: "mod", FloorDiv: "floordiv", FloorMod: "floormod"}
_MASKS = {8: "char", 16: "short", 32: "int", 64: "long"}
# helpers every checking kernel shares: set the flag (first failure wins), test a range
_COMMON = {
    "minitvm_fail": (
        "inline void minitvm_fail(__global int* err, int code) {\n"
        "  atomic_cmpxchg((volatile __global int*)err, 0, code);\n}"
    ),
    "minitvm_in_range": (
        "inline bool minitvm_in_range(long first, long count, long extent, "
        "__global int* err, int code) {\n"
        "  if (first >= 0 && first <= extent - count) return true;\n"
        "  minitvm_fail(err, code);\n  return false;\n}"
    ),
}


def _show(e: PrimExpr) -> str:
    text = str(e)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _constant(e: PrimExpr) -> int | None:
    if isinstance(e, Broadcast):
        e = e.value
    return e.value if isinstance(e, IntImm) else None


class KernelChecks:
    """The checks of one kernel: their messages, data-dependent vars and extra parameters."""

    def __init__(self, cg: CodeGenOpenCL, data_params: set[int] | None) -> None:
        self.cg = cg
        self.errors: list[str] = []
        self.data_vars: set[int] = set()
        self.buffer_params: dict[int, tuple[int, DataType]] = {}  # buffer var -> (position, dtype)
        self.constant_extents: dict[int, int] = {}  # shared/local allocation -> elements
        self.extent_names: dict[int, str] = {}  # param position -> C name of its extent
        self.flag = ""
        self.data_params = data_params

    def add_param(self, position: int, p: Var, dtype: DataType | None) -> None:
        """Note a kernel parameter: a buffer (its storage dtype) or a scalar."""
        if dtype is not None:
            self.buffer_params[id(p)] = (position, dtype)
        elif self.data_params is None or position in self.data_params:
            self.data_vars.add(id(p))

    def depends_on_data(self, e: PrimExpr) -> bool:
        v = DataDependence(self.data_vars)
        v.visit(e)
        return v.found

    def mark(self, var: Var, *values: PrimExpr) -> None:
        """`var` (a let or loop variable) is data when a value it is bound to is."""
        if any(self.depends_on_data(v) for v in values):
            self.data_vars.add(id(var))

    def _code(self, message: str) -> str:
        if not self.flag:
            self.flag = self.cg.names(ERROR_FLAG)
        for name, text in _COMMON.items():
            self.cg.helpers.setdefault(name, text)
        self.errors.append(message)
        return f"{self.flag}, {len(self.errors)}"

    # ------------------------------------------------------------------ divisions
    def division(self, e, a: str, b: str) -> str | None:
        """The checked text of integer division `e` (= a op b), None when it needs no check."""
        divisor = _constant(e.b)
        signed = e.dtype.is_int
        if divisor is not None and divisor != 0 and not (signed and divisor == -1):
            return None
        where = self.cg.func_name
        code = self._code(
            f"integer division by zero in '{where}': `{_show(e)}` has a divisor that is 0; "
            "numpy would give 0 with a warning, here it is an error: check the divisor data "
            "(or the split factor) before calling"
        )
        return f"{self._division_helper(type(e), e.dtype)}({a}, {b}, {code})"

    def _division_helper(self, op: type, dtype: DataType) -> str:
        from .opencl import cl_type

        t = cl_type(dtype)
        name = f"minitvm_checked_{_OP_NAMES[op]}_{t}"
        if name not in self.cg.helpers:
            make = _scalar_division if dtype.lanes == 1 else _vector_division
            self.cg.helpers[name] = make(name, op, dtype, t)
        return name

    # ------------------------------------------------------------------ memory indices
    def guard(self, buf, index: PrimExpr, first: str, count: int, access: str) -> str | None:
        """The condition that elements [first, first + count) of `buf`'s memory exist (it
        flags a failure), or None when the index does not depend on data."""
        if not self.depends_on_data(index):
            return None
        extent, shown = self._extent(buf)
        code = self._code(
            f"index out of bounds {access} '{buf.name}' in '{self.cg.func_name}': the index "
            f"`{_show(index)}` depends on data and fell outside [0, {shown}); check the index "
            "data (e.g. a gather's indices) before calling"
        )
        return f"minitvm_in_range((long)({first}), {count}, {extent}, {code})"

    def _extent(self, buf) -> tuple[str, str]:
        """C text of the number of elements behind `buf.data`, and how a message shows it."""
        key = id(buf.data)
        if key in self.constant_extents:
            n = self.constant_extents[key]
            return f"{n}L", str(n)
        if key not in self.buffer_params:
            raise BuildError(
                f"building kernel '{self.cg.func_name}': buffer '{buf.name}' is indexed with "
                "data-dependent values, but its memory is neither a kernel parameter nor an "
                "allocation, so the index cannot be checked; index a parameter or an allocation"
            )
        position, _ = self.buffer_params[key]
        if position not in self.extent_names:
            self.extent_names[position] = self.cg.names(f"{buf.data.name}_extent")
        name = self.extent_names[position]
        dims = getattr(buf, "shape", ())
        if dims and all(isinstance(d, IntImm) for d in dims):  # the flat view's size
            return name, str(math.prod(d.value for d in dims))
        return name, f"the size of '{buf.data.name}'"

    def extra_params(self) -> tuple[list[str], list[dict]]:
        """C declarations and info entries of the parameters the checks added."""
        decls, infos = [], []
        for position, name in sorted(self.extent_names.items()):
            dtype = next(d for p, d in self.buffer_params.values() if p == position)
            decls.append(f"long {name}")
            infos.append({"name": name, "kind": "extent", "dtype": "int64", "of": position,
                          "elem_bytes": 1 if dtype.is_bool else dtype.bytes})  # fmt: skip
        if self.flag:
            decls.append(f"__global int* {self.flag}")
            infos.append({"name": self.flag, "kind": "error_flag", "dtype": "int32"})
        return decls, infos


def _scalar_division(name: str, op: type, dtype: DataType, t: str) -> str:
    """A helper dividing scalars: a zero divisor flags and gives 0; INT_MIN / -1 wraps."""
    lines = [f"inline {t} {name}({t} a, {t} b, __global int* err, int code) {{",
             "  if (b == 0) { minitvm_fail(err, code); return 0; }"]  # fmt: skip
    signed = dtype.is_int
    d = "d" if signed else "b"
    if signed:  # x / -1 is -x, which wraps for INT_MIN (as numpy): divide by 1 and negate
        lines.append(f"  {t} d = b == -1 ? 1 : b;")
    lines.append(f"  {t} q = a / {d}, r = a % {d};")
    floor_fix = f"r != 0 && ((r < 0) != ({d} < 0))"
    if op is FloorDiv and signed:
        lines.append(f"  q = ({floor_fix}) ? q - 1 : q;")
    if op is FloorMod and signed:
        lines.append(f"  r = ({floor_fix}) ? r + {d} : r;")
    if op in (Div, FloorDiv):
        result = f"b == -1 ? ({t})(0 - (u{t.lstrip('u')})a) : q" if signed else "q"
    else:
        result = "r"
    lines.append(f"  return {result};\n}}")
    return "\n".join(lines)


def _vector_division(name: str, op: type, dtype: DataType, t: str) -> str:
    """The lane-wise helper: any zero lane flags; its lanes divide by 1."""
    lanes = dtype.lanes
    mask = f"{_MASKS[dtype.bits]}{lanes}"
    unsigned = t if dtype.is_uint else f"u{t}"
    lines = [f"inline {t} {name}({t} a, {t} b, __global int* err, int code) {{",
             f"  {mask} zero = ({mask})(b == ({t})(0));",
             "  if (any(zero)) minitvm_fail(err, code);"]  # fmt: skip
    signed = dtype.is_int
    if signed:
        lines.append(f"  {mask} minus1 = b == ({t})(-1);")
        lines.append(f"  {t} d = select(b, ({t})(1), zero | minus1);")
    else:
        lines.append(f"  {t} d = select(b, ({t})(1), zero);")
    lines.append(f"  {t} q = a / d, r = a % d;")
    if signed:
        fix = "(r != 0) & ((r < 0) != (d < 0))"
        if op is FloorDiv:
            lines.append(f"  q = select(q, q - 1, {fix});")
        if op is FloorMod:
            lines.append(f"  r = select(r, r + d, {fix});")
        if op in (Div, FloorDiv):
            lines.append(f"  q = select(q, as_{t}(({unsigned})(0) - as_{unsigned}(a)), minus1);")
    lines.append(f"  return {'q' if op in (Div, FloorDiv) else 'r'};\n}}")
    return "\n".join(lines)
