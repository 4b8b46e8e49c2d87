"""OpenCL C source from device-kernel PrimFuncs (the SplitHostDevice form of docs/gpu.md).

A kernel's thread scopes (`AttrStmt(IterVar(.., "threadIdx.x"), "thread_extent", ..)`) bind
their variable to get_group_id/get_local_id; Allocates in scope "shared" become __local
arrays at kernel scope (OpenCL allows them nowhere else), "local" ones private arrays;
`tvm_storage_sync("shared")` is a work-group barrier. Expressions are printed through tables
keyed by node class; integer floordiv/floormod use helpers with Python's rounding.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from .. import tir
from ..error import BuildError
from ..ir.dtype import DataType
from ..ir.node import by_class
from ..tir.function import PrimFunc
from ..tir.functor import Visitor
from ..tir.names import ATTR_KERNEL_LAUNCH_PARAMS, ATTR_NOALIAS, TVM_STORAGE_SYNC, is_call
from .opencl_checks import KernelChecks

# thread tag -> (OpenCL query, dimension)
THREAD_QUERIES = {
    f"{scope}.{axis}": (query, dim)
    for scope, query in (("blockIdx", "get_group_id"), ("threadIdx", "get_local_id"))
    for dim, axis in enumerate("xyz")
}
_SCALAR_TYPES = {
    "float16": "half", "float32": "float", "float64": "double",
    "int8": "char", "int16": "short", "int32": "int", "int64": "long",
    "uint8": "uchar", "uint16": "ushort", "uint32": "uint", "uint64": "ulong", "bool": "bool",
}  # fmt: skip
_VECTOR_LANES = (2, 3, 4, 8, 16)
# integer literal suffix by dtype
_INT_SUFFIX = {"int64": "L", "uint32": "u", "uint64": "UL"}
_KEYWORD_TEXT = """
    auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch
    typedef union unsigned void volatile while bool half uchar ushort uint ulong kernel
    global local private constant __kernel __global __local __private __constant read_only
    write_only image2d_t image3d_t sampler_t event_t size_t ptrdiff_t intptr_t uintptr_t
    true false min max exp log sqrt select barrier
"""
_KEYWORDS = frozenset(_KEYWORD_TEXT.split())
# comparison node -> its C operator (the host launcher's shape checks print them too)
C_COMPARISONS = {tir.EQ: "==", tir.NE: "!=", tir.LT: "<", tir.LE: "<=", tir.GT: ">", tir.GE: ">="}
_BINARY_SYMBOL = {tir.Add: "+", tir.Sub: "-", tir.Mul: "*", **C_COMPARISONS,
                  tir.And: "&&", tir.Or: "||"}  # fmt: skip
# tir intrinsic -> OpenCL builtin of the same meaning (floats)
_MATH = {
    "exp": "exp", "exp2": "exp2", "exp10": "exp10", "log": "log", "log2": "log2",
    "log10": "log10", "log1p": "log1p", "sqrt": "sqrt", "rsqrt": "rsqrt", "tanh": "tanh",
    "fabs": "fabs", "floor": "floor", "ceil": "ceil", "round": "round", "nearbyint": "rint",
    "trunc": "trunc", "erf": "erf", "sin": "sin", "cos": "cos", "tan": "tan", "sinh": "sinh",
    "cosh": "cosh", "asin": "asin", "acos": "acos", "atan": "atan", "atan2": "atan2",
    "pow": "pow", "fmod": "fmod", "fma": "fma", "copysign": "copysign", "isnan": "isnan",
    "isinf": "isinf", "isfinite": "isfinite", "hypot": "hypot", "acosh": "acosh",
    "asinh": "asinh", "atanh": "atanh", "nextafter": "nextafter", "ldexp": "ldexp",
    "popcount": "popcount",
}  # fmt: skip
_BITWISE = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^", "shift_left": "<<",
            "shift_right": ">>"}  # fmt: skip
_FENCES = {"shared": "CLK_LOCAL_MEM_FENCE", "shared.dyn": "CLK_LOCAL_MEM_FENCE",
           "global": "CLK_GLOBAL_MEM_FENCE",
           "global.shared": "CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE"}  # fmt: skip


def cl_type(dtype: DataType, what: str = "") -> str:
    """The OpenCL C type of a tir dtype (vectors as floatN; a bool vector is an intN mask)."""
    base = _SCALAR_TYPES.get(str(dtype.element_of()))
    if base is None or (dtype.lanes > 1 and dtype.lanes not in _VECTOR_LANES):
        raise BuildError(f"OpenCL has no type for dtype {dtype}{what}")
    if dtype.lanes == 1:
        return base
    return f"int{dtype.lanes}" if dtype.is_bool else f"{base}{dtype.lanes}"


# OpenCL C has no bool vectors: a vector comparison gives a signed integer vector of its
# operands' element width, -1 where true and 0 where false, and select() tests the top bit of
# a mask of its values' width. A tir bool vector is therefore kept as an intN mask of -1/0
# (comparisons of other widths are converted to it), and converted to the values' width
# where select() takes it.
_MASK_OF_WIDTH = {8: "char", 16: "short", 32: "int", 64: "long"}


def _c_bits(dtype: DataType) -> int:
    """Bits of one element as OpenCL C holds it (a bool vector lane is an int)."""
    return 32 if dtype.is_bool else dtype.bits


def _storage_type(dtype: DataType) -> str:
    """Element type of memory: bools are stored as uchar (OpenCL forbids bool in buffers)."""
    return "uchar" if dtype.is_bool else cl_type(dtype)


def storage_scope(var: tir.Var, annotations=None) -> str:
    """A buffer var's scope: its pointer annotation's, else the Allocate's "storage_scope"."""
    annotation = getattr(var, "type_annotation", None)
    scope = getattr(annotation, "storage_scope", None)
    if not scope and annotations is not None:
        scope = annotations.get("storage_scope")
    return scope or "global"


