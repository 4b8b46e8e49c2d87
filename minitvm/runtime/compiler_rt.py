"""Compiler-runtime helpers that LLVM's x86-64 back end calls, written in LLVM IR.

LLVM lowers some operations to calls of libgcc/compiler-rt functions instead of instructions:
float16 conversions on CPUs without F16C (`__extendhfsf2`, `__truncsfhf2`) and, on any CPU
before AVX512-FP16, double → half (`__truncdfhf2`). A Python process has neither library
loaded, and MCJIT silently resolves a missing symbol to address 0. So the helpers are defined
here as LLVM IR text (integer bit manipulation only, so they never call themselves),
JIT-compiled once per process for the baseline x86-64 CPU, and registered with `llvm.add_symbol`
before any module is loaded (`ensure_helpers()`; the loader resolves names in `PROVIDED_SYMBOLS`
to them). Our ops never produce `llvm.powi`, bfloat16 or 128-bit integers, so no other helper is
needed: tests/codegen/test_cpu_matrix.py checks every op and dtype for several CPUs.

They take and return LLVM `half`, exactly as LLVM's own libcalls do, so caller and helper agree
on the calling convention (x86-64: half in an XMM register) by construction.
Narrowing rounds to nearest, ties to even, directly from the source format (double → half never
goes through float, which would round twice); NaN stays NaN (made quiet, sign and top payload
bits kept), overflow gives ±inf, tiny values give subnormals or ±0.
"""

from __future__ import annotations

import struct
import threading

import llvmlite.binding as llvm

from ..target import Target

_EXTEND_HALF_TO_FLOAT = """
define float @__extendhfsf2(half %h) nounwind {
entry:
  %h16 = bitcast half %h to i16
  %b = zext i16 %h16 to i32
  %sign.h = and i32 %b, 32768
  %sign = shl i32 %sign.h, 16
  %e.raw = lshr i32 %b, 10
  %e = and i32 %e.raw, 31
  %m = and i32 %b, 1023
  %m13 = shl i32 %m, 13
  ; normal: rebias the exponent (15 -> 127), widen the mantissa
  %e.f = add i32 %e, 112
  %e.f.bits = shl i32 %e.f, 23
  %normal = or i32 %e.f.bits, %m13
  ; inf / NaN (NaN made quiet, as the F16C instruction does)
  %is.nan = icmp ne i32 %m, 0
  %quiet = select i1 %is.nan, i32 4194304, i32 0
  %special.0 = or i32 %m13, 2139095040
  %special = or i32 %special.0, %quiet
  ; subnormal m * 2^-24: normalise on the leading one (bit `top`)
  %lz = call i32 @llvm.ctlz.i32(i32 %m, i1 false)
  %top = sub i32 31, %lz
  %e.s = add i32 %top, 103
  %e.s.bits = shl i32 %e.s, 23
  %shift = sub i32 23, %top
  %m.s.0 = shl i32 %m, %shift
  %m.s = and i32 %m.s.0, 8388607
  %sub.0 = or i32 %e.s.bits, %m.s
  %is.zero = icmp eq i32 %m, 0
  %sub = select i1 %is.zero, i32 0, i32 %sub.0
  %is.special = icmp eq i32 %e, 31
  %is.sub = icmp eq i32 %e, 0
  %r.0 = select i1 %is.special, i32 %special, i32 %normal
  %r.1 = select i1 %is.sub, i32 %sub, i32 %r.0
  %r = or i32 %r.1, %sign
  %f = bitcast i32 %r to float
  ret float %f
}
declare i32 @llvm.ctlz.i32(i32, i1)
"""

