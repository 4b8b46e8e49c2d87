"""Kernels whose symbolic dims are int32 (`m = T.int32()`, te.var's default), int64 or one of
each: the default CPU schedule builds under relax.build and matches numpy on shapes that are
and are not multiples of its tiles, each CPU rule that takes such a kernel gives a function
that builds and matches, and the GPU rules bind threads and lower for OpenCL (and match numpy
on an OpenCL device when there is one).

The case that failed: fusing an int32 symbolic loop with another gives an int64 loop (its
extent may pass 2**31), and the split loop it replaced was read through a cast that lowering
could not bound (ScheduleError from the binding check; an intermediate buffer compacted to
2**31 - 1 rows). On GPU, whatever the dtype: a nest with its reduction loop outermost left
its outer loops unbound, and the register-accumulating rules scheduled kernels that bind no
thread loop."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
import minitvm.dlight as dl
from minitvm import relax, tir
from minitvm.target import Target
from minitvm.tir.functor import post_order_visit
from minitvm.tir.stmt import For, ForKind

DTYPES = [("int32", "int32"), ("int64", "int64"), ("int32", "int64"), ("int64", "int32")]
DTYPE_IDS = ["i32", "i64", "i32-i64", "i64-i32"]
# (m, n): single elements, odd sizes (no multiple of the 16-lane vectors or 4-row tiles), larger
SHAPES = [(1, 1), (3, 5), (17, 33), (64, 100)]

_ADD = """
@T.prim_func
def main(a: T.handle, b: T.handle):
    m = T.{d0}()
    n = T.{d1}()
    A = T.match_buffer(a, (m, n), "float32")
    B = T.match_buffer(b, (m, n), "float32")
    for i, j in T.grid(m, n):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1)
"""

_ROW_SUM = """
@T.prim_func
def main(a: T.handle, b: T.handle):
    m = T.{d0}()
    n = T.{d1}()
    A = T.match_buffer(a, (m, n), "float32")
    B = T.match_buffer(b, (m,), "float32")
    for i, k in T.grid(m, n):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
