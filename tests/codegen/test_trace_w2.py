"""`tir.trace` at run time (LLVM): the action sees the traced values, and the expression's value
is the action's result, or the last traced value when the action returns None."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, tir

N = 5
DTYPES = ["float64", "float32", "int64", "int32"]


def _build(tensors):
    return tvm.build(te.create_prim_func(tensors), target="llvm")


def _register(name, fn):
    tvm.register_func(name, fn, override=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_trace_passes_values_and_keeps_last_argument(dtype):
    seen = []
    _register("w2.trace.record", lambda *args: seen.append(args))
    x = te.placeholder((N,), dtype, name="x")
    y = te.compute((N,), lambda i: tir.trace([i, x[i] * 2], "w2.trace.record"), name="y")
    f = _build([x, y])
    x_np = (np.arange(N) + 3).astype(dtype)
    y_nd = tvm.nd.array(np.zeros(N, dtype))
    f(tvm.nd.array(x_np), y_nd)
    np.testing.assert_array_equal(y_nd.numpy(), x_np * 2)
    assert [(int(i), float(v)) for i, v in seen] == [(i, float(v) * 2) for i, v in enumerate(x_np)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_trace_result_replaces_the_value(dtype):
    _register("w2.trace.plus_ten", lambda v: v + 10)
    x = te.placeholder((N,), dtype, name="x")
    y = te.compute((N,), lambda i: tir.trace([x[i]], "w2.trace.plus_ten"), name="y")
    z = te.compute((N,), lambda i: tir.trace([y[i]], "w2.trace.plus_ten") + x[i], name="z")
    f = _build([x, y, z])
    x_np = np.arange(N).astype(dtype)
    y_nd, z_nd = tvm.nd.array(np.zeros(N, dtype)), tvm.nd.array(np.zeros(N, dtype))
    f(tvm.nd.array(x_np), y_nd, z_nd)
    np.testing.assert_array_equal(y_nd.numpy(), x_np + 10)
    np.testing.assert_array_equal(z_nd.numpy(), x_np + 20 + x_np)


def test_trace_sum_of_traces_and_default_action(capsys):
    _register("w2.trace.silent", lambda *args: None)
    a = te.placeholder((2, 3), "float32", name="a")
    b = te.placeholder((2, 3), "float32", name="b")
    c = te.compute(
        (2, 3),
        lambda i, j: tir.trace([i, j, a[i, j]], "w2.trace.silent") + tir.trace([b[i, j]]),
        name="c",
    )
    f = _build([a, b, c])
    rng = np.random.default_rng(0)
    a_np, b_np = (rng.standard_normal((2, 3)).astype("float32") for _ in range(2))
    c_nd = tvm.nd.array(np.zeros((2, 3), "float32"))
    f(tvm.nd.array(a_np), tvm.nd.array(b_np), c_nd)
    np.testing.assert_array_equal(c_nd.numpy(), a_np + b_np)
    assert capsys.readouterr().out.count("\n") == 6  # tvm.default_trace_action prints each call


def test_trace_unregistered_action_fails_naming_it():
    x = te.placeholder((N,), "float32", name="x")
    y = te.compute((N,), lambda i: tir.trace([x[i]], "w2.trace.nobody_registered"), name="y")
    f = _build([x, y])
    with pytest.raises(Exception, match="w2.trace.nobody_registered"):
        f(tvm.nd.array(np.zeros(N, "float32")), tvm.nd.array(np.zeros(N, "float32")))
