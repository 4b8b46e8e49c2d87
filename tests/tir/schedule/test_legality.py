"""Primitives refuse what they cannot prove legal, and what they accept computes the same numbers.

The programs are TVMScript so that each case shows exactly the IR a user wrote. A case that
once wrote out of bounds runs in a subprocess, so a regression fails the test instead of
killing the run.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm import tir
from minitvm.error import ScheduleError
from minitvm.script import tir as T
from minitvm.tir.schedule.verify import verify_block_bindings, verify_loop_kinds

HERE = os.path.dirname(os.path.abspath(__file__))


def run(mod, inputs, out_shape):
    """Build `mod` and call it on `inputs`, returning the output array."""
    f = tvm.build(mod.mod if isinstance(mod, tir.Schedule) else mod, target="llvm")
    nds = [tvm.nd.array(x) for x in inputs] + [tvm.nd.array(np.zeros(out_shape, "float32"))]
    f(*nds)
    return nds[-1].numpy()


def run_in_subprocess(code: str) -> str:
    """Run `code` (with this module importable) in a fresh interpreter; return its stdout."""
    prog = f"import sys; sys.path.insert(0, {HERE!r})\n" + code
    proc = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def rand(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype("float32")


# ---------------------------------------------------------------- reverse_compute_inline


@T.prim_func
def overcomputed(A: T.Buffer((128, 128), "float32"), C: T.Buffer((127, 127), "float32")):
    B = T.alloc_buffer((128, 128))
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * 2.0
    for i, j in T.grid(127, 127):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + 1.0


@T.prim_func
def overcomputed_injective(A: T.Buffer((128, 128), "float32"), C: T.Buffer((127, 127), "float32")):
    B = T.alloc_buffer((8, 8, 16, 16))
    for i0, j0, i1, j1 in T.grid(8, 8, 16, 16):
        with T.block("B"):
            vi, vj, vm, vn = T.axis.remap("SSSS", [i0, j0, i1, j1])
            B[vi, vj, vm, vn] = A[vi * 16 + vm, vj * 16 + vn] * 2.0
    for i, j in T.grid(127, 127):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi // 16, vj // 16, vi % 16, vj % 16] + 1.0


@T.prim_func
def slicing(
    x: T.Buffer((1, 16, 7, 7), "float32"), out: T.Buffer((1, 12, 7, 7), "float32")
):
    add = T.alloc_buffer((1, 16, 7, 7))
    for a0, a1, a2, a3 in T.grid(1, 16, 7, 7):
        with T.block("add"):
            v0, v1, v2, v3 = T.axis.remap("SSSS", [a0, a1, a2, a3])
            add[v0, v1, v2, v3] = x[v0, v1, v2, v3] + 1.0
    for a0, a1, a2, a3 in T.grid(1, 12, 7, 7):
        with T.block("slice"):
            v0, v1, v2, v3 = T.axis.remap("SSSS", [a0, a1, a2, a3])
            out[v0, v1, v2, v3] = add[v0, v1, v2, v3]


@T.prim_func
def flattened_read(A: T.Buffer((128, 128), "float32"), C: T.Buffer((8, 32, 8, 8), "float32")):
    B = T.alloc_buffer((128, 128))
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * 2.0
    for i, j, k, m in T.grid(8, 32, 8, 8):
        with T.block("C"):
            vi, vj, vk, vm = T.axis.remap("SSSS", [i, j, k, m])
            C[vi, vj, vk, vm] = B[
                (((vi * 32 + vj) * 8 + vk) * 8 + vm) // 128, (((vi * 32 + vj) * 8 + vk) * 8 + vm) % 128
            ]


@T.prim_func
def reversed_read(A: T.Buffer((10,), "float32"), C: T.Buffer((10,), "float32")):
    B = T.alloc_buffer((10,))
    for i in range(10):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] * 2.0
    for i in range(10):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[9 - vi] + 1.0


@T.prim_func
def not_covered(A: T.Buffer((128, 128), "float32"), D: T.Buffer((256, 128), "float32")):
    B = T.alloc_buffer((128, 128))
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * 2.0
    for i, j in T.grid(256, 128):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = B[vi - 128, vj]


@T.prim_func
def consumer_partial(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,))
    for i in range(16):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] * 2.0
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[vi] = B[vi] + 1.0


def test_reverse_compute_inline_overcomputed_producer_keeps_a_guard():
    sch = tir.Schedule(overcomputed)
    sch.reverse_compute_inline(sch.get_block("C"))
    assert "T.where(i < 127 and j < 127)" in sch.mod.script()
    out = run_in_subprocess(
        "import numpy as np\n"
        "from minitvm import tir\n"
        "from test_legality import overcomputed, run, rand\n"
        "sch = tir.Schedule(overcomputed)\n"
        "sch.reverse_compute_inline(sch.get_block('C'))\n"
        "a = rand(128, 128)\n"
        "np.testing.assert_allclose(run(sch, [a], (127, 127)), a[:127, :127] * 2 + 1, rtol=1e-6)\n"
        "print('same')\n"
    )
    assert out.strip() == "same"


@pytest.mark.parametrize(
    "func, shape, ref",
    [
        (overcomputed_injective, (127, 127), lambda a: a[:127, :127] * 2 + 1),
        (flattened_read, (8, 32, 8, 8), lambda a: (a * 2).reshape(8, 32, 8, 8)),
    ],
)
def test_reverse_compute_inline_inverts_index_maps(func, shape, ref):
    sch = tir.Schedule(func)
    sch.reverse_compute_inline(sch.get_block("C"))
    a = rand(128, 128)
    np.testing.assert_allclose(run(sch, [a], shape), ref(a), rtol=1e-6)


def test_reverse_compute_inline_reversed_read():
    sch = tir.Schedule(reversed_read)
    sch.reverse_compute_inline(sch.get_block("C"))
    a = rand(10)
    np.testing.assert_allclose(run(sch, [a], (10,)), a[::-1] * 2 + 1, rtol=1e-6)


def test_reverse_compute_inline_slicing_then_cache_write():
    sch = tir.Schedule(slicing)
    sch.reverse_compute_inline(sch.get_block("slice"))
    sch.cache_write(sch.get_block("add"), 0, "global")
    x = rand(1, 16, 7, 7)
    np.testing.assert_allclose(run(sch, [x], (1, 12, 7, 7)), x[:, :12] + 1, rtol=1e-6)


def test_reverse_compute_inline_producer_not_covering_raises():
    sch = tir.Schedule(not_covered)
    with pytest.raises(
        ScheduleError, match=r"block 'C' reads B\[-128, 0\], which its producer 'B' does not write"
    ):
        sch.reverse_compute_inline(sch.get_block("C"))


def test_reverse_compute_inline_consumer_not_covering_its_domain_raises():
    sch = tir.Schedule(consumer_partial)
    with pytest.raises(
        ScheduleError, match=r"cannot prove that block 'C' runs every point of its iteration domain"
    ):
        sch.reverse_compute_inline(sch.get_block("C"))


# ---------------------------------------------------------------- rfactor


@T.prim_func
def rowsum_init_one(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128,), "float32")):
    for i, k in T.grid(128, 128):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = 1.0
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def rowsum_not_quasi_affine(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128,), "float32")):
    for i, k in T.grid(128, 16):
        with T.block("B"):
            vi = T.axis.spatial(128, i)
            vk = T.axis.reduce(128, T.floordiv(k * k, 2))
            with T.init():
                B[vi] = 0.0
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def transposed_update(A: T.Buffer((8, 8, 8), "float32"), B: T.Buffer((8, 8), "float32")):
    for i, j, k in T.grid(8, 8, 8):
        with T.block("B"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                B[vi, vj] = 0.0
            B[vi, vj] = B[vj, vi] + A[vi, vj, vk]


@T.prim_func
def not_dominant(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
    for i, k in T.grid(128, 128):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi, vk] = 0.0
            B[vi, vk] = B[vi, vk] + A[vi, vk]


@T.prim_func
def rowmax_from_half(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float32")):
    for i, k in T.grid(16, 16):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = 0.5
            B[vi] = T.max(B[vi], A[vi, vk])


@pytest.mark.parametrize(
    "func, message",
    [
        (rowsum_init_one, r"sets B to T.float32\(1\), but rfactor of a sum needs the identity 0"),
        (rowsum_not_quasi_affine, r"has the binding k \* k // 2, which is not quasi-affine"),
        (transposed_update, r"rfactor needs it to read B only at the element it writes"),
        (not_dominant, r"writes B\[vi, vk\], which depends on a reduction iterator"),
    ],
)
def test_rfactor_rejects(func, message):
    sch = tir.Schedule(func)
    *_, k = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match=message):
        sch.rfactor(k, 0)


def test_rfactor_max_with_any_init_is_exact():
    """max is idempotent: folding the init into every partial result changes nothing."""
    sch = tir.Schedule(rowmax_from_half)
    _, k = sch.get_loops(sch.get_block("B"))
    _, ki = sch.split(k, [None, 4])
    sch.rfactor(ki, 0)
    a = rand(16, 16)
    np.testing.assert_allclose(run(sch, [a], (16,)), np.maximum(a.max(axis=1), 0.5))


# ---------------------------------------------------------------- already-scheduled TVMScript


@T.prim_func
def parallel_reduction(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64,), "float32")):
    for i in range(64):
        for k in T.parallel(64):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = 0.0
                B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def parallel_spatial(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64,), "float32")):
    for i in T.parallel(64):
        for k in range(64):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = 0.0
                B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def parallel_plain_accumulate(A: T.Buffer((64,), "float32"), B: T.Buffer((1,), "float32")):
    for k in T.parallel(64):
        B[0] = B[0] + A[k]


@T.prim_func
def binding_past_domain(A: T.Buffer((14,), "float32"), B: T.Buffer((14,), "float32")):
    for v0, v1 in T.grid(4, 14):
        with T.block("B"):
            vi = T.axis.spatial(14, v0 * v0 + v1)
            B[vi] = A[vi] + 1.0


@T.prim_func
def binding_nonaffine_inside(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for v0, v1 in T.grid(3, 4):
        with T.block("B"):
            vi = T.axis.spatial(16, v0 * v0 + v1)
            B[vi] = A[vi] + 1.0


@T.prim_func
def binding_guarded(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,))
    B = T.match_buffer(b, (n,))
    for i0, i1 in T.grid((n + 3) // 4, 4):
        with T.block("B"):
            vi = T.axis.spatial(n, i0 * 4 + i1)
            T.where(i0 * 4 + i1 < n)
            B[vi] = A[vi] + 1.0


@pytest.mark.parametrize(
    "func, message",
    [
        (parallel_reduction, r"the loop drives reduction iterator 'vk'; parallelizing it would race"),
        (parallel_plain_accumulate, r"loop 'k' is parallel, but every iteration updates the same"),
    ],
)
def test_verify_loop_kinds_rejects_racing_loops(func, message):
    with pytest.raises(ScheduleError, match=message):
        verify_loop_kinds(func)


def test_verify_block_bindings_rejects_binding_past_domain():
    with pytest.raises(
        ScheduleError,
        match=r"iterator 'vi' is declared as T.axis.spatial\(14, ...\) but bound to "
        r"v0 \* v0 \+ v1, which reaches 22",
    ):
        verify_block_bindings(binding_past_domain)


@T.prim_func
def binding_fused_symbolic(a: T.handle, b: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (T.int64(2), n))
    B = T.match_buffer(b, (T.int64(2), n))
    for f in range(T.int64(2) * n):
        with T.block("B"):
            v0 = T.axis.spatial(T.int64(2), f // n)
            v1 = T.axis.spatial(n, f % n)
            B[v0, v1] = A[v0, v1]


@T.prim_func
def binding_sliced_symbolic(a: T.handle, b: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (T.int64(6), n))
    B = T.match_buffer(b, (T.int64(2), T.max(n - T.int64(1), T.int64(0)) - T.min(T.int64(0), n)))
    for f in T.parallel(
        (T.max(n - T.int64(1), T.int64(0)) - T.min(T.int64(0), n) + T.int64(15)) // T.int64(16)
        * T.int64(2)
    ):
        for j in T.vectorized(T.int64(16)):
            with T.block("B"):
                v0 = T.axis.spatial(
                    T.int64(2),
                    f // ((T.max(n - T.int64(1), T.int64(0)) - T.min(T.int64(0), n) + T.int64(15)) // T.int64(16)),
                )
                v1 = T.axis.spatial(
                    T.max(n - T.int64(1), T.int64(0)) - T.min(T.int64(0), n),
                    f % ((T.max(n - T.int64(1), T.int64(0)) - T.min(T.int64(0), n) + T.int64(15)) // T.int64(16)) * T.int64(16) + j,
                )
                T.where(
                    f % ((T.max(n - T.int64(1), T.int64(0)) - T.min(T.int64(0), n) + T.int64(15)) // T.int64(16)) * T.int64(16) + j + T.min(T.int64(0), n)
                    < T.max(n - T.int64(1), T.int64(0))
                )
                B[v0, v1] = A[v0 * T.int64(2) + T.int64(1), v1 + T.min(T.int64(0), n)]


@pytest.mark.parametrize(
    "func",
    [
        parallel_spatial,
        binding_nonaffine_inside,
        binding_guarded,
        binding_fused_symbolic,
        binding_sliced_symbolic,
    ],
)
def test_verifiers_accept_legal_programs(func):
    verify_loop_kinds(func)
    verify_block_bindings(func)


# ---------------------------------------------------------------- empty reductions


@T.prim_func
def empty_sum(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
    for i, k in T.grid(4, 0):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = 0.0
            B[vi] = B[vi] + A[vi, vk]


def test_decompose_reduction_over_an_empty_axis_still_runs_the_init():
    sch = tir.Schedule(empty_sum)
    block = sch.get_block("B")
    _, k = sch.get_loops(block)
    sch.decompose_reduction(block, k)
    f = tvm.build(sch.mod, target="llvm")
    out = tvm.nd.array(np.full(4, 7.0, "float32"))
    f(tvm.nd.array(np.ones((4, 8), "float32")), out)
    np.testing.assert_array_equal(out.numpy(), np.zeros(4, "float32"))


# ---------------------------------------------------------------- caching


@T.prim_func
def two_writers(C: T.Buffer((16,), "float32")):
    A = T.alloc_buffer((16,))
    for i in range(16):
        with T.block("A0"):
            vi = T.axis.spatial(16, i)
            A[vi] = 1.0
    for i in range(8):
        with T.block("A1"):
            vi = T.axis.spatial(16, i)
            A[vi] = 2.0
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[vi] = A[vi]


def test_cache_write_of_one_of_two_writers_raises():
    """Copying A1's cache back would overwrite what A0 wrote to the elements A1 does not."""
    sch = tir.Schedule(two_writers)
    with pytest.raises(
        ScheduleError, match=r"block 'A0' also writes A; cache_write needs 'A1' to be the only"
    ):
        sch.cache_write(sch.get_block("A1"), 0, "global")


