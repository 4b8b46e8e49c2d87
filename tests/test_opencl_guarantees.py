"""OpenCL kernels keep the CPU build's guarantees: integer division by zero and data-dependent
indices out of bounds raise the CPU build's error (the CPU build is the oracle), launches
beyond the device's limits are refused by name, and an exported kernel source that was edited
is refused at load. Cases that could abort the process run in a subprocess."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te
from minitvm.error import RuntimeError_

_REASON = tvm.opencl(0).unavailable_reason()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=f"no OpenCL device: {_REASON}")


def _bound(out, factor: int = 8):
    s = te.create_schedule(out.op)
    bx, tx = s[out].split(out.op.axis[0], factor=factor)
    s[out].bind(bx, te.thread_axis("blockIdx.x"))
    s[out].bind(tx, te.thread_axis("threadIdx.x"))
    return s


def _both(out, args, name):
    """The OpenCL build (threads bound) and the CPU build (the oracle) of one computation."""
    gpu = tvm.build(_bound(out), args, "opencl", name=name)
    cpu = tvm.build(te.create_schedule(out.op), args, "llvm", name=name)
    return gpu, cpu


def _call(mod, dev, arrays, out_shape, out_dtype):
    args = [tvm.nd.array(a, dev) for a in arrays]
    out = tvm.nd.empty(out_shape, out_dtype, dev)
    mod(*args, out)
    return out.numpy()


def _outcome(mod, dev, arrays, out_shape, out_dtype):
    """('ok', result) or ('error', exception class name, message after the function name)."""
    try:
        return "ok", _call(mod, dev, arrays, out_shape, out_dtype)
    except RuntimeError_ as err:
        return "error", type(err).__name__, str(err)


_DIVISIONS = {
    "floordiv": (lambda a, b: a // b, np.floor_divide),
    "floormod": (lambda a, b: a % b, np.mod),
    "truncdiv": (tvm.tir.truncdiv, lambda a, b: np.trunc(a / b).astype(a.dtype)),
    "truncmod": (tvm.tir.truncmod, np.fmod),
}


@pytest.mark.parametrize("dtype", ["int32", "int64", "int8"])
@pytest.mark.parametrize("op", sorted(_DIVISIONS))
def test_integer_division_by_data_matches_cpu_and_zero_raises_the_cpu_error(op, dtype):
    expr, ref = _DIVISIONS[op]
    n = te.var("n")
    a = te.placeholder((n,), dtype, name="a")
    b = te.placeholder((n,), dtype, name="b")
    c = te.compute((n,), lambda i: expr(a[i], b[i]), name="c")
    gpu, cpu = _both(c, [a, b, c], f"div_{op}")
    rng = np.random.default_rng(0)
    x = rng.integers(-100, 100, 21).astype(dtype)
    y = rng.integers(1, 9, 21).astype(dtype) * rng.choice([-1, 1], 21).astype(dtype)
    x[0], y[0] = np.iinfo(dtype).min, -1  # wraps like numpy on both
    got = _call(gpu, tvm.opencl(0), [x, y], (21,), dtype)
    np.testing.assert_array_equal(got, _call(cpu, tvm.cpu(0), [x, y], (21,), dtype))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got[1:], ref(x[1:], y[1:]))
    y[7] = 0
    gpu_out = _outcome(gpu, tvm.opencl(0), [x, y], (21,), dtype)
    cpu_out = _outcome(cpu, tvm.cpu(0), [x, y], (21,), dtype)
    assert gpu_out[:2] == cpu_out[:2] == ("error", "RuntimeError_")
    for message in (gpu_out[2], cpu_out[2]):
        assert message.startswith(f"calling 'div_{op}': integer division by zero in 'div_{op}")
        assert "has a divisor that is 0" in message
    # the flag is cleared: the next good call runs
    y[7] = 3
    np.testing.assert_array_equal(
        _call(gpu, tvm.opencl(0), [x, y], (21,), dtype),
        _call(cpu, tvm.cpu(0), [x, y], (21,), dtype),
    )


def test_vectorized_division_by_data_checks_every_lane():
    n = 64
    a = te.placeholder((n,), "int32", name="a")
    b = te.placeholder((n,), "int32", name="b")
    c = te.compute((n,), lambda i: a[i] // b[i] + a[i] % b[i], name="c")
    s = te.create_schedule(c.op)
    bx, rest = s[c].split(c.op.axis[0], factor=16)
    tx, vec = s[c].split(rest, factor=4)
    s[c].bind(bx, te.thread_axis("blockIdx.x"))
    s[c].bind(tx, te.thread_axis("threadIdx.x"))
    s[c].vectorize(vec)
    gpu = tvm.build(s, [a, b, c], "opencl", name="vdiv")
    assert "minitvm_checked_floordiv_int4" in gpu.get_source()
    rng = np.random.default_rng(1)
    x = rng.integers(-100, 100, n).astype("int32")
    y = (rng.integers(1, 9, n) * rng.choice([-1, 1], n)).astype("int32")
    x[5], y[5] = np.iinfo("int32").min, -1
    got = _call(gpu, tvm.opencl(0), [x, y], (n,), "int32")
    cpu = tvm.build(te.create_schedule(c.op), [a, b, c], "llvm", name="vdiv")
    np.testing.assert_array_equal(got, _call(cpu, tvm.cpu(0), [x, y], (n,), "int32"))
    y[42] = 0
    with pytest.raises(RuntimeError_, match="calling 'vdiv': integer division by zero in 'vdiv"):
        _call(gpu, tvm.opencl(0), [x, y], (n,), "int32")


def test_constant_divisors_are_not_checked():
    n = te.var("n")
    a = te.placeholder((n,), "int32", name="a")
    c = te.compute((n,), lambda i: a[i] // 3 + a[i] % 5, name="c")
    gpu = tvm.build(_bound(c), [a, c], "opencl", name="cdiv")
    src = gpu.get_source()
    assert "minitvm_error" not in src and "minitvm_checked" not in src
    x = np.arange(-20, 20, dtype="int32")
    np.testing.assert_array_equal(_call(gpu, tvm.opencl(0), [x], (40,), "int32"), x // 3 + x % 5)


def _gather():
    n = te.var("n")
    a = te.placeholder((16,), "float32", name="A")
    idx = te.placeholder((n,), "int32", name="I")
    out = te.compute((n,), lambda i: a[idx[i]], name="B")
    return _both(out, [a, idx, out], "gather")


def test_gather_in_bounds_matches_numpy_and_the_cpu_build():
    gpu, cpu = _gather()
    a = np.arange(16, dtype="float32") * 1.5
    idx = np.array([0, 15, 3, 3, 7], "int32")
    got = _call(gpu, tvm.opencl(0), [a, idx], (5,), "float32")
    np.testing.assert_array_equal(got, np.take(a, idx))
    np.testing.assert_array_equal(got, _call(cpu, tvm.cpu(0), [a, idx], (5,), "float32"))


def test_indices_from_loops_and_shapes_are_not_checked():
    n = te.var("n")
    a = te.placeholder((n,), "float32", name="A")
    out = te.compute((n,), lambda i: a[i] * 2, name="B")
    gpu = tvm.build(_bound(out), [a, out], "opencl", name="double")
    assert "minitvm_in_range" not in gpu.get_source()


# Out-of-bounds accesses and oversized launches could kill the process if a check were
# missing: they run in one child process, which prints one JSON line per case.
_CHILD = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import minitvm as tvm
    from minitvm import te
    sys.path.insert(0, {here!r})
    from test_opencl_guarantees import _both, _outcome, _launch_module, _local_memory_module

    def report(case, outcome):
        print(json.dumps([case, list(outcome[:3]) if outcome[0] == "error" else ["ok"]]),
              flush=True)

    n = te.var("n")
    a = te.placeholder((16,), "float32", name="A")
    idx = te.placeholder((n,), "int32", name="I")
    b = te.compute((n,), lambda i: a[idx[i]], name="B")
    gpu, cpu = _both(b, [a, idx, b], "gather")
    data = np.arange(16, dtype="float32")
    for case, bad in (("gather_high", 16), ("gather_negative", -1), ("gather_far", 1 << 30)):
        ids = np.array([1, 2, bad, 4], "int32")
        report(case + "_opencl", _outcome(gpu, tvm.opencl(0), [data, ids], (4,), "float32"))
        report(case + "_cpu", _outcome(cpu, tvm.cpu(0), [data, ids], (4,), "float32"))

    mod = _launch_module()
    out = tvm.nd.empty((4,), "int32", tvm.opencl(0))
    for case, blocks in (("grid_ok", 3), ("grid_2_32", 2**32), ("grid_2_40", 2**40)):
        try:
            mod(out, blocks)
            report(case, ("ok",))
        except tvm.error.MiniTVMError as err:
            report(case, ("error", type(err).__name__, str(err)))
    mod = _local_memory_module()
    try:
        mod(tvm.nd.empty((4,), "float32", tvm.opencl(0)))
        report("local_memory", ("ok",))
    except tvm.error.MiniTVMError as err:
        report("local_memory", ("error", type(err).__name__, str(err)))
    """
)


