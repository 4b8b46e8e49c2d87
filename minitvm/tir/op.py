"""Intrinsic operators and the functions users call to build them (`tir.exp`, `tir.all`, ...)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import Any

from ..error import DTypeError
from ..ir.dtype import DataType
from .expr import (
    EQ,
    Add,
    Call,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Mul,
    Op,
    PrimExpr,
    Select,
    Sub,
    _lift,
    _match_operands,
    as_expr,
    binary,
    bitwise,
    bitwise_not,
    cast,
    logical_and,
    logical_or,
    make_const,
)

# name, number of inputs, pure. Codegen maps each name to an LLVM intrinsic or expansion.
_INTRINSICS = [
    ("exp", 1), ("exp2", 1), ("exp10", 1), ("log", 1), ("log2", 1), ("log10", 1), ("log1p", 1),
    ("sqrt", 1), ("rsqrt", 1), ("tanh", 1), ("sigmoid", 1), ("fabs", 1), ("floor", 1),
    ("ceil", 1), ("round", 1), ("nearbyint", 1), ("trunc", 1), ("erf", 1), ("sin", 1),
    ("cos", 1), ("tan", 1), ("sinh", 1), ("cosh", 1), ("asin", 1), ("acos", 1), ("atan", 1),
    ("atan2", 2), ("pow", 2), ("fmod", 2), ("isnan", 1), ("isinf", 1), ("isfinite", 1),
    ("fma", 3), ("likely", 1), ("if_then_else", 3), ("bitwise_and", 2), ("bitwise_or", 2),
    ("bitwise_xor", 2), ("bitwise_not", 1), ("shift_left", 2), ("shift_right", 2),
    ("copysign", 2),
]
for _name, _n in _INTRINSICS:
    Op.register("tir." + _name, _n)


def _float_arg(x: Any, fname: str) -> PrimExpr:
    x = as_expr(_lift(x))
    if not x.dtype.is_float:
        x = cast(DataType("float32").with_lanes(x.dtype.lanes), x)
    return x


def _unary_math(name: str):
    op = Op.get(name)

    def fn(x: Any) -> PrimExpr:
        x = _float_arg(x, name)
        return Call(x.dtype, op, (x,))

    fn.__name__ = name
    fn.__doc__ = f"Elementwise `{name}` (integer inputs are cast to float32)."
    return fn


exp = _unary_math("exp")
exp2 = _unary_math("exp2")
exp10 = _unary_math("exp10")
log = _unary_math("log")
log2 = _unary_math("log2")
log10 = _unary_math("log10")
log1p = _unary_math("log1p")
sqrt = _unary_math("sqrt")
rsqrt = _unary_math("rsqrt")
tanh = _unary_math("tanh")
sigmoid = _unary_math("sigmoid")
erf = _unary_math("erf")
sin = _unary_math("sin")
cos = _unary_math("cos")
tan = _unary_math("tan")
sinh = _unary_math("sinh")
cosh = _unary_math("cosh")
asin = _unary_math("asin")
acos = _unary_math("acos")
atan = _unary_math("atan")


def _rounding(name: str):
    op = Op.get(name)

    def fn(x: Any) -> PrimExpr:
        x = as_expr(_lift(x))
        if not x.dtype.is_float:  # an integer or bool is already whole (TVM returns it as is)
            return x
        return Call(x.dtype, op, (x,))

    fn.__name__ = name
    fn.__doc__ = f"Elementwise `{name}` of a float; integers and bools are returned unchanged."
    return fn


floor = _rounding("floor")
ceil = _rounding("ceil")
round = _rounding("round")  # noqa: A001 - TVM's name
nearbyint = _rounding("nearbyint")
trunc = _rounding("trunc")


def abs(x: Any) -> PrimExpr:  # noqa: A001 - TVM's name
    x = as_expr(_lift(x))
    if x.dtype.is_float:
        return Call(x.dtype, Op.get("fabs"), (x,))
    if x.dtype.is_uint or x.dtype.is_bool:
        return x
    return Select(x >= 0, x, -x)


def _binary_math(name: str):
    op = Op.get(name)

    def fn(x: Any, y: Any) -> PrimExpr:
        x, y = _match_operands(x, y)
        if not x.dtype.is_float:
            x, y = _float_arg(x, name), _float_arg(y, name)
        return Call(x.dtype, op, (x, y))

    fn.__name__ = name
    return fn


power = _binary_math("pow")
pow = power  # noqa: A001 - TVM's name
atan2 = _binary_math("atan2")
fmod = _binary_math("fmod")
copysign = _binary_math("copysign")


def _float_class(name: str, int_answer: bool):
    op = Op.get(name)

    def fn(x: Any) -> PrimExpr:
        x = as_expr(_lift(x))
        dtype = DataType("bool").with_lanes(x.dtype.lanes)
        if not x.dtype.is_float:  # an integer is never nan or inf
            return make_const(dtype, int_answer)
        return Call(dtype, op, (x,))

    fn.__name__ = name
    return fn


isnan = _float_class("isnan", False)
isinf = _float_class("isinf", False)
isfinite = _float_class("isfinite", True)


def fma(a: Any, b: Any, c: Any) -> PrimExpr:
    """`a * b + c` (one rounding for floats; plain multiply-add for integers)."""
    a, b = _match_operands(a, b)
    a, c = _match_operands(a, c)
    if not a.dtype.is_float:
        return a * b + c
    return Call(a.dtype, Op.get("fma"), (a, b, c))


def bitwise_and(x: Any, y: Any) -> PrimExpr:
    return bitwise("&", x, y)


def bitwise_or(x: Any, y: Any) -> PrimExpr:
    return bitwise("|", x, y)


def bitwise_xor(x: Any, y: Any) -> PrimExpr:
    return bitwise("^", x, y)


def shift_left(x: Any, y: Any) -> PrimExpr:
    return bitwise("<<", x, y)


def shift_right(x: Any, y: Any) -> PrimExpr:
    return bitwise(">>", x, y)


def likely(cond: Any) -> PrimExpr:
    """Mark a condition as usually true (a hint for codegen; prints as T.likely)."""
    cond = as_expr(_lift(cond))
    return Call(cond.dtype, Op.get("likely"), (cond,))


def if_then_else(cond: Any, t: Any, f: Any) -> PrimExpr:
    """`t if cond else f`, evaluating only the chosen side (safe for guarded loads)."""
    cond = as_expr(_lift(cond))
    if not cond.dtype.is_bool:
        raise DTypeError(f"if_then_else condition must be bool, got {cond.dtype}: `{cond}`")
    t, f = _match_operands(t, f)
    if isinstance(cond, IntImm):
        return t if cond.value else f
    return Call(t.dtype, Op.get("if_then_else"), (cond, t, f))


def Select_(cond: Any, t: Any, f: Any) -> PrimExpr:
    return Select(as_expr(_lift(cond)), t, f)


select = Select_  # the 2018 name used by the dlsys assignment (tvm.select)


def all(*args: Any) -> PrimExpr:  # noqa: A001 - TVM's name
    """Logical and of all conditions (`tvm.tir.all(a, b, c)`)."""
    conds = [as_expr(_lift(a)) for a in (args[0] if len(args) == 1 and isinstance(args[0], list | tuple) else args)]
    if not conds:
        return const(True, "bool")
    return reduce(logical_and, conds)


def any(*args: Any) -> PrimExpr:  # noqa: A001 - TVM's name
    """Logical or of all conditions."""
    conds = [as_expr(_lift(a)) for a in (args[0] if len(args) == 1 and isinstance(args[0], list | tuple) else args)]
    if not conds:
        return const(False, "bool")
    return reduce(logical_or, conds)


def const(value: Any, dtype: str | DataType | None = None) -> PrimExpr:
    """A constant: `tvm.tir.const(0, "float32")`; dtype inferred from the value when omitted."""
    if dtype is None:
        return as_expr(value)
    return make_const(dtype, value)


def min_value(dtype: str | DataType) -> PrimExpr:
    dtype = DataType(dtype)
    if dtype.is_float:
        return FloatImm(dtype, float("-inf"))
    if dtype.is_bool:
        return IntImm(dtype, 0)
    return IntImm(dtype, -(2 ** (dtype.bits - 1)) if dtype.is_int else 0)


def max_value(dtype: str | DataType) -> PrimExpr:
    dtype = DataType(dtype)
    if dtype.is_float:
        return FloatImm(dtype, float("inf"))
    if dtype.is_bool:
        return IntImm(dtype, 1)
    return IntImm(dtype, 2 ** (dtype.bits - 1) - 1 if dtype.is_int else 2**dtype.bits - 1)


def infinity(dtype: str | DataType) -> PrimExpr:
    return max_value(dtype)


def floordiv(a: Any, b: Any) -> PrimExpr:
    return binary(FloorDiv, a, b)


def floormod(a: Any, b: Any) -> PrimExpr:
    return binary(FloorMod, a, b)


def truncdiv(a: Any, b: Any) -> PrimExpr:
    return binary(Div, a, b)


def truncmod(a: Any, b: Any) -> PrimExpr:
    return binary(Mod, a, b)


indexdiv = floordiv
indexmod = floormod


def div(a: Any, b: Any) -> PrimExpr:
    return binary(Div, a, b)


def min(a: Any, b: Any, *rest: Any) -> PrimExpr:  # noqa: A001 - TVM's name
    out = binary(Min, a, b)
    for r in rest:
        out = binary(Min, out, r)
    return out


def max(a: Any, b: Any, *rest: Any) -> PrimExpr:  # noqa: A001 - TVM's name
    out = binary(Max, a, b)
    for r in rest:
        out = binary(Max, out, r)
    return out


def equal(a: Any, b: Any) -> PrimExpr:
    """`a == b` as IR; `vscale() == vscale()` is true (one value per run), as in TVM."""
    return a.equal(b) if isinstance(a, PrimExpr) else binary(EQ, a, b)


def call_extern(dtype: str, name: str, *args: Any) -> PrimExpr:
    """Call the C function `name` (resolved in the process when the module is loaded)."""
    return Call(DataType(dtype), name, tuple(as_expr(a) for a in args))


def call_intrin(dtype: str, name: str, *args: Any) -> PrimExpr:
    return Call(DataType(dtype), Op.get(name), tuple(as_expr(a) for a in args))


# ----------------------------------------------------------------------------- TVM builtins
# TVM's builtin intrinsics (tensor-core fragments, packed calls, PTX, ...) that TVMScript names
# as `T.<name>(...)`. They parse and print so TVM's scripts round-trip; codegen lowers the few it
# knows (codegen/llvm_intrinsics.py, llvm_packed.py) and refuses the others with a BuildError.
# A rule for the result dtype: a dtype string, "arg0"/"arg1" (that argument's dtype), or
# "given" (the caller names it: first positional argument or dtype=).

_VOID = "handle"  # TVM's void calls (dtype ""): minitvm has no void dtype; the value is unused


@dataclass(frozen=True)
class Builtin:
    """One TVM builtin: its result dtype rule and whether it only computes a value."""

    name: str
    result: str
    pure: bool = False


def _builtins(result: str, names: str, pure: bool = False) -> list[Builtin]:
    return [Builtin(n, result, pure) for n in names.split()]


BUILTINS: dict[str, Builtin] = {
    b.name: b
    for b in [
        *_builtins(
            "handle",
            "tvm_access_ptr tvm_stack_make_shape tvm_stack_make_array tvm_stack_alloca "
            "tvm_load_matrix_sync tvm_mma_sync tvm_bmma_sync tvm_fill_fragment "
            "tvm_store_matrix_sync tvm_thread_allreduce tvm_tuple tvm_throw_last_error "
            "lookup_param start_profile_intrinsic end_profile_intrinsic tvm_thread_context "
            "make_filled_simdgroup_matrix simdgroup_load simdgroup_store "
            "simdgroup_multiply_accumulate TVMBackendAllocWorkspace anylist_getitem",
        ),
        *_builtins("handle", "address_of", pure=True),
        *_builtins(
            "int32",
            "tvm_call_packed tvm_call_cpacked tvm_call_packed_lowered tvm_call_cpacked_lowered "
            "tvm_check_return tvm_struct_set tvm_storage_sync TVMBackendFreeWorkspace "
            "anylist_resetitem anylist_setitem_call_packed anylist_setitem_call_cpacked",
        ),
        *_builtins(
            "int32", "undef q_multiply_shift q_multiply_shift_per_axis vscale clz dp4a", pure=True
        ),
        *_builtins("bool", "assume isnullptr", pure=True),
        *_builtins("uint32", "tvm_warp_activemask"),
        *_builtins(
            _VOID,
            "ptx_commit_group ptx_wait_group ptx_cp_async_barrier ptx_init_barrier_thread_count "
            "ptx_arrive_barrier ptx_arrive_barrier_expect_tx ptx_wait_barrier create_barriers",
        ),
        *_builtins("arg0", "tvm_thread_invariant", pure=True),
        *_builtins("arg0", "ret"),  # return a value from the PrimFunc (control flow)
        *_builtins("arg0", "popcount nextafter hypot ldexp acosh asinh atanh", pure=True),
        *_builtins("arg1", "tvm_warp_shuffle tvm_warp_shuffle_up tvm_warp_shuffle_down"),
        *_builtins(
            "given", "type_annotation reinterpret vectorlow vectorhigh vectorcombine", pure=True
        ),
        *_builtins(
            "given",
            "tvm_struct_get ptx_mma ptx_mma_sp ptx_ldmatrix ptx_cp_async ptx_cp_async_bulk "
            "mma_store mma_fill get_active_lane_mask tvm_call_trace_packed",
        ),
    ]
}
# TVMScript spellings that name the same builtin
BUILTIN_ALIASES = {
    "call_packed": "tvm_call_packed",
    "call_cpacked": "tvm_call_cpacked",
    "call_packed_lowered": "tvm_call_packed_lowered",
    "call_cpacked_lowered": "tvm_call_cpacked_lowered",
}
for _b in BUILTINS.values():
    if "tir." + _b.name not in Op._registry:  # packed.py may have registered it already
        Op.register("tir." + _b.name, -1, pure=_b.pure)


def builtin_dtype(name: str, args: tuple) -> DataType | None:
    """The result dtype `name`'s rule gives for `args`; None when the caller must name it."""
    rule = BUILTINS[name].result
    if rule == "given":
        return None
    if rule.startswith("arg"):
        k = int(rule[3:])
        return args[k].dtype if len(args) > k else None
    return DataType(rule)


