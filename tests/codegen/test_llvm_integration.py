"""End to end: a TE schedule lowered by the pipeline and built by the LLVM code generator."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm import driver, te, tir


def test_te_schedule_with_parallel_and_vectorized_loops_matches_numpy():
    n = te.var("n")
    A = te.placeholder((n, 64), name="A")
    B = te.compute((n, 64), lambda i, j: tir.exp(A[i, j]) * 2.0, name="B")
    s = te.create_schedule(B.op)
    _, inner = s[B].split(B.op.axis[1], factor=16)
    s[B].vectorize(inner)
    s[B].parallel(B.op.axis[0])
    module = driver.build(s, [A, B], "llvm", name="exp2x")
    a = np.random.default_rng(0).random((10, 64), dtype=np.float32)
    b = np.zeros((10, 64), "float32")
    module(a, b)
    np.testing.assert_allclose(b, np.exp(a) * 2, rtol=1e-5)
    assert "zmm" in module.get_source("asm")


def test_auto_vectorizer_does_not_touch_unmarked_loops():
    """LLVM's loop vectorizer once turned A[i*8 + jk % 8] into one contiguous 16-lane load (wrong
    for the second 8 lanes). Loops nobody marked `vectorize` must stay out of its reach."""
    import minitvm as tvm
    from minitvm.script import tir as T

    @T.prim_func
    def f(A: T.Buffer((16, 8), "float32"), B: T.Buffer((8, 12), "float32"),
          C: T.Buffer((8, 16, 12), "float32")):
        for i, jk in T.grid(16, 96):
            C[jk % 8, i, jk // 8] = A[i, jk % 8] * B[jk % 8, jk // 8]

    rng = np.random.default_rng(0)
    a = rng.random((16, 8), dtype=np.float32)
    b = rng.random((8, 12), dtype=np.float32)
    c = np.zeros((8, 16, 12), np.float32)
    tvm.build(f)(a, b, c)
    np.testing.assert_allclose(c, np.einsum("ij,jk->jik", a, b), rtol=1e-6)


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "tanh", "pow", "malloc"])
def test_kernel_named_like_a_libc_function_does_not_shadow_it(name):
    """A kernel called `exp` whose vector exp becomes calls to libm's `exp` once recursed into
    itself and crashed; entry symbols are prefixed so C names stay libc's."""
    import minitvm as tvm
    from minitvm import te

    A = te.placeholder((4,), "float64", name="A")
    B = te.compute((4,), lambda i: te.exp(A[i]) + te.log(A[i]) + te.sqrt(A[i]), name="B")
    s = te.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    f = tvm.build(s, [A, B], "llvm", name=name)
    a = np.random.default_rng(0).random(4) + 0.5
    b = np.zeros(4)
    f[name](a, b)
    np.testing.assert_allclose(b, np.exp(a) + np.log(a) + np.sqrt(a), rtol=1e-12)