def _launch_module():
    """A host function launching `blocks` work-groups (an int64 scalar) of one work-item."""
    from minitvm.ir.module import IRModule
    from minitvm.tir.buffer import Buffer
    from minitvm.tir.expr import Call, IntImm, IterType, IterVar, Range, StringImm, Var
    from minitvm.tir.function import PrimFunc
    from minitvm.tir.stmt import AttrStmt, BufferStore, Evaluate, IfThenElse

    out, blocks = Var("out", "handle"), Var("blocks", "int64")
    host_buf = Buffer(Var("out_data", "handle"), "int32", (4,), name="out")
    kout, kblocks = Var("out", "handle"), Var("blocks", "int64")
    flat = Buffer(kout, "int32", (4,), name="out")
    bx = Var("blockIdx.x", "int64")
    body = IfThenElse(bx < 4, BufferStore(flat, IntImm("int32", 7), (bx,)))
    iv = IterVar(Range.from_min_extent(0, kblocks), bx, IterType.ThreadIndex, "blockIdx.x")
    kernel = PrimFunc((kout, kblocks), AttrStmt(iv, "thread_extent", kblocks, body),
                      attrs={"calling_conv": 2, "tir.is_global_func": True,
                             "global_symbol": "wide_kernel",
                             "tir.kernel_launch_params": ["blockIdx.x"]})  # fmt: skip
    launch = Call("int32", "tir.tvm_call_packed",
                  (StringImm("wide_kernel"), host_buf.data, blocks, blocks))  # fmt: skip
    host = PrimFunc((out, blocks), Evaluate(launch), buffer_map={out: host_buf},
                    attrs={"global_symbol": "wide"})  # fmt: skip
    from minitvm.codegen.device import build_device_module

    return build_device_module(IRModule({"wide": host, "wide_kernel": kernel}), "opencl")


