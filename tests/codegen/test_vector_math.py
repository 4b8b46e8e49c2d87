"""float32 vector exp, erf and sigmoid are emitted as LLVM IR (a polynomial per vector) instead
of one libm call per lane, and stay within a few ulp of float64 references over the whole
float32 range, with inf, NaN, overflow and underflow exact."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, tir

N = 1 << 16


def build(fn, lanes: int = 16, dtype: str = "float32", n: int = N):
    """x -> fn(x) over `n` elements, the loop vectorized by `lanes` (1: scalar)."""
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.compute((n,), lambda i: fn(A[i]), name="B")
    sch = tvm.tir.Schedule(te.create_prim_func([A, B]))
    if lanes > 1:
        (i,) = sch.get_loops(sch.get_block("B"))
        _, inner = sch.split(i, [None, lanes])
        sch.vectorize(inner)
    return tvm.build(sch.mod["main"], target="llvm")


def run(f, x: np.ndarray) -> np.ndarray:
    y = tvm.nd.array(np.zeros_like(x))
    f(tvm.nd.array(x), y)
    return y.numpy()


def ulps(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in units of the last place of the float32-rounded reference."""
    ref32 = np.abs(ref.astype(np.float32))
    return np.abs(got.astype(np.float64) - ref) / np.spacing(ref32).astype(np.float64)


def samples(lo: float, hi: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.uniform(lo, hi, N // 2), np.linspace(lo, hi, N // 2)]).astype(
        "float32"
    )


def test_vector_exp_is_not_a_libm_call_per_lane() -> None:
    ll = build(tir.exp).get_source("ll")
    assert "expf" not in ll and "llvm.exp." not in ll
    assert "llvm.fma.v16f32" in ll


@pytest.mark.parametrize("lo, hi", [(-104.5, 89.5), (-1.0, 1.0), (-90.0, -80.0), (80.0, 88.7)])
def test_vector_exp_within_one_ulp_over_the_float32_range(lo, hi) -> None:
    x = samples(lo, hi, seed=int(abs(hi)))
    got = run(build(tir.exp), x)
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64))
        ref32 = ref.astype(np.float32)
    normal = np.isfinite(ref32) & (ref32 >= np.finfo(np.float32).tiny)
    assert ulps(got[normal], ref[normal]).max() <= 1.0
    # denormal results within one denormal step; overflow exactly inf
    sub = ~normal & np.isfinite(ref32)
    assert np.abs(got[sub] - ref32[sub]).max(initial=0) <= np.finfo(np.float32).smallest_subnormal
    assert np.array_equal(np.isinf(got), np.isinf(ref32))


def test_vector_exp_edge_cases_are_exact() -> None:
    edge = [np.nan, -np.inf, np.inf, 0.0, -0.0, 88.72283, 88.7229, -103.9, -104.0, -1e4, 1e4]
    x = np.resize(np.array(edge, "float32"), 64)
    got = run(build(tir.exp, n=64), x)[: len(edge)]
    with np.errstate(over="ignore"):
        ref = np.exp(np.array(edge, "float32"))
    np.testing.assert_array_equal(got, ref)  # NaN == NaN for assert_array_equal


def test_vector_erf_within_three_ulp_and_exact_at_the_ends() -> None:
    erf = np.vectorize(math.erf, otypes=[np.float64])
    f = build(tir.erf)
    assert "erff" not in f.get_source("ll")
    for lo, hi in [(-5.0, 5.0), (0.9, 1.1), (-1e-3, 1e-3), (3.5, 4.0)]:
        x = samples(lo, hi, seed=3)
        x = x[x != 0]
        x = np.resize(x, N)
        assert ulps(run(f, x), erf(x.astype(np.float64))).max() <= 3.0, (lo, hi)
    edge = [np.nan, -np.inf, np.inf, 0.0, -0.0, 3.93, -10.0, 1e-40]
    got = run(build(tir.erf, n=64), np.resize(np.array(edge, "float32"), 64))[: len(edge)]
    ref = np.array([np.nan, -1, 1, 0, -0.0, 1, -1, math.erf(np.float32(1e-40))], "float32")
    np.testing.assert_allclose(got, ref, rtol=2e-7, atol=0)
    assert np.signbit(got[4])


def test_vector_sigmoid_uses_the_vector_exp() -> None:
    f = build(tir.sigmoid)
    assert "expf" not in f.get_source("ll")
    x = samples(-120.0, 120.0, seed=5)
    ref = 1.0 / (1.0 + np.exp(-x.astype(np.float64)))
    # below float32's normal range 1 / (1 + inf) is 0, as with libm's expf
    np.testing.assert_allclose(run(f, x), ref, rtol=3e-7, atol=np.finfo(np.float32).tiny)


@pytest.mark.parametrize("fn, ref", [(tir.exp, np.exp), (tir.erf, np.vectorize(math.erf))])
@pytest.mark.parametrize("lanes, dtype", [(1, "float32"), (8, "float64")])
def test_scalar_and_float64_keep_libm(fn, ref, lanes, dtype) -> None:
    x = samples(-5.0, 5.0, seed=7).astype(dtype)
    got = run(build(fn, lanes, dtype), x)
    np.testing.assert_allclose(got, ref(x.astype(np.float64)), rtol=1e-6 if lanes == 1 else 1e-14)