"""

# four blocks through two intermediates: row max, exp, row sum, normalise
_SOFTMAX = """
@T.prim_func
def main(a: T.handle, b: T.handle):
    m = T.{d0}()
    n = T.{d1}()
    A = T.match_buffer(a, (m, n), "float32")
    B = T.match_buffer(b, (m, n), "float32")
    mx = T.alloc_buffer((m,), "float32")
    e = T.alloc_buffer((m, n), "float32")
    s = T.alloc_buffer((m,), "float32")
    for i, k in T.grid(m, n):
        with T.block("max"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                mx[vi] = T.float32(-3.4e38)
            mx[vi] = T.max(mx[vi], A[vi, vk])
    for i, j in T.grid(m, n):
        with T.block("exp"):
            vi, vj = T.axis.remap("SS", [i, j])
            e[vi, vj] = T.exp(A[vi, vj] - mx[vi])
    for i, k in T.grid(m, n):
        with T.block("sum"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                s[vi] = T.float32(0)
            s[vi] = s[vi] + e[vi, vk]
    for i, j in T.grid(m, n):
        with T.block("norm"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = e[vi, vj] / s[vi]
"""

# the row chain GeneralReduction takes: a row sum, then each element less the row's mean
_CENTER = """
@T.prim_func
def main(a: T.handle, b: T.handle):
    m = T.{d0}()
    A = T.match_buffer(a, (m, 64), "float32")
    B = T.match_buffer(b, (m, 64), "float32")
    s = T.alloc_buffer((m,), "float32")
    for i, k in T.grid(m, 64):
        with T.block("sum"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                s[vi] = T.float32(0)
            s[vi] = s[vi] + A[vi, vk]
    for i, j in T.grid(m, 64):
        with T.block("out"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] - s[vi] * T.float32(0.015625)
"""

# C[m, n] = A[m, 40] @ B[40, n]; `n = 70` makes M the only symbolic dim
_MATMUL = """
@T.prim_func
def main(a: T.handle, b: T.handle, c: T.handle):
    m = T.{d0}()
    n = T.{d1}()
    A = T.match_buffer(a, (m, 40), "float32")
    B = T.match_buffer(b, (40, n), "float32")
    C = T.match_buffer(c, (m, n), "float32")
    for i, j, k in T.grid(m, n, 40):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""

# y[1, m] = x[1, 128] @ W[m, 128].T: a dot product per row, which GEMV vectorizes along k
_GEMV = """
@T.prim_func
def main(a: T.handle, b: T.handle, c: T.handle):
    m = T.{d0}()
    W = T.match_buffer(a, (m, 128), "float32")
    X = T.match_buffer(b, (1, 128), "float32")
    Y = T.match_buffer(c, (1, m), "float32")
    for i, j, k in T.grid(1, m, 128):
        with T.block("Y"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                Y[vi, vj] = T.float32(0)
            Y[vi, vj] = Y[vi, vj] + X[vi, vk] * W[vj, vk]
"""


# a column sum written with its reduction loop outermost (no leading spatial loop)
_COL_SUM = """
@T.prim_func
def main(a: T.handle, b: T.handle):
    m = T.{d0}()
    n = T.{d1}()
    A = T.match_buffer(a, (m, n), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for k, j in T.grid(m, n):
        with T.block("B"):
            vk, vj = T.axis.remap("RS", [k, j])
            with T.init():
                B[vj] = T.float32(0)
            B[vj] = B[vj] + A[vk, vj]
"""


def _softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


# name: (source, input shapes, output shape, numpy reference), shapes given (m, n)
KERNELS = {
    "add": (_ADD, lambda m, n: [(m, n)], lambda m, n: (m, n), lambda a: a + 1),
    "row_sum": (_ROW_SUM, lambda m, n: [(m, n)], lambda m, n: (m,), lambda a: a.sum(1)),
    "col_sum": (_COL_SUM, lambda m, n: [(m, n)], lambda m, n: (n,), lambda a: a.sum(0)),
    "row_sum_64": (
        _ROW_SUM.replace("n = T.{d1}()", "n = 64"),
        lambda m, n: [(m, 64)],
        lambda m, n: (m,),
        lambda a: a.sum(1),
    ),
    "softmax": (_SOFTMAX, lambda m, n: [(m, n)], lambda m, n: (m, n), _softmax),
    # n static: the fused loop's divisor is a constant, the binding check passes, and the
    # intermediate `e` was compacted to 2**31 - 1 rows through the cast (out of memory)
    "softmax_48": (
        _SOFTMAX.replace("n = T.{d1}()", "n = 48"),
        lambda m, n: [(m, 48)],
        lambda m, n: (m, 48),
        _softmax,
    ),
    "center": (
        _CENTER,
        lambda m, n: [(m, 64)],
        lambda m, n: (m, 64),
        lambda a: a - a.mean(1, keepdims=True),
    ),
    "matmul": (
        _MATMUL,
        lambda m, n: [(m, 40), (40, n)],
        lambda m, n: (m, n),
        lambda a, b: a @ b,
    ),
    "matmul_m": (
        _MATMUL.replace("n = T.{d1}()", "n = 70"),
        lambda m, n: [(m, 40), (40, 70)],
        lambda m, n: (m, 70),
        lambda a, b: a @ b,
    ),
    "gemv": (
        _GEMV,
        lambda m, n: [(m, 128), (1, 128)],
        lambda m, n: (1, m),
        lambda w, x: x @ w.T,
    ),
}


def _prim_func(name: str, d0: str, d1: str) -> tir.PrimFunc:
    source = KERNELS[name][0].format(d0=d0, d1=d1)
    return tvm.script.from_source("from minitvm.script import tir as T\n" + source)


def _inputs(name: str, m: int, n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype("float32") for s in KERNELS[name][1](m, n)]


def _expected(name: str, inputs: list[np.ndarray], m: int, n: int) -> np.ndarray:
    return KERNELS[name][3](*inputs).reshape(KERNELS[name][2](m, n))


def _relax_module(name: str, d0: str, d1: str) -> tvm.IRModule:
    """main(x...) = call_tir(kernel, x...) with the relax shapes in int64, as relax writes them."""
    m, n = tir.Var("m", "int64"), tir.Var("n", "int64")
    _, in_shapes, out_shape, _ = KERNELS[name]
    bb = relax.BlockBuilder()
    kernel = bb.add_func(_prim_func(name, d0, d1), "kernel")
    params = [
        relax.Var(f"x{k}", relax.TensorStructInfo(s, "float32"))
        for k, s in enumerate(in_shapes(m, n))
    ]
    with bb.function("main", params):
        out_sinfo = relax.TensorStructInfo(out_shape(m, n), "float32")
        out = bb.emit(relax.call_tir(kernel, params, out_sinfo))
        bb.emit_func_output(out)
    return bb.get()


def _loop_kinds(func: tir.PrimFunc) -> set[ForKind]:
    kinds: set[ForKind] = set()
    post_order_visit(func.body, lambda n: kinds.add(n.kind) if isinstance(n, For) else None)
    return kinds


@pytest.mark.parametrize("d0, d1", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name", ["add", "softmax", "matmul"])
def test_relax_build_runs_int32_and_mixed_dims_and_matches_numpy(name, d0, d1):
    vm = relax.VirtualMachine(relax.build(_relax_module(name, d0, d1), "llvm"), tvm.cpu())
    for m, n in SHAPES:
        inputs = _inputs(name, m, n)
        out = vm["main"](*[tvm.nd.array(x) for x in inputs]).numpy()
        np.testing.assert_allclose(out, _expected(name, inputs, m, n), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["row_sum", "softmax_48", "center", "matmul_m", "gemv"])
def test_relax_build_runs_int32_reductions_and_matches_numpy(name):
    vm = relax.VirtualMachine(relax.build(_relax_module(name, "int32", "int32"), "llvm"), tvm.cpu())
    for m, n in SHAPES:
        inputs = _inputs(name, m, n)
        out = vm["main"](*[tvm.nd.array(x) for x in inputs]).numpy()
        np.testing.assert_allclose(out, _expected(name, inputs, m, n), rtol=1e-4, atol=1e-5)


CPU_RULES = [
    (dl.cpu.ElementWise(), "add", ForKind.VECTORIZED),
    (dl.cpu.ElementWise(), "softmax", ForKind.VECTORIZED),
    (dl.cpu.ElementWise(), "softmax_48", ForKind.VECTORIZED),
    (dl.cpu.Reduction(), "row_sum", ForKind.PARALLEL),
    (dl.cpu.Reduction(), "softmax", ForKind.PARALLEL),
    (dl.cpu.GeneralReduction(), "center", ForKind.PARALLEL),
    (dl.cpu.Matmul(), "matmul", ForKind.VECTORIZED),
    (dl.cpu.Matmul(), "matmul_m", ForKind.VECTORIZED),
    (dl.cpu.GEMV(), "gemv", ForKind.VECTORIZED),
    (dl.cpu.Fallback(), "softmax", ForKind.PARALLEL),
    (dl.cpu.Fallback(), "matmul", ForKind.PARALLEL),
]
CPU_RULE_IDS = [f"{type(r).__name__}-{name}" for r, name, _ in CPU_RULES]


@pytest.mark.parametrize("d0, d1", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("rule, name, kind", CPU_RULES, ids=CPU_RULE_IDS)
def test_each_cpu_rule_builds_int32_and_mixed_dims_and_matches_numpy(rule, name, kind, d0, d1):
    mod = tvm.IRModule({"main": _prim_func(name, d0, d1)})
    func = dl.ApplyDefaultSchedule(rule)(mod)["main"]
    assert func.attrs.get(dl.IS_SCHEDULED), f"{rule!r} did not apply:\n{func.script()}"
    assert kind in _loop_kinds(func), func.script()
    built = tvm.build(func, target="llvm")
    for m, n in SHAPES:
        inputs = _inputs(name, m, n)
        want = _expected(name, inputs, m, n)
        args = [tvm.nd.array(x) for x in (*inputs, np.zeros(want.shape, "float32"))]
        built(*args)
        np.testing.assert_allclose(args[-1].numpy(), want, rtol=1e-4, atol=1e-5)


def test_int32_elementwise_keeps_its_vector_loop_and_runs_rows_in_parallel():
    """The rows run in parallel and the columns in 16-lane vectors; the split column loop is
    not fused into the parallel loop (that would widen it to int64 behind a cast)."""
    mod = tvm.IRModule({"main": _prim_func("add", "int32", "int32")})
    func = dl.ApplyDefaultSchedule(*dl.cpu.DEFAULT_RULES)(mod)["main"]
    loops: list[For] = []
    post_order_visit(func.body, lambda n: loops.append(n) if isinstance(n, For) else None)
    kinds = {f.loop_var.name: f.kind for f in loops}
    assert kinds.get("i") is ForKind.PARALLEL, func.script()
    assert ForKind.VECTORIZED in kinds.values(), func.script()
    assert all(f.loop_var.dtype == "int32" for f in loops), func.script()


GPU_KERNELS = ["add", "softmax", "softmax_48", "center", "matmul_m", "col_sum"]


def _gpu_schedule(name: str, d0: str, d1: str, kind: str = "opencl") -> tir.PrimFunc:
    mod = tvm.IRModule({"main": _prim_func(name, d0, d1)})
    with Target(kind):
        func = dl.ApplyDefaultSchedule(*dl.gpu.DEFAULT_RULES)(mod)["main"]
    assert func.attrs.get(dl.IS_SCHEDULED), func.script()
    assert "T.thread_binding" in func.script(), func.script()
    return func


@pytest.mark.parametrize("d0, d1", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name", GPU_KERNELS)
def test_gpu_rules_bind_threads_and_lower_for_int32_and_mixed_dims(name, d0, d1):
    from minitvm.driver import lower_gpu

    lower_gpu([_gpu_schedule(name, d0, d1)], Target("opencl"))


@pytest.mark.parametrize("d0, d1", [("int32", "int32"), ("int64", "int32")], ids=["i32", "i64-i32"])
@pytest.mark.parametrize("name", GPU_KERNELS)
def test_gpu_rules_on_an_opencl_device_match_numpy(name, d0, d1):
    dev = tvm.opencl(0)
    reason = dev.unavailable_reason()
    if reason is not None:
        pytest.skip(f"no opencl device: {reason}")
    built = tvm.build(_gpu_schedule(name, d0, d1), target="opencl")
    for m, n in SHAPES:
        inputs = _inputs(name, m, n)
        want = _expected(name, inputs, m, n)
        args = [tvm.nd.array(x, dev) for x in (*inputs, np.zeros(want.shape, "float32"))]
        built(*args)
        np.testing.assert_allclose(args[-1].numpy(), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "rule, name",
    [(dl.gpu.Reduction(), "row_sum_64"), (dl.gpu.GEMV(), "gemv")],
    ids=["Reduction", "GEMV"],
)
def test_gpu_register_accumulation_declines_when_every_output_loop_is_symbolic(rule, name):
    """Such a kernel binds no thread loop for its register accumulator to live under (it was
    scheduled anyway and failed to lower: a 'local' buffer outside every kernel); the rule
    after it in the list then binds the kernel."""
    from minitvm.driver import lower_gpu

    func = _prim_func(name, "int32", "int32")
    assert rule.apply(func, Target("opencl"), False) is None
    with Target("opencl"):
        out = dl.ApplyDefaultSchedule(rule, dl.gpu.Fallback())(tvm.IRModule({"main": func}))
    lower_gpu([out["main"]], Target("opencl"))


def test_fusable_prefix_stops_before_a_fusion_that_widens_the_index_dtype():
    from minitvm.dlight.base.loops import fusable_prefix, fuse_keeps_dtype

    def loops(name, d0, d1):
        sch = tir.Schedule(_prim_func(name, d0, d1))
        return sch, sch.get_loops(sch.get_block("B"))

    sch, (i, j) = loops("add", "int64", "int64")
    assert fuse_keeps_dtype(sch, [i, j]) and fusable_prefix(sch, [i, j]) == 2
    sch, (i, j) = loops("add", "int32", "int32")  # m * n may pass 2**31: the fused loop is int64
    assert not fuse_keeps_dtype(sch, [i, j]) and fusable_prefix(sch, [i, j]) == 1
    sch, (i, j) = loops("add", "int64", "int32")  # j would be widened
    before = sch.mod["main"]
    assert not fuse_keeps_dtype(sch, [i, j]) and fusable_prefix(sch, [i, j]) == 1
    assert sch.mod["main"] is before  # asking fused a copy
    source = _ADD.replace("m = T.{d0}()", "m = 300").replace("n = T.{d1}()", "n = 200")
    sch = tir.Schedule(tvm.script.from_source("from minitvm.script import tir as T\n" + source))
    i, j = sch.get_loops(sch.get_block("B"))
    assert fuse_keeps_dtype(sch, [i, j]) and fusable_prefix(sch, [i, j]) == 2
    assert fusable_prefix(sch, []) == 0
