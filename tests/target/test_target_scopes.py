"""TVM's Target scope and GPU-target names: `with Target(...)`, `Target.current()`,
`tvm.target.cuda()` (a Target whose build is refused with a TargetError)."""

import threading

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te
from minitvm.error import BuildError, TargetError
from minitvm.target import Target


def test_current_is_none_outside_any_scope_and_raises_when_asked():
    assert Target.current() is None
    with pytest.raises(TargetError, match=r"allow_none=False\): no `with Target\(...\):`"):
        Target.current(allow_none=False)


def test_with_target_nests_and_restores():
    outer = Target("llvm")
    with outer as entered:
        assert entered is outer and Target.current() is outer
        with Target("llvm -mcpu=x86-64") as inner:
            assert Target.current(allow_none=False) is inner
        assert Target.current() is outer
    assert Target.current() is None


def test_scope_is_restored_after_an_exception():
    with pytest.raises(ValueError), Target("llvm"):
        raise ValueError("inside")
    assert Target.current() is None


def test_scopes_are_per_thread():
    seen = []
    with Target("llvm"):
        t = threading.Thread(target=lambda: seen.append(Target.current()))
        t.start()
        t.join()
    assert seen == [None]


def test_cuda_is_a_target_of_kind_cuda():
    t = tvm.target.cuda(arch="sm_80")
    assert isinstance(t, Target) and t.kind.name == "cuda"
    assert str(t) == "cuda -model=unknown -arch=sm_80" and t.attrs["arch"] == "sm_80"
    assert Target(str(t)) == t
    assert tvm.target.cuda(options="-max_num_threads=512").attrs["max_num_threads"] == "512"


@pytest.mark.parametrize("target", ["cuda", "cuda -arch=sm_75"])
def test_building_unbound_loops_for_cuda_is_a_clear_error(target):
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(BuildError, match="loop 'i' is not bound to GPU threads"):
        tvm.build(s, [A, B], target=target)
    s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.x"))
    ptx = tvm.build(s, [A, B], target=tvm.target.cuda(arch=target.partition("=")[2] or None))
    assert ".entry" in ptx.get_source("ptx")
    # the unbound schedule still builds and runs for the CPU
    s = te.create_schedule(B.op)
    f = tvm.build(s, [A, B], target="llvm")
    b = tvm.nd.empty((4,))
    f(tvm.nd.array(np.arange(4, dtype="float32")), b)
    np.testing.assert_array_equal(b.numpy(), np.arange(4) + 1.0)


def test_malformed_gpu_option_is_a_target_error():
    with pytest.raises(TargetError, match="option 'sm_80' is not of the form -name=value"):
        Target("cuda sm_80")
