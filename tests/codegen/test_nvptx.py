"""PTX generation through llvmlite's NVPTX back end (runs without a GPU), and CUDA launches
of the same kernels where a CUDA device exists (skipped here, saying why)."""

import os
import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm.codegen.device import build_device_module
from minitvm.error import ArgumentError, BuildError
from minitvm.tir.expr import Call, Cast, FloorDiv, FloorMod

sys.path.insert(0, os.path.dirname(__file__))
from gpu_kernels import block_sum, expr_kernel, vector_add

_REASON = tvm.cuda(0).unavailable_reason()
requires_cuda = pytest.mark.skipif(_REASON is not None, reason=f"no CUDA device: {_REASON}")


def test_ptx_has_entry_thread_registers_and_arch():
    ptx = build_device_module(vector_add(), "cuda -arch=sm_90").get_source("ptx")
    assert ".target sm_90" in ptx and ".address_size 64" in ptx
    assert ".visible .entry vadd_kernel(" in ptx
    assert "%tid.x" in ptx and "%ctaid.x" in ptx
    assert "call" not in ptx  # no library calls in a kernel


def test_ptx_shared_memory_and_barriers():
    mod = build_device_module(block_sum(64), "cuda -arch=sm_80")
    ptx = mod.get_source()
    assert ".shared .align 16 .b8 red_shared[256];" in ptx
    assert ptx.count("bar.sync") == 7
    assert "st.shared" in ptx and "ld.shared" in ptx
    assert mod.imported_modules[0].type_key == "cuda"


@pytest.mark.parametrize("name", ["exp", "erf", "tanh", "sigmoid", "log", "log2", "exp2",
                                  "sin", "cos", "sqrt", "floor", "fabs"])  # fmt: skip
def test_float32_math_becomes_instructions(name):
    mod = build_device_module(
        expr_kernel(lambda a, b: Call("float32", f"tir.{name}", (a,)), "float32", "float32"), "cuda"
    )
    ptx = mod.get_source("ptx")
    assert ".entry ew_kernel" in ptx and "call" not in ptx


def test_integer_floor_division_and_float64_arithmetic_build():
    for build, dtype in (
        (FloorDiv, "int32"),
        (FloorMod, "int64"),
        (lambda a, b: a * b + a, "float64"),
    ):
        mod = build_device_module(expr_kernel(build, dtype, dtype), "cuda")
        assert ".entry" in mod.get_source()


def test_float64_transcendentals_are_refused_clearly():
    with pytest.raises(
        BuildError, match="exp of float64 has no PTX lowering.*compute it in float32"
    ):
        build_device_module(
            expr_kernel(lambda a, b: Call("float64", "tir.exp", (a,)), "float64", "float64"), "cuda"
        )


def test_get_source_formats():
    mod = build_device_module(vector_add(), "cuda")
    assert mod.get_source() == mod.get_source("ptx")
    with pytest.raises(tvm.error.MiniTVMError, match="a cuda module has source formats"):
        mod.get_source("cl")


def test_absent_cuda_device_makes_arrays_fail_clearly():
    if _REASON is None:
        pytest.skip("this machine has a CUDA device")
    with pytest.raises(tvm.error.DeviceError, match="CUDA is not available"):
        tvm.nd.array(np.zeros(4, "float32"), tvm.cuda(0))


# --- on a CUDA device ---------------------------------------------------------------------------
@requires_cuda
@pytest.mark.parametrize("n", [1, 1000, 4097])
def test_cuda_vector_add_matches_numpy(n):
    mod = build_device_module(vector_add(), tvm.target.Target("cuda"))
    dev = tvm.cuda(0)
    a, b = np.random.rand(n).astype("float32"), np.random.rand(n).astype("float32")
    A, B, C = tvm.nd.array(a, dev), tvm.nd.array(b, dev), tvm.nd.empty((n,), "float32", dev)
    mod(A, B, C)
    dev.sync()
    np.testing.assert_array_equal(C.numpy(), a + b)


@requires_cuda
def test_cuda_shared_memory_reduction_matches_numpy():
    mod = build_device_module(block_sum(64), "cuda")
    dev = tvm.cuda(0)
    x = np.random.rand(13, 64).astype("float32")
    out = tvm.nd.empty((13,), "float32", dev)
    mod(tvm.nd.array(x, dev), out)
    np.testing.assert_allclose(out.numpy(), x.sum(1), rtol=1e-5)


@requires_cuda
@pytest.mark.parametrize("name,ref", [("exp", np.exp), ("tanh", np.tanh), ("erf", None),
                                      ("sigmoid", lambda x: 1 / (1 + np.exp(-x)))])  # fmt: skip
