"""OpenCL code generation: hand-built kernels in SplitHostDevice's form run on the OpenCL
device (PoCL on CPU machines) and match numpy; errors name what is wrong."""

import os
import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te
from minitvm.codegen.device import build_device_module
from minitvm.codegen.opencl import build_opencl
from minitvm.error import ArgumentError, BuildError, DeviceError, DTypeError, ShapeError
from minitvm.tir.expr import (
    Call,
    Cast,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Select,
)  # fmt: skip

sys.path.insert(0, os.path.dirname(__file__))
from gpu_kernels import block_sum, expr_kernel, vector_add

_REASON = tvm.opencl(0).unavailable_reason()
requires_opencl = pytest.mark.skipif(_REASON is not None, reason=f"no OpenCL device: {_REASON}")


def _run(mod, *arrays):
    dev = tvm.opencl(0)
    args = [tvm.nd.array(a, dev) for a in arrays]
    mod(*args)
    return [a.numpy() for a in args]


@requires_opencl
@pytest.mark.parametrize("n", [1, 64, 1000, 4097])
def test_vector_add_with_symbolic_size_matches_numpy(n):
    mod = build_device_module(vector_add(), "opencl")
    rng = np.random.default_rng(n)
    a, b = rng.random(n, dtype="float32"), rng.random(n, dtype="float32")
    *_, c = _run(mod, a, b, np.zeros(n, "float32"))
    np.testing.assert_array_equal(c, a + b)


@requires_opencl
def test_empty_launch_runs_nothing():
    mod = build_device_module(vector_add(), "opencl")
    *_, c = _run(mod, *(np.zeros(0, "float32") for _ in range(3)))
    assert c.shape == (0,)


@requires_opencl
def test_shared_memory_reduction_with_barriers_matches_numpy():
    mod = build_device_module(block_sum(64), "opencl")
    src = mod.get_source()
    assert "__local float red_shared[64];" in src
    assert src.count("barrier(CLK_LOCAL_MEM_FENCE);") == 7
    assert "get_local_id(0)" in src and "get_group_id(0)" in src
    x = np.random.default_rng(0).random((13, 64), dtype="float32")
    _, out = _run(mod, x, np.zeros(13, "float32"))
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5)


def test_source_and_metadata_without_a_device():
    src, infos, ext = build_opencl([f for f in block_sum().functions.values()
                                    if f.attrs.get("calling_conv") == 2])  # fmt: skip
    assert "__kernel void bsum_kernel(__global float* restrict A" in src
    assert infos[0]["shared_bytes"] == 64 * 4
    assert infos[0]["launch_params"] == ["blockIdx.x", "threadIdx.x"]
    assert ext == set()


# expression kinds: value builder, input dtype, output dtype, numpy reference
_INT_CASES = {
    "floordiv": (lambda a, b: FloorDiv(a, b), np.floor_divide),
    "floormod": (lambda a, b: FloorMod(a, b), np.mod),
    "min": (lambda a, b: Min(a, b), np.minimum),
    "max": (lambda a, b: Max(a, b), np.maximum),
    "select": (
        lambda a, b: Select(a < b, a * 2, b - a),
        lambda a, b: np.where(a < b, a * 2, b - a),
    ),
}


@requires_opencl
@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("case", sorted(_INT_CASES))
def test_integer_expressions_round_like_python(case, dtype):
    build, ref = _INT_CASES[case]
    rng = np.random.default_rng(1)
    a = rng.integers(-50, 50, 37).astype(dtype)
    b = rng.integers(1, 9, 37).astype(dtype) * rng.choice([-1, 1], 37).astype(dtype)
    mod = build_device_module(expr_kernel(build, dtype, dtype), "opencl")
    *_, out = _run(mod, a, b, np.zeros(37, dtype))
    np.testing.assert_array_equal(out, ref(a, b))


