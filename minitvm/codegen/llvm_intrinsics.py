"""The table from TIR intrinsic names (`tir.exp`, `tir.if_then_else`, ...) to LLVM code.

Each entry is `rule(cg, call) -> ir.Value`, where `cg` is the `CodeGenLLVM` emitting the
current function. Most rules evaluate the arguments eagerly; `if_then_else` branches so the
untaken side (often an out-of-bounds load) never runs.

Math on float16 runs in float32. Functions LLVM has an intrinsic for use it (vector forms
included; LLVM calls libm per lane where the CPU has no instruction). erf and log1p call
libm by name (`erff`/`erf`, `log1pf`/`log1p`): MCJIT resolves them in the process.
exp, erf, sigmoid and tanh of float32 vectors are polynomials emitted as vector IR
(`vector_exp`, `vector_erf`): libm would run once per lane.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from llvmlite import ir

from ..error import BuildError
from ..ir.dtype import DataType
from .llvm_types import I1, I32, cast_value, constant, llvm_type

if TYPE_CHECKING:
    from ..tir.expr import Call
    from .llvm import CodeGenLLVM

Rule = Callable[["CodeGenLLVM", "Call"], ir.Value]


def declare_intrinsic(
    module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]
) -> ir.Function:
    """`name.<suffix>` declared once per module (suffix from the overloaded type `ret`)."""
    full = f"{name}.{_suffix(ret)}"
    if full in module.globals:
        return module.globals[full]
    return ir.Function(module, ir.FunctionType(ret, args), full)


def _suffix(ty: ir.Type) -> str:
    """LLVM's overload suffix: f32, i1, v16f32."""
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{_suffix(ty.element)}"
    return ty.intrinsic_name


