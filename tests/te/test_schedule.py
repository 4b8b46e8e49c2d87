"""The classic te.create_schedule API: tutorial sequences, numbers after build, errors."""

import numpy as np
import pytest

from minitvm import te, tir
from minitvm.driver import build, lower
from minitvm.error import ScheduleError
from minitvm.runtime.ndarray import array
from minitvm.tir import For, ForKind
from minitvm.tir.functor import pre_order_visit


def _loops(mod):
    """(name, kind) of every loop of the lowered main function, outermost first."""
    out = []

    def visit(n):
        if isinstance(n, For):
            out.append((n.loop_var.name, n.kind))

    pre_order_visit(mod["main"].body, visit)
    return out


def _names(mod):
    return [name for name, _ in _loops(mod)]


def _run(s, args, ref, shapes, seed=0):
    rng = np.random.default_rng(seed)
    ins = [rng.standard_normal(sh).astype("float32") for sh in shapes]
    expected = ref(*ins)
    mod = build(s, args, "llvm")
    nds = [array(x) for x in ins] + [array(np.zeros(expected.shape, "float32"))]
    mod(*nds)
    np.testing.assert_allclose(nds[-1].numpy(), expected, rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- the tutorial


@pytest.fixture
def mn():
    return te.var("n"), te.var("m")


def test_tutorial_split_by_factor_symbolic(mn):
    n, m = mn
    A = te.placeholder((m,), name="A")
    B = te.compute((m,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=32)
    assert (xo.var.name, xi.var.name) == ("i.outer", "i.inner")
    mod = lower(s, [A, B], simple_mode=True)
    assert _names(mod) == ["i.outer", "i.inner"]
    text = mod.script()
    assert "31) // 32" in text and "< m" in text
    _run(s, [A, B], lambda a: a * 2, [(70,)])


def test_tutorial_split_by_nparts_symbolic(mn):
    n, m = mn
    A = te.placeholder((m,), name="A")
    B = te.compute((m,), lambda i: A[i], name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], nparts=32)
    mod = lower(s, [A, B], simple_mode=True)
    loops = _loops(mod)
    assert [name for name, _ in loops] == ["i.outer", "i.inner"]
    assert "32" in mod.script()
    _run(s, [A, B], lambda a: a, [(70,)])


def test_tutorial_tile_10x5(mn):
    n, m = mn
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: A[i, j], name="B")
    s = te.create_schedule(B.op)
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
    mod = lower(s, [A, B], simple_mode=True)
    assert _names(mod) == ["i.outer", "j.outer", "i.inner", "j.inner"]
    _run(s, [A, B], lambda a: a, [(23, 12)])


def test_tutorial_fuse_inner_pair(mn):
    n, m = mn
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: A[i, j], name="B")
    s = te.create_schedule(B.op)
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
    fused = s[B].fuse(xi, yi)
    assert fused.var.name == "i.inner.j.inner.fused"
    mod = lower(s, [A, B], simple_mode=True)
    assert _names(mod) == ["i.outer", "j.outer", "i.inner.j.inner.fused"]
    _run(s, [A, B], lambda a: a, [(23, 12)])


def test_tutorial_reorder(mn):
    n, m = mn
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: A[i, j], name="B")
    s = te.create_schedule(B.op)
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
    s[B].reorder(xi, yo, xo, yi)
    mod = lower(s, [A, B], simple_mode=True)
    assert _names(mod) == ["i.inner", "j.outer", "i.outer", "j.inner"]
    _run(s, [A, B], lambda a: a, [(23, 12)])


