"""Run-time checks of codegen/llvm_checks.py: integer division by zero and data-dependent
indices out of bounds return an error code (the runtime raises it) instead of SIGFPE/SIGSEGV.

Cases that crashed the process before their fix run in a subprocess (`run_isolated`).
"""

from __future__ import annotations

import numpy as np
import pytest
from checks_cases import N, binary_kernel, gather_kernel
from codegen_harness import flat_buffer, prim_func, run_isolated

from minitvm import tir
from minitvm.codegen import llvm as codegen_llvm
from minitvm.tir import BufferLoad, BufferStore, For, ForKind, Var


def test_integer_division_by_zero_in_data_is_an_error_in_every_dtype_and_width():
    out = run_isolated(
        """
import numpy as np
from checks_cases import INT_DTYPES, N, build, call, division_kernels, error_of
for dtype in INT_DTYPES:
    loaded = build(*division_kernels(dtype))
    a = np.arange(1, N + 1).astype(dtype)
    b = np.full(N, 3, dtype)
    for name in loaded.infos:
        code, (_, _, c) = call(loaded, name, a, b, np.zeros(N, dtype))
        assert code == 0, (dtype, name, code)
        bz = b.copy(); bz[N - 5] = 0           # one zero, in the last vector
        code, _ = call(loaded, name, a, bz, np.zeros(N, dtype))
        message = error_of(loaded, name, code)
        expected = "integer division by zero in '" + name + "' computing 'C'"
        assert message.startswith(expected), (dtype, name, message)
    print(dtype, "ok")
"""
    )
    assert out.count("ok") == 8


def test_int_min_divided_by_minus_one_wraps_like_numpy():
    run_isolated(
        """
import numpy as np
from checks_cases import N, build, call, division_kernels, numpy_int_min
refs = {"div": lambda a, b: a // b, "floordiv": lambda a, b: a // b,
        "mod": lambda a, b: a % b, "floormod": lambda a, b: a % b}
for dtype in ["int8", "int16", "int32", "int64"]:
    loaded = build(*division_kernels(dtype))
    a = np.full(N, numpy_int_min(dtype), dtype); a[::3] = 7
    b = np.full(N, -1, dtype); b[1::4] = 2
    for name in loaded.infos:
        code, (_, _, c) = call(loaded, name, a, b, np.zeros(N, dtype))
        assert code == 0, (dtype, name, code)
        with np.errstate(all="ignore"):
            expected = refs[name.split("_")[0]](a, b)
        if name.startswith("div"):  # C truncation: differs from // only for inexact quotients
            expected = np.where(b == -1, np.negative(a), expected)
            expected[1::4] = (a[1::4].astype(np.int64) / 2).astype(dtype)
        np.testing.assert_array_equal(c, expected, err_msg=f"{dtype} {name}")
"""
    )


def test_division_by_zero_raises_runtime_error_through_the_module():
    run_isolated(
        """
import numpy as np, pytest
from checks_cases import N, binary_kernel
from minitvm.codegen import llvm as codegen_llvm
from minitvm.error import MiniTVMError
from minitvm.runtime.module import Module
from minitvm.tir import FloorDiv
mod = Module.from_codegen(codegen_llvm.build([binary_kernel("fdiv", "int32", FloorDiv)]))
a, b, c = np.ones(N, "int32"), np.zeros(N, "int32"), np.zeros(N, "int32")
with pytest.raises(MiniTVMError, match="integer division by zero in 'fdiv' computing 'C'"):
    mod["fdiv"](a, b, c)
"""
    )


def test_division_by_zero_inside_a_parallel_loop_is_an_error():
    run_isolated(
        """
import numpy as np
from checks_cases import N, binary_kernel, build, call, error_of
from minitvm.tir import Div, ForKind
from minitvm.runtime import threadpool
threadpool.ensure_pool()
loaded = build(binary_kernel("pdiv", "int64", Div, kind=ForKind.PARALLEL))
a, b = np.arange(N, dtype="int64"), np.full(N, 2, "int64")
code, (_, _, c) = call(loaded, "pdiv", a, b, np.zeros(N, "int64"))
assert code == 0 and (c == a // 2).all()
b[7] = 0
code, _ = call(loaded, "pdiv", a, b, np.zeros(N, "int64"))
assert error_of(loaded, "pdiv", code).startswith("integer division by zero"), code
"""
    )


