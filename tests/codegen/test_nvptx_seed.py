"""The seed's GPU schedules (benchmarks/gpu.py) compile to PTX for sm_90 without a GPU: shared
memory, barriers and the register-tiled inner products are in the PTX text."""

import importlib.util
import pathlib

import minitvm as tvm


def _bench():
    path = pathlib.Path(__file__).parents[2] / "benchmarks" / "gpu.py"
    spec = importlib.util.spec_from_file_location("bench_gpu", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_seed_hwcn_convolution_compiles_to_ptx():
    s, args, _ = _bench().conv_hwcn(256)
    ptx = tvm.build(s, args, "cuda -arch=sm_90", name="conv").get_source("ptx")
    assert ".target sm_90" in ptx and ".visible .entry conv_kernel(" in ptx
    assert ".shared .align 16 .b8 Apad_shared" in ptx and ".shared .align 16 .b8 W_shared" in ptx
    assert ptx.count("bar.sync") == 2 and "%tid.y" in ptx and "%ctaid.z" in ptx


def test_shared_matmul_compiles_to_ptx_with_register_tiles():
    s, args, _ = _bench().matmul_shared(4096)
    ptx = tvm.build(s, args, "cuda -arch=sm_80", name="mm").get_source("ptx")
    assert ptx.count("bar.sync") == 2
    assert ptx.count("fma.rn.f32") >= 64  # the 8x8 register tile, unrolled
    assert "ld.shared" in ptx and "call" not in ptx