def _local_memory_module():
    """A kernel whose shared (__local) array is larger than the device's local memory."""
    from minitvm.ir.module import IRModule
    from minitvm.runtime.opencl_api import attribute
    from minitvm.tir.buffer import Buffer
    from minitvm.tir.expr import (
        BufferLoad,
        Call,
        FloatImm,
        IntImm,
        IterType,
        IterVar,
        Range,
        StringImm,  # fmt: skip
        Var,
    )
    from minitvm.tir.function import PrimFunc
    from minitvm.tir.stmt import Allocate, AttrStmt, BufferStore, Evaluate, SeqStmt

    too_many = attribute(0, "max_shared_memory_per_block") // 4 + 1024
    out = Var("out", "handle")
    host_buf = Buffer(Var("out_data", "handle"), "float32", (4,), name="out")
    kout = Var("out", "handle")
    tmp = Var("tmp", "handle")
    tx = Var("threadIdx.x")
    shared = Buffer(tmp, "float32", (too_many,), name="tmp")
    store = BufferStore(shared, FloatImm("float32", 1.0), (tx * 1000,))
    copy = BufferStore(Buffer(kout, "float32", (4,), name="out"),
                       BufferLoad(shared, (tx,)), (tx,))  # fmt: skip
    body = Allocate(tmp, "float32", (too_many,), IntImm("bool", 1), SeqStmt((store, copy)),
                    annotations={"storage_scope": "shared"})  # fmt: skip
    iv = IterVar(Range.from_min_extent(0, 4), tx, IterType.ThreadIndex, "threadIdx.x")
    kernel = PrimFunc((kout,), AttrStmt(iv, "thread_extent", 4, body),
                      attrs={"calling_conv": 2, "tir.is_global_func": True,
                             "global_symbol": "big_local_kernel",
                             "tir.kernel_launch_params": ["threadIdx.x"]})  # fmt: skip
    launch = Call("int32", "tir.tvm_call_packed",
                  (StringImm("big_local_kernel"), host_buf.data, IntImm("int32", 4)))  # fmt: skip
    host = PrimFunc((out,), Evaluate(launch), buffer_map={out: host_buf},
                    attrs={"global_symbol": "big_local"})  # fmt: skip
    from minitvm.codegen.device import build_device_module

    return build_device_module(IRModule({"big_local": host, "big_local_kernel": kernel}), "opencl")


@pytest.fixture(scope="module")
def child_results():
    import os

    code = _CHILD.format(here=os.path.dirname(os.path.abspath(__file__)))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=False)  # fmt: skip
    assert run.returncode == 0, f"the child process died ({run.returncode}): {run.stderr[-3000:]}"
    return dict(json.loads(line) for line in run.stdout.splitlines() if line.startswith("["))


@pytest.mark.parametrize("case", ["gather_high", "gather_negative", "gather_far"])
def test_gather_out_of_bounds_raises_the_cpu_error(child_results, case):
    gpu, cpu = child_results[case + "_opencl"], child_results[case + "_cpu"]
    assert gpu[:2] == cpu[:2] == ["error", "RuntimeError_"]
    for message in (gpu[2], cpu[2]):
        assert message.startswith("calling 'gather': index out of bounds reading 'A' in 'gather")
        assert "depends on data and fell outside [0, 16)" in message


def test_launch_within_limits_runs(child_results):
    assert child_results["grid_ok"] == ["ok"]


@pytest.mark.parametrize("case", ["grid_2_32", "grid_2_40"])
def test_oversized_grid_is_refused_naming_kernel_and_limit(child_results, case):
    kind, cls, message = child_results[case]
    assert (kind, cls) == ("error", "DeviceError")
    assert "calling 'wide': kernel 'wide_kernel'" in message
    assert "work-groups along blockIdx.x" in message and "2147483647" in message


def test_local_memory_over_the_device_limit_is_refused(child_results):
    kind, cls, message = child_results["local_memory"]
    assert (kind, cls) == ("error", "DeviceError"), message
    assert "kernel 'big_local_kernel'" in message and "local (shared) memory" in message


def test_launch_module_runs_and_writes(child_results):
    mod = _launch_module()
    out = tvm.nd.array(np.zeros(4, "int32"), tvm.opencl(0))
    mod(out, 2)
    np.testing.assert_array_equal(out.numpy(), [7, 7, 0, 0])
