"""Kernels whose argument checkers have the same text share one compiled code object, and each
still fills its own argument arrays (a shared namespace would send one kernel's pointers to
another): results checked against numpy while the two calls alternate."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import te
from minitvm.runtime import packed_func


def _kernel(name, fn):
    a = te.placeholder((64,), "float32", name="A")
    b = te.placeholder((64,), "float32", name="B")
    c = te.compute((64,), lambda i: fn(a[i], b[i]), name="C")
    return tvm.build(te.create_prim_func([a, b, c]).with_attr("global_symbol", name), "llvm")


def test_same_checker_text_shares_code_and_keeps_arguments_apart():
    before = len(packed_func._CODE)
    add = _kernel("k_add", lambda x, y: x + y)
    sub = _kernel("k_sub", lambda x, y: x - y)
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(64).astype("float32") for _ in range(2))
    out1, out2 = tvm.nd.empty((64,), "float32"), tvm.nd.empty((64,), "float32")
    for _ in range(3):
        add(tvm.nd.array(x), tvm.nd.array(y), out1)
        sub(tvm.nd.array(x), tvm.nd.array(y), out2)
        np.testing.assert_allclose(out1.numpy(), x + y, rtol=1e-6)
        np.testing.assert_allclose(out2.numpy(), x - y, rtol=1e-6)
    # two kernels, each a fast and a trusted checker: no more than two new texts
    assert len(packed_func._CODE) - before <= 2
