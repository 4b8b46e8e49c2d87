"""The float16 conversion helpers of minitvm.runtime.compiler_rt, checked against numpy.

Before these helpers existed, each case here jumped to address 0 (SIGSEGV), so every case runs
in its own process (`run_isolated`). Kernels are built for `-mcpu=x86-64` (no F16C, so LLVM calls
`__extendhfsf2`/`__truncsfhf2`) and for the host (double → half calls `__truncdfhf2` on any CPU
without AVX512-FP16); the tests first assert that the object really references the helper.
"""

from __future__ import annotations

import numpy as np
import pytest
from codegen_harness import run_isolated, run_elementwise

from minitvm import tir
from minitvm.runtime import compiler_rt
from minitvm.runtime.elf import read_elf

_PRELUDE = """
import numpy as np
from codegen_harness import Loaded, aligned_copy, elementwise
from minitvm.codegen import llvm as codegen_llvm
from minitvm.runtime.elf import read_elf
from minitvm.tir import Cast

def convert(src, dst, values, cpu, helper):
    func = elementwise("convert", [src], dst, lambda x: Cast(dst, x), len(values))
    result = codegen_llvm.build([func], "llvm -mcpu=" + cpu)
    undefined = read_elf(result.object_code, "test").undefined_symbols
    assert (helper in undefined) == (helper != ""), (helper, undefined)
    out = aligned_copy(np.zeros(len(values), dst))
    assert Loaded(result)("convert", aligned_copy(values), out) == 0
    return out
"""


def test_helpers_are_registered_and_resolvable():
    compiler_rt.ensure_helpers()
    compiler_rt.ensure_helpers()  # idempotent
    import llvmlite.binding as llvm

    for name in compiler_rt.PROVIDED_SYMBOLS:
        assert llvm.address_of_symbol(name), name


def test_extend_half_to_float_all_65536_values_match_numpy():
    run_isolated(
        _PRELUDE
        + """
halves = np.arange(65536, dtype=np.uint16).view(np.float16)
expected = halves.astype(np.float32)
for cpu, helper in (("x86-64", "__extendhfsf2"), ("x86-64-v3", "")):
    got = convert("float16", "float32", halves, cpu, helper)
    nan = np.isnan(expected)
    np.testing.assert_array_equal(got.view(np.uint32)[~nan], expected.view(np.uint32)[~nan])
    # NaNs keep sign and payload and come out quiet, as the F16C instruction makes them
    quiet = expected.view(np.uint32)[nan] | np.uint32(0x400000)
    np.testing.assert_array_equal(got.view(np.uint32)[nan], quiet)
"""
    )


def _edge_floats() -> str:
    """Python source for `values(dtype)`: random bit patterns plus every half, every half tie
    and the values just beside the ties (where a double rounding would go wrong)."""
    return """
rng = np.random.default_rng(0)
def values(dtype):
    uint = np.uint32 if dtype == np.float32 else np.uint64
    halves = np.arange(65536, dtype=np.uint16).view(np.float16)
    halves = halves[np.isfinite(halves)].astype(np.float64)
    up = np.nextafter(halves.astype(np.float16), np.float16(np.inf)).astype(np.float64)
    ties = (halves + up) / 2
    eps = 2.0 ** -40 if dtype == np.float64 else 2.0 ** -20
    parts = [
        rng.integers(0, np.iinfo(uint).max, 300000, dtype=uint).view(dtype),
        (rng.standard_normal(100000) * np.exp2(rng.integers(-30, 18, 100000))).astype(dtype),
        halves.astype(dtype), ties.astype(dtype),
        (ties * (1 + eps)).astype(dtype), (ties * (1 - eps)).astype(dtype),
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 65504, 65519.99, 65520,
                  2.0 ** -24, 2.0 ** -25, 2.0 ** -25 * (1 + eps), 2.0 ** -26, 1e-30, 1e30], dtype),
    ]
    v = np.concatenate(parts)
    return v[: len(v) // 16 * 16]
"""


@pytest.mark.parametrize(
    "src,cpu,helper",
    [
        ("float32", "x86-64", "__truncsfhf2"),
        ("float64", "x86-64", "__truncdfhf2"),
        ("float64", "x86-64-v3", "__truncdfhf2"),
    ],
)
def test_truncate_to_half_rounds_to_nearest_even_like_numpy(src, cpu, helper):
    run_isolated(
        _PRELUDE
        + _edge_floats()
        + f"""
v = values(np.{src})
with np.errstate(all="ignore"):
    expected = v.astype(np.float16)
got = convert("{src}", "float16", v, "{cpu}", "{helper}")
nan = np.isnan(expected)
bad = np.flatnonzero(got.view(np.uint16)[~nan] != expected.view(np.uint16)[~nan])
assert bad.size == 0, (v[~nan][bad[:5]], got[~nan][bad[:5]], expected[~nan][bad[:5]])
assert np.isnan(got[nan]).all()
np.testing.assert_array_equal(np.signbit(got[nan]), np.signbit(v[nan]))
"""
    )


