"""bfloat16, float8 and float4 in LLVM IR: storage as i16/i8/i4 and conversions by integer
arithmetic.

LLVM's own `bfloat` lowers its conversions to compiler-runtime calls on x86, and it has no
float8 or float4 at all, so all are held as their bit patterns. Every conversion goes through
float32: decoding (low float → float32) is exact; encoding (float32 → low float) rounds to
nearest even once. A float64 or integer source is first narrowed to float32 *rounding to
odd*, which keeps the second rounding exact (float32 carries more than two extra bits for
every target here).
Encoding never saturates where the format has an inf or a NaN to give (as ml_dtypes
converts; torch saturates e4m3fn); ONNX's `saturate` clips before. float4_e2m1fn has neither,
so it saturates, and it turns NaN into a zero of the opposite sign, as ml_dtypes does.
float8_e8m0fnu is a bare power of two (no sign, no zero, no mantissa) with its own pair of
converters: it rounds a mantissa of one half or more up, and NaN stands for every value it
cannot hold (zero, negatives, overflow).
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ..ir.dtype import DataType, TypeCode

F32 = DataType("float32")
F64 = DataType("float64")
I32 = DataType("int32")


@dataclass(frozen=True)
class LowFloat:
    """A narrow float format: exponent/mantissa widths, bias and how it spells inf and NaN."""

    exp_bits: int
    man_bits: int
    bias: int
    has_inf: bool  # all-ones exponent with zero mantissa is ±inf (IEEE style)
    nan_is_all_ones: bool  # only S.1111.111 is NaN (e4m3fn)
    unsigned_zero: bool  # "fnuz": 0x80 is the only NaN, no -0, no inf
    finite_only: bool = False  # no inf and no NaN at all: overflow saturates (float4)
    signed: bool = True  # False: no sign bit (e8m0)

    @property
    def width(self) -> int:
        """The number of bits of one value."""
        return self.exp_bits + self.man_bits + int(self.signed)

    @property
    def max_code(self) -> int:
        """The bit pattern (without sign) of the largest finite value."""
        if self.has_inf:
            return ((2**self.exp_bits - 1) << self.man_bits) - 1
        if self.nan_is_all_ones:
            return 2 ** (self.exp_bits + self.man_bits) - 2
        return 2 ** (self.exp_bits + self.man_bits) - 1

    @property
    def max_value(self) -> float:
        e, m = self.max_code >> self.man_bits, self.max_code & (2**self.man_bits - 1)
        return (1 + m / 2**self.man_bits) * 2.0 ** (e - self.bias)


FORMATS: dict[TypeCode, LowFloat] = {
    TypeCode.BFLOAT: LowFloat(8, 7, 127, True, False, False),
    TypeCode.FLOAT8_E4M3FN: LowFloat(4, 3, 7, False, True, False),
    TypeCode.FLOAT8_E5M2: LowFloat(5, 2, 15, True, False, False),
    TypeCode.FLOAT8_E4M3FNUZ: LowFloat(4, 3, 8, False, False, True),
    TypeCode.FLOAT8_E5M2FNUZ: LowFloat(5, 2, 16, False, False, True),
    TypeCode.FLOAT8_E8M0FNU: LowFloat(8, 0, 127, False, True, False, signed=False),
    TypeCode.FLOAT4_E2M1FN: LowFloat(2, 1, 1, False, False, False, finite_only=True),
}


def is_low_float(dtype: DataType) -> bool:
    """bfloat16, a float8 kind or float4: stored as bits, computed in float32."""
    return dtype.code in FORMATS


def _ints(like: ir.Value, value: int, bits: int = 32) -> ir.Constant:
    """An integer constant with the lane count of `like`."""
    scalar = ir.Constant(ir.IntType(bits), value)
    if isinstance(like.type, ir.VectorType):
        return ir.Constant(
            ir.VectorType(ir.IntType(bits), like.type.count), [scalar] * like.type.count
        )
    return scalar


def _floats(like: ir.Value, value: float, ty: ir.Type | None = None) -> ir.Constant:
    ty = ir.FloatType() if ty is None else ty
    scalar = ir.Constant(ty, value)
    if isinstance(like.type, ir.VectorType):
        return ir.Constant(ir.VectorType(ty, like.type.count), [scalar] * like.type.count)
    return scalar


def _retype(like: ir.Value, elem: ir.Type) -> ir.Type:
    return ir.VectorType(elem, like.type.count) if isinstance(like.type, ir.VectorType) else elem


# --------------------------------------------------------------------------- decode


def decode(b: ir.IRBuilder, v: ir.Value, src: DataType) -> ir.Value:
    """Bits of the low float `src` → the float32 of the same value (exact)."""
    fmt = FORMATS[src.code]
    width = fmt.width
    x = b.zext(v, _retype(v, ir.IntType(32)))
    if not fmt.signed:
        return _decode_e8m0(b, x)
    if src.is_bfloat16:  # bfloat16 is the top half of a float32
        return b.bitcast(b.shl(x, _ints(x, 16)), _retype(v, ir.FloatType()))
    sign = b.lshr(x, _ints(x, width - 1))
    exp = b.and_(b.lshr(x, _ints(x, fmt.man_bits)), _ints(x, 2**fmt.exp_bits - 1))
    man = b.and_(x, _ints(x, 2**fmt.man_bits - 1))
    f32 = _retype(v, ir.FloatType())
    # normal: rebias the exponent and widen the mantissa
    bits = b.or_(
        b.shl(b.add(exp, _ints(x, 127 - fmt.bias)), _ints(x, 23)),
        b.shl(man, _ints(x, 23 - fmt.man_bits)),
    )
    normal = b.bitcast(bits, f32)
    # subnormal: man * 2^(1 - bias - man_bits), exact in float32
    sub = b.fmul(b.uitofp(man, f32), _floats(x, 2.0 ** (1 - fmt.bias - fmt.man_bits)))
    mag = b.select(b.icmp_unsigned("==", exp, _ints(x, 0)), sub, normal)
    nan = _floats(x, float("nan"))
    if fmt.has_inf:
        top = b.icmp_unsigned("==", exp, _ints(x, 2**fmt.exp_bits - 1))
        is_inf = b.and_(top, b.icmp_unsigned("==", man, _ints(x, 0)))
        mag = b.select(top, b.select(is_inf, _floats(x, float("inf")), nan), mag)
    elif fmt.nan_is_all_ones:
        low = b.and_(x, _ints(x, 2 ** (width - 1) - 1))
        mag = b.select(b.icmp_unsigned("==", low, _ints(x, 2 ** (width - 1) - 1)), nan, mag)
    negative = b.icmp_unsigned("!=", sign, _ints(x, 0))
    if fmt.unsigned_zero:  # the pattern of "-0" is the NaN
        is_nan = b.icmp_unsigned("==", x, _ints(x, 2 ** (width - 1)))
        return b.select(is_nan, nan, b.select(negative, b.fneg(mag), mag))
    return b.select(negative, b.fneg(mag), mag)


def _decode_e8m0(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """The code is float32's biased exponent, except that 0 is 2^-127 (a float32 subnormal)
    and 255 is NaN."""
    f32 = _retype(x, ir.FloatType())
    value = b.bitcast(b.shl(x, _ints(x, 23)), f32)
    value = b.select(b.icmp_unsigned("==", x, _ints(x, 0)), _floats(x, 2.0**-127), value)
    return b.select(b.icmp_unsigned("==", x, _ints(x, 255)), _floats(x, float("nan")), value)


# --------------------------------------------------------------------------- encode


def narrow_to_f32_odd(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """float64 → float32 rounding to odd: truncate toward zero, then set the last bit when
    inexact. A later round-to-nearest-even to fewer bits then equals a direct one."""
    f32 = _retype(v, ir.FloatType())
    t = b.fptrunc(v, f32)
    back = b.fpext(t, v.type)
    inexact = b.fcmp_ordered("!=", back, v)
    positive = b.fcmp_ordered(">", v, _floats(v, 0.0, ir.DoubleType()))
    away = b.select(positive, b.fcmp_ordered(">", back, v), b.fcmp_ordered("<", back, v))
    bits = b.bitcast(t, _retype(v, ir.IntType(32)))
    toward_zero = b.sub(bits, b.zext(away, bits.type))
    odd = b.or_(toward_zero, _ints(bits, 1))
    return b.bitcast(b.select(inexact, odd, bits), f32)


def encode(b: ir.IRBuilder, v: ir.Value, dst: DataType) -> ir.Value:
    """float32 → the bits of the low float `dst`, rounding to nearest even; overflow gives
    inf where the format has one, else NaN where it has one, else its largest value."""
    fmt = FORMATS[dst.code]
    width = fmt.width
    out_ty = _retype(v, ir.IntType(width))
    a = b.bitcast(v, _retype(v, ir.IntType(32)))
    if not fmt.signed:
        return b.trunc(_encode_e8m0(b, a), out_ty)
    mag = b.and_(a, _ints(a, 0x7FFFFFFF))
    is_nan = b.icmp_unsigned(">", mag, _ints(a, 0x7F800000))
    if dst.is_bfloat16:
        rounded = b.add(b.add(a, _ints(a, 0x7FFF)), b.and_(b.lshr(a, _ints(a, 16)), _ints(a, 1)))
        quiet = b.or_(b.lshr(a, _ints(a, 16)), _ints(a, 0x40))
        return b.trunc(b.select(is_nan, quiet, b.lshr(rounded, _ints(a, 16))), out_ty)
    shift = 23 - fmt.man_bits
    # normal range: round the float32 bits, then rebias the exponent
    odd = b.and_(b.lshr(mag, _ints(a, shift)), _ints(a, 1))
    up = b.add(b.add(mag, _ints(a, 2 ** (shift - 1) - 1)), odd)
    normal = b.sub(b.lshr(up, _ints(a, shift)), _ints(a, (127 - fmt.bias) << fmt.man_bits))
    # below the smallest normal: shift the full mantissa right, rounding to nearest even
    exp = b.lshr(mag, _ints(a, 23))
    emin = 1 - fmt.bias + 127  # biased float32 exponent of the format's smallest normal
    full = b.or_(b.and_(mag, _ints(a, 0x7FFFFF)), _ints(a, 0x800000))
    steps = b.sub(_ints(a, emin + shift), exp)
    steps = b.select(b.icmp_unsigned(">", steps, _ints(a, 31)), _ints(a, 31), steps)
    q = b.lshr(full, steps)
    rest = b.and_(full, b.sub(b.shl(_ints(a, 1), steps), _ints(a, 1)))
    half = b.shl(_ints(a, 1), b.sub(steps, _ints(a, 1)))
    tie_up = b.and_(
        b.icmp_unsigned("==", rest, half),
        b.icmp_unsigned("!=", b.and_(q, _ints(a, 1)), _ints(a, 0)),
    )
    sub = b.add(q, b.zext(b.or_(b.icmp_unsigned(">", rest, half), tie_up), a.type))
    code = b.select(b.icmp_unsigned("<", exp, _ints(a, emin)), sub, normal)
    # overflow (inf included) and NaN
    if fmt.has_inf:
        over_code, nan_code = (
            fmt.max_code + 1,
            (2**fmt.exp_bits - 1) << fmt.man_bits | 2 ** (fmt.man_bits - 1),
        )
    elif fmt.nan_is_all_ones:
        over_code = nan_code = 2 ** (width - 1) - 1
    elif fmt.finite_only:
        over_code, nan_code = fmt.max_code, 0
    else:
        over_code = nan_code = -1  # the sign bit alone: marked below
    over = b.icmp_unsigned(">", code, _ints(a, fmt.max_code))
    code = b.select(over, _ints(a, over_code), code)
    code = b.select(is_nan, _ints(a, nan_code), code)
    sign = b.lshr(a, _ints(a, 31))
    if fmt.finite_only:  # ml_dtypes' NaN: the zero of the other sign
        sign = b.select(is_nan, b.xor(sign, _ints(a, 1)), sign)
    if fmt.unsigned_zero:
        special = b.icmp_signed("<", code, _ints(a, 0))
        zero = b.icmp_unsigned("==", code, _ints(a, 0))
        sign = b.select(zero, _ints(a, 0), sign)  # -0 becomes +0: 0x80 means NaN
        code = b.select(special, _ints(a, 0), code)
        sign = b.select(special, _ints(a, 1), sign)
    bits = b.or_(b.shl(sign, _ints(a, width - 1)), code)
    return b.trunc(bits, out_ty)


def _encode_e8m0(b: ir.IRBuilder, a: ir.Value) -> ir.Value:
    """float32 bits → e8m0 code as ml_dtypes converts: the exponent, plus one when the
    mantissa is one half or more (a float32 subnormal rounds to 2^-127 or 2^-126 alike);
    zero, negatives, inf, NaN and overflow past 2^127 give NaN (255)."""
    exp = b.and_(b.lshr(a, _ints(a, 23)), _ints(a, 0xFF))
    man = b.and_(a, _ints(a, 0x7FFFFF))
    normal = b.add(exp, b.zext(b.icmp_unsigned(">=", man, _ints(a, 0x400000)), a.type))
    sub = b.zext(b.icmp_unsigned(">=", man, _ints(a, 0x600000)), a.type)
    code = b.select(b.icmp_unsigned("==", exp, _ints(a, 0)), sub, normal)
    nan = b.or_(
        b.icmp_signed("<=", a, _ints(a, 0)),  # +0 and every value with the sign bit set
        b.icmp_unsigned(">=", code, _ints(a, 255)),  # inf, NaN, and rounding past 2^127
    )
    return b.select(nan, _ints(a, 255), code)
