"""split, fuse, reorder, loop kinds and annotations of tir.Schedule: structure, numbers, errors."""

import pytest
from sched_workloads import build_and_run, chain, matmul

import minitvm as tvm
from minitvm import te, tir
from minitvm.error import ScheduleError
from minitvm.tir import ForKind


def _mm():
    wl = matmul()
    sch = tir.Schedule(wl.func())
    return wl, sch, sch.get_block("C")


def test_split_divisible_keeps_numbers_and_names():
    wl, sch, b = _mm()
    i, j, k = sch.get_loops(b)
    i0, i1 = sch.split(i, factors=[None, 4])
    assert [sch.get(lp).loop_var.name for lp in sch.get_loops(b)] == ["i_0", "i_1", "j", "k"]
    assert int(sch.get(i0).extent) == 4 and int(sch.get(i1).extent) == 4
    assert "T.where" not in sch.mod.script()
    build_and_run(sch, wl)


def test_split_non_divisible_guards_tail():
    wl, sch, b = _mm()
    i, j, k = sch.get_loops(b)
    sch.split(j, factors=[None, 5])  # 12 = 3 * 5 - 3
    text = sch.mod.script()
    assert "j_0 * 5 + j_1 < 12" in text
    build_and_run(sch, wl)


def test_split_three_factors_with_inferred_middle():
    wl, sch, b = _mm()
    i, j, k = sch.get_loops(b)
    a, m, c = sch.split(i, factors=[2, None, 3])
    assert int(sch.get(m).extent) == 3  # ceil(16 / 6)
    build_and_run(sch, wl)


def test_split_symbolic_extent_and_factor():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    (i,) = sch.get_loops(sch.get_block("B"))
    f = te.var("f")
    i0, i1 = sch.split(i, factors=[None, 8])
    text = sch.mod.script()
    assert "i_0 * 8 + i_1 < n" in text
    (i0b,) = sch.split(i1, factors=[None])  # a one-way split is a rename
    assert f is not None and i0b is not None


@pytest.mark.parametrize(
    "factors, match",
    [
        ([4, 0], r"factors \[4, 0\] contain 0; use positive integers"),
        ([-2, None], r"factors \[-2, None\] contain a negative number"),
        ([None, None], r"more than one None"),
        ([2, 3], r"multiply to 6, which does not cover the loop extent 16"),
        (["x", 4], r"factor 'x' is not an int"),
    ],
)
def test_split_bad_factors_name_the_loop(factors, match):
    _, sch, b = _mm()
    i, _, _ = sch.get_loops(b)
    with pytest.raises(ScheduleError, match=r"split\(loop 'i' of block 'C'\): .*" + match):
        sch.split(i, factors=factors)


def test_split_error_shows_script_with_marker():
    _, sch, b = _mm()
    i, _, _ = sch.get_loops(b)
    with pytest.raises(ScheduleError) as err:
        sch.split(i, factors=[2, 3])
    assert "def main" in str(err.value)


def test_fuse_adjacent_loops():
    wl, sch, b = _mm()
    i, j, k = sch.get_loops(b)
    f = sch.fuse(i, j)
    loop = sch.get(f)
    assert loop.loop_var.name == "i_j_fused" and int(loop.extent) == 16 * 12
    build_and_run(sch, wl)


def test_fuse_three_loops_of_chain():
    wl = chain()
    sch = tir.Schedule(wl.func())
    b = sch.get_block("D")
    i, j = sch.get_loops(b)
    i0, i1 = sch.split(i, [None, 3])
    f = sch.fuse(i0, i1, j)
    assert int(sch.get(f).extent) == 120
    build_and_run(sch, wl)


def test_fuse_non_adjacent_raises():
    _, sch, b = _mm()
    i, j, k = sch.get_loops(b)
    with pytest.raises(
        ScheduleError, match=r"fuse\('i', 'k'\): loop 'k' is not directly nested in loop 'i'"
    ):
        sch.fuse(i, k)


def test_reorder_permutes_and_computes_same():
    wl, sch, b = _mm()
    i, j, k = sch.get_loops(b)
    sch.reorder(k, i, j)
    assert [sch.get(lp).loop_var.name for lp in sch.get_loops(b)] == ["k", "i", "j"]
    build_and_run(sch, wl)


def test_reorder_keeps_unlisted_loops_in_place():
    wl, sch, b = _mm()
    i, j, k = sch.get_loops(b)
    sch.reorder(k, i)
    assert [sch.get(lp).loop_var.name for lp in sch.get_loops(b)] == ["k", "j", "i"]
    build_and_run(sch, wl)


def test_reorder_loop_listed_twice_raises():
    _, sch, b = _mm()
    i, j, k = sch.get_loops(b)
    with pytest.raises(ScheduleError, match=r"reorder\('i', 'j', 'i'\): loop 'i' is listed twice"):
        sch.reorder(i, j, i)


def test_reorder_loops_of_different_chains_raises():
    wl = chain()
    sch = tir.Schedule(wl.func())
    (bi, _) = sch.get_loops(sch.get_block("B"))
    (_, cj) = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match=r"loops 'i' and 'j' are not in one loop chain"):
        sch.reorder(cj, bi)


def test_reorder_across_a_sibling_raises():
    wl = chain()
    sch = tir.Schedule(wl.func())
    bd = sch.get_block("D")
    i, j = sch.get_loops(bd)
    sch.compute_at(sch.get_block("C"), i)
    with pytest.raises(ScheduleError, match=r"loop 'i' has a body that is not a single loop"):
        sch.reorder(sch.get_loops(bd)[1], i)