_FLOAT_CASES = {
    "floordiv": (lambda a, b: FloorDiv(a, b), lambda a, b: np.floor(a / b)),
    "floormod": (lambda a, b: FloorMod(a, b), lambda a, b: a - np.floor(a / b) * b),
    "exp_max": (lambda a, b: Call(a.dtype, "tir.exp", (Max(a, b),)), lambda a, b: np.exp(np.maximum(a, b))),
    "sigmoid": (lambda a, b: Call(a.dtype, "tir.sigmoid", (a,)), lambda a, b: 1 / (1 + np.exp(-a))),
    "if_then_else": (lambda a, b: Call(a.dtype, "tir.if_then_else", (a > b, a, FloatImm(a.dtype, 0.1))),
                     lambda a, b: np.where(a > b, a, np.asarray(0.1, a.dtype))),
    "sqrt_fabs": (lambda a, b: Call(a.dtype, "tir.sqrt", (Call(a.dtype, "tir.fabs", (a,)),)),
                  lambda a, b: np.sqrt(np.abs(a))),
}  # fmt: skip


@requires_opencl
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", sorted(_FLOAT_CASES))
def test_float_expressions_match_numpy(case, dtype):
    build, ref = _FLOAT_CASES[case]
    rng = np.random.default_rng(2)
    a = rng.normal(size=37).astype(dtype)
    b = (rng.normal(size=37) + 3).astype(dtype)
    mod = build_device_module(expr_kernel(build, dtype, dtype), "opencl")
    if dtype == "float64":
        assert "cl_khr_fp64 : enable" in mod.get_source()
    *_, out = _run(mod, a, b, np.zeros(37, dtype))
    np.testing.assert_allclose(out, ref(a, b), rtol=1e-6 if dtype == "float32" else 1e-12)


@requires_opencl
def test_casts_between_int_and_float():
    build = lambda a, b: Cast("int32", a * FloatImm("float32", 10.0)) + Cast("int32", b)
    mod = build_device_module(expr_kernel(build, "float32", "int32"), "opencl")
    a = np.linspace(-3, 3, 37).astype("float32")
    b = np.linspace(-7.5, 7.5, 37).astype("float32")
    *_, out = _run(mod, a, b, np.zeros(37, "int32"))
    np.testing.assert_array_equal(out, (a * np.float32(10)).astype("int32") + b.astype("int32"))


def test_names_are_sanitized_and_unique():
    build = lambda a, b: a + b
    mod = expr_kernel(build, "float32", "float32", name="ew")
    kernel = next(f for f in mod.functions.values() if f.attrs.get("calling_conv") == 2)
    src, _, _ = build_opencl([kernel])
    assert "threadIdx_x" in src and "threadIdx.x" not in src.replace("// ", "")


# --- errors -----------------------------------------------------------------------------------
@requires_opencl
def test_host_array_passed_to_a_gpu_function_names_the_argument():
    mod = build_device_module(vector_add(), "opencl")
    dev = tvm.opencl(0)
    a = tvm.nd.array(np.zeros(8, "float32"), dev)
    with pytest.raises(ArgumentError, match=r"argument 'B' \(position 1\) is on host memory.*"
                       r"runs on opencl devices.*tvm.nd.array\(x, tvm.opencl\(0\)\)"):  # fmt: skip
        mod(a, np.zeros(8, "float32"), a)
    with pytest.raises(ArgumentError, match=r"argument 'C' \(position 2\) is on cpu\(0\)"):
        mod(a, a, tvm.nd.array(np.zeros(8, "float32")))


@requires_opencl
def test_gpu_arguments_are_checked_like_cpu_ones():
    mod = build_device_module(vector_add(), "opencl")
    dev = tvm.opencl(0)
    a8, a9 = (tvm.nd.empty((k,), "float32", dev) for k in (8, 9))
    with pytest.raises(
        ShapeError, match=r"argument 'B' \(position 1\) has shape \(9,\).*dim 0 must equal n = 8"
    ):
        mod(a8, a9, tvm.nd.empty((8,), "float32", dev))
    with pytest.raises(
        DTypeError, match=r"argument 'A' \(position 0\) has dtype int32, expected float32"
    ):
        mod(tvm.nd.empty((8,), "int32", dev), a8, tvm.nd.empty((8,), "float32", dev))
    with pytest.raises(ArgumentError, match=r"expected 3 arguments \(A, B, C\), got 2"):
        mod(a8, a8)
    assert mod.func_infos[0]["writes"] == [2]  # only C is stored to: A may be passed as B
    mod(a8, a8, tvm.nd.empty((8,), "float32", dev))
    with pytest.raises(ArgumentError, match="'A' .* and 'C' .* are the same array"):
        mod(a8, tvm.nd.empty((8,), "float32", dev), a8)