def test_cache_read_of_two_writers_is_refused_as_in_tvm():
    sch = tir.Schedule(two_writers)
    with pytest.raises(ScheduleError, match="written by several blocks of the scope"):
        sch.cache_read(sch.get_block("C"), 0, "local")


def test_cache_with_an_unknown_storage_scope_raises():
    sch = tir.Schedule(two_writers)
    with pytest.raises(ScheduleError, match=r"'test_scope' is not a storage scope"):
        sch.cache_read(sch.get_block("C"), 0, "test_scope")


@T.prim_func
def prefix_sum(A: T.Buffer((16,), "float32")):
    for i in range(15):
        with T.block("scan"):
            A[i + 1] = A[i + 1] + A[i]


@pytest.mark.parametrize("primitive", ["vectorize", "parallel"])
def test_loop_carried_update_cannot_run_in_parallel(primitive):
    sch = tir.Schedule(prefix_sum)
    (i,) = sch.get_loops(sch.get_block("scan"))
    with pytest.raises(ScheduleError, match=r"reads A\[i\] and writes A\[i \+ 1\].*loop-carried"):
        getattr(sch, primitive)(i)
    sch.unroll(i)  # running the iterations in order stays legal
    a = np.arange(16, dtype="float32")
    f = tvm.build(sch.mod, target="llvm")
    nd = tvm.nd.array(a.copy())
    f(nd)
    np.testing.assert_array_equal(nd.numpy(), np.cumsum(a))