def test_float16_ops_without_f16c_match_numpy():
    """Every float16 op on a CPU without F16C goes through the helpers (59 op kinds crashed)."""
    out = run_isolated(
        """
import numpy as np
from codegen_harness import Loaded, aligned_copy, elementwise
from minitvm import tir
from minitvm.codegen import llvm as codegen_llvm
rng = np.random.default_rng(1)
a = rng.uniform(0.5, 4, 64).astype(np.float16)
b = rng.uniform(0.5, 4, 64).astype(np.float16)
cases = {
    "add": (lambda x, y: x + y, np.add),
    "mul": (lambda x, y: x * y, np.multiply),
    "div": (lambda x, y: x / y, np.divide),
    "max": (tir.max, np.maximum),
    "exp": (lambda x, y: tir.exp(x), lambda x, y: np.exp(x)),
    "pow": (tir.power, np.power),
}
for name, (make, ref) in cases.items():
    func = elementwise("k", ["float16", "float16"], "float16", make, 64)
    out = aligned_copy(np.zeros(64, np.float16))
    loaded = Loaded(codegen_llvm.build([func], "llvm -mcpu=x86-64"))
    assert loaded("k", aligned_copy(a), aligned_copy(b), out) == 0
    np.testing.assert_allclose(out.astype(np.float32), ref(a, b).astype(np.float32), rtol=2e-3)
    print(name, "ok")
"""
    )
    assert out.count("ok") == 6


def test_float16_scalar_param_is_converted_from_double():
    """The ABI passes float scalars as doubles; a float16 param narrows with __truncdfhf2."""
    run_isolated(
        """
import numpy as np
from codegen_harness import prim_func, flat_buffer
from minitvm.codegen import llvm as codegen_llvm
from minitvm.runtime.module import Module
from minitvm.tir import BufferLoad, BufferStore, For, ForKind, Var
n = 16
pa, A, _ = flat_buffer("A", n, "float16")
pb, B, _ = flat_buffer("B", n, "float16")
alpha, i = Var("alpha", "float16"), Var("i")
body = For(i, 0, n, ForKind.SERIAL, BufferStore(B, BufferLoad(A, (i,)) * alpha, (i,)))
func = prim_func("scale", [pa, pb, alpha], {pa: A, pb: B}, body)
mod = Module.from_codegen(codegen_llvm.build([func], "llvm"))
a = np.linspace(-4, 4, n).astype(np.float16)
b = np.zeros(n, np.float16)
mod["scale"](a, b, 1 + 2.0**-10 + 2.0**-11 + 2.0**-14)  # just above a tie: rounds up
np.testing.assert_array_equal(b, a * np.float16(1.001953125))
"""
    )


def test_float64_to_float16_cast_on_host_matches_numpy():
    """The case that segfaulted the suite on Zen 4/5 hosts (no double → half instruction)."""
    run_isolated(
        """
import numpy as np
from codegen_harness import run_elementwise
from minitvm.tir import Cast
a = np.array([0.1, -2.5, 65519.0, 1e-7, 3.0, 65536.0, -0.0, 7.25] * 2)
out = run_elementwise(lambda x: Cast("float16", x), [a], "float16")
np.testing.assert_array_equal(out.view(np.uint16), a.astype(np.float16).view(np.uint16))
"""
    )


def test_helper_module_references_no_symbol():
    """The helpers are self-contained (no call to libgcc, no call to themselves)."""
    import llvmlite.binding as llvm

    from minitvm.target import Target

    tm = Target("llvm -mcpu=x86-64").create_target_machine()
    obj = tm.emit_object(llvm.parse_assembly(compiler_rt.helpers_ir()))
    assert read_elf(bytes(obj), "helpers").undefined_symbols == frozenset()


def test_call_extern_of_unknown_function_is_a_build_error():
    from minitvm.error import BuildError

    with pytest.raises(BuildError, match="'no_such_fn', which is not defined in this process"):
        run_elementwise(
            lambda x: tir.call_extern("float32", "no_such_fn", x),
            [np.ones(16, "float32")],
            "float32",
        )