def test_symbolic_divisor_of_zero_is_an_error():
    """A run-time split factor (a scalar param used as divisor in the index math)."""
    run_isolated(
        """
import numpy as np
from codegen_harness import Loaded, aligned_copy, flat_buffer, prim_func
from minitvm import tir
from minitvm.codegen import llvm as codegen_llvm
from minitvm.tir import BufferLoad, BufferStore, For, ForKind, Var
n, f, i, j = 24, Var("factor"), Var("i"), Var("j")
ap, A, _ = flat_buffer("A", n)
bp, B, _ = flat_buffer("B", n)
inner = BufferStore(B, BufferLoad(A, (i * f + j,)), (i * f + j,))
body = For(i, 0, tir.floordiv(n, f), ForKind.SERIAL, For(j, 0, f, ForKind.SERIAL, inner))
loaded = Loaded(codegen_llvm.build([prim_func("split", [ap, bp, f], {ap: A, bp: B}, body)]))
a = aligned_copy(np.arange(n, dtype="float32"))
b = aligned_copy(np.zeros(n, "float32"))
assert loaded("split", a, b, 4) == 0 and (b == a).all()
code = loaded("split", a, b, 0)
message = loaded.infos["split"]["errors"][code - 1]
assert "integer division by zero in 'split' in the bounds of loop 'i'" in message, message
"""
    )


@pytest.mark.parametrize("divisor", [1, 2, 8, 7, -3])
def test_constant_divisors_get_no_check(divisor):
    """Index math like i // 8 stays as fast as before: no compare, no error code."""
    func = binary_kernel(
        "cdiv", "int32", lambda a, b: tir.floordiv(a, tir.const(divisor, "int32")) + b
    )
    result = codegen_llvm.build([func])
    assert result.func_infos[0]["errors"] == []
    assert "ret i32 1" not in result.llvm_ir


def test_signed_division_by_constant_minus_one_is_checked_only_for_overflow():
    func = binary_kernel("m1", "int32", lambda a, b: tir.Div(a, tir.const(-1, "int32")) + b)
    assert codegen_llvm.build([func]).func_infos[0]["errors"] == []


# --------------------------------------------------------------------------- gathered indices


@pytest.mark.parametrize("lanes", [1, 8])
def test_gather_with_out_of_range_index_is_an_error(lanes):
    run_isolated(
        f"""
import numpy as np
from checks_cases import N, build, call, error_of, gather_kernel
loaded = build(gather_kernel(100, lanes={lanes}))
a = np.arange(100, dtype="float32")
good = np.random.default_rng(0).integers(0, 100, N).astype("int32")
code, (_, _, b) = call(loaded, "gather", a, good, np.zeros(N, "float32"))
assert code == 0 and (b == a[good]).all(), code
for bad in (100, -1, 2**31 - 1, -2**31):
    idx = good.copy(); idx[N - 3] = bad
    code, _ = call(loaded, "gather", a, idx, np.zeros(N, "float32"))
    message = error_of(loaded, "gather", code)
    assert message.startswith("index out of bounds reading 'A' in 'gather'"), (bad, message)
    assert "outside [0, 100)" in message
"""
    )


