"""End to end: a TE schedule lowered by the pipeline and built by the LLVM code generator."""

from __future__ import annotations

import numpy as np

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
