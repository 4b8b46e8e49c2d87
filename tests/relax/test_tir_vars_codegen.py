"""LLVM code of kernels with scalar params (call_tir's tir_vars): a scalar that a param's dim
pins (the dim is `s` or `s * 4`, as call_te makes them) is checked at the call like a symbolic
dim, so indices over it get no per-element bounds check in the loop."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minitvm as tvm
from minitvm.script import tir as T


@T.prim_func
def transpose(a: T.handle, b: T.handle, s: T.int64):
    A = T.match_buffer(a, (s * 4,))
    B = T.match_buffer(b, (4, s))
    for i, j in T.grid(s, 4):
        with T.block("t"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vj, vi] = A[vi * 4 + vj]


@T.prim_func
def shifted(a: T.handle, b: T.handle, k: T.int64):
    n = T.int64()
    A = T.match_buffer(a, (n + 8,))
    B = T.match_buffer(b, (n,))
    for i in range(n):
        with T.block("t"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi + k]


@T.prim_func
def shifted_in_shape(a: T.handle, b: T.handle, k: T.int64):
    n = T.int64()
    A = T.match_buffer(a, (n + k,))
    B = T.match_buffer(b, (n,))
    for i in range(n):
        with T.block("t"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi + k]


def _bounds_checks(func) -> list[str]:
    errors = tvm.build(func, target="llvm").func_infos[0]["errors"]
    return [e for e in errors if "depends on data" in e]


def test_scalar_named_by_a_shape_indexes_without_bounds_checks():
    assert _bounds_checks(transpose) == []


@pytest.mark.parametrize("func", [shifted, shifted_in_shape], ids=["no_shape", "n_plus_k"])
def test_scalar_no_dim_pins_still_gets_bounds_checks(func):
    """k offsets an index; no dim is k (times a positive constant), so a k < 0 passes the
    call's shape check (A of n + k elements) and the kernel must check the index itself."""
    (check,) = _bounds_checks(func)
    name = func.attrs["global_symbol"]
    assert f"index out of bounds reading 'A' in '{name}': the index `i + k`" in check


def test_kernel_with_a_shape_scalar_runs_and_rejects_a_mismatched_scalar():
    f = tvm.build(transpose, target="llvm")["transpose"]
    a = np.arange(12, dtype="float32")
    b = tvm.nd.empty((4, 3), "float32")
    f(tvm.nd.array(a), b, 3)
    np.testing.assert_array_equal(b.numpy(), a.reshape(3, 4).T)
    # a scalar that disagrees with the shapes would index outside them: run it isolated
    code = textwrap.dedent(
        """
        import numpy as np
        import minitvm as tvm
        from minitvm.error import ShapeError
        from test_tir_vars_codegen import transpose
        f = tvm.build(transpose, target="llvm")["transpose"]
        a = tvm.nd.array(np.arange(12, dtype="float32"))
        try:
            f(a, tvm.nd.empty((4, 3), "float32"), 5)
        except ShapeError as err:
            print(err)
        """
    )
    here = __file__.rsplit("/", 1)[0]
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=here,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert (
        "calling 'transpose': argument 'A' (position 0) has shape (12,), expected (s * 4,): "
        "dim 0 must equal s * 4 = 20." in run.stdout
    ), run.stdout