def test_cuda_math_matches_numpy(name, ref):
    if ref is None:
        import math

        ref = np.vectorize(math.erf)
    mod = build_device_module(
        expr_kernel(lambda a, b: Call("float32", f"tir.{name}", (a,)), "float32", "float32"), "cuda"
    )
    dev = tvm.cuda(0)
    x = np.linspace(-5, 5, 37).astype("float32")
    out = tvm.nd.empty((37,), "float32", dev)
    mod(tvm.nd.array(x, dev), tvm.nd.array(x, dev), out)
    np.testing.assert_allclose(out.numpy(), ref(x.astype("float64")), rtol=2e-6, atol=1e-7)


@requires_cuda
def test_cuda_integer_floordiv_matches_numpy():
    mod = build_device_module(expr_kernel(FloorDiv, "int32", "int32"), "cuda")
    dev = tvm.cuda(0)
    a = np.arange(-18, 19, dtype="int32")
    b = np.where(np.arange(37) % 2, 3, -4).astype("int32")
    out = tvm.nd.empty((37,), "int32", dev)
    mod(tvm.nd.array(a, dev), tvm.nd.array(b, dev), out)
    np.testing.assert_array_equal(out.numpy(), a // b)


@requires_cuda
def test_cuda_host_array_is_an_argument_error():
    mod = build_device_module(vector_add(), "cuda")
    a = tvm.nd.array(np.zeros(8, "float32"), tvm.cuda(0))
    with pytest.raises(ArgumentError, match=r"argument 'A' \(position 0\) is on host memory"):
        mod(np.zeros(8, "float32"), a, a)


@requires_cuda
def test_cuda_dlpack_to_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    x = np.arange(12, dtype="float32").reshape(3, 4)
    t = torch.from_dlpack(tvm.nd.array(x, tvm.cuda(0)))
    assert t.is_cuda and t.shape == (3, 4)
    np.testing.assert_array_equal(t.cpu().numpy(), x)


def test_cast_in_kernel_builds():
    build = lambda a, b: Cast("int32", a) + Cast("int32", b)
    assert (
        ".entry" in build_device_module(expr_kernel(build, "float32", "int32"), "cuda").get_source()
    )


def test_cuda_module_exports_and_loads_without_a_device(tmp_path):
    mod = build_device_module(vector_add(), "cuda -arch=sm_80")
    path = str(tmp_path / "vadd_cuda.zip")
    mod.export_library(path)
    loaded = tvm.runtime.load_module(path)
    assert loaded.get_source("ptx") == mod.get_source("ptx")
    assert loaded.type_key == "cuda" and loaded.entry_name == "vadd"
    assert loaded.func_infos == mod.func_infos


def test_a_tampered_gpu_export_is_refused(tmp_path):
    import zipfile

    mod = build_device_module(vector_add(), "cuda")
    path, bad = str(tmp_path / "m.zip"), str(tmp_path / "bad.zip")
    mod.export_library(path)
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.namelist():
            data = src.read(item)
            if item == "kernels.src":
                data = data.replace(b"vadd_kernel", b"evil_kernel")
            dst.writestr(item, data)
    with pytest.raises(tvm.error.RuntimeError_, match="kernels.src does not match its sha256"):
        tvm.runtime.load_module(bad)


@pytest.mark.parametrize(
    "edit,match",
    [
        (lambda m: m["programs"][0]["steps"][0].__setitem__(1, "nope"), "unknown kernel 'nope'"),
        (lambda m: m["programs"][0]["steps"][0][3].__setitem__(0, "__import__('os').system('x')"),
         "uses Call"),
        (lambda m: m.__setitem__("kind", "vulkan"), "unknown kind"),
    ],
)  # fmt: skip
def test_gpu_export_metadata_is_validated_as_data(tmp_path, edit, match):
    import json

    from minitvm.runtime.module import write_module_zip

    mod = build_device_module(vector_add(), "cuda")
    meta = {"kind": "cuda", "target": "cuda", "entry": "vadd", "kernels": mod._kernel_infos,
            "programs": json.loads(json.dumps(mod._programs))}  # fmt: skip
    edit(meta)
    path = str(tmp_path / "crafted.zip")
    extra = {"device.json": json.dumps(meta).encode(), "kernels.src": mod.get_source().encode()}
    write_module_zip(path, None, kind="device_module", extra=extra)
    with pytest.raises(tvm.error.RuntimeError_, match=match):
        tvm.runtime.load_module(path)