def test_schedule_errors_are_runtime_errors_as_in_tvm():
    """TVM's own tests catch schedule errors as tvm.tir.ScheduleError or RuntimeError."""
    sch = tir.Schedule(rowsum_init_one)
    _, k = sch.get_loops(sch.get_block("B"))
    with pytest.raises(RuntimeError, match=r"rfactor of a sum needs the identity 0"):
        sch.rfactor(k, 0)


@T.prim_func
def scan_axis(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32")):
    for i, k in T.grid(8, 8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            vk = T.axis.scan(8, k)
            B[vi, vk] = A[vi, vk] * 2.0


def test_reorder_past_a_scan_iterator_raises():
    sch = tir.Schedule(scan_axis)
    i, k = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match=r"drives iterator 'vk' of block 'B', which is ordered"):
        sch.reorder(k, i)


def test_fuse_of_symbolic_loops_uses_int64_and_passes_the_binding_check():
    # n * m can exceed 2**31 even when n and m fit int32: the fused var is int64, and the
    # build-time binding check proves the narrowed bindings (v // m, v % m) in range
    import numpy as np

    import minitvm as tvm
    from minitvm import te

    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2.0, name="B")
    s = te.create_schedule(B.op)
    fused = s[B].fuse(*B.op.axis)
    outer, inner = s[B].split(fused, factor=16)
    s[B].vectorize(inner)
    s[B].parallel(outer)
    assert "T.int64(16)" in tvm.lower(s, [A, B]).script()
    mod = tvm.build(s, [A, B])
    a = np.random.default_rng(0).random((37, 29), dtype="float32")
    b = np.zeros_like(a)
    mod(a, b)
    np.testing.assert_array_equal(b, a * 2)