def constant_size(s: tir.Allocate, func_name: str, scope: str) -> int:
    """The element count of a kernel's allocation: GPU shared/local memory is sized at build
    time, so every extent must be a constant."""
    size = 1
    for e in s.extents:
        if not isinstance(e, tir.IntImm):
            raise BuildError(
                f"building kernel '{func_name}': allocation '{s.buffer_var.name}' "
                f"({scope}) has extent `{e}` unknown at build time; GPU kernels need "
                "constant-size shared/local buffers"
            )
        size *= e.value
    return size


class _Names:
    """A C identifier per variable (by identity): sanitized, not a keyword, unique."""

    def __init__(self) -> None:
        self.by_var: dict[int, str] = {}
        self.taken: set[str] = set()

    def __call__(self, var: tir.Var | str) -> str:
        key = id(var)
        if key not in self.by_var:
            raw = var if isinstance(var, str) else var.name
            name = re.sub(r"\W", "_", raw, flags=re.ASCII) or "v"
            if name[0].isdigit() or name in _KEYWORDS or name.startswith("__"):
                name = "v_" + name
            base, k = name, 0
            while name in self.taken:
                k += 1
                name = f"{base}_{k}"
            self.taken.add(name)
            self.by_var[key] = name
        return self.by_var[key]


class _Uses(Visitor):
    """The dtype of memory each buffer var is accessed as (for untyped handle params)."""

    def __init__(self) -> None:
        self.dtypes: dict[int, DataType] = {}

    def visit_BufferLoad(self, n: tir.BufferLoad) -> None:
        self.dtypes.setdefault(id(n.buffer.data), n.buffer.dtype)
        self.generic_visit(n)

    def visit_BufferStore(self, n: tir.BufferStore) -> None:
        self.dtypes.setdefault(id(n.buffer.data), n.buffer.dtype)
        self.generic_visit(n)


def param_dtype(p: tir.Var, uses: dict) -> DataType:
    """Element dtype of a handle param: its pointer annotation, else how the body reads it."""
    annotation = getattr(p, "type_annotation", None)
    element = getattr(annotation, "element_type", None)
    dtype = getattr(element, "dtype", None)
    if dtype is not None:
        return DataType(dtype)
    return uses.get(id(p), DataType("uint8"))