def call_builtin(name: str, *args: Any, dtype: str | DataType | None = None) -> PrimExpr:
    """`Call` of TVM builtin `name`; `dtype` must agree with the rule (or name a "given" one)."""
    name = BUILTIN_ALIASES.get(name, name)
    if BUILTINS[name].result == "given" and dtype is None:
        if not args or not isinstance(args[0], str | DataType):
            raise DTypeError(
                f'T.{name} needs its result dtype: T.{name}("float32", ...) or dtype="float32"'
            )
        dtype, args = args[0], args[1:]
    exprs = tuple(_builtin_arg(a) for a in args)
    rule = builtin_dtype(name, exprs)
    want = DataType(_VOID if dtype == "" else dtype) if dtype is not None else rule
    if want is None:
        raise DTypeError(
            f"T.{name} takes its result dtype from argument {BUILTINS[name].result[3:]}, "
            f"but only {len(exprs)} arguments were given"
        )
    if rule is not None and want != rule:
        raise DTypeError(
            f"T.{name} computes {rule}, but dtype={str(want)!r} was given; drop dtype= "
            f"or cast the result"
        )
    if name == "reinterpret":
        _check_reinterpret(want, exprs)
    return Call(want, Op.get(name), exprs)


def _builtin_arg(a: Any) -> PrimExpr:
    from .expr import StringImm

    return StringImm(a) if isinstance(a, str) else as_expr(a)


