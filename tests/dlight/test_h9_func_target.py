"""ApplyDefaultSchedule uses a function's own "target" attribute (as TVM): a GPU pass leaves
a function pinned to the host alone and still schedules the others; results match numpy."""

import numpy as np

import minitvm as tvm
from minitvm import dlight as dl
from minitvm import te
from minitvm.testing.tir_interp import run_prim_func
from minitvm.tir.functor import post_order_visit
from minitvm.tir.stmt import ForKind


def _add_one(name):
    a = te.placeholder((8, 16), name="A")
    b = te.compute((8, 16), lambda i, j: a[i, j] + 1.0, name="B")
    return te.create_prim_func([a, b]).with_attr("global_symbol", name)


def _kinds(func):
    out = []
    post_order_visit(func.body, lambda n: out.append(n.kind) if hasattr(n, "kind") else None)
    return out


def test_gpu_rules_skip_a_function_whose_target_attr_is_the_host():
    cpu = _add_one("cpu_func").with_attr("target", tvm.target.Target("llvm"))
    mod = tvm.IRModule({"gpu_func": _add_one("gpu_func"), "cpu_func": cpu})
    with tvm.target.Target("cuda"):
        out = dl.ApplyDefaultSchedule(dl.gpu.Fallback())(mod)
    assert tvm.ir.structural_equal(out["cpu_func"], cpu)  # untouched, not marked scheduled
    assert ForKind.THREAD_BINDING in _kinds(out["gpu_func"])
    x = np.random.default_rng(0).standard_normal((8, 16)).astype("float32")
    y = np.zeros((8, 16), "float32")
    run_prim_func(out["gpu_func"], x, y)
    np.testing.assert_allclose(y, x + 1.0, rtol=1e-6)
    lib = tvm.build(out["cpu_func"], target="llvm")
    a, b = tvm.nd.array(x), tvm.nd.array(np.zeros((8, 16), "float32"))
    lib(a, b)
    np.testing.assert_allclose(b.numpy(), x + 1.0, rtol=1e-6)