@requires_opencl
def test_gpu_array_passed_to_a_cpu_function_names_the_argument():
    n = 8
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B], "llvm", name="inc")
    a = tvm.nd.array(np.zeros(n, "float32"), tvm.opencl(0))
    with pytest.raises(
        ArgumentError,
        match=r"argument 'A' \(position 0\) is on opencl\(0\), but 'inc' runs on the CPU",
    ):
        f(a, tvm.nd.empty((n,), "float32"))


@requires_opencl
def test_block_over_the_device_limit_is_a_device_error():
    limit = tvm.opencl(0).max_threads_per_block
    mod = build_device_module(vector_add(block=limit * 2), "opencl")
    x = tvm.nd.empty((10,), "float32", tvm.opencl(0))
    with pytest.raises(
        DeviceError, match=rf"needs {limit * 2} threads per block.*more than the device's {limit}"
    ):
        mod(
            x,
            tvm.nd.empty((10,), "float32", tvm.opencl(0)),
            tvm.nd.empty((10,), "float32", tvm.opencl(0)),
        )


def test_kernel_assert_and_global_allocation_are_build_errors():
    from gpu_kernels import kernel

    from minitvm.tir.expr import Var
    from minitvm.tir.stmt import Allocate, AssertStmt, Evaluate

    k = kernel("bad", [], AssertStmt(IntImm("bool", 1), "x", Evaluate(IntImm("int32", 0))), [])
    with pytest.raises(BuildError, match="an assertion \\('x'\\) is inside the kernel"):
        build_opencl([k])
    buf = Var("tmp", "handle")
    k = kernel("bad2", [], Allocate(buf, "float32", (4,), IntImm("bool", 1), Evaluate(0),
                                    annotations={"storage_scope": "global"}), [])  # fmt: skip
    with pytest.raises(BuildError, match="allocation 'tmp' is in scope 'global'"):
        build_opencl([k])
    n = Var("n")
    k = kernel("bad3", [n], Allocate(buf, "float32", (n,), IntImm("bool", 1), Evaluate(0),
                                     annotations={"storage_scope": "shared"}), [])  # fmt: skip
    with pytest.raises(
        BuildError, match="allocation 'tmp' \\(shared\\) has extent `n` unknown at build time"
    ):
        build_opencl([k])


def test_non_gpu_target_is_refused():
    with pytest.raises(BuildError, match="target 'llvm' is not a GPU target"):
        build_device_module(vector_add(), tvm.target.Target("llvm"))


@requires_opencl
def test_export_and_load_round_trip(tmp_path):
    mod = build_device_module(vector_add(), "opencl")
    path = str(tmp_path / "vadd.zip")
    mod.export_library(path)
    loaded = tvm.runtime.load_module(path)
    assert loaded.get_source() == mod.get_source()
    assert loaded.imported_modules[0].type_key == "opencl"
    a = np.arange(100, dtype="float32")
    *_, c = _run(loaded, a, a, np.zeros(100, "float32"))
    np.testing.assert_array_equal(c, 2 * a)


