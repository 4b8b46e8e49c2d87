"""A stage between two kernels (TVM's test_multiple_kernels shape: B computed by one kernel, read
transposed by the next) lives in device memory the host program allocates for each call, sized
from the arguments; it was refused as "not bound to GPU threads". Checked against numpy on
OpenCL, with a symbolic size, and through export/load of the module."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te
from minitvm.driver import lower_gpu
from minitvm.target import Target
from minitvm.tir.functor import post_order_visit

_REASON = tvm.opencl(0).unavailable_reason()
requires_opencl = pytest.mark.skipif(_REASON is not None, reason=f"no OpenCL device: {_REASON}")


def _two_kernels():
    n = te.var("n")
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((n, n), lambda i, j: B[j, i] * 2.0, name="C")
    s = te.create_schedule([C.op])
    for t in (B, C):
        s[t].bind(s[t].op.axis[0], te.thread_axis("blockIdx.x"))
        s[t].bind(s[t].op.axis[1], te.thread_axis("threadIdx.x"))
    return s, [A, C]


def test_the_host_allocates_the_stage_and_both_kernels_take_it():
    s, args = _two_kernels()
    mod = lower_gpu([s.build_prim_func(args, "main")], Target("opencl"))
    host = mod["main"]
    allocs = []
    post_order_visit(
        host.body, lambda x: allocs.append(x) if isinstance(x, tvm.tir.Allocate) else None
    )
    assert [a.buffer_var.name for a in allocs] == ["B"]
    for name in ("main_kernel", "main_kernel_1"):
        assert "B" in [p.name for p in mod[name].params]


@requires_opencl
@pytest.mark.parametrize("n", [64, 48, 1])
def test_two_kernels_through_a_device_stage_match_numpy(n, tmp_path):
    s, args = _two_kernels()
    f = tvm.build(s, args, "opencl")
    dev = tvm.opencl(0)
    a = np.random.default_rng(n).random((n, n), dtype="float32")
    c = tvm.nd.empty((n, n), "float32", dev)
    f(tvm.nd.array(a, dev), c)
    np.testing.assert_allclose(c.numpy(), ((a + 1) * 2).T, rtol=1e-6)
    path = str(tmp_path / "two.zip")
    f.export_library(path)
    again = tvm.nd.empty((n, n), "float32", dev)
    tvm.runtime.load_module(path)(tvm.nd.array(a, dev), again)
    np.testing.assert_array_equal(again.numpy(), c.numpy())


def test_loaded_programs_with_bad_workspaces_are_refused():
    from minitvm.error import RuntimeError_
    from minitvm.runtime.device_module import _HostProgram

    info = {"name": "f", "params": [], "sym_vars": []}
    skipped = {"info": info, "steps": [["alloc", 1, "4"]]}  # slot 0 never allocated
    with pytest.raises(RuntimeError_, match="bad workspace"):
        _HostProgram(skipped, {"k"})
    unallocated = {
        "info": info,
        "steps": [["launch", "k", [["workspace", 0]], ["1"] * 3, ["1"] * 3]],
    }
    with pytest.raises(RuntimeError_, match="bad kernel argument"):
        _HostProgram(unallocated, {"k"})
