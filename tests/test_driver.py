"""tvm.lower / tvm.build end to end: hand-built TensorIR and TE programs checked against numpy."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "tir", "transform"))
import tir_builders as tb

from minitvm import driver, runtime, te, tir
from minitvm.error import BuildError, TargetError
from minitvm.ir import IRModule
from minitvm.tir import ForKind


def _call(mod, *arrays):
    """Call a built function on aligned copies of `arrays`; returns them as numpy arrays."""
    nds = [runtime.nd.array(a) for a in arrays]
    mod(*nds)
    return [x.numpy() for x in nds]


def _run(func, *arrays, name="main"):
    return _call(driver.build(func, name=name), *arrays)


RNG = np.random.default_rng(0)


def _rand(*shape):
    return RNG.random(shape, dtype="float32")


def test_matmul_with_init():
    a, b = _rand(4, 3), _rand(3, 5)
    c = np.full((4, 5), np.nan, "float32")
    out = _run(tb.matmul(), a, b, c, name="mm")[2]
    np.testing.assert_allclose(out, a @ b, rtol=1e-5)


def test_reduction_with_non_divisible_split_and_predicate():
    a = _rand(3, 10)
    out = _run(tb.split_sum(3, 10, 4), a, np.zeros(3, "float32"))[1]
    np.testing.assert_allclose(out, a.sum(1), rtol=1e-5)


@pytest.mark.parametrize("fused", [True, False])
def test_intermediate_buffers_two_stage_softmax(fused):
    a = _rand(3, 6)
    out = _run(tb.softmax(3, 6, fused), a, np.zeros((3, 6), "float32"))[1]
    np.testing.assert_allclose(out, np.exp(a) / np.exp(a).sum(1, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize(
    "kinds",
    [
        [ForKind.SERIAL, ForKind.VECTORIZED],
        [ForKind.UNROLLED, ForKind.SERIAL],
        [ForKind.PARALLEL, ForKind.SERIAL],
        [ForKind.PARALLEL, ForKind.VECTORIZED],
    ],
    ids=["vectorized", "unrolled", "parallel", "parallel_vectorized"],
)
def test_loop_kinds(kinds):
    a = _rand(8, 16)
    out = _run(tb.elementwise((8, 16), kinds), a, np.zeros((8, 16), "float32"))[1]
    np.testing.assert_allclose(out, a * 2 + 1, rtol=1e-6)


def test_module_of_several_functions():
    mm = tb.matmul().with_attr("global_symbol", "mm")
    rowsum = tb.split_sum().with_attr("global_symbol", "rowsum")
    built = driver.build(IRModule({"mm": mm, "rowsum": rowsum}), name="rowsum")
    assert built.entry_name == "rowsum"
    a = _rand(3, 10)
    np.testing.assert_allclose(
        _call(built["rowsum"], a, np.zeros(3, "float32"))[1], a.sum(1), rtol=1e-5
    )
    a, b = _rand(4, 3), _rand(3, 5)
    np.testing.assert_allclose(
        _call(built["mm"], a, b, np.zeros((4, 5), "float32"))[2], a @ b, rtol=1e-5
    )


def test_module_functions_need_distinct_symbols():
    mod = IRModule({"mm": tb.matmul(), "rowsum": tb.split_sum()})  # both named "main"
    with pytest.raises(
        BuildError, match="functions 'mm' and 'rowsum' both have global_symbol 'main'"
    ):
        driver.build(mod)


def test_lower_gives_a_readable_loop_nest():
    mod = driver.lower(tb.elementwise((4, 8)), name="add_one")
    assert isinstance(mod, IRModule) and list(mod) == ["add_one"]
    func = mod["add_one"]
    assert func.attrs["global_symbol"] == "add_one"
    text = mod.script()
    assert "for i0, i1 in T.grid(4, 8):" in text and "B[i0, i1] = A[i0, i1]" in text
    assert "T.block" not in text


def test_build_of_lowered_module():
    mod = driver.lower(tb.matmul(), name="mm")
    a, b = _rand(4, 3), _rand(3, 5)
    c = _call(driver.build(mod), a, b, np.zeros((4, 5), "float32"))[2]
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_unknown_target():
    with pytest.raises(TargetError, match="unknown target kind 'fpga'"):
        driver.build(tb.matmul(), target="fpga")


def test_bad_input_binds_and_missing_args():
    with pytest.raises(BuildError, match="tvm.build: expected a te.Schedule"):
        driver.build(42)
    with pytest.raises(BuildError, match="`binds` .* is not supported"):
        driver.lower(tb.matmul(), binds={"A": 1})

    class FakeSchedule:
        def build_prim_func(self, args, name):
            return tb.matmul()

    with pytest.raises(BuildError, match="a schedule needs `args`"):
        driver.lower(FakeSchedule())
    assert "main" in driver.lower(FakeSchedule(), [1])


# --------------------------------------------------------------------------- TE-driven


def _te_add(n):
    A = te.placeholder((n,), "float32", "A")
    B = te.placeholder((n,), "float32", "B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    return [A, B, C]


def _te_matmul(n, m, k, ta, tb_):
    A = te.placeholder((k, n) if ta else (n, k), "float32", "A")
    B = te.placeholder((m, k) if tb_ else (k, m), "float32", "B")
    r = te.reduce_axis((0, k), "r")
    C = te.compute(
        (n, m),
        lambda i, j: te.sum(A[(r, i) if ta else (i, r)] * B[(j, r) if tb_ else (r, j)], axis=r),
        name="C",
    )
    return [A, B, C]


def _te_softmax(n, m):
    A = te.placeholder((n, m), "float32", "A")
    k1, k2 = te.reduce_axis((0, m), "k1"), te.reduce_axis((0, m), "k2")
    mx = te.compute((n,), lambda i: te.max(A[i, k1], axis=k1), name="mx")
    e = te.compute((n, m), lambda i, j: te.exp(A[i, j] - mx[i]), name="e")
    s = te.compute((n,), lambda i: te.sum(e[i, k2], axis=k2), name="s")
    B = te.compute((n, m), lambda i, j: e[i, j] / s[i], name="B")
    return [A, B]


@pytest.mark.parametrize("size", [1, 7, 64])
def test_te_elementwise_add_symbolic(size):
    n = te.var("n")
    mod = driver.build(_te_add(n), name="add")
    a, b = _rand(size), _rand(size)
    c = _call(mod, a, b, np.zeros(size, "float32"))[2]
    np.testing.assert_allclose(c, a + b)


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb_", [False, True])
def test_te_matmul_transposes_symbolic(ta, tb_):
    n, m = te.var("n"), te.var("m")
    mod = driver.build(_te_matmul(n, m, 5, ta, tb_), name="mm")
    for size in (1, 7):
        a = _rand(*((5, size) if ta else (size, 5)))
        b = _rand(*((size + 1, 5) if tb_ else (5, size + 1)))
        c = _call(mod, a, b, np.zeros((size, size + 1), "float32"))[2]
        np.testing.assert_allclose(c, (a.T if ta else a) @ (b.T if tb_ else b), rtol=1e-5)


@pytest.mark.parametrize("size", [1, 7, 64])
def test_te_softmax_symbolic(size):
    n = te.var("n")
    mod = driver.build(_te_softmax(n, 16), name="softmax")
    a = _rand(size, 16)
    out = _call(mod, a, np.zeros((size, 16), "float32"))[1]
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5)


# --------------------------------------------------------------------------- scheduled


def test_scheduled_matmul_with_local_cache_vectorize_unroll_parallel():
    from minitvm.tir.schedule import Schedule

    n = 64
    A, B, C = _te_matmul(n, n, n, False, False)
    sch = Schedule(te.create_prim_func([A, B, C]))
    blk = sch.get_block("C")
    i, j, k = sch.get_loops(blk)
    io, ii = sch.split(i, [None, 4])
    jo, ji = sch.split(j, [None, 16])
    sch.reorder(io, jo, k, ii, ji)
    cache = sch.cache_write(blk, 0, "local")
    sch.reverse_compute_at(cache, jo)
    sch.decompose_reduction(blk, k)
    sch.parallel(io)
    sch.unroll(ii)
    sch.vectorize(ji)
    func = sch.mod["main"]

    lowered = driver.lower(func)["main"]
    allocs = []
    tir.post_order_visit(
        lowered.body, lambda x: allocs.append(x) if isinstance(x, tir.Allocate) else None
    )
    assert [[int(e) for e in a.extents] for a in allocs] == [[4, 16]]  # one tile, not 64x64
    assert allocs[0].annotations["storage_scope"] == "local"

    a, b = _rand(n, n), _rand(n, n)
    c = _call(driver.build(func), a, b, np.zeros((n, n), "float32"))[2]
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)


def test_classic_te_schedule_lower_and_build():
    te_schedule = pytest.importorskip("minitvm.te.schedule")
    A, B, C = _te_add(te.var("n"))
    s = te_schedule.create_schedule(C.op)
    _, xi = s[C].split(C.op.axis[0], factor=8)
    s[C].vectorize(xi)
    text = driver.lower(s, [A, B, C], simple_mode=True).script()
    assert "T.block" not in text
    mod = driver.build(s, [A, B, C], "llvm", name="vadd")
    a, b = _rand(13), _rand(13)
    np.testing.assert_allclose(_call(mod, a, b, np.zeros(13, "float32"))[2], a + b)


def test_build_lone_primfunc_uses_its_global_symbol():
    from minitvm.script import tir as T

    @T.prim_func
    def add_one(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] + T.float32(1)

    lib = driver.build(add_one, target="llvm")
    a = np.arange(8, dtype="float32")
    b = np.zeros(8, dtype="float32")
    lib["add_one"](a, b)
    np.testing.assert_allclose(b, a + 1)
    assert lib.entry_name == "add_one"


_RACING_SUM = """
@T.prim_func
def rowsum(A: T.Buffer((8, 64), "float32"), B: T.Buffer((8,), "float32")):
    for i in T.serial(8):
        for k in T.parallel(64):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]
"""

_OUT_OF_DOMAIN = """
@T.prim_func
def f(A: T.Buffer((14,), "float32"), B: T.Buffer((14,), "float32")):
    for i, j in T.grid(4, 8):
        with T.block("B"):
            v = T.axis.spatial(14, i * i + j)
            B[v] = A[v]
"""


@pytest.mark.parametrize("build", [driver.build, driver.lower], ids=["build", "lower"])
@pytest.mark.parametrize(
    "source, message",
    [(_RACING_SUM, "parallel"), (_OUT_OF_DOMAIN, "domain|reaches")],
    ids=["parallel_reduction", "binding_out_of_domain"],
)
def test_prescheduled_tvmscript_gets_the_primitives_legality_checks(build, source, message):
    from minitvm.error import ScheduleError
    from minitvm.script import from_source

    with pytest.raises(ScheduleError, match=message):
        build(from_source(source))