def test_tutorial_bind_is_lowered_with_thread_loops(mn):
    n, _ = mn
    A = te.placeholder((n,), name="A")
    B = te.compute(A.shape, lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    func = s.build_prim_func([A, B], "main")
    kinds = []
    pre_order_visit(
        func.body,
        lambda x: (
            kinds.append((x.kind, x.thread_binding.thread_tag)) if isinstance(x, For) else None
        ),
    )
    assert kinds == [
        (ForKind.THREAD_BINDING, "blockIdx.x"),
        (ForKind.THREAD_BINDING, "threadIdx.x"),
    ]


def _b_then_c(m):
    A = te.placeholder((m,), name="A")
    B = te.compute((m,), lambda i: A[i] + 1, name="B")
    C = te.compute((m,), lambda i: B[i] * 2, name="C")
    return A, B, C


def test_tutorial_compute_at(mn):
    _, m = mn
    A, B, C = _b_then_c(m)
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    mod = lower(s, [A, C], simple_mode=True)
    assert _names(mod) == ["i"]  # B is computed inside C's loop, one element per iteration
    _run(s, [A, C], lambda a: (a + 1) * 2, [(9,)])


def test_tutorial_compute_inline(mn):
    _, m = mn
    A, B, C = _b_then_c(m)
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    mod = lower(s, [A, C], simple_mode=True)
    assert _names(mod) == ["i"]
    assert "B" not in mod.script().split("def main")[1].split(":", 1)[1]
    _run(s, [A, C], lambda a: (a + 1) * 2, [(9,)])


def test_tutorial_compute_root(mn):
    _, m = mn
    A, B, C = _b_then_c(m)
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    s[B].compute_root()
    mod = lower(s, [A, C], simple_mode=True)
    assert _names(mod) == ["i", "i"]
    _run(s, [A, C], lambda a: (a + 1) * 2, [(9,)])


# ----------------------------------------------------------------------------- matmul blocking


def _matmul(n=32, m=24, k=16):
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return A, B, C


def test_blocked_matmul_with_cache_write_and_vectorize():
    A, B, C = _matmul()
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 8)
    s[CC].compute_at(s[C], no)
    (k,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(k, factor=4)
    x, y = s[CC].op.axis
    s[CC].reorder(ko, x, ki, y)
    s[CC].vectorize(y)
    s[CC].unroll(ki)
    s[C].parallel(mo)
    mod = lower(s, [A, B, C], simple_mode=True)
    loops = _loops(mod)
    names = [name for name, _ in loops]
    assert names[:2] == ["i.outer", "j.outer"] and "k.outer" in names and "i.c" in names
    assert ("i.outer", ForKind.PARALLEL) in loops and ("j.c", ForKind.VECTORIZED) in loops
    _run(s, [A, B, C], lambda a, b: a @ b, [(32, 16), (16, 24)])


def test_dlsys_style_split_reorder_vectorize():
    A, B, C = _matmul(20, 12, 8)
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    yo, yi = s[C].split(C.op.axis[1], factor=4)
    (k,) = s[C].op.reduce_axis
    s[C].reorder(xo, yo, k, xi, yi)
    s[C].vectorize(yi)
    s[C].pragma(xi, "unroll")
    _run(s, [A, B, C], lambda a, b: a @ b, [(20, 8), (8, 12)])


def test_cache_read_into_local_at_a_loop():
    A, B, C = _matmul(16, 8, 8)
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "local", [C])
    i, j = C.op.axis
    s[AA].compute_at(s[C], i)
    mod = lower(s, [A, B, C], simple_mode=True)
    assert "ax1" in _names(mod)
    _run(s, [A, B, C], lambda a, b: a @ b, [(16, 8), (8, 8)])


def test_pragma_annotates_loop():
    A, B, C = _b_then_c(8)
    s = te.create_schedule(C.op)
    s[C].pragma(C.op.axis[0], "auto_unroll_max_step", 16)
    func = s.build_prim_func([A, C], "main")
    found = []
    pre_order_visit(
        func.body, lambda x: found.append(dict(x.annotations)) if isinstance(x, For) else None
    )
    assert {"pragma_auto_unroll_max_step": 16} in found