def test_scatter_with_out_of_range_index_is_an_error():
    run_isolated(
        """
import numpy as np
from codegen_harness import Loaded, aligned_copy, flat_buffer, prim_func
from minitvm.codegen import llvm as codegen_llvm
from minitvm.tir import BufferLoad, BufferStore, For, ForKind, Var
ap, A, _ = flat_buffer("A", 8)
ip, I, _ = flat_buffer("I", 8, "int32")
bp, B, _ = flat_buffer("B", 20)
i = Var("i")
body = For(i, 0, 8, ForKind.SERIAL, BufferStore(B, BufferLoad(A, (i,)), (BufferLoad(I, (i,)),)))
loaded = Loaded(codegen_llvm.build([prim_func("s", [ap, ip, bp], {ap: A, ip: I, bp: B}, body)]))
a = aligned_copy(np.arange(8, dtype="float32") + 1)
idx = aligned_copy(np.arange(8, dtype="int32") * 2)
b = aligned_copy(np.zeros(20, "float32"))
assert loaded("s", a, idx, b) == 0 and (b[idx] == a).all()
idx[2] = 20
code = loaded("s", a, idx, b)
assert "index out of bounds writing 'B' in 's'" in loaded.infos["s"]["errors"][code - 1]
"""
    )


def test_vector_index_loaded_as_a_vector_is_checked_per_lane():
    """A[I[ramp]] with a vector of loaded indices: a gather lane by lane, every lane checked."""
    run_isolated(
        """
import numpy as np
from codegen_harness import Loaded, aligned_copy, flat_buffer, prim_func
from minitvm.codegen import llvm as codegen_llvm
from minitvm.tir import BufferLoad, BufferStore, For, ForKind, Ramp, Var
ap, A, _ = flat_buffer("A", 50)
ip, I, _ = flat_buffer("I", 16, "int64")
bp, B, _ = flat_buffer("B", 16)
i = Var("i")
r = Ramp(i * 8, 1, 8)
body = For(i, 0, 2, ForKind.SERIAL, BufferStore(B, BufferLoad(A, (BufferLoad(I, (r,)),)), (r,)))
loaded = Loaded(codegen_llvm.build([prim_func("g", [ap, ip, bp], {ap: A, ip: I, bp: B}, body)]))
a = aligned_copy(np.arange(50, dtype="float32"))
idx = aligned_copy(np.arange(16, dtype="int64") * 3)
b = aligned_copy(np.zeros(16, "float32"))
assert loaded("g", a, idx, b) == 0 and (b == a[idx]).all()
idx[11] = 50
assert loaded("g", a, idx, b) != 0
"""
    )


def test_let_bound_index_and_data_dependent_loop_bounds_are_checked():
    """An index bound by LetStmt to a loop var of a CSR-style range(P[i], P[i+1])."""
    run_isolated(
        """
import numpy as np
from codegen_harness import Loaded, aligned_copy, flat_buffer, prim_func
from minitvm.codegen import llvm as codegen_llvm
from minitvm.tir import BufferLoad, BufferStore, For, ForKind, LetStmt, Var
n = Var("n")
ap, A, _ = flat_buffer("A", n)
pp, P, _ = flat_buffer("P", 5, "int32")
bp, B, _ = flat_buffer("B", 4)
i, j, k = Var("i"), Var("j"), Var("k")
row = For(j, BufferLoad(P, (i,)), BufferLoad(P, (i + 1,)) - BufferLoad(P, (i,)), ForKind.SERIAL,
          LetStmt(k, j, BufferStore(B, BufferLoad(B, (i,)) + BufferLoad(A, (k,)), (i,))))
func = prim_func("csr", [ap, pp, bp], {ap: A, pp: P, bp: B}, For(i, 0, 4, ForKind.SERIAL, row))
loaded = Loaded(codegen_llvm.build([func]))
a = aligned_copy(np.arange(10, dtype="float32"))
p = aligned_copy(np.array([0, 2, 5, 9, 10], "int32"))
b = aligned_copy(np.zeros(4, "float32"))
assert loaded("csr", a, p, b) == 0
np.testing.assert_array_equal(b, [1, 9, 26, 9])
p[4] = 11  # reads A[10] of 10
code = loaded("csr", a, p, b)
assert "index out of bounds reading 'A' in 'csr'" in loaded.infos["csr"]["errors"][code - 1]
assert "outside [0, n)" in loaded.infos["csr"]["errors"][code - 1]
"""
    )


