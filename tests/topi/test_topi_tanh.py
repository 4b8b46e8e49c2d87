"""topi.tanh of float32 goes through exp (vectorized by code generation): within 4 ulp of
float64 numpy on both sides of the series/exp switch, and exact on the special values."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, topi


def _build(fn, n, dtype="float32"):
    x = te.placeholder((n,), dtype, "x")
    y = fn(x)
    s = te.create_schedule(y.op)
    outer, inner = s[y].split(y.op.axis[0], factor=16)
    s[y].vectorize(inner)
    s[y].parallel(outer)
    return tvm.build(s, [x, y], "llvm")


def _run(f, values):
    out = tvm.nd.empty(values.shape, str(values.dtype))
    f(tvm.nd.array(values), out)
    return out.numpy()


def test_tanh_float32_within_4_ulp_of_float64_numpy():
    rng = np.random.default_rng(0)
    near_switch = np.nextafter(np.float32(0.125), np.float32([0, 1]))
    values = np.concatenate(
        [rng.standard_normal(4096) * 0.05, rng.uniform(-0.3, 0.3, 4096),
         rng.uniform(-12, 12, 4096), near_switch, -near_switch, [0.125, 1e-30, -1e-45, 9.0]]
    ).astype("float32")  # fmt: skip
    got = _run(_build(topi.tanh, values.size), values)
    want = np.tanh(values.astype(np.float64))
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got - want) / ulp) <= 4.0


def test_tanh_float32_special_values():
    values = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 88.0, -100.0, 20.0], "float32")
    got = _run(_build(topi.tanh, values.size), values)
    np.testing.assert_array_equal(got, np.tanh(values))
    assert np.signbit(got[1]) and not np.signbit(got[0])


@pytest.mark.parametrize("dtype", ["float64"])
def test_tanh_other_dtypes_keep_libm(dtype):
    values = np.linspace(-5, 5, 64).astype(dtype)
    got = _run(_build(topi.tanh, values.size, dtype), values)
    np.testing.assert_allclose(got, np.tanh(values), rtol=1e-14)


def test_gelu_tanh_matches_reference():
    # atol: for x << 0, 1 + tanh(..) cancels in float32 whichever way tanh is computed
    values = np.random.default_rng(2).uniform(-6, 6, 1024).astype("float32")
    got = _run(_build(topi.nn.gelu_tanh, values.size), values)
    np.testing.assert_allclose(got, topi.reference.gelu_tanh(values), rtol=2e-6, atol=1e-6)