def declare_extern(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    """A C function declared by name (resolved by the loader in the host process)."""
    if name in module.globals:
        return module.globals[name]
    return ir.Function(module, ir.FunctionType(ret, args), name)


def _math_dtype(dtype: DataType) -> DataType:
    """float16 math is done in float32."""
    return dtype.with_bits(32) if dtype.is_float and dtype.bits == 16 else dtype


def _float_args(cg: CodeGenLLVM, call: Call) -> tuple[list[ir.Value], DataType]:
    work = _math_dtype(call.dtype)
    vals = [cast_value(cg.builder, cg.expr(a), a.dtype, work) for a in call.args]
    return vals, work


def _finish(cg: CodeGenLLVM, value: ir.Value, work: DataType, dtype: DataType) -> ir.Value:
    return cast_value(cg.builder, value, work, dtype)


def llvm_math(name: str) -> Rule:
    """`tir.<f>(x, ...)` → `call @llvm.<f>.<type>(x, ...)`."""

    def rule(cg: CodeGenLLVM, call: Call) -> ir.Value:
        vals, work = _float_args(cg, call)
        ty = llvm_type(work)
        fn = declare_intrinsic(cg.module, name, ty, [ty] * len(vals))
        return _finish(cg, cg.builder.call(fn, vals), work, call.dtype)

    return rule


def libm(f32_name: str, f64_name: str) -> Rule:
    """`tir.<f>(x)` → the C function by name, once per lane for vectors."""

    def rule(cg: CodeGenLLVM, call: Call) -> ir.Value:
        vals, work = _float_args(cg, call)
        elem = work.element_of()
        sym = f32_name if elem.bits == 32 else f64_name
        ety = llvm_type(elem)
        fn = declare_extern(cg.module, sym, ety, [ety] * len(vals))
        out = cg.lanewise(lambda *lane: cg.builder.call(fn, list(lane)), vals, work)
        return _finish(cg, out, work, call.dtype)

    return rule


def _expansion(body: Callable[[CodeGenLLVM, list[ir.Value], DataType], ir.Value]) -> Rule:
    def rule(cg: CodeGenLLVM, call: Call) -> ir.Value:
        vals, work = _float_args(cg, call)
        return _finish(cg, body(cg, vals, work), work, call.dtype)

    return rule


def _sigmoid(cg: CodeGenLLVM, v: list[ir.Value], t: DataType) -> ir.Value:
    # with e = e^-|x| in [0, 1]: 1 / (1 + e) for x >= 0, e / (1 + e) below, so e never overflows
    # and results below e^-87 come out as denormals, not 0. A full division, not the reciprocal
    # estimate with a Newton step: on Zen 4 the divider runs beside the FMA pipes (64K sigmoids:
    # 20.7 us vs 22.9), and the estimate costs an ulp (rcpps on 8 lanes: 3 ulp)
    b = cg.builder
    x = v[0]
    one = constant(t, 1.0)
    e = _exp(cg, [b.fneg(_fabs(cg, x, t))], t)
    top = b.select(b.fcmp_ordered("<", x, constant(t, 0.0)), e, one)
    return b.fdiv(top, b.fadd(one, e), "sigmoid")


# tanh |x| = (1 - e) / (1 + e) with e = e^-2|x| (no overflow); below |x| < 0.25, where the
# cancellation in 1 - e would cost more than ~2 ulp, the odd Taylor polynomial to x^11 (the x^13
# term is under 3e-10 of it)
_TANH_SERIES_BELOW = 0.25
_TANH_SERIES = (-1382 / 155925, 62 / 2835, -17 / 315, 2 / 15, -1 / 3)  # x^11 .. x^3, over x^3


def _tanh(cg: CodeGenLLVM, v: list[ir.Value], t: DataType) -> ir.Value:
    if not _is_f32_vector(t):
        ty = llvm_type(t)
        return cg.builder.call(declare_intrinsic(cg.module, "llvm.tanh", ty, [ty]), [v[0]])
    b = cg.builder
    x = v[0]
    ax = _fabs(cg, x, t)
    e = vector_exp(cg, b.fmul(ax, constant(t, -2.0)), t)
    one = constant(t, 1.0)
    big = b.fdiv(b.fsub(one, e), b.fadd(one, e))
    a2 = b.fmul(ax, ax)
    small = _fma(cg, b.fmul(ax, a2), _horner(cg, a2, _TANH_SERIES, t), ax)
    mag = b.select(b.fcmp_ordered("<", ax, constant(t, _TANH_SERIES_BELOW)), small, big)
    sign = declare_intrinsic(cg.module, "llvm.copysign", llvm_type(t), [llvm_type(t)] * 2)
    return b.call(sign, [mag, x], "tanh")  # NaN stays NaN (the exp branch), -0 stays -0


# ---------------------------------------------------------------- float32 vector exp
# A vector of float32 `exp` as LLVM IR instead of one `expf` call per lane (16 calls for a
# zmm): x = n ln2 + r with n = round(x / ln2), |r| <= ln2 / 2 (ln2 split in a high part
# exact under multiplication by n and a low part, Cody-Waite), e^r by a polynomial of degree
# 6 fitted for minimax relative error on that interval (2e-9, a thirtieth of an ulp), and 2^n
# applied so that results down to the denormals round once: by vscalefps where the CPU has
# AVX-512 (`llvm.ldexp`; elsewhere LLVM calls ldexpf per lane), else from exponent bits in two
# halves. x is clamped to [_EXP_MIN, _EXP_MAX + 1] first, where e^x already rounds to 0 and to
# inf, so only NaN needs a select at the end. Scalars and float64 keep libm (`llvm.exp`).
_LN2_HI = 0.693359375  # 355 / 512: n * _LN2_HI is exact for |n| < 2^15
_LN2_LO = -2.12194440054690583e-4  # ln 2 - _LN2_HI
_LOG2E = 1.4426950408889634
_EXP_MAX = 88.72283935546875  # above: e^x overflows float32 (-> inf)
_EXP_MIN = -103.97208404541016  # below: e^x rounds to 0 even as a denormal
_EXP_POLY = (
    0.001384360642232331, 0.008374195719186073, 0.0416680047366243, 0.16666430798960002,
    0.4999999419157136, 1.0000000322590132, 1.0,
)  # fmt: skip


def _fma(cg: CodeGenLLVM, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
    ty = a.type
    return cg.builder.call(declare_intrinsic(cg.module, "llvm.fma", ty, [ty] * 3), [a, b, c])


def _horner(cg: CodeGenLLVM, x: ir.Value, coeffs: tuple[float, ...], t: DataType) -> ir.Value:
    """coeffs[0] x^d + ... + coeffs[d] by fused multiply-adds."""
    acc = constant(t, coeffs[0])
    for c in coeffs[1:]:
        acc = _fma(cg, acc, x, constant(t, c))
    return acc


def _is_f32_vector(t: DataType) -> bool:
    return t.lanes > 1 and t.element_of().is_float and t.bits == 32


def _int_splat(t: DataType, value: int) -> ir.Constant:
    return ir.Constant(ir.VectorType(I32, t.lanes), [ir.Constant(I32, value)] * t.lanes)


def _pow2(cg: CodeGenLLVM, n: ir.Value, t: DataType) -> ir.Value:
    """2^n for an int32 vector n in [-126, 127] (a float built from exponent bits)."""
    b = cg.builder
    bits = b.shl(b.add(n, _int_splat(t, 127)), _int_splat(t, 23))
    return b.bitcast(bits, llvm_type(t))


def _has_avx512(cg: CodeGenLLVM) -> bool:
    """Whether the function is compiled for AVX-512 (other code generators have no CPU features)."""
    return "+avx512f" in getattr(cg, "cpu_features", ())


def vector_exp(cg: CodeGenLLVM, x: ir.Value, t: DataType) -> ir.Value:
    """e^x for a float32 vector `x` (see the comment above); NaN stays NaN, -inf gives 0."""
    b = cg.builder
    ty = llvm_type(t)
    ity = ir.VectorType(I32, t.lanes)
    lo, hi = constant(t, _EXP_MIN), constant(t, _EXP_MAX + 1.0)
    # clamped first so n fits an int32 and both halves of 2^n are normal numbers
    xc = b.select(b.fcmp_ordered("<", x, lo), lo, x)
    xc = b.select(b.fcmp_ordered(">", xc, hi), hi, xc)
    rint = declare_intrinsic(cg.module, "llvm.roundeven", ty, [ty])
    n = b.call(rint, [b.fmul(xc, constant(t, _LOG2E))])
    r = _fma(cg, n, constant(t, -_LN2_HI), xc)
    r = _fma(cg, n, constant(t, -_LN2_LO), r)
    p = _horner(cg, r, _EXP_POLY, t)
    ni = b.fptosi(n, ity)  # poison for NaN lanes, which the last select replaces
    if _has_avx512(cg):
        name = f"llvm.ldexp.{_suffix(ty)}.{_suffix(ity)}"
        ldexp = cg.module.globals.get(name) or ir.Function(
            cg.module, ir.FunctionType(ty, [ty, ity]), name
        )
        y = b.call(ldexp, [p, ni])
    else:
        half = b.ashr(ni, _int_splat(t, 1))
        y = b.fmul(b.fmul(p, _pow2(cg, half, t)), _pow2(cg, b.sub(ni, half), t))
    return b.select(b.fcmp_unordered("uno", x, x), x, y, "exp")


def _exp(cg: CodeGenLLVM, v: list[ir.Value], t: DataType) -> ir.Value:
    if _is_f32_vector(t):
        return vector_exp(cg, v[0], t)
    ty = llvm_type(t)
    return cg.builder.call(declare_intrinsic(cg.module, "llvm.exp", ty, [ty]), [v[0]])


# ---------------------------------------------------------------- float32 vector erf
# erf(|x|) on [0, 1): |x| P(x^2), P of degree 6 fitted (least squares, relative) to erf(x)/x
# (error 2e-9); on [1, 3.93): 1 - 2^Q(t), Q of degree 8 in t = (|x| - 2.465) / 1.465 fitted
# (Chebyshev) to log2 erfc (error 0.01 ulp before rounding), 2^Q as 2^round(Q) times exp's
# polynomial for 2^f = e^(f ln2), |f| <= 1/2 (Q lies in [-26, -2]: no clamps, no denormals);
# from 3.93 erfc is below half an ulp of 1, so erf is 1. The sign is copied back; NaN takes
# the first branch (the second clamps |x| so that no lane of it is poison).
_ERF_SPLIT, _ERF_ONE = 1.0, 3.93
_ERF_SMALL = (
    8.006266462551644e-05, -0.0008053592217710665, 0.005192942539052745,
    -0.026856062907705664, 0.1128363450826588, -0.3761262975908647, 1.128379166232252,
)  # fmt: skip
_ERF_LOG_ERFC = (
    3.4824250989753636e-05, -0.00019907137333029001, 0.0007968574885341425,
    -0.002947606774274841, 0.010319252763990946, -0.03511087637194462, -2.023326680128354,
    -7.744939931639383, -7.6206272513821425,
)  # fmt: skip
_ERF_LOG2_ERFC = tuple(c * _LOG2E for c in _ERF_LOG_ERFC)
_EXP2_POLY = tuple(c * math.log(2) ** k for k, c in zip(range(6, -1, -1), _EXP_POLY))  # 2^f


def vector_erf(cg: CodeGenLLVM, x: ir.Value, t: DataType) -> ir.Value:
    """erf(x) for a float32 vector `x` (see the comment above)."""
    b = cg.builder
    ax = _fabs(cg, x, t)
    small = b.fmul(ax, _horner(cg, b.fmul(ax, ax), _ERF_SMALL, t))
    mid, half = (_ERF_ONE + _ERF_SPLIT) / 2, (_ERF_ONE - _ERF_SPLIT) / 2
    axc = b.select(b.fcmp_ordered("<", ax, constant(t, _ERF_ONE)), ax, constant(t, _ERF_ONE))
    u = _fma(cg, axc, constant(t, 1.0 / half), constant(t, -mid / half))
    q = _horner(cg, u, _ERF_LOG2_ERFC, t)
    ty = llvm_type(t)
    n = b.call(declare_intrinsic(cg.module, "llvm.roundeven", ty, [ty]), [q])
    p = _horner(cg, b.fsub(q, n), _EXP2_POLY, t)
    erfc = b.fmul(p, _pow2(cg, b.fptosi(n, ir.VectorType(I32, t.lanes)), t))
    large = b.fsub(constant(t, 1.0), erfc)
    y = b.select(b.fcmp_unordered("<", ax, constant(t, _ERF_SPLIT)), small, large)
    y = b.select(b.fcmp_ordered(">=", ax, constant(t, _ERF_ONE)), constant(t, 1.0), y)
    sign = declare_intrinsic(cg.module, "llvm.copysign", ty, [ty, ty])
    return b.call(sign, [y, x], "erf")


def _erf(cg: CodeGenLLVM, call: Call) -> ir.Value:
    vals, work = _float_args(cg, call)
    if _is_f32_vector(work):
        return _finish(cg, vector_erf(cg, vals[0], work), work, call.dtype)
    return _ERF_LIBM(cg, call)


def _rsqrt(cg: CodeGenLLVM, v: list[ir.Value], t: DataType) -> ir.Value:
    ty = llvm_type(t)
    s = cg.builder.call(declare_intrinsic(cg.module, "llvm.sqrt", ty, [ty]), [v[0]])
    return cg.builder.fdiv(constant(t, 1.0), s, "rsqrt")


def _fabs(cg: CodeGenLLVM, x: ir.Value, t: DataType) -> ir.Value:
    ty = llvm_type(t)
    return cg.builder.call(declare_intrinsic(cg.module, "llvm.fabs", ty, [ty]), [x])


def _float_test(test: Callable[[CodeGenLLVM, ir.Value, DataType], ir.Value]) -> Rule:
    """isnan/isinf/isfinite: a bool result from a float argument (ints are always finite)."""

    def rule(cg: CodeGenLLVM, call: Call) -> ir.Value:
        (arg,) = call.args
        if not arg.dtype.is_float:
            finite = test is _isfinite
            return constant(call.dtype, 1 if finite else 0)
        work = _math_dtype(arg.dtype)
        x = cast_value(cg.builder, cg.expr(arg), arg.dtype, work)
        return test(cg, x, work)

    return rule


def _isnan(cg: CodeGenLLVM, x: ir.Value, t: DataType) -> ir.Value:
    return cg.builder.fcmp_unordered("uno", x, x, "isnan")


def _isinf(cg: CodeGenLLVM, x: ir.Value, t: DataType) -> ir.Value:
    return cg.builder.fcmp_ordered("==", _fabs(cg, x, t), constant(t, float("inf")), "isinf")


def _isfinite(cg: CodeGenLLVM, x: ir.Value, t: DataType) -> ir.Value:
    return cg.builder.fcmp_ordered("<", _fabs(cg, x, t), constant(t, float("inf")), "isfinite")


def _likely(cg: CodeGenLLVM, call: Call) -> ir.Value:
    cond = cg.expr(call.args[0])
    if call.dtype.lanes > 1:
        return cond
    fn = declare_intrinsic(cg.module, "llvm.expect", I1, [I1, I1])
    return cg.builder.call(fn, [cond, ir.Constant(I1, 1)], "likely")


def _if_then_else(cg: CodeGenLLVM, call: Call) -> ir.Value:
    cond, then_expr, else_expr = call.args
    if cond.dtype.lanes > 1:  # a vector condition selects per lane; both sides are computed,
        # but each side's vector loads read only the lanes it gives (masked loads): a guarded
        # `x[i - 32]` must not touch memory before x where the guard says no
        b = cg.builder
        mask = cg.expr(cond)
        outer = cg.load_mask
        values = []
        for m, e in ((mask, then_expr), (b.not_(mask), else_expr)):
            if outer is not None and outer.type == m.type:
                m = b.and_(outer, m)
            cg.load_mask = m
            try:
                values.append(cg.expr(e))
            finally:
                cg.load_mask = outer
        return b.select(mask, *values)
    b = cg.builder
    then_bb = cg.new_block("if_then")
    else_bb = cg.new_block("if_else")
    merge_bb = cg.new_block("if_end")
    b.cbranch(cg.expr(cond), then_bb, else_bb)
    results = []
    for bb, e in ((then_bb, then_expr), (else_bb, else_expr)):
        b.position_at_end(bb)
        value = cg.expr(e)
        results.append((value, b.block))  # the side may have added blocks of its own
        b.branch(merge_bb)
    b.position_at_end(merge_bb)
    phi = b.phi(llvm_type(call.dtype), "if_value")
    for value, bb in results:
        phi.add_incoming(value, bb)
    return phi


def _int_binary(op: Callable[[ir.IRBuilder], Callable], unsigned_op=None) -> Rule:
    def rule(cg: CodeGenLLVM, call: Call) -> ir.Value:
        a, b = (cg.expr(x) for x in call.args)
        if b.type != a.type:  # shift amounts may come in a different width
            b = cast_value(cg.builder, b, call.args[1].dtype, call.args[0].dtype)
        pick = unsigned_op if unsigned_op is not None and call.dtype.is_uint else op
        return pick(cg.builder)(a, b)

    return rule


def _bitwise_not(cg: CodeGenLLVM, call: Call) -> ir.Value:
    return cg.builder.not_(cg.expr(call.args[0]))


def _reinterpret(cg: CodeGenLLVM, call: Call) -> ir.Value:
    return cg.builder.bitcast(cg.expr(call.args[0]), llvm_type(call.dtype))


def _bit_count(name: str, *flags: int) -> Rule:
    """`tir.popcount(x)` / `tir.clz(x)` → `@llvm.ctpop` / `@llvm.ctlz` (with `flags` as i1
    arguments: ctlz's is-zero-poison is false, so clz(0) is the bit width)."""

    def rule(cg: CodeGenLLVM, call: Call) -> ir.Value:
        (arg,) = call.args
        value = cg.expr(arg)
        i1 = ir.IntType(1)
        fn = declare_intrinsic(cg.module, name, value.type, [value.type] + [i1] * len(flags))
        out = cg.builder.call(fn, [value] + [ir.Constant(i1, f) for f in flags])
        return cast_value(cg.builder, out, arg.dtype, call.dtype)

    return rule


def _fmod(cg: CodeGenLLVM, call: Call) -> ir.Value:
    vals, work = _float_args(cg, call)
    return _finish(cg, cg.builder.frem(*vals), work, call.dtype)


_ERF_LIBM = libm("erff", "erf")
_FLOAT = frozenset({"float"})
_INTEGER = frozenset({"int", "uint", "bool"})

# Intrinsics computed in floating point (float16 in float32): defined on float results only.
_MATH: dict[str, Rule] = {
    "tir.exp": _expansion(_exp),
    "tir.exp2": llvm_math("llvm.exp2"),
    "tir.exp10": llvm_math("llvm.exp10"),
    "tir.log": llvm_math("llvm.log"),
    "tir.log2": llvm_math("llvm.log2"),
    "tir.log10": llvm_math("llvm.log10"),
    "tir.sqrt": llvm_math("llvm.sqrt"),
    "tir.fabs": llvm_math("llvm.fabs"),
    "tir.floor": llvm_math("llvm.floor"),
    "tir.ceil": llvm_math("llvm.ceil"),
    "tir.round": llvm_math("llvm.roundeven"),  # half to even, as numpy.round
    "tir.nearbyint": llvm_math("llvm.nearbyint"),
    "tir.trunc": llvm_math("llvm.trunc"),
    "tir.pow": llvm_math("llvm.pow"),
    "tir.sin": llvm_math("llvm.sin"),
    "tir.cos": llvm_math("llvm.cos"),
    "tir.tan": llvm_math("llvm.tan"),
    "tir.asin": llvm_math("llvm.asin"),
    "tir.acos": llvm_math("llvm.acos"),
    "tir.atan": llvm_math("llvm.atan"),
    "tir.atan2": llvm_math("llvm.atan2"),
    "tir.sinh": llvm_math("llvm.sinh"),
    "tir.cosh": llvm_math("llvm.cosh"),
    "tir.tanh": _expansion(_tanh),
    "tir.fma": llvm_math("llvm.fma"),
    "tir.copysign": llvm_math("llvm.copysign"),
    "tir.erf": _erf,
    "tir.log1p": libm("log1pf", "log1p"),
    "tir.sigmoid": _expansion(_sigmoid),
    "tir.rsqrt": _expansion(_rsqrt),
    "tir.fmod": _fmod,
}


def _ret(cg: CodeGenLLVM, call: Call) -> ir.Value:
    """`tir.ret(v)`: store v, widened to 64 bits, in the caller's return slot; return 0."""
    slot = cg.ret_slot
    if slot is None or cg.builder.function is not slot.parent:
        raise BuildError(
            f"building '{cg.func_name}': T.ret is used inside a parallel loop or a kernel; "
            "return from the function's own body"
        )
    value = call.args[0]
    wide = DataType("float64") if value.dtype.is_float else DataType("int64")
    if value.dtype.is_uint:
        wide = DataType("uint64")
    wide_value = cast_value(cg.builder, cg.expr(value), value.dtype, wide)
    cg.builder.store(wide_value, slot, align=8)
    cg.builder.ret(ir.Constant(I32, 0))
    cg.builder.position_at_end(cg.new_block("after_ret"))  # later code is unreachable
    return constant(call.dtype, 0)


INTRINSICS: dict[str, Rule] = {
    **_MATH,
    "tir.ret": _ret,
    "tir.isnan": _float_test(_isnan),
    "tir.isinf": _float_test(_isinf),
    "tir.isfinite": _float_test(_isfinite),
    "tir.likely": _likely,
    "tir.if_then_else": _if_then_else,
    "tir.bitwise_and": _int_binary(lambda b: b.and_),
    "tir.bitwise_or": _int_binary(lambda b: b.or_),
    "tir.bitwise_xor": _int_binary(lambda b: b.xor),
    "tir.bitwise_not": _bitwise_not,
    "tir.shift_left": _int_binary(lambda b: b.shl),
    "tir.shift_right": _int_binary(lambda b: b.ashr, unsigned_op=lambda b: b.lshr),
    "tir.reinterpret": _reinterpret,
    "tir.popcount": _bit_count("llvm.ctpop"),
    "tir.clz": _bit_count("llvm.ctlz", 0),
}

# (result kinds, argument kinds) an intrinsic is defined on; None: any. The rules above would
# emit IR that LLVM rejects for other kinds (`and float`, `@llvm.floor.i1`).
_SHIFTABLE = frozenset({"int", "uint"})
DTYPE_KINDS: dict[str, tuple[frozenset[str] | None, frozenset[str] | None]] = {
    **{name: (_FLOAT, None) for name in _MATH},  # arguments are cast to the result dtype
    **{f"tir.bitwise_{op}": (_INTEGER, _INTEGER) for op in ("and", "or", "xor", "not")},
    "tir.shift_left": (_SHIFTABLE, _SHIFTABLE),
    "tir.shift_right": (_SHIFTABLE, _SHIFTABLE),
    "tir.popcount": (_SHIFTABLE, _SHIFTABLE),
    "tir.clz": (_SHIFTABLE, _SHIFTABLE),
    **{f"tir.{test}": (frozenset({"bool"}), None) for test in ("isnan", "isinf", "isfinite")},
    "tir.likely": (frozenset({"bool"}), frozenset({"bool"})),
}
