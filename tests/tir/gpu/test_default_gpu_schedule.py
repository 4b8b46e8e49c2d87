"""DefaultGPUSchedule: unscheduled kernels (topi ops, fused epilogues, symbolic batch) get
threads bound and reductions in registers, then build for OpenCL and match numpy."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te, topi
from minitvm.driver import lower_gpu
from minitvm.error import ScheduleError
from minitvm.relax.transform.default_gpu_schedule import (
    DefaultGPUSchedule,
    default_gpu_schedule_func,
)
from minitvm.script import tir as T
from minitvm.target import Target
from minitvm.tir.functor import post_order_visit
from minitvm.tir.stmt import Allocate

_REASON = tvm.opencl(0).unavailable_reason()
requires_opencl = pytest.mark.skipif(_REASON is not None, reason=f"no OpenCL device: {_REASON}")


def _dense_relu():
    n = te.var("n")
    X = te.placeholder((n, 64), name="X")
    W = te.placeholder((32, 64), name="W")
    k = te.reduce_axis((0, 64), name="k")
    Y = te.compute((n, 32), lambda i, j: te.sum(X[i, k] * W[j, k], axis=k), name="Y")
    Z = te.compute((n, 32), lambda i, j: te.max(Y[i, j], 0.0), name="Z")
    return te.create_prim_func([X, W, Z])


def _softmax():
    X = te.placeholder((8, 40), name="X")
    return te.create_prim_func([X, topi.nn.softmax(X)])


def _conv_relu():
    D = te.placeholder((2, 3, 10, 10), name="D")
    W = te.placeholder((4, 3, 3, 3), name="W")
    return te.create_prim_func([D, W, topi.nn.relu(topi.nn.conv2d_nchw(D, W, 1, 1, 1))])


def _alloc_scopes(func):
    scopes = []
    post_order_visit(
        func.body,
        lambda n: (
            scopes.append(n.annotations.get("storage_scope")) if isinstance(n, Allocate) else None
        ),
    )
    return scopes


def test_kernels_keep_no_global_temporaries():
    for make in (_dense_relu, _softmax, _conv_relu):
        mod = lower_gpu([default_gpu_schedule_func(make())], Target("opencl"))
        scopes = [sc for func in mod.functions.values() for sc in _alloc_scopes(func)]
        assert "local" in scopes and "global" not in scopes and None not in scopes


def test_pass_object_leaves_scheduled_functions_alone():
    f = _dense_relu()
    mod = DefaultGPUSchedule(Target("opencl"))(tvm.IRModule({"main": f}))
    again = DefaultGPUSchedule(Target("opencl"))(mod)
    assert again["main"] is mod["main"]
    assert "T.thread_binding" in mod["main"].script()


@requires_opencl
def test_default_schedule_runs_ops_on_opencl():
    dev = tvm.opencl(0)
    rng = np.random.default_rng(0)

    def run(func, *arrays):
        f = tvm.build(default_gpu_schedule_func(func), target="opencl")
        nd = [tvm.nd.array(a, dev) for a in arrays]
        f(*nd)
        return nd[-1].numpy()

    x, w = rng.normal(size=(100, 64)).astype("float32"), rng.normal(size=(32, 64)).astype("float32")
    got = run(_dense_relu(), x, w, np.zeros((100, 32), "float32"))
    np.testing.assert_allclose(got, np.maximum(x @ w.T, 0), rtol=1e-4, atol=1e-4)
    x = rng.normal(size=(8, 40)).astype("float32")
    e = np.exp(x - x.max(1, keepdims=True))
    got = run(_softmax(), x, np.zeros_like(x))
    np.testing.assert_allclose(got, e / e.sum(1, keepdims=True), rtol=1e-5)
    d, w = (
        rng.normal(size=(2, 3, 10, 10)).astype("float32"),
        rng.normal(size=(4, 3, 3, 3)).astype("float32"),
    )
    got = run(_conv_relu(), d, w, np.zeros((2, 4, 10, 10), "float32"))
    dp = np.pad(d, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((2, 4, 10, 10), "float32")
    for ry in range(3):
        for rx in range(3):
            ref += np.einsum("ncyx,fc->nfyx", dp[:, :, ry : ry + 10, rx : rx + 10], w[:, :, ry, rx])
    np.testing.assert_allclose(got, np.maximum(ref, 0), rtol=1e-4, atol=1e-4)


def _thread_accumulator(scope):
    @T.prim_func
    def main(A: T.Buffer((64, 16), "float32"), B: T.Buffer((64,), "float32")):
        acc = T.alloc_buffer((64,), "float32", scope=scope)
        for t in T.thread_binding(64, thread="threadIdx.x"):
            for k in range(16):
                with T.block("acc"):
                    vk = T.axis.reduce(16, k)
                    with T.init():
                        acc[0] = T.float32(0)
                    acc[0] = acc[0] + A[t, vk]
            with T.block("out"):
                B[t] = acc[0]

    return main


def test_local_accumulator_under_thread_loop_is_not_a_race():
    tvm.lower(_thread_accumulator("local"))  # each thread accumulates into its own registers
    for scope in ("global", "shared"):  # one copy for all the threads: they would race
        with pytest.raises(ScheduleError, match="update the same elements of acc"):
            tvm.lower(_thread_accumulator(scope))


@requires_opencl
def test_relax_build_for_opencl_runs_default_scheduled_kernels():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((4, 8), "float32"))
    w = relax.Var("w", relax.TensorStructInfo((8, 3), "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.relu(relax.op.matmul(x, w)))
            out = bb.emit_output(relax.op.nn.softmax(y))
        bb.emit_func_output(out)
    ex = relax.build(bb.get(), target="opencl")
    dev = tvm.opencl(0)
    vm = relax.VirtualMachine(ex, dev)
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(4, 8)).astype("float32"), rng.normal(size=(8, 3)).astype("float32")
    got = vm["main"](tvm.nd.array(a, dev), tvm.nd.array(b, dev)).numpy()
    y = np.maximum(a @ b, 0)
    e = np.exp(y - y.max(1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(1, keepdims=True), rtol=1e-5)


@requires_opencl
@pytest.mark.parametrize("name", ["mlp", "lenet"])
def test_zoo_models_run_on_opencl_like_on_the_cpu(name):
    from minitvm.testing import zoo

    mod, params = zoo.get_model(name, batch_size=2)
    mod = relax.transform.BindParams("main", params)(mod)
    x = np.random.default_rng(0).normal(size=zoo.input_shape(name, 2)).astype("float32")
    cpu = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    ref = cpu["main"](tvm.nd.array(x)).numpy()
    dev = tvm.opencl(0)
    gpu = relax.VirtualMachine(relax.build(mod, target="opencl"), dev)
    np.testing.assert_allclose(gpu["main"](tvm.nd.array(x, dev)).numpy(), ref, rtol=1e-4, atol=1e-4)