def _check_reinterpret(dtype: DataType, args: tuple) -> None:
    if len(args) != 1:
        raise DTypeError(f"reinterpret takes one value, got {len(args)}")
    src = args[0].dtype
    if src.bits * src.lanes != dtype.bits * dtype.lanes:
        raise DTypeError(
            f"reinterpret of {src} as {dtype}: the sizes differ ({src.bits * src.lanes} vs "
            f"{dtype.bits * dtype.lanes} bits); reinterpret keeps the bits, so they must match"
        )


def reinterpret(dtype: str | DataType, value: Any) -> PrimExpr:
    """The bits of `value` read as `dtype` (same total width), as TVM's tir.reinterpret."""
    return call_builtin("reinterpret", dtype, value)


_ACCESS_MASKS = {"r": 1, "w": 2, "rw": 3, "wr": 3}


def buffer_access_ptr(
    buf: Any,
    access_mask: str | int,
    ptr_type: str = "handle",
    content_lanes: int = 1,
    offset: Any = 0,
    extent: Any = None,
) -> PrimExpr:
    """TVM's `Buffer.access_ptr`: `tvm_access_ptr(type_annotation(dtype), data, elem_offset +
    offset, extent, mask)`; the extent defaults to the elements from `offset` to the end."""
    name = getattr(buf, "name", "?")
    if isinstance(access_mask, str):
        if access_mask not in _ACCESS_MASKS:
            raise DTypeError(
                f"{name}.access_ptr: access mask {access_mask!r} is not 'r', 'w' or 'rw'"
            )
        access_mask = _ACCESS_MASKS[access_mask]
    if ptr_type != "handle" or content_lanes != 1:
        raise DTypeError(
            f"{name}.access_ptr: only ptr_type='handle' with content_lanes=1 is supported, "
            f"got ptr_type={ptr_type!r}, content_lanes={content_lanes}"
        )
    index = buf.elem_offset.dtype
    offset = as_expr(offset, like=index)
    if extent is None:
        if not buf.shape:
            extent = IntImm(index, 1)
        else:
            top = buf.strides[0] if len(buf.strides) == len(buf.shape) else None
            size = reduce(lambda a, b: binary(Mul, a, b), buf.shape[1:], buf.shape[0])
            extent = binary(Sub, binary(Mul, top, buf.shape[0]) if top is not None else size, offset)
    start = binary(Add, buf.elem_offset, offset)
    marker = call_builtin("type_annotation", dtype=buf.dtype)
    return call_builtin(
        "tvm_access_ptr", marker, buf.data, start, as_expr(extent, like=index),
        IntImm(DataType("int32"), int(access_mask)),
    )  # fmt: skip


def vscale() -> PrimExpr:
    """TVM's `tir.vscale()`: the scalable-vector multiplier (Arm SVE). It prints and parses;
    building code that uses it for a fixed-width CPU is a BuildError (no such hardware value)."""
    return call_builtin("vscale")


def trace(args: list, trace_action: str = "tvm.default_trace_action") -> PrimExpr:
    """TVM's `tir.trace`: call the function registered as `trace_action` with `args` when the
    code runs; the value is its result (the last argument when it returns None). Scalars only
    (a vector or handle is a BuildError). Example:
    `te.compute(A.shape, lambda i: tir.trace([i, A[i]], "my_trace"))`."""
    if not isinstance(args, list | tuple) or not args:
        raise DTypeError(f"tir.trace takes a non-empty list of values to trace, got {args!r}")
    exprs = tuple(as_expr(a) for a in args)
    return call_builtin("tvm_call_trace_packed", trace_action, *exprs, dtype=exprs[-1].dtype)