def test_parallel_vectorize_unroll_set_kinds_and_run():
    wl, sch, b = _mm()
    i, j, k = sch.get_loops(b)
    sch.parallel(i)
    sch.vectorize(j)
    sch.unroll(k)
    kinds = [sch.get(lp).kind for lp in (i, j, k)]
    assert kinds == [ForKind.PARALLEL, ForKind.VECTORIZED, ForKind.UNROLLED]
    text = sch.mod.script()
    assert "T.parallel" in text and "T.vectorized" in text and "T.unroll" in text
    build_and_run(sch, wl)


@pytest.mark.parametrize(
    "prim, verb",
    [
        ("parallel", "parallelizing it would race on C"),
        ("vectorize", "vectorizing it would combine lanes of C"),
    ],
)
def test_parallel_or_vectorize_reduction_loop_raises(prim, verb):
    _, sch, b = _mm()
    _, _, k = sch.get_loops(b)
    with pytest.raises(
        ScheduleError,
        match=rf"{prim}\(loop 'k' of block 'C'\): the loop drives reduction iterator 'v_k'; {verb}\. "
        r".* a spatial loop, or rfactor the reduction first",
    ):
        getattr(sch, prim)(k)


def test_bind_thread_axis_is_structural():
    _, sch, b = _mm()
    i, j, k = sch.get_loops(b)
    sch.bind(i, "threadIdx.x")
    loop = sch.get(i)
    assert loop.kind is ForKind.THREAD_BINDING and loop.thread_binding.thread_tag == "threadIdx.x"
    with pytest.raises(ScheduleError, match=r"bind\(loop 'k' of block 'C'\)"):
        sch.copy().bind(k, "blockIdx.y")
    # threadIdx may carry a reduction (TVM's cross-thread reduction); a build without a
    # cross-thread lowering refuses the race
    sch.bind(k, "threadIdx.y")
    with pytest.raises(ScheduleError, match=r"drives reduction iterator 'v_k'; binding it"):
        tvm.build(sch.mod, target="llvm")


def test_annotate_and_unannotate_loop_and_block():
    _, sch, b = _mm()
    i, _, _ = sch.get_loops(b)
    sch.annotate(i, "pragma_auto_unroll_max_step", 16)
    sch.annotate(b, "meta", "x")
    assert sch.get(i).annotations["pragma_auto_unroll_max_step"] == 16
    assert sch.get(b).annotations["meta"] == "x"
    sch.unannotate(i, "pragma_auto_unroll_max_step")
    assert "pragma_auto_unroll_max_step" not in sch.get(i).annotations
    with pytest.raises(
        ScheduleError, match=r"unannotate\(block 'C'\): it has no annotation 'nope'"
    ):
        sch.unannotate(b, "nope")


def test_stale_loop_rv_raises():
    _, sch, b = _mm()
    i, _, _ = sch.get_loops(b)
    sch.split(i, [None, 4])
    with pytest.raises(ScheduleError, match=r"loop 'i' no longer exists in function 'main'"):
        sch.parallel(i)


def test_parallel_over_recomputed_reduction_raises():
    from sched_workloads import softmax

    wl = softmax()
    sch = tir.Schedule(wl.func())
    i, j = sch.get_loops(sch.get_block("Y"))
    sch.compute_at(sch.get_block("S"), j)  # S[i] is recomputed for every j
    with pytest.raises(
        ScheduleError, match=r"parallel\(loop 'j'\): block 'S' under it accumulates into S"
    ):
        sch.parallel(j)
    sch.parallel(i)  # rows are independent
    build_and_run(sch, wl)


def test_fuse_of_mixed_index_dtypes_uses_the_widest():
    """Fusing an int32 loop (extent 2) with an int64 one (extent n) gives an int64 fused var,
    matching its int64 extent, and the result still prints and parses back equal."""
    from minitvm import tir
    from minitvm.ir import assert_structural_equal
    from minitvm.script import from_source

    src = """
@T.prim_func
def main(a: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (2, n), "float32")
    for i, j in T.grid(2, n):
        with T.block("A"):
            vi, vj = T.axis.remap("SS", [i, j])
            A[vi, vj] = T.float32(1)
"""
    sch = tir.Schedule(from_source(src))
    i_loop, j_loop = sch.get_loops(sch.get_block("A"))
    assert sch.get(i_loop).loop_var.dtype == "int32"
    fused = sch.fuse(i_loop, j_loop)
    assert sch.get(fused).loop_var.dtype == "int64"
    assert_structural_equal(from_source(sch.mod["main"].script()), sch.mod["main"])


def test_fusing_a_split_int32_symbolic_loop_builds_and_matches_numpy():
    """fuse(i, j_0) of int32 symbolic loops makes an int64 fused loop read back through
    narrowing casts (`int32(f % int64((n + 15) // 16)) * 16 + j_1`); the binding check proves
    such a cast non-negative (it refused the schedule), and the kernel computes A + 1."""
    import numpy as np

    import minitvm as tvm
    from minitvm.script import tir as T

    @T.prim_func
    def add(a: T.handle, b: T.handle):
        m = T.int32()
        n = T.int32()
        A = T.match_buffer(a, (m, n), "float32")
        B = T.match_buffer(b, (m, n), "float32")
        for i, j in T.grid(m, n):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(1)

    sch = tvm.tir.Schedule(add)
    i, j = sch.get_loops(sch.get_block("B"))
    j0, _ = sch.split(j, [None, 16])
    sch.fuse(i, j0)
    f = tvm.build(sch.mod, target="llvm")
    for shape in ((3, 5), (2, 33)):
        x = np.random.rand(*shape).astype("float32")
        out = tvm.nd.array(np.zeros_like(x))
        f(tvm.nd.array(x), out)
        np.testing.assert_allclose(out.numpy(), x + 1)