def _loop_form_store(index: str) -> str:
    return f"""
@T.prim_func
def f(a: T.handle, c: T.handle):
    A = T.match_buffer(a, (20,), "float32")
    C = T.match_buffer(c, (20,), "float32")
    for io in T.parallel(3):
        for ii in range(8):
            if io * 8 + ii < 20:
                C[{index}] = A[io * 8 + ii] * T.float32(2)
"""


@pytest.mark.parametrize(
    "index, expected",
    [("io * 8 + ii", lambda a: a * 2), ("19 - (io * 8 + ii)", lambda a: (a * 2)[::-1])],
)
def test_parallel_loop_form_stores_that_separate_iterations_build(index, expected):
    import numpy as np

    import minitvm as tvm
    from minitvm.script import from_source

    mod = tvm.build(from_source(_loop_form_store(index)))
    a = np.arange(20, dtype="float32")
    c = np.zeros(20, "float32")
    mod(a, c)
    np.testing.assert_array_equal(c, expected(a))


def test_parallel_loop_form_store_shared_by_iterations_is_refused():
    import minitvm as tvm
    from minitvm.script import from_source

    with pytest.raises(ScheduleError, match=r"C\[io // 8 \+ ii\] cannot be proven to write different"):
        tvm.build(from_source(_loop_form_store("io // 8 + ii")))