def test_opencl_absent_is_a_device_error_in_a_subprocess():
    """Without pyopencl, tvm.opencl(0) says what to install (run where pyopencl is hidden)."""
    import subprocess

    code = (
        "import sys; sys.modules['pyopencl'] = None\n"
        "import minitvm as tvm\n"
        "d = tvm.opencl(0); assert not d.exist\n"
        "try:\n    d.sync()\nexcept tvm.error.DeviceError as e:\n    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "pyopencl is not installed" in out.stdout and "pocl-opencl-icd" in out.stdout


@requires_opencl
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_constants_are_exact(dtype):
    values = [0.1, -1e-30, 3.4e38, 1 / 3, -0.0, 5e-324 if dtype == "float64" else 1e-45]
    for v in values:
        mod = build_device_module(expr_kernel(lambda a, b, v=v: a * FloatImm(dtype, 0.0) + FloatImm(dtype, v),
                                              dtype, dtype), "opencl")  # fmt: skip
        *_, out = _run(mod, np.ones(37, dtype), np.ones(37, dtype), np.zeros(37, dtype))
        assert out[0] == np.asarray(v, dtype), (v, out[0])


@requires_opencl
@pytest.mark.parametrize("target", ["opencl", "cuda"])
def test_kernel_symbols_that_are_not_identifiers_are_renamed(target):
    mod = vector_add(name="fused.add")
    built = build_device_module(mod, target)
    assert "fused_add_kernel" in built.get_source()
    if target == "opencl":
        a = np.arange(5, dtype="float32")
        *_, c = _run(built, a, a, np.zeros(5, "float32"))
        np.testing.assert_array_equal(c, 2 * a)


@requires_opencl
def test_floordiv_is_plain_division_only_where_the_dividend_is_nonnegative():
    from gpu_kernels import kernel, launch, thread

    from minitvm.ir.module import IRModule
    from minitvm.tir.buffer import Buffer
    from minitvm.tir.expr import Var
    from minitvm.tir.function import PrimFunc
    from minitvm.tir.stmt import BufferStore, SeqStmt

    out = Var("out", "handle")
    host_buf = Buffer(Var("out_data", "handle"), "int32", (32,), name="out")
    kout = Var("out", "handle")
    flat = Buffer(kout, "int32", (32,), name="out")
    tx, with_tx = thread("threadIdx.x", 16, None)
    body = SeqStmt((
        BufferStore(flat, FloorDiv(tx, 3) * 10 + FloorMod(tx, 3), (tx,)),  # tx >= 0: plain / %
        BufferStore(flat, FloorDiv(tx - 8, 3) * 10 + FloorMod(tx - 8, 3), (tx + 16,)),
    ))  # fmt: skip
    k = kernel("fd_kernel", [kout], with_tx(body), ["threadIdx.x"])
    host = PrimFunc((out,), launch("fd_kernel", host_buf.data, 16), buffer_map={out: host_buf},
                    attrs={"global_symbol": "fd"})  # fmt: skip
    mod = build_device_module(IRModule({"fd": host, "fd_kernel": k}), "opencl")
    src = mod.get_source()
    assert "(threadIdx_x / 3)" in src and "minitvm_floordiv_int((threadIdx_x - 8), 3)" in src
    (res,) = _run(mod, np.zeros(32, "int32"))
    t = np.arange(16)
    np.testing.assert_array_equal(
        res, np.concatenate([t // 3 * 10 + t % 3, (t - 8) // 3 * 10 + (t - 8) % 3])
    )


@requires_opencl
def test_vector_loads_stores_and_lanewise_select():
    from gpu_kernels import kernel, launch, thread

    from minitvm.ir.module import IRModule
    from minitvm.tir.buffer import Buffer
    from minitvm.tir.expr import BufferLoad, Ramp, Var
    from minitvm.tir.function import PrimFunc
    from minitvm.tir.stmt import BufferStore

    host = [Var(x, "handle") for x in ("A", "B", "out")]
    hb = {p: Buffer(Var(p.name + "_data", "handle"), "float32", (64,), name=p.name) for p in host}
    kp = [Var(x, "handle") for x in ("A", "B", "out")]
    kb = [Buffer(p, "float32", (64,), name=p.name) for p in kp]
    tx, with_tx = thread("threadIdx.x", 16, None)
    idx = Ramp(tx * 4, 1, 4)
    a, b = BufferLoad(kb[0], (idx,)), BufferLoad(kb[1], (idx,))
    body = BufferStore(kb[2], Select(a < b, a * 2.0, b), (idx,))
    k = kernel("vsel_kernel", kp, with_tx(body), ["threadIdx.x"])
    f = PrimFunc(tuple(host), launch("vsel_kernel", *(hb[p].data for p in host), 16),
                 buffer_map=hb, attrs={"global_symbol": "vsel"})  # fmt: skip
    mod = build_device_module(IRModule({"vsel": f, "vsel_kernel": k}), "opencl")
    src = mod.get_source()
    assert "vload4(0, A + (threadIdx_x * 4))" in src and "vstore4(" in src and "select(" in src
    rng = np.random.default_rng(3)
    x, y = rng.random(64, dtype="float32"), rng.random(64, dtype="float32")
    *_, out = _run(mod, x, y, np.zeros(64, "float32"))
    np.testing.assert_array_equal(out, np.where(x < y, x * 2, y))
