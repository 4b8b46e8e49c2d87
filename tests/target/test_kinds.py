"""The target-kind registry: one table every other table reads (tests/target/dummy_kind.py
adds a kind in one file)."""

import pytest

import minitvm as tvm
from minitvm.error import TargetError
from minitvm.target import Target, kinds

import dummy_kind  # tests/target/dummy_kind.py (pytest puts this folder on sys.path)


@pytest.fixture
def dummy():
    dummy_kind.register()
    yield dummy_kind.DUMMY
    dummy_kind.unregister()


def test_registry_lists_every_kind_and_what_compiles():
    assert kinds.list_kinds()[:3] == ("llvm", "cuda", "opencl")
    assert kinds.compilable_kinds() == ("llvm", "cuda", "opencl")
    assert kinds.gpu_kinds() == {"cuda", "opencl"}
    assert "c" not in kinds.list_kinds()  # known, refused with its reason


@pytest.mark.parametrize(
    "text, device_type, keys",
    [("llvm", 1, ("cpu",)), ("cuda", 2, ("cuda", "gpu")), ("opencl", 4, ("opencl", "gpu")),
     ("nvptx", 2, ("nvptx", "gpu")), ("vulkan", 7, ("vulkan", "gpu")), ("rocm", 10, ("rocm", "gpu"))],
)  # fmt: skip
def test_target_reads_device_type_and_keys_from_the_registry(text, device_type, keys):
    target = Target(text)
    assert target.get_target_device_type() == device_type and target.keys == keys


def test_a_kind_registered_in_one_file_parses_and_is_refused_at_build(dummy):
    target = Target("dummyaccel -max_num_threads=32")
    assert target.kind.name == "dummyaccel" and target.max_num_threads == 32
    assert target.max_shared_memory_per_block == 1024 and target.keys == ("dummyaccel", "gpu")
    assert "dummyaccel" in kinds.list_kinds() and "dummyaccel" not in kinds.compilable_kinds()
    n = 8
    A = tvm.te.placeholder((n,), name="A")
    B = tvm.te.compute((n,), lambda i: A[i] + 1, name="B")
    with pytest.raises(TargetError, match="dummyaccel"):
        tvm.build(tvm.te.create_schedule(B.op), [A, B], target)
    with pytest.raises(TargetError, match="already registered"):
        kinds.register_kind(dummy)


def test_unregistered_dummy_is_unknown_again(dummy):
    dummy_kind.unregister()
    with pytest.raises(TargetError, match="unknown target kind 'dummyaccel'"):
        Target("dummyaccel")
    dummy_kind.register()
