"""GPU targets: cuda/opencl attributes that lowering checks against, arch, tags and host."""

import pytest

import minitvm as tvm
from minitvm.error import TargetError
from minitvm.target import Target


def test_cuda_target_attributes_and_overrides():
    t = Target("cuda -arch=sm_90")
    assert (t.arch, t.max_num_threads, t.max_shared_memory_per_block, t.thread_warp_size) == (
        "sm_90", 1024, 49152, 32)  # fmt: skip
    assert Target("cuda -max_num_threads=512").max_num_threads == 512
    assert tvm.target.cuda(arch="sm_80").arch == "sm_80"
    assert Target("cuda").arch == "sm_52"
    assert t.keys == ("cuda", "gpu") and t.get_target_device_type() == 2


def test_opencl_target_attributes():
    t = Target("opencl")
    assert (t.max_num_threads, t.max_shared_memory_per_block, t.thread_warp_size) == (256, 32768, 1)
    assert t.get_target_device_type() == 4
    with pytest.raises(TargetError, match="not a CUDA target; it has no arch"):
        _ = t.arch


def test_nvidia_tags_and_host():
    assert Target("nvidia/nvidia-a100").arch == "sm_80"
    assert str(Target("nvidia/nvidia-h100")) == "cuda -arch=sm_90"
    assert str(Target("opencl").host) == "llvm"
    assert str(Target("cuda", host="llvm -mcpu=znver4").host) == "llvm -mcpu=znver4"
    with pytest.raises(TargetError, match="unknown target tag 'nvidia/tesla-k1'"):
        Target("nvidia/tesla-k1")


def test_bad_gpu_options_are_refused():
    with pytest.raises(TargetError, match="-arch=80 is not an NVIDIA architecture; write sm_XX"):
        Target("cuda -arch=80")
    with pytest.raises(TargetError, match="max_num_threads must be a positive integer, got 'x'"):
        Target("cuda -max_num_threads=x")
    with pytest.raises(TargetError, match="'llvm' is not a GPU target; it has no max_num_threads"):
        _ = Target("llvm").max_num_threads