# Narrowing to half from a binary format of `width` bits with `mant` mantissa bits and `bias`.
_TRUNCATE_TO_HALF = """
define half @{name}({fty} %x) nounwind {{
entry:
  %bits = bitcast {fty} %x to {ity}
  %abs = and {ity} %bits, {abs_mask}
  %sign.0 = lshr {ity} %bits, {sign_shift}
  %sign = and {ity} %sign.0, 32768
  ; NaN: quiet, top payload bits kept
  %is.nan = icmp ugt {ity} %abs, {inf}
  %payload.0 = lshr {ity} %abs, {shift}
  %payload = and {ity} %payload.0, 511
  %nan = or {ity} %payload, 32256
  ; |x| >= 65520 rounds to inf (65520 is the tie between 65504 and 65536)
  %is.big = icmp uge {ity} %abs, {big}
  ; normal half: rebias, then round to nearest even on the dropped bits
  %is.normal = icmp uge {ity} %abs, {min_normal}
  %rebased = sub {ity} %abs, {rebias}
  %odd.0 = lshr {ity} %rebased, {shift}
  %odd = and {ity} %odd.0, 1
  %n.0 = add {ity} %rebased, {half_ulp_m1}
  %n.1 = add {ity} %n.0, %odd
  %normal = lshr {ity} %n.1, {shift}
  ; subnormal half: significand with its leading one, shifted to units of 2^-24
  %is.tiny = icmp ule {ity} %abs, {tiny}
  %e = lshr {ity} %abs, {mant}
  %sig.0 = and {ity} %abs, {mant_mask}
  %sig = or {ity} %sig.0, {implicit}
  %s.0 = sub {ity} {sub_base}, %e
  %s = call {ity} @llvm.umin.{ity}({ity} %s.0, {ity} {max_sub_shift})
  %s.m1 = sub {ity} %s, 1
  %half.s = shl {ity} 1, %s.m1
  %half.s.m1 = sub {ity} %half.s, 1
  %odd.s.0 = lshr {ity} %sig, %s
  %odd.s = and {ity} %odd.s.0, 1
  %t.0 = add {ity} %sig, %half.s.m1
  %t.1 = add {ity} %t.0, %odd.s
  %sub.0 = lshr {ity} %t.1, %s
  %sub = select i1 %is.tiny, {ity} 0, {ity} %sub.0
  %r.0 = select i1 %is.normal, {ity} %normal, {ity} %sub
  %r.1 = select i1 %is.big, {ity} 31744, {ity} %r.0
  %r.2 = select i1 %is.nan, {ity} %nan, {ity} %r.1
  %r.3 = or {ity} %r.2, %sign
  %r = trunc {ity} %r.3 to i16
  %h = bitcast i16 %r to half
  ret half %h
}}
declare {ity} @llvm.umin.{ity}({ity}, {ity})
"""


def _bits(fmt: str, value: float) -> int:
    pack = {"f": ("<f", "<I"), "d": ("<d", "<Q")}[fmt]
    return struct.unpack(pack[1], struct.pack(pack[0], value))[0]


def _truncate_ir(name: str, fty: str, fmt: str, width: int, mant: int, bias: int) -> str:
    shift = mant - 10
    return _TRUNCATE_TO_HALF.format(
        name=name,
        fty=fty,
        ity=f"i{width}",
        abs_mask=(1 << (width - 1)) - 1,
        sign_shift=width - 16,
        inf=_bits(fmt, float("inf")),
        shift=shift,
        big=_bits(fmt, 65520.0),
        min_normal=_bits(fmt, 2.0**-14),
        rebias=(bias - 15) << mant,
        half_ulp_m1=(1 << (shift - 1)) - 1,
        tiny=_bits(fmt, 2.0**-25),
        mant=mant,
        mant_mask=(1 << mant) - 1,
        implicit=1 << mant,
        sub_base=bias + mant - 24,
        max_sub_shift=mant + 1,
    )


_HELPERS_IR = "\n".join(
    [
        _EXTEND_HALF_TO_FLOAT,
        _truncate_ir("__truncsfhf2", "float", "f", 32, 23, 127),
        _truncate_ir("__truncdfhf2", "double", "d", 64, 52, 1023),
    ]
)

PROVIDED_SYMBOLS: frozenset[str] = frozenset({"__extendhfsf2", "__truncsfhf2", "__truncdfhf2"})

_lock = threading.Lock()
_engine = None  # the helpers' engine lives as long as the process (modules call into it)


def ensure_helpers() -> None:
    """JIT the helpers once per process and register their addresses for MCJIT (idempotent)."""
    global _engine
    if _engine is not None:
        return
    with _lock:
        if _engine is not None:
            return
        mod = llvm.parse_assembly(_HELPERS_IR)
        mod.verify()
        # The baseline CPU: the helpers must run on any x86-64 host, and without F16C the
        # back end cannot turn their bit manipulation into a conversion (a call to themselves).
        engine = llvm.create_mcjit_compiler(mod, Target("llvm -mcpu=x86-64").new_target_machine())
        engine.finalize_object()
        for name in sorted(PROVIDED_SYMBOLS):
            address = engine.get_function_address(name)
            assert address, name
            llvm.add_symbol(name, address)
        _engine = engine


def helpers_ir() -> str:
    """The LLVM IR text of the helpers (for tests and inspection)."""
    return _HELPERS_IR