class CodeGenOpenCL:
    """Prints one kernel as OpenCL C; `helpers`/`extensions` collect what the file needs."""

    def __init__(self, helpers: dict[str, str], extensions: set[str],
                 data_params: set[int] | None = None) -> None:  # fmt: skip
        self.helpers = helpers
        self.extensions = extensions
        self.names = _Names()
        self.lines: list[str] = []
        self.indent = 1
        self.func_name = ""
        self.kernel_scope: list[str] = []  # __local arrays, declared at kernel scope
        self.nonneg: set[int] = set()  # vars known >= 0: thread indices, loops from >= 0
        self.shared_bytes = 0
        # run-time checks; data_params: positions of scalar params holding data (None: all)
        self.checks = KernelChecks(self, data_params)

    # ------------------------------------------------------------------ kernel
    def kernel(self, func: PrimFunc) -> tuple[str, dict]:
        name = func.attrs.get("global_symbol")
        if not name:
            raise BuildError("a device kernel PrimFunc has no attrs['global_symbol']")
        self.func_name = name
        uses = _Uses()
        uses.visit(func.body)
        restrict = " restrict" if func.attrs.get(ATTR_NOALIAS, True) else ""
        params, infos = [], []
        for k, p in enumerate(func.params):
            self.checks.add_param(k, p, param_dtype(p, uses.dtypes) if p.dtype.is_handle else None)
            if p.dtype.is_handle:
                dtype = param_dtype(p, uses.dtypes)
                self._note_dtype(dtype)
                params.append(f"__global {_storage_type(dtype)}*{restrict} {self.names(p)}")
                infos.append({"name": p.name, "kind": "buffer", "dtype": str(dtype)})
            else:
                self._note_dtype(p.dtype)
                params.append(f"{cl_type(p.dtype, self._where(p.name))} {self.names(p)}")
                infos.append({"name": p.name, "kind": "scalar", "dtype": str(p.dtype)})
        self.stmt(func.body)
        extra_decls, extra_infos = self.checks.extra_params()
        params, infos = params + extra_decls, infos + extra_infos
        body = [f"  {line}" for line in self.kernel_scope] + self.lines
        symbol = self.names(name)
        if symbol != name:
            raise BuildError(
                f"kernel symbol '{name}' is not a valid OpenCL identifier; name kernels with "
                "letters, digits and '_'"
            )
        source = "\n".join([f"__kernel void {symbol}({', '.join(params)}) {{", *body, "}"])
        launch = list(func.attrs.get(ATTR_KERNEL_LAUNCH_PARAMS, ()))
        info = {"name": name, "params": infos, "launch_params": launch,
                "shared_bytes": self.shared_bytes, "errors": self.checks.errors}  # fmt: skip
        return source, info

    def _where(self, what: str) -> str:
        return f" (in kernel '{self.func_name}', {what})"

    def _note_dtype(self, dtype: DataType) -> None:
        if dtype.element_of() == DataType("float64"):
            self.extensions.add("cl_khr_fp64")
        elif dtype.element_of() == DataType("float16"):
            self.extensions.add("cl_khr_fp16")

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.indent + line)

    def block(self, s: tir.Stmt) -> None:
        self.indent += 1
        self.stmt(s)
        self.indent -= 1

    # ------------------------------------------------------------------ statements
    def stmt(self, s: tir.Stmt) -> None:
        rule = _STMT.get(type(s))
        if rule is None:
            raise BuildError(
                f"building kernel '{self.func_name}': the OpenCL code generator cannot emit "
                f"{type(s).__name__} statements; lower the function first"
            )
        rule(self, s)

    def _seq(self, s: tir.SeqStmt) -> None:
        for x in s.seq:
            self.stmt(x)

    def _store(self, s: tir.BufferStore) -> None:
        (index,) = _flat(self, s.buffer, s.indices)
        target = self.names(s.buffer.data)
        value = self.expr(s.value)
        if s.buffer.dtype.is_bool:  # memory holds 0/1; a mask's true lanes are -1
            lanes = s.value.dtype.lanes
            value = f"convert_uchar{lanes}(-{value})" if lanes > 1 else f"(uchar)({value})"
        if isinstance(index, tir.Ramp):
            first, count = self._contiguous(index), index.lanes
            line = f"vstore{count}({value}, 0, {target} + {first});"
        else:
            first, count = self.expr(index), 1
            line = f"{target}[{first}] = {value};"
        ok = self.checks.guard(s.buffer, index, first, count, "writing")
        self.emit(line if ok is None else f"if ({ok}) {line}")

    def _for(self, s: tir.For) -> None:
        i = self.names(s.loop_var)
        t = cl_type(s.loop_var.dtype)
        lo, ext = self.expr(s.min), self.expr(s.extent)
        end = ext if _is_zero(s.min) else f"{lo} + {ext}"
        if self._nonneg(s.min):
            self.nonneg.add(id(s.loop_var))
        self.checks.mark(s.loop_var, s.min, s.extent)  # e.g. CSR rows: range(I[i], I[i + 1])
        self.emit(f"for ({t} {i} = {lo}; {i} < {end}; ++{i}) {{")
        self.block(s.body)
        self.emit("}")

    def _while(self, s: tir.While) -> None:
        self.emit(f"while ({_unwrap(self.expr(s.condition))}) {{")
        self.block(s.body)
        self.emit("}")

    def _if(self, s: tir.IfThenElse) -> None:
        self.emit(f"if ({_unwrap(self.expr(s.condition))}) {{")
        self.block(s.then_case)
        if s.else_case is not None:
            self.emit("} else {")
            self.block(s.else_case)
        self.emit("}")

    def _let_stmt(self, s: tir.LetStmt) -> None:
        if s.var.dtype.is_handle:
            raise BuildError(f"building kernel '{self.func_name}': a handle LetStmt "
                             f"'{s.var.name}' cannot be emitted in OpenCL")  # fmt: skip
        self.emit(f"{cl_type(s.var.dtype)} {self.names(s.var)} = {self.expr(s.value)};")
        self.checks.mark(s.var, s.value)
        self.stmt(s.body)

    def _attr(self, s: tir.AttrStmt) -> None:
        if s.attr_key == "thread_extent":
            iv = s.node
            tag = iv.thread_tag if isinstance(iv, tir.IterVar) else ""
            if tag not in THREAD_QUERIES:
                raise BuildError(
                    f"building kernel '{self.func_name}': thread scope '{tag}' is not one of "
                    f"{', '.join(THREAD_QUERIES)}"
                )
            query, dim = THREAD_QUERIES[tag]
            self.nonneg.add(id(iv.var))
            self.emit(f"{cl_type(iv.var.dtype)} {self.names(iv.var)} = "
                      f"({cl_type(iv.var.dtype)}){query}({dim});")  # fmt: skip
        elif s.attr_key == "virtual_thread":
            raise BuildError(
                f"building kernel '{self.func_name}': a vthread scope is left in the kernel; "
                "the GPU lowering must expand virtual threads first"
            )
        self.stmt(s.body)

    def _allocate(self, s: tir.Allocate) -> None:
        scope = storage_scope(s.buffer_var, s.annotations)
        size = constant_size(s, self.func_name, scope)
        self._note_dtype(s.dtype)
        decl = f"{_storage_type(s.dtype)} {self.names(s.buffer_var)}[{max(size, 1)}];"
        self.checks.constant_extents[id(s.buffer_var)] = max(size, 1)
        if scope in ("shared", "shared.dyn"):  # sizes are constants here: the same memory
            self.kernel_scope.append(f"__local {decl}")
            self.shared_bytes += size * s.dtype.bytes
        elif scope == "local":
            self.emit(decl)
        else:
            raise BuildError(
                f"building kernel '{self.func_name}': allocation '{s.buffer_var.name}' is in "
                f"scope '{scope}'; a kernel can allocate only 'shared' or 'local' memory"
            )
        self.stmt(s.body)

    def _decl_buffer(self, s: tir.DeclBuffer) -> None:
        self.stmt(s.body)

    def _assert(self, s: tir.AssertStmt) -> None:
        raise BuildError(
            f"building kernel '{self.func_name}': an assertion ({s.message!r}) is inside the "
            "kernel, where a failure cannot be reported; the host function must check it"
        )

    def _evaluate(self, s: tir.Evaluate) -> None:
        v = s.value
        if is_call(v, TVM_STORAGE_SYNC):
            scope = v.args[0].value if v.args and isinstance(v.args[0], tir.StringImm) else "?"
            if scope not in _FENCES:
                raise BuildError(
                    f"building kernel '{self.func_name}': tvm_storage_sync('{scope}') has no "
                    f"OpenCL barrier; scopes: {', '.join(_FENCES)}"
                )
            self.emit(f"barrier({_FENCES[scope]});")
        elif isinstance(v, (tir.IntImm, tir.FloatImm)):
            pass  # a no-op statement
        else:
            self.emit(f"{self.expr(v)};")

    # ------------------------------------------------------------------ expressions
    def expr(self, e: tir.PrimExpr) -> str:
        rule = by_class(_EXPR, type(e))
        if rule is None:
            raise BuildError(
                f"building kernel '{self.func_name}': the OpenCL code generator cannot "
                f"emit the expression {type(e).__name__} `{e}`"
            )
        if e.dtype is not None and not e.dtype.is_handle:
            self._note_dtype(e.dtype)
        text = rule(self, e)
        if type(e) in _PROMOTED and _narrow_int(e.dtype):
            # C computes char/short arithmetic in int: wrap back to the type, as TIR does
            return f"(({cl_type(e.dtype)})({text}))"
        return text

    def _int(self, e: tir.IntImm) -> str:
        d = e.dtype
        if d.is_bool:
            return "true" if e.value else "false"
        if d.is_int and e.value == -(2 ** (d.bits - 1)):  # no literal for the minimum
            return f"(({cl_type(d)})({e.value + 1}{_INT_SUFFIX.get(str(d), '')} - 1))"
        text = f"{e.value}{_INT_SUFFIX.get(str(d), '')}"
        if d.bits < 32:
            return f"(({cl_type(d)}){text})"
        return f"({text})" if e.value < 0 else text

    def _float(self, e: tir.FloatImm) -> str:
        v, t = e.value, cl_type(e.dtype)
        if math.isnan(v):
            return "NAN"
        if math.isinf(v):
            return "INFINITY" if v > 0 else "(-INFINITY)"
        # repr is the shortest decimal that reads back as this double, and a float32 value read
        # from it rounds to itself: the literal is exact
        text = repr(v)
        if t == "double":
            return f"({text})" if v < 0 else text
        literal = f"{text}f"
        literal = f"({literal})" if v < 0 else literal
        return literal if t == "float" else f"(({t}){literal})"

    def _var(self, e: tir.Var) -> str:
        return self.names(e)

    def _string(self, e: tir.StringImm) -> str:
        raise BuildError(
            f"building kernel '{self.func_name}': a string {e.value!r} reached the kernel; "
            "strings exist only in host code"
        )

    def _cast(self, e: tir.Cast) -> str:
        value = self.expr(e.value)
        if e.dtype.is_bool:
            return self._as_mask(f"({value} != 0)", e.value.dtype)
        if e.dtype.lanes > 1:
            if e.value.dtype.is_bool:  # a mask's true lanes are -1: negate to 1
                value = f"(-{value})"
            return f"convert_{cl_type(e.dtype)}({value})"
        return f"(({cl_type(e.dtype)})({value}))"

    def _bit_count(self, name: str, e: tir.Call, arg: str) -> str:
        """OpenCL's clz/popcount return their argument's type; TVM's clz is int32."""
        source = e.args[0].dtype
        if not (source.is_int or source.is_uint):
            raise BuildError(
                f"building kernel '{self.func_name}': {name} takes an integer, got {source}: `{e}`"
            )
        value = f"{name}({arg})"
        if e.dtype == source:
            return value
        if e.dtype.lanes > 1:
            return f"convert_{cl_type(e.dtype)}({value})"
        return f"(({cl_type(e.dtype)})({value}))"

    def _binary(self, e) -> str:
        return f"({self.expr(e.a)} {_BINARY_SYMBOL[type(e)]} {self.expr(e.b)})"

    def _compare(self, e) -> str:
        """A comparison; of vectors, the intN mask (module note before _MASK_OF_WIDTH)."""
        return self._as_mask(self._binary(e), e.a.dtype)

    @staticmethod
    def _as_mask(text: str, operands: DataType) -> str:
        """The intN mask of a vector comparison made on `operands`-typed vectors."""
        if operands.lanes == 1 or _c_bits(operands) == 32:
            return text
        return f"convert_int{operands.lanes}({text})"

    def _checked(self, e, a: str, b: str) -> str | None:
        """An integer division's text through a divisor-checking helper, when it needs one."""
        return None if e.dtype.is_float else self.checks.division(e, a, b)

    def _div(self, e: tir.Div) -> str:
        a, b = self.expr(e.a), self.expr(e.b)
        return self._checked(e, a, b) or f"({a} / {b})"

    def _mod(self, e: tir.Mod) -> str:
        a, b = self.expr(e.a), self.expr(e.b)
        if e.dtype.is_float:
            return f"fmod({a}, {b})"
        return self._checked(e, a, b) or f"({a} % {b})"

    def _nonneg(self, e: tir.PrimExpr) -> bool:
        """Whether `e` is provably >= 0 (structurally: constants, known vars, + * // % of them)."""
        if isinstance(e, tir.IntImm):
            return e.value >= 0
        if isinstance(e, tir.Var):
            return id(e) in self.nonneg
        if isinstance(e, tir.Cast):
            return e.dtype.is_int and self._nonneg(e.value)
        if isinstance(e, (tir.Add, tir.Mul, tir.FloorDiv, tir.FloorMod, tir.Min, tir.Max)):
            return self._nonneg(e.a) and self._nonneg(e.b)
        return False

    def _truncates_like_floor(self, e) -> bool:
        """C's / and % round like floordiv/floormod: a >= 0 and a positive constant divisor."""
        return isinstance(e.b, tir.IntImm) and e.b.value > 0 and self._nonneg(e.a)

    def _floordiv(self, e: tir.FloorDiv) -> str:
        a, b = self.expr(e.a), self.expr(e.b)
        if e.dtype.is_float:
            return f"floor({a} / {b})"
        return self._int_floor(e, a, b, "floordiv", "/")

    def _floormod(self, e: tir.FloorMod) -> str:
        a, b = self.expr(e.a), self.expr(e.b)
        if e.dtype.is_float:  # numpy's remainder, as the CPU build: fmod moved into b's sign
            r = f"fmod({a}, {b})"  # (a - floor(a / b) * b would be 0 * inf = NaN for b = inf)
            return f"(({r} != 0 && (({r} < 0) != ({b} < 0))) ? {r} + {b} : {r})"
        return self._int_floor(e, a, b, "floormod", "%")

    def _int_floor(self, e: tir.PrimExpr, a: str, b: str, kind: str, c_op: str) -> str:
        """Integer floordiv/floormod: C's `c_op` where it rounds the same, else a helper."""
        checked = self._checked(e, a, b)
        if checked:
            return checked
        if e.dtype.is_uint or e.dtype.is_bool or self._truncates_like_floor(e):
            return f"({a} {c_op} {b})"
        return f"{self._helper(kind, e.dtype)}({a}, {b})"

    def _helper(self, kind: str, dtype: DataType) -> str:
        """The name of an integer floordiv/floormod helper (rounding toward -inf), defined once."""
        t = cl_type(dtype)
        name = f"minitvm_{kind}_{t}"
        if name not in self.helpers:
            fix = "q - 1" if kind == "floordiv" else "r + b"
            result = "q" if kind == "floordiv" else "r"
            self.helpers[name] = (
                f"inline {t} {name}({t} a, {t} b) {{\n"
                f"  {t} q = a / b, r = a % b;\n"
                f"  return (r != 0 && ((r < 0) != (b < 0))) ? {fix} : {result};\n}}"
            )
        return name

    def _minmax(self, e) -> str:
        fn = "min" if isinstance(e, tir.Min) else "max"
        if e.dtype.is_float:
            fn = "f" + fn
        # narrow operands arrive cast back to their type (expr), so the overload is not ambiguous
        return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})"

    def _not(self, e: tir.Not) -> str:
        return f"(!{self.expr(e.a)})"

    def _select(self, e: tir.Select) -> str:
        return self._choose(e.condition, e.true_value, e.false_value)

    def _choose(self, cond: tir.PrimExpr, true: tir.PrimExpr, false: tir.PrimExpr) -> str:
        c, t, f = self.expr(cond), self.expr(true), self.expr(false)
        if cond.dtype.lanes == 1:
            return f"({c} ? {t} : {f})"
        # lane-wise: select() tests the top bit of a mask as wide as the values
        bits = _c_bits(true.dtype)
        if bits != 32:
            c = f"convert_{_MASK_OF_WIDTH[bits]}{cond.dtype.lanes}({c})"
        return f"select({f}, {t}, {c})"

    def _load(self, e: tir.BufferLoad) -> str:
        (index,) = _flat(self, e.buffer, e.indices)
        source = self.names(e.buffer.data)
        stored = _storage_type(e.buffer.dtype)
        if isinstance(index, tir.Ramp):
            first = self._contiguous(index)
            text = self._guarded(e, index, f"vload{index.lanes}(0, {source} + {first})", first,
                                 f"{stored}{index.lanes}")  # fmt: skip
            # stored bools are uchar 0/1; a loaded bool vector is a mask of -1/0
            return f"(-convert_int{index.lanes}({text}))" if e.buffer.dtype.is_bool else text
        if e.dtype.lanes > 1:
            raise BuildError(f"building kernel '{self.func_name}': vector load `{e}` "
                             "needs a Ramp index")  # fmt: skip
        first = self.expr(index)
        text = self._guarded(e, index, f"{source}[{first}]", first, stored)
        return f"({text} != 0)" if e.buffer.dtype.is_bool else text

    def _guarded(self, e: tir.BufferLoad, index, text: str, first: str, type_: str) -> str:
        """A load that gives 0 (and flags) where its data-dependent index is out of bounds."""
        lanes = index.lanes if isinstance(index, tir.Ramp) else 1
        ok = self.checks.guard(e.buffer, index, first, lanes, "reading")
        return text if ok is None else f"({ok} ? {text} : ({type_})(0))"

    def _contiguous(self, r: tir.Ramp) -> str:
        if not (isinstance(r.stride, tir.IntImm) and r.stride.value == 1):
            raise BuildError(
                f"building kernel '{self.func_name}': a strided vector access (stride "
                f"`{r.stride}`) is not supported by the OpenCL code generator; vectorize a "
                "contiguous loop"
            )
        return self.expr(r.base)

    def _ramp(self, e: tir.Ramp) -> str:
        base, stride = self.expr(e.base), self.expr(e.stride)
        lanes = ", ".join(f"{base} + {k} * {stride}" for k in range(e.lanes))
        return f"(({cl_type(e.dtype)})({lanes}))"

    def _broadcast(self, e: tir.Broadcast) -> str:
        value = self.expr(e.value)
        if e.dtype.is_bool:  # true is -1 in a mask
            value = f"-((int)({value}))"
        return f"(({cl_type(e.dtype)})({value}))"

    def _let(self, e: tir.Let) -> str:
        raise BuildError(
            f"building kernel '{self.func_name}': a Let expression ('{e.var.name}') is not "
            "supported by the OpenCL code generator; use a LetStmt"
        )

    def _call(self, e: tir.Call) -> str:
        name = getattr(e.op, "name", str(e.op)).removeprefix("tir.")
        args = [self.expr(a) for a in e.args]
        if name in ("likely", "tvm_thread_invariant"):
            return args[0]
        if name == "if_then_else":
            return self._choose(*e.args)
        if name == "sigmoid":
            one = self._float(tir.FloatImm(e.dtype.element_of(), 1.0))
            return f"({one} / ({one} + exp(-({args[0]}))))"
        if name == "bitwise_not":
            return f"(~{args[0]})"
        if name in ("clz", "popcount"):
            return self._bit_count(name, e, args[0])
        if name in _BITWISE:
            return f"({args[0]} {_BITWISE[name]} {args[1]})"
        if name in _MATH:
            if name in ("isnan", "isinf", "isfinite"):
                return f"({_MATH[name]}({args[0]}) != 0)"
            return f"{_MATH[name]}({', '.join(args)})"
        raise BuildError(
            f"building kernel '{self.func_name}': the OpenCL code generator has no rule for "
            f"the call `{e}`"
        )