def test_schedule_of_two_outputs():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    C = te.compute((8,), lambda i: A[i] * 3, name="C")
    s = te.create_schedule([B.op, C.op])
    s[B].split(B.op.axis[0], factor=3)
    s[C].parallel(C.op.axis[0])
    func = s.build_prim_func([A, B, C], "main")
    assert func.attrs["global_symbol"] == "main"


# ----------------------------------------------------------------------------- errors


def test_split_iter_var_of_another_stage_raises():
    A, B, C = _b_then_c(8)
    s = te.create_schedule(C.op)
    with pytest.raises(
        ScheduleError, match=r"split on stage 'C': IterVar 'i' belongs to stage 'B', not to 'C'"
    ):
        s[C].split(B.op.axis[0], factor=2)


def test_split_twice_raises():
    A, B, C = _b_then_c(8)
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=2)
    with pytest.raises(
        ScheduleError, match=r"split on stage 'C': IterVar 'i' was already split or fused"
    ):
        s[C].split(C.op.axis[0], factor=4)


def test_split_needs_exactly_one_of_factor_nparts():
    A, B, C = _b_then_c(8)
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"give exactly one of factor= and nparts="):
        s[C].split(C.op.axis[0])
    with pytest.raises(ScheduleError, match=r"factor must be positive, got 0"):
        s[C].split(C.op.axis[0], factor=0)


def test_fuse_non_adjacent_raises():
    A, B, C = _matmul(8, 8, 8)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    with pytest.raises(
        ScheduleError, match=r"fuse on stage 'C': loops \['i', 'k'\] are not adjacent"
    ):
        s[C].fuse(i, k)


def test_compute_at_with_foreign_axis_raises():
    A, B, C = _b_then_c(8)
    s = te.create_schedule(C.op)
    with pytest.raises(
        ScheduleError,
        match=r"compute_at on stage 'B': IterVar 'i' belongs to stage 'B', not to 'C'",
    ):
        s[B].compute_at(s[C], B.op.axis[0])


def test_parallel_reduction_axis_fails_at_build_naming_the_loop():
    A, B, C = _matmul(8, 8, 8)
    s = te.create_schedule(C.op)
    s[C].parallel(C.op.reduce_axis[0])
    with pytest.raises(
        ScheduleError,
        match=r"parallel\(loop 'k' of block 'C'\): the loop drives reduction iterator",
    ):
        lower(s, [A, B, C], simple_mode=True)


def test_placeholder_stage_has_no_loops_to_schedule():
    A, B, C = _b_then_c(8)
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"split: 'A' is a placeholder"):
        s[A].split(C.op.axis[0], 2)  # s[A] exists (for transform_layout) but has no loops


def test_inlined_stage_with_loops_raises():
    A, B, C = _b_then_c(8)
    s = te.create_schedule(C.op)
    s[B].split(B.op.axis[0], factor=2)
    s[B].compute_inline()
    with pytest.raises(ScheduleError, match=r"stage 'B' is inlined"):
        lower(s, [A, C], simple_mode=True)


def test_cache_write_after_scheduling_caches_in_the_split_layout():
    A, B, C = _matmul(8, 8, 8)
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=2)
    CC = s.cache_write(C, "local")  # TVM's relayout: one cache dimension per loop
    assert [int(d) for d in CC.shape] == [4, 2, 8]
    f = build(s, [A, B, C])
    a, b = np.random.rand(8, 8).astype("float32"), np.random.rand(8, 8).astype("float32")
    c = array(np.zeros((8, 8), "float32"))
    f(array(a), array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5)


def test_stage_uses_tir_schedule_underneath():
    A, B, C = _b_then_c(8)
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4)
    func = s.build_prim_func([A, C], "f")
    assert isinstance(func, tir.PrimFunc) and func.attrs["global_symbol"] == "f"


