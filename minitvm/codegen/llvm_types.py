"""DataType → LLVM types, constants and the cast table used by the LLVM code generator.

Registers hold `bool` as `i1`; memory holds it as `i8` (numpy's layout). float16 is a
storage type: arithmetic on it is legal LLVM, math intrinsics run in float32. bfloat16 and
float8 are held as their bits (i16/i8; see llvm_lowfloat.py) and computed in float32.
int2/uint2/int4/uint4 are `i2`/`i4` in registers and one value per byte in memory (the low
bits, as ml_dtypes stores them), not packed several to a byte.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from ..ir.dtype import DataType, TypeCode
from .llvm_lowfloat import F32, F64, FORMATS, decode, encode, narrow_to_f32_odd

_SCALAR_TYPES: dict[tuple[TypeCode, int], ir.Type] = {
    (TypeCode.FLOAT, 16): ir.HalfType(),
    (TypeCode.FLOAT, 32): ir.FloatType(),
    (TypeCode.FLOAT, 64): ir.DoubleType(),
    (TypeCode.BOOL, 1): ir.IntType(1),
    (TypeCode.HANDLE, 64): ir.PointerType(),
    **{(TypeCode.INT, b): ir.IntType(b) for b in (2, 4, 8, 16, 32, 64)},
    **{(TypeCode.UINT, b): ir.IntType(b) for b in (1, 2, 4, 8, 16, 32, 64)},
    **{(code, fmt.width): ir.IntType(fmt.width) for code, fmt in FORMATS.items()},
}

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()


def kind(dtype: DataType) -> str:
    """The dispatch kind of a dtype: 'float', 'lowfloat' (bfloat16, float8), 'int', 'uint'
    or 'bool'."""
    return "lowfloat" if dtype.code in FORMATS else dtype.code.value


def llvm_type(dtype: DataType) -> ir.Type:
    """The register type of `dtype` (`bool` → i1, vectors → `<N x T>`)."""
    elem = _SCALAR_TYPES[(dtype.code, dtype.bits)]
    return elem if dtype.lanes == 1 else ir.VectorType(elem, dtype.lanes)


def mem_type(dtype: DataType) -> ir.Type:
    """The in-memory type of `dtype` (`bool` → i8)."""
    if dtype.is_bool or dtype.bits in (2, 4):
        return I8 if dtype.lanes == 1 else ir.VectorType(I8, dtype.lanes)
    return llvm_type(dtype)


def constant(dtype: DataType, value: float) -> ir.Constant:
    """An LLVM constant of the scalar (or splat vector) `dtype`."""
    elem = dtype.element_of()
    if elem.code in FORMATS:  # the float32 legalization leaves none; never emit unrounded bits
        raise ValueError(f"no LLVM constant of dtype {elem}: compute in float32 and cast")
    if elem.is_float:
        c = ir.Constant(llvm_type(elem), float(value))
    elif elem.is_uint and value >= 2 ** (elem.bits - 1):
        c = ir.Constant(llvm_type(elem), value - 2**elem.bits)  # same bits, printed signed
    else:
        c = ir.Constant(llvm_type(elem), int(value))
    if dtype.lanes == 1:
        return c
    return ir.Constant(llvm_type(dtype), [c] * dtype.lanes)


# --------------------------------------------------------------------------- casts

CastFn = Callable[[ir.IRBuilder, ir.Value, DataType, DataType, str], ir.Value]


def _float_to_float(b, v, src, dst, name):
    if dst.bits > src.bits:
        return b.fpext(v, llvm_type(dst), name)
    return b.fptrunc(v, llvm_type(dst), name)


def _int_to_int(b, v, src, dst, name):
    if dst.bits < src.bits:
        return b.trunc(v, llvm_type(dst), name)
    if dst.bits == src.bits:
        return v  # int32 <-> uint32: same bits
    extend = b.sext if src.is_int else b.zext
    return extend(v, llvm_type(dst), name)


def _float_to_int(b, v, src, dst, name):
    if dst.bits not in (2, 4):
        convert = b.fptosi if dst.is_int else b.fptoui
        return convert(v, llvm_type(dst), name)
    # 2- and 4-bit targets as ONNX/ml_dtypes define them: truncate toward zero, 0 when out
    # of range
    half = 2.0 ** (dst.bits - 1)
    lo, hi = (-half - 1, half) if dst.is_int else (-1.0, 2.0 * half)
    fits = b.and_(
        b.fcmp_ordered(">", v, constant(src, lo)), b.fcmp_ordered("<", v, constant(src, hi))
    )
    safe = b.select(fits, v, constant(src, 0))
    wide = b.fptosi(safe, llvm_type(DataType("int32").with_lanes(dst.lanes)))
    return b.trunc(wide, llvm_type(dst), name)


def _from_low(b, v, src, dst, name):
    """bfloat16/float8 → anything: exactly to float32 first."""
    f32 = F32.with_lanes(src.lanes)
    return cast_value(b, decode(b, v, src), f32, dst, name)


def _to_low(b, v, src, dst, name):
    """anything → bfloat16/float8: to float32 (rounding to odd when that is inexact), then
    one rounding to nearest even."""
    f32, f64 = F32.with_lanes(src.lanes), F64.with_lanes(src.lanes)
    if kind(src) == "lowfloat":
        v = decode(b, v, src)
    elif src.is_float and src.bits < 64:
        v = cast_value(b, v, src, f32)
    else:  # float64, or an integer (exact in float64 up to 53 bits)
        v = narrow_to_f32_odd(b, cast_value(b, v, src, f64))
    return encode(b, v, dst)


def _to_bool(b, v, src, dst, name):
    zero = constant(src, 0)
    if src.is_float:
        return b.fcmp_unordered("!=", v, zero, name)  # NaN is truthy, as in C and numpy
    return b.icmp_unsigned("!=", v, zero, name)


# (source kind, destination kind) → how to convert; bool behaves like an unsigned 1-bit int.
CASTS: dict[tuple[str, str], CastFn] = {
    ("float", "float"): _float_to_float,
    ("int", "float"): lambda b, v, s, d, n: b.sitofp(v, llvm_type(d), n),
    ("uint", "float"): lambda b, v, s, d, n: b.uitofp(v, llvm_type(d), n),
    ("bool", "float"): lambda b, v, s, d, n: b.uitofp(v, llvm_type(d), n),
    ("float", "int"): _float_to_int,
    ("float", "uint"): _float_to_int,
    ("int", "int"): _int_to_int,
    ("int", "uint"): _int_to_int,
    ("uint", "int"): _int_to_int,
    ("uint", "uint"): _int_to_int,
    ("bool", "int"): lambda b, v, s, d, n: b.zext(v, llvm_type(d), n),
    ("bool", "uint"): lambda b, v, s, d, n: b.zext(v, llvm_type(d), n),
    ("int", "bool"): _to_bool,
    ("uint", "bool"): _to_bool,
    ("float", "bool"): _to_bool,
    ("bool", "bool"): lambda b, v, s, d, n: v,
    **{("lowfloat", k): _from_low for k in ("float", "int", "uint", "bool")},
    **{(k, "lowfloat"): _to_low for k in ("float", "int", "uint", "bool", "lowfloat")},
}


def cast_value(
    b: ir.IRBuilder, v: ir.Value, src: DataType, dst: DataType, name: str = ""
) -> ir.Value:
    """Convert the register value `v` of dtype `src` to `dst` (same lane count)."""
    if src == dst:
        return v
    if src.lanes != dst.lanes:
        if src.lanes != 1:
            raise ValueError(f"cannot cast {src} to {dst}: lane counts differ")
        return splat(b, cast_value(b, v, src, dst.element_of(), name), dst.lanes)
    fn = CASTS[(kind(src), kind(dst))]
    if fn is _int_to_int and src.bits == dst.bits:
        return v
    if fn is _float_to_float and src.bits == dst.bits:
        return v
    return fn(b, v, src, dst, name)


def splat(b: ir.IRBuilder, value: ir.Value, lanes: int) -> ir.Value:
    """`<lanes x T>` with every lane equal to the scalar `value`."""
    vec_ty = ir.VectorType(value.type, lanes)
    one = b.insert_element(ir.Constant(vec_ty, ir.Undefined), value, ir.Constant(I32, 0))
    zeros = ir.Constant(ir.VectorType(I32, lanes), None)
    return b.shuffle_vector(one, ir.Constant(vec_ty, ir.Undefined), zeros)


def to_memory(b: ir.IRBuilder, v: ir.Value, dtype: DataType) -> ir.Value:
    """Register value → value to store (bool: i1 → i8; int4: i4 → its byte's low nibble)."""
    return b.zext(v, mem_type(dtype)) if dtype.is_bool or dtype.bits in (2, 4) else v


def from_memory(b: ir.IRBuilder, v: ir.Value, dtype: DataType, name: str = "") -> ir.Value:
    """Loaded value → register value (bool: i8 → i1, any non-zero byte is true)."""
    if dtype.is_bool:
        return b.icmp_unsigned("!=", v, ir.Constant(v.type, None), name)
    if dtype.bits in (2, 4):
        return b.trunc(v, llvm_type(dtype), name)
    return v