def _unwrap(text: str) -> str:
    """`(a == b)` -> `a == b` when the outer parentheses enclose the whole text (for `if (...)`:
    compilers warn about doubled parentheses around a comparison)."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for k, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and k < len(text) - 1:
            return text
    return text[1:-1]


def _is_zero(e: tir.PrimExpr) -> bool:
    return isinstance(e, tir.IntImm) and e.value == 0


def _flat(cg: CodeGenOpenCL, buf, indices: tuple) -> tuple:
    if len(indices) != 1:
        raise BuildError(
            f"building kernel '{cg.func_name}': buffer '{buf.name}' is accessed with "
            f"{len(indices)} indices; kernels take flattened (1-D) buffers"
        )
    return indices


_STMT: dict[type, Callable] = {
    tir.SeqStmt: CodeGenOpenCL._seq,
    tir.BufferStore: CodeGenOpenCL._store,
    tir.For: CodeGenOpenCL._for,
    tir.While: CodeGenOpenCL._while,
    tir.IfThenElse: CodeGenOpenCL._if,
    tir.LetStmt: CodeGenOpenCL._let_stmt,
    tir.AttrStmt: CodeGenOpenCL._attr,
    tir.Allocate: CodeGenOpenCL._allocate,
    tir.DeclBuffer: CodeGenOpenCL._decl_buffer,
    tir.AssertStmt: CodeGenOpenCL._assert,
    tir.Evaluate: CodeGenOpenCL._evaluate,
}
_EXPR: dict[type, Callable] = {
    tir.IntImm: CodeGenOpenCL._int,
    tir.FloatImm: CodeGenOpenCL._float,
    tir.Var: CodeGenOpenCL._var,
    tir.StringImm: CodeGenOpenCL._string,
    tir.Cast: CodeGenOpenCL._cast,
    **{cls: CodeGenOpenCL._binary for cls in _BINARY_SYMBOL},
    **{cls: CodeGenOpenCL._compare for cls in (tir.EQ, tir.NE, tir.LT, tir.LE, tir.GT, tir.GE)},
    tir.Div: CodeGenOpenCL._div,
    tir.Mod: CodeGenOpenCL._mod,
    tir.FloorDiv: CodeGenOpenCL._floordiv,
    tir.FloorMod: CodeGenOpenCL._floormod,
    tir.Min: CodeGenOpenCL._minmax,
    tir.Max: CodeGenOpenCL._minmax,
    tir.Not: CodeGenOpenCL._not,
    tir.Select: CodeGenOpenCL._select,
    tir.BufferLoad: CodeGenOpenCL._load,
    tir.Ramp: CodeGenOpenCL._ramp,
    tir.Broadcast: CodeGenOpenCL._broadcast,
    tir.Let: CodeGenOpenCL._let,
    tir.Call: CodeGenOpenCL._call,
}


# expressions whose C result is int when their operands are char/short (integer promotion)
_PROMOTED = frozenset(
    {tir.Add, tir.Sub, tir.Mul, tir.Div, tir.Mod, tir.FloorDiv, tir.FloorMod, tir.Select, tir.Call}
)


def _narrow_int(dtype: DataType | None) -> bool:
    """A scalar (u)int of fewer than 32 bits: C promotes its arithmetic to int."""
    return (dtype is not None and dtype.lanes == 1 and (dtype.is_int or dtype.is_uint)
            and not dtype.is_bool and dtype.bits < 32)  # fmt: skip


def build_opencl(kernels: list[PrimFunc], data_params: dict[str, set[int]] | None = None
                 ) -> tuple[str, list[dict], set[str]]:  # fmt: skip
    """OpenCL C source of `kernels`, their metadata (name, params, launch_params, shared_bytes,
    errors) and the extensions the source needs ("cl_khr_fp64", "cl_khr_fp16").
    `data_params[symbol]`: positions of a kernel's scalar params that carry data rather than
    shape sizes (their uses as indices are checked); a kernel not listed: every scalar param."""
    helpers: dict[str, str] = {}
    extensions: set[str] = set()
    bodies, infos = [], []
    for func in kernels:
        known = (data_params or {}).get(func.attrs.get("global_symbol"))
        source, info = CodeGenOpenCL(helpers, extensions, known).kernel(func)
        bodies.append(source)
        infos.append(info)
    pragmas = [f"#pragma OPENCL EXTENSION {ext} : enable" for ext in sorted(extensions)]
    header = "// OpenCL C generated by minitvm"
    text = "\n\n".join([header, *(["\n".join(pragmas)] if pragmas else []), *helpers.values(),
                        *bodies])  # fmt: skip
    return text + "\n", infos, extensions