def test_set_scope_of_intermediate_stage():
    A, B, C = _b_then_c(8)
    s = te.create_schedule(C.op)
    s[B].set_scope("local")
    s[B].compute_at(s[C], C.op.axis[0])
    func = s.build_prim_func([A, C], "main")
    assert 'scope="local"' in func.script()
    _run(s, [A, C], lambda a: (a + 1) * 2, [(8,)])


# ----------------------------------------------------------------------------- property

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=20, deadline=None, derandomize=True)
@given(
    fi=st.integers(1, 7),
    fj=st.integers(1, 7),
    fk=st.integers(1, 5),
    perm=st.permutations(range(6)),
    fuse_at=st.integers(0, 4),
    kinds=st.booleans(),
)
def test_random_stage_schedules_keep_numbers(fi, fj, fk, perm, fuse_at, kinds):
    """Random splits (often non-divisible), a random loop order, one fusion of adjacent loops,
    and loop kinds on legal loops, all through the classic API."""
    A, B, C = _matmul(13, 10, 6)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    io, ii = s[C].split(i, factor=fi)
    jo, ji = s[C].split(j, nparts=fj)
    ko, ki = s[C].split(k, factor=fk)
    order = [[io, ii, jo, ji, ko, ki][p] for p in perm]
    s[C].reorder(*order)
    a, b = order[fuse_at], order[fuse_at + 1]
    fused = s[C].fuse(a, b)
    leaves = s[C].leaf_iter_vars
    if kinds:
        from minitvm.tir.expr import IterType

        if leaves[0].iter_type != IterType.CommReduce:
            s[C].parallel(leaves[0])
        if leaves[-1].iter_type != IterType.CommReduce and leaves[-1] is not fused:
            s[C].vectorize(leaves[-1])
    _run(s, [A, B, C], lambda x, y: x @ y, [(13, 6), (6, 10)])


def test_compute_at_a_loop_of_its_own_producer_raises():
    """C reads B, so B's loops run before C is needed: C cannot be computed inside them."""
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((16,), lambda i: B[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    xo, _ = s[B].split(B.op.axis[0], factor=4)
    with pytest.raises(
        ScheduleError,
        match=r"compute_at on stage 'C': stage 'B' does not consume 'C' .*"
        r"e\.g\. s\[B\]\.compute_at\(s\[C\], \.\.\.\)",
    ):
        s[C].compute_at(s[B], xo)


def test_cache_read_of_the_same_tensor_twice_raises():
    A = te.placeholder((16,), name="A")
    C = te.compute((16,), lambda i: A[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    s.cache_read(A, "local", [C])
    with pytest.raises(
        ScheduleError,
        match=r"cache_read of 'A' for stage 'C': 'C' already reads 'A' through the cache "
        r"'A\.local' of an earlier cache_read",
    ):
        s.cache_read(A, "local", [C])


def test_cache_read_of_a_cache_chains_copies():
    """The GPU-tutorial pattern: cache A into one scope, then that copy into another."""
    A = te.placeholder((16,), name="A")
    C = te.compute((16,), lambda i: A[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "global", [C])
    AL = s.cache_read(AA, "local", [C])
    xo, _ = s[C].split(C.op.axis[0], factor=4)
    s[AL].compute_at(s[C], xo)
    _run(s, [A, C], lambda a: a * 2, [(16,)])


def test_cache_read_for_a_cache_written_stage_names_the_cache_to_use():
    A = te.placeholder((4, 4), name="A")
    B = te.compute((4, 4), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((4, 4), lambda i, j: B[i, j] + 1.0, name="C")
    s = te.create_schedule(C.op)
    BL = s.cache_write(B, "local")
    with pytest.raises(ScheduleError, match=r"'B' was cache_write'd.*pass the tensor .*'B.local'"):
        s.cache_read(A, "local", [B])
    s.cache_read(A, "local", [BL])  # the stage that now reads A
    f = build(s, [A, C], "llvm")
    a = np.random.default_rng(0).random((4, 4), dtype="float32")
    c = np.zeros_like(a)
    f(a, c)
    np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)