def test_gather_inside_parallel_loop_with_symbolic_extent():
    run_isolated(
        """
import numpy as np
from codegen_harness import Loaded, aligned_copy, flat_buffer, prim_func
from minitvm.codegen import llvm as codegen_llvm
from minitvm.runtime import threadpool
from minitvm.tir import BufferLoad, BufferStore, For, ForKind, Var
threadpool.ensure_pool()
n, m = Var("n"), Var("m")
ap, A, _ = flat_buffer("A", n)
ip, I, _ = flat_buffer("I", m, "int32")
bp, B, _ = flat_buffer("B", m)
i = Var("i")
body = For(i, 0, m, ForKind.PARALLEL, BufferStore(B, BufferLoad(A, (BufferLoad(I, (i,)),)), (i,)))
loaded = Loaded(codegen_llvm.build([prim_func("pg", [ap, ip, bp], {ap: A, ip: I, bp: B}, body)]))
a = aligned_copy(np.arange(30, dtype="float32"))
idx = aligned_copy(np.arange(64, dtype="int32") % 30)
b = aligned_copy(np.zeros(64, "float32"))
assert loaded("pg", a, idx, b) == 0 and (b == a[idx]).all()
idx[63] = 30
assert loaded("pg", a, idx, b) != 0
"""
    )


def test_scalar_argument_used_as_index_is_checked():
    ap, A, _ = flat_buffer("A", 10)
    bp, B, _ = flat_buffer("B", 1)
    k = Var("k")
    func = prim_func("pick", [ap, bp, k], {ap: A, bp: B}, BufferStore(B, BufferLoad(A, (k,)), (0,)))
    errors = codegen_llvm.build([func]).func_infos[0]["errors"]
    assert errors and "index out of bounds reading 'A'" in errors[0]


def test_indices_of_loop_variables_get_no_check():
    """A normal kernel (affine indices of loops and shape dims) has no bounds check at all."""
    n = Var("n")
    ap, A, _ = flat_buffer("A", n)
    bp, B, _ = flat_buffer("B", n)
    i = Var("i")
    body = For(i, 0, n, ForKind.SERIAL, BufferStore(B, BufferLoad(A, (i,)) * 2.0, (i,)))
    assert codegen_llvm.build([prim_func("k", [ap, bp], {ap: A, bp: B}, body)]).func_infos[0][
        "errors"
    ] == []


def test_gather_matches_numpy_through_the_module_and_raises_on_bad_index():
    run_isolated(
        """
import numpy as np, pytest
from checks_cases import N, gather_kernel
from minitvm.codegen import llvm as codegen_llvm
from minitvm.error import MiniTVMError
from minitvm.runtime.module import Module
mod = Module.from_codegen(codegen_llvm.build([gather_kernel(1000)]))
a = np.random.default_rng(0).standard_normal(1000).astype("float32")
idx = np.arange(N, dtype="int32") * 31
b = np.zeros(N, "float32")
mod["gather"](a, idx, b)
np.testing.assert_array_equal(b, a[idx])
idx[5] = 1000
expected = r"index out of bounds reading 'A' in 'gather'.*outside \\[0, 1000\\)"
with pytest.raises(MiniTVMError, match=expected):
    mod["gather"](a, idx, b)
"""
    )


def test_shape_dim_divisor_gets_no_int_min_overflow_select():
    """i // m with m a shape dim (never negative) is only checked for 0 (outside the loop)."""
    m = Var("m")
    ap, A, _ = flat_buffer("A", m, "int32")
    bp, B, _ = flat_buffer("B", m, "int32")
    i, d = Var("i"), Var("d")

    def kernel(divisor):
        value = tir.Div(BufferLoad(A, (i,)), divisor)
        body = For(i, 0, m, ForKind.SERIAL, BufferStore(B, value, (i,)))
        params = [ap, bp] + ([d] if divisor is d else [])
        return codegen_llvm.build([prim_func("q", params, {ap: A, bp: B}, body)]).llvm_ir

    int_min = "-2147483648"
    assert int_min not in kernel(m)
    assert int_min in kernel(d)  # a scalar argument may be -1: INT_MIN / -1 is made defined
