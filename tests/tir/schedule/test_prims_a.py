"""blockize, tensorize (with TensorIntrin), merge, reorder_block_iter_var, annotate_buffer_access.

Each schedule is checked against numpy with the reference interpreter (tensorized blocks use
T.match_buffer, which the interpreter runs) and replayed from its trace.
"""

import numpy as np
import pytest

import minitvm as tvm
import minitvm.tir.tensor_intrin
from minitvm import tir
from minitvm.error import ScheduleError
from minitvm.ir import structural_equal
from minitvm.script import tir as T
from minitvm.testing.tir_interp import run_prim_func
from minitvm.tir.tensor_intrin.x86 import VNNI_DOT_16x4_INTRIN


@T.prim_func
def scale_rows(X: T.Buffer((32, 24), "float32"), Y: T.Buffer((32, 24), "float32")):
    for r, c in T.grid(32, 24):
        with T.block("Y"):
            vr, vc = T.axis.remap("SS", [r, c])
            Y[vr, vc] = X[vr, vc] * T.float32(3) + T.float32(1)


@T.prim_func
def colsum(X: T.Buffer((16, 8), "float32"), S: T.Buffer((8,), "float32")):
    for r, c in T.grid(16, 8):
        with T.block("S"):
            vr, vc = T.axis.remap("RS", [r, c])
            with T.init():
                S[vc] = T.float32(0)
            S[vc] = S[vc] + X[vr, vc]


@T.prim_func
def two_maps(
    X: T.Buffer((16, 16), "float32"),
    P: T.Buffer((16, 16), "float32"),
    Q: T.Buffer((16, 16), "float32"),
):
    for a, b in T.grid(16, 16):
        with T.block("P"):
            va, vb = T.axis.remap("SS", [a, b])
            P[va, vb] = X[va, vb] + T.float32(1)
    for a, b in T.grid(16, 16):
        with T.block("Q"):
            va, vb = T.axis.remap("SS", [a, b])
            Q[va, vb] = X[vb, va] * T.float32(2)


@T.prim_func
def producer_consumer(X: T.Buffer((16,), "float32"), Z: T.Buffer((16,), "float32")):
    Y = T.alloc_buffer((16,), "float32")
    for a in range(16):
        with T.block("Y"):
            va = T.axis.remap("S", [a])
            Y[va] = X[va] + T.float32(1)
    for a in range(16):
        with T.block("Z"):
            va = T.axis.remap("S", [a])
            Z[va] = Y[15 - va] * T.float32(2)


def _u8i8_matmul(m, n, k):
    x = tvm.te.placeholder((m, k), name="X", dtype="uint8")
    w = tvm.te.placeholder((n, k), name="W", dtype="int8")
    rk = tvm.te.reduce_axis((0, k), name="k")
    out = tvm.te.compute(
        (m, n),
        lambda i, j: tvm.te.sum(x[i, rk].astype("int32") * w[j, rk].astype("int32"), axis=rk),
        name="compute",
    )
    return tvm.te.create_prim_func([x, w, out])


def _run(func, *arrays):
    return run_prim_func(func, *[a.copy() for a in arrays])


def _replays(sch, func):
    fresh = tir.Schedule(func)
    sch.trace.apply_to_schedule(fresh, remove_postproc=False)
    assert structural_equal(fresh.mod, sch.mod)


# ------------------------------------------------------------------ blockize


def test_blockize_tile_divides_bindings_and_keeps_results():
    sch = tir.Schedule(scale_rows)
    r, _c = sch.get_loops(sch.get_block("Y"))
    _ro, ri = sch.split(r, factors=[None, 8])
    outer = sch.blockize(ri)
    blk = sch.get(outer)
    assert blk.name_hint == "Y_o"
    assert [int(iv.dom.extent) for iv in blk.iter_vars] == [4, 1]  # vr = vr_o * 8 + vr_i
    inner = sch.get(sch.get_block("Y"))
    assert [int(iv.dom.extent) for iv in inner.iter_vars] == [8, 24]
    x = np.random.rand(32, 24).astype("float32")
    want = _run(scale_rows, x, np.zeros_like(x))[1]
    got = _run(sch.mod["main"], x, np.zeros_like(x))[1]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    _replays(sch, scale_rows)


def test_blockize_reduction_moves_init_to_outer_block():
    sch = tir.Schedule(colsum)
    r, _ = sch.get_loops(sch.get_block("S"))
    outer = sch.get(sch.blockize(r))
    assert outer.init is not None and sch.get(sch.get_block("S")).init is None
    x = np.random.rand(16, 8).astype("float32")
    got = _run(sch.mod["main"], x, np.full(8, 7, "float32"))[1]
    np.testing.assert_allclose(got, x.sum(axis=0), rtol=1e-5)


def test_blockize_refuses_a_binding_that_straddles_the_tile():
    @T.prim_func
    def skew(X: T.Buffer((64,), "float32"), Y: T.Buffer((64,), "float32")):
        for a, b in T.grid(8, 8):
            with T.block("Y"):
                v = T.axis.spatial(64, a * 7 + b)  # tiles of 8 overlap by one
                Y[v] = X[v]

    sch = tir.Schedule(skew)
    _, b = sch.get_loops(sch.get_block("Y"))
    with pytest.raises(ScheduleError, match="not a multiple of the inner extent 8"):
        sch.blockize(b)


def test_blockize_needs_a_single_block_under_the_loop():
    @T.prim_func
    def two(X: T.Buffer((8,), "float32"), Y: T.Buffer((8,), "float32")):
        for a in range(8):
            with T.block("P"):
                va = T.axis.remap("S", [a])
                Y[va] = X[va]
            with T.block("Q"):
                va = T.axis.remap("S", [a])
                Y[va] = Y[va] + X[va]

    sch = tir.Schedule(two)
    (a,) = sch.get_loops(sch.get_block("P"))
    with pytest.raises(ScheduleError, match="must carry exactly one block"):
        sch.blockize(a)


def test_blockize_block_list_makes_one_outer_block():
    sch = tir.Schedule(two_maps)
    outer = sch.blockize([sch.get_block("P"), sch.get_block("Q")], preserve_unit_iters=False)
    blk = sch.get(outer)
    assert blk.name_hint == "outer_P_Q_"
    assert [r.buffer.name for r in blk.writes] == ["P", "Q"]
    x = np.random.rand(16, 16).astype("float32")
    _, p, q = _run(sch.mod["main"], x, np.zeros_like(x), np.zeros_like(x))
    np.testing.assert_allclose(p, x + 1, rtol=1e-6)
    np.testing.assert_allclose(q, x.T * 2, rtol=1e-6)
    _replays(sch, two_maps)


def test_blockize_block_list_needs_consecutive_statements():
    @T.prim_func
    def three(X: T.Buffer((8,), "float32"), Y: T.Buffer((8,), "float32")):
        for a in range(8):
            with T.block("P"):
                va = T.axis.remap("S", [a])
                Y[va] = X[va]
        for a in range(8):
            with T.block("Q"):
                va = T.axis.remap("S", [a])
                Y[va] = Y[va] + X[va]
        for a in range(8):
            with T.block("R"):
                va = T.axis.remap("S", [a])
                Y[va] = Y[va] * X[va]

    sch = tir.Schedule(three)
    with pytest.raises(ScheduleError, match="must be consecutive"):
        sch.blockize([sch.get_block("P"), sch.get_block("R")])


# ------------------------------------------------------------------ tensorize


@T.prim_func
def _dot4_desc(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (4,), "float32", offset_factor=1)
    B = T.match_buffer(b, (4,), "float32", offset_factor=1)
    C = T.match_buffer(c, (), "float32", offset_factor=1)
    with T.block("root"):
        T.reads(C[()], A[0:4], B[0:4])
        T.writes(C[()])
        for i in range(4):
            with T.block("update"):
                vi = T.axis.remap("R", [i])
                C[()] = C[()] + A[vi] * B[vi]


@T.prim_func
def _dot4_impl(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (4,), "float32", offset_factor=1)
    B = T.match_buffer(b, (4,), "float32", offset_factor=1)
    C = T.match_buffer(c, (), "float32", offset_factor=1)
    with T.block("root"):
        T.reads(C[()], A[0:4], B[0:4])
        T.writes(C[()])
        C[()] = C[()] + (A[0] * B[0] + A[1] * B[1]) + (A[2] * B[2] + A[3] * B[3])


tir.TensorIntrin.register("prims_a_test_dot4", _dot4_desc, _dot4_impl, override=True)


@T.prim_func
def mv(
    M: T.Buffer((8, 16), "float32"), V: T.Buffer((16,), "float32"), R: T.Buffer((8,), "float32")
):
    for i, k in T.grid(8, 16):
        with T.block("R"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                R[vi] = T.float32(0)
            R[vi] = R[vi] + M[vi, vk] * V[vk]


def test_tensor_intrin_lookup():
    assert tir.TensorIntrin.get("prims_a_test_dot4").impl is _dot4_impl
    assert tir.TensorIntrin.get("no_such_intrin", allow_missing=True) is None
    with pytest.raises(ValueError, match="no TensorIntrin named 'no_such_intrin'"):
        tir.TensorIntrin.get("no_such_intrin")
    with pytest.raises(ValueError, match="already registered"):
        tir.TensorIntrin.register("prims_a_test_dot4", _dot4_desc, _dot4_impl)


def test_tensorize_dot_product_matches_numpy():
    sch = tir.Schedule(mv)
    blk = sch.get_block("R")
    _, k = sch.get_loops(blk)
    ko, ki = sch.split(k, factors=[None, 4])
    sch.decompose_reduction(blk, ko)
    sch.tensorize(ki, "prims_a_test_dot4")
    tensorized = sch.mod["main"]
    assert "match_buffer" in tensorized.script()
    m = np.random.rand(8, 16).astype("float32")
    v = np.random.rand(16).astype("float32")
    got = _run(tensorized, m, v, np.zeros(8, "float32"))[2]
    np.testing.assert_allclose(got, m @ v, rtol=1e-5)
    _replays(sch, mv)


def test_tensorize_vnni_shape_computes_the_same_integers():
    func = _u8i8_matmul(4, 32, 8)
    sch = tir.Schedule(func)
    blk = sch.get_block("compute")
    _, j, k = sch.get_loops(blk)
    _, ji = sch.split(j, factors=[None, 16])
    ko, ki = sch.split(k, factors=[None, 4])
    sch.reorder(ko, ji, ki)
    sch.decompose_reduction(blk, ko)
    sch.tensorize(ji, VNNI_DOT_16x4_INTRIN)
    x = np.random.randint(0, 256, (4, 8)).astype("uint8")
    w = np.random.randint(-128, 128, (32, 8)).astype("int8")
    got = _run(sch.mod["main"], x, w, np.zeros((4, 32), "int32"))[2]
    np.testing.assert_array_equal(got, x.astype("int32") @ w.astype("int32").T)


def test_tensorize_refuses_a_block_that_differs_from_the_description():
    @T.prim_func
    def mv_sub(
        M: T.Buffer((8, 16), "float32"), V: T.Buffer((16,), "float32"), R: T.Buffer((8,), "float32")
    ):
        for i, k in T.grid(8, 16):
            with T.block("R"):
                vi, vk = T.axis.remap("SR", [i, k])
                R[vi] = R[vi] - M[vi, vk] * V[vk]

    sch = tir.Schedule(mv_sub)
    _, k = sch.get_loops(sch.get_block("R"))
    _, ki = sch.split(k, factors=[None, 4])
    with pytest.raises(ScheduleError, match="does not match the intrinsic's description"):
        sch.tensorize(ki, "prims_a_test_dot4")


def test_tensorize_refuses_a_tile_of_the_wrong_size():
    sch = tir.Schedule(mv)
    blk = sch.get_block("R")
    _, k = sch.get_loops(blk)
    ko, ki = sch.split(k, factors=[None, 8])
    sch.decompose_reduction(blk, ko)
    with pytest.raises(ScheduleError, match="has extent 8, the description's"):
        sch.tensorize(ki, "prims_a_test_dot4")


def test_tensorize_needs_decompose_reduction_first():
    sch = tir.Schedule(mv)
    _, k = sch.get_loops(sch.get_block("R"))
    _, ki = sch.split(k, factors=[None, 4])
    with pytest.raises(ScheduleError, match="decompose_reduction first"):
        sch.tensorize(ki, "prims_a_test_dot4")


# ------------------------------------------------------------------ merge


def test_merge_runs_both_bodies_per_iteration():
    sch = tir.Schedule(two_maps)
    a1 = sch.get_loops(sch.get_block("P"))[0]
    a2 = sch.get_loops(sch.get_block("Q"))[0]
    merged = sch.merge(a1, a2)
    assert sch.get(merged).loop_var.name == "a_m"
    x = np.random.rand(16, 16).astype("float32")
    _, p, q = _run(sch.mod["main"], x, np.zeros_like(x), np.zeros_like(x))
    np.testing.assert_allclose(p, x + 1, rtol=1e-6)
    np.testing.assert_allclose(q, x.T * 2, rtol=1e-6)
    _replays(sch, two_maps)


def test_merge_refuses_dependent_nests():
    sch = tir.Schedule(producer_consumer)
    a1 = sch.get_loops(sch.get_block("Y"))[0]
    a2 = sch.get_loops(sch.get_block("Z"))[0]
    with pytest.raises(ScheduleError, match="writes buffer 'Y' that the nest of loop"):
        sch.merge(a1, a2)


def test_merge_refuses_loops_of_different_depth():
    sch = tir.Schedule(two_maps)
    a1 = sch.get_loops(sch.get_block("P"))[0]
    b2 = sch.get_loops(sch.get_block("Q"))[1]
    with pytest.raises(ScheduleError, match="merge loops of the same level"):
        sch.merge(a1, b2)


# ------------------------------------------------------------------ block signature edits


def test_reorder_block_iter_var_permutes_iters_and_bindings():
    sch = tir.Schedule(colsum)
    blk = sch.get_block("S")
    sch.reorder_block_iter_var(blk, [1, 0])
    kinds = [iv.iter_type for iv in sch.get(blk).iter_vars]
    assert kinds == [tir.IterType.DataPar, tir.IterType.CommReduce]
    x = np.random.rand(16, 8).astype("float32")
    got = _run(sch.mod["main"], x, np.zeros(8, "float32"))[1]
    np.testing.assert_allclose(got, x.sum(axis=0), rtol=1e-5)
    _replays(sch, colsum)


@pytest.mark.parametrize("order", [[0], [0, 2], [1, 1]])
def test_reorder_block_iter_var_needs_a_permutation(order):
    sch = tir.Schedule(colsum)
    with pytest.raises(ScheduleError, match="pass a permutation of 0..1"):
        sch.reorder_block_iter_var(sch.get_block("S"), order)


def test_annotate_buffer_access_sets_region_and_marks_it():
    sch = tir.Schedule(scale_rows)
    blk = sch.get_block("Y")
    sch.annotate_buffer_access(blk, 0, "read", lambda vr, vc: ((vr - 1, vr + 2), vc))
    block = sch.get(blk)
    region = block.reads[0].region
    assert [int(r.extent) for r in region] == [3, 1]
    assert list(block.annotations["explicit_read_region"]) == [0]
    x = np.random.rand(32, 24).astype("float32")
    got = _run(sch.mod["main"], x, np.zeros_like(x))[1]
    np.testing.assert_allclose(got, x * 3 + 1, rtol=1e-6)
    _replays(sch, scale_rows)


def test_annotate_buffer_access_checks_its_arguments():
    sch = tir.Schedule(scale_rows)
    blk = sch.get_block("Y")
    with pytest.raises(ScheduleError, match="buf_type must be 'read' or 'write'"):
        sch.annotate_buffer_access(blk, 0, "update", lambda vr, vc: (vr, vc))
    with pytest.raises(ScheduleError, match="buffer_index 3 is out of range"):
        sch.annotate_buffer_access(blk, 3, "read", lambda vr, vc: (vr, vc))
    with pytest.raises(ScheduleError, match="gave 1 ranges for buffer 'X' of 2 dimensions"):
        sch.annotate_buffer_access(blk, 0, "read", lambda vr, vc: (vr,))


def test_builtin_intrinsics_are_registered():
    for name in (
        "dot_16x4_vnni",
        "dot_16x4_avx512",
        "dot_4x4_i8i8s32_sdot",
        "sdot4",
        "dp4a_s8s8s32",
    ):
        assert tir.TensorIntrin.get(name) is not None


@T.prim_func
def _phase_desc(x: T.handle, y: T.handle):
    X = T.match_buffer(x, (4,), "float32", offset_factor=1)
    Y = T.match_buffer(y, (4,), "float32", offset_factor=1)
    with T.block("root"):
        T.reads(X[0:4])
        T.writes(Y[0:4])
        for i in range(4):
            with T.block("phase"):
                vi = T.axis.remap("S", [i])
                Y[vi] = X[vi] + T.Cast("float32", vi % 4)


@T.prim_func
def _phase_impl(x: T.handle, y: T.handle):
    X = T.match_buffer(x, (4,), "float32", offset_factor=1)
    Y = T.match_buffer(y, (4,), "float32", offset_factor=1)
    with T.block("root"):
        T.reads(X[0:4])
        T.writes(Y[0:4])
        for i in T.unroll(4):
            Y[i] = X[i] + T.Cast("float32", i)


tir.TensorIntrin.register("prims_a_test_phase", _phase_desc, _phase_impl, override=True)


def test_tensorize_matches_iterator_arithmetic_by_value():
    @T.prim_func
    def phase(X: T.Buffer((16,), "float32"), Y: T.Buffer((16,), "float32")):
        for v in range(16):
            with T.block("phase"):
                vv = T.axis.remap("S", [v])
                Y[vv] = X[vv] + T.Cast("float32", vv % 4)

    sch = tir.Schedule(phase)
    (v,) = sch.get_loops(sch.get_block("phase"))
    _, vi = sch.split(v, factors=[None, 4])
    sch.tensorize(vi, "prims_a_test_phase")  # (4*o + i) % 4 in the tile is the desc's i % 4
    x = np.random.rand(16).astype("float32")
    got = _run(sch.mod["main"], x, np.zeros_like(x))[1]
    np.testing.assert_allclose(got, x + np.arange(16) % 4, rtol=1e-6)


def test_tensorized_vnni_kernel_builds_and_matches_numpy():
    func = _u8i8_matmul(8, 32, 16)
    sch = tir.Schedule(func)
    blk = sch.get_block("compute")
    _, j, k = sch.get_loops(blk)
    _, ji = sch.split(j, factors=[None, 16])
    ko, ki = sch.split(k, factors=[None, 4])
    sch.reorder(ko, ji, ki)
    sch.decompose_reduction(blk, ko)
    sch.tensorize(ji, VNNI_DOT_16x4_INTRIN)
    lib = tvm.build(sch.mod, target="llvm")
    x = np.random.randint(0, 256, (8, 16)).astype("uint8")
    w = np.random.randint(-128, 128, (32, 16)).astype("int8")
    out = tvm.nd.array(np.zeros((8, 32), "int32"))
    lib(tvm.nd.array(x), tvm.nd.array(w), out)
    np.testing.assert_array_equal(out.numpy(), x.astype("int32") @ w.astype("int32").T)


def test_gpu_intrinsic_matches_but_does_not_build_for_cpu():
    x = tvm.te.placeholder((16, 16), name="X", dtype="int8")
    w = tvm.te.placeholder((16, 16), name="W", dtype="int8")
    rk = tvm.te.reduce_axis((0, 16), name="k")
    out = tvm.te.compute(
        (16, 16),
        lambda i, j: tvm.te.sum(x[i, rk].astype("int32") * w[j, rk].astype("int32"), axis=rk),
        name="compute",
    )
    sch = tir.Schedule(tvm.te.create_prim_func([x, w, out]))
    blk = sch.get_block("compute")
    _, j, k = sch.get_loops(blk)
    ko, ki = sch.split(k, [None, 4])
    sch.reverse_compute_at(sch.cache_write(blk, 0, "local"), j)
    for idx in (0, 1):
        sch.compute_at(sch.cache_read(blk, idx, "shared"), ko, True)
    sch.decompose_reduction(blk, ko)
    sch.tensorize(ki, "dp4a_s8s8s32")
    with pytest.raises(tvm.error.BuildError, match="__dp4a"):
        tvm.build(sch.mod, target="llvm")


def test_tensorize_checks_buffer_scopes():
    # dp4a's description reads shared memory: a global-memory tile does not match
    x = tvm.te.placeholder((16, 16), name="X", dtype="int8")
    w = tvm.te.placeholder((16, 16), name="W", dtype="int8")
    rk = tvm.te.reduce_axis((0, 16), name="k")
    out = tvm.te.compute(
        (16, 16),
        lambda i, j: tvm.te.sum(x[i, rk].astype("int32") * w[j, rk].astype("int32"), axis=rk),
        name="compute",
    )
    sch = tir.Schedule(tvm.te.create_prim_func([x, w, out]))
    blk = sch.get_block("compute")
    _, _, k = sch.get_loops(blk)
    ko, ki = sch.split(k, [None, 4])
    sch.decompose_reduction(blk, ko)
    with pytest.raises(ScheduleError, match="in scope 'global', the description's"):
        sch.tensorize(ki, "dp4a_s8s8s32")


@T.prim_func
def _dot4_plain_impl(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (4,), "float32")
    B = T.match_buffer(b, (4,), "float32")
    C = T.match_buffer(c, (), "float32")
    with T.block("root"):
        T.reads(C[()], A[0:4], B[0:4])
        T.writes(C[()])
        for i in range(4):
            C[()] = C[()] + A[i] * B[i]


tir.TensorIntrin.register("prims_a_test_dot4_loop", _dot4_desc, _dot4_plain_impl, override=True)


def test_tensorize_int64_indexed_block_widens_the_implementation():
    @T.prim_func
    def mv64(
        M: T.Buffer((T.int64(4), T.int64(8)), "float32"),
        V: T.Buffer((T.int64(8),), "float32"),
        R: T.Buffer((T.int64(4),), "float32"),
    ):
        for i, k in T.grid(T.int64(4), T.int64(8)):
            with T.block("R"):
                vi, vk = T.axis.remap("SR", [i, k])
                R[vi] = R[vi] + M[vi, vk] * V[vk]

    sch = tir.Schedule(mv64)
    _, k = sch.get_loops(sch.get_block("R"))
    _, ki = sch.split(k, factors=[None, 4])
    sch.tensorize(ki, "prims_a_test_dot4_loop")
    outer = sch.get(sch.get_block("R_o"))
    loop = outer.body  # the implementation's loop, now counting in int64
    assert loop.loop_var.dtype == "int64"
    assert all(d.dtype == "int64" for m in outer.match_buffers for d in m.buffer.shape)
    m = np.random.rand(4, 8).astype("float32")
    v = np.random.rand(8).astype("float32")
    r0 = np.random.rand(4).astype("float32")
    lib = tvm.build(sch.mod, target="llvm")
    r = tvm.nd.array(r0.copy())
    lib(tvm.nd.array(m), tvm.nd.array(v), r)
    np.testing.assert_allclose(r.numpy(), r0 + m @ v, rtol=1e-5)


def test_blockize_keeps_nonlinear_inner_bindings_and_refuses_mixed_ones():
    @T.prim_func
    def pairs(X: T.Buffer((32,), "float32"), Y: T.Buffer((16,), "float32")):
        for a, b in T.grid(4, 8):
            with T.block("Y"):
                v = T.axis.spatial(16, a * 4 + b // 2)
                Y[v] = X[v * 2] + T.float32(1)

    sch = tir.Schedule(pairs)
    _, b = sch.get_loops(sch.get_block("Y"))
    sch.blockize(b)  # a * 4 is the outer part, b // 2 (values 0..3) the inner one
    x = np.random.rand(32).astype("float32")
    got = _run(sch.mod["main"], x, np.zeros(16, "float32"))[1]
    np.testing.assert_allclose(got, x[::2] + 1, rtol=1e-6)

    @T.prim_func
    def halves(X: T.Buffer((32,), "float32"), Y: T.Buffer((16,), "float32")):
        for a, b in T.grid(4, 8):
            with T.block("Y"):
                v = T.axis.spatial(16, (a * 8 + b) // 2)
                Y[v] = X[v * 2]

    sch = tir.Schedule(halves)
    _, b = sch.get_loops(sch.get_block("Y"))
    with pytest.raises(ScheduleError, match="mixes outer and inner loop variables non-linearly"):
        sch.blockize(b)


def test_tile_with_tensor_intrin_then_tensorize_matches_numpy():
    from minitvm.tir.schedule.transform import tile_with_tensor_intrin

    func = _u8i8_matmul(4, 32, 8)
    sch = tir.Schedule(func)
    blk = sch.get_block("compute")
    tiled = tile_with_tensor_intrin(sch, blk, VNNI_DOT_16x4_INTRIN)
    loops = sch.get_loops(blk)
    assert [int(sch.get(lp).extent) for lp in loops] == [4, 2, 2, 16, 4]
    assert sch.get(tiled).loop_var is sch.get(loops[3]).loop_var
    sch.decompose_reduction(blk, loops[2])
    sch.tensorize(tiled, VNNI_DOT_16x4_INTRIN)
    x = np.random.randint(0, 256, (4, 8)).astype("uint8")
    w = np.random.randint(-128, 128, (32, 8)).astype("int8")
    out = tvm.nd.array(np.zeros((4, 32), "int32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(x), tvm.nd.array(w), out)
    np.testing.assert_array_equal(out.numpy(), x.astype("int32") @ w.astype("int32").T)


def test_tile_with_tensor_intrin_returns_none_without_a_mapping():
    from minitvm.tir.schedule.transform import tile_with_tensor_intrin

    sch = tir.Schedule(_u8i8_matmul(4, 30, 8))  # 30 lanes do not divide into tiles of 16
    assert tile_with_tensor_intrin(sch, sch.get_block("compute"), VNNI_DOT_16x4_INTRIN) is None
    sch = tir.Schedule(scale_rows)  # no reduction: nothing plays the role of the dot's k
    assert tile_with_tensor_intrin(sch, sch.get_block("Y"), VNNI_DOT_16x4_INTRIN) is None


def test_blockize_under_an_outer_reduction_builds_and_matches_numpy():
    @T.prim_func
    def mm(
        A: T.Buffer((8, 6), "float32"),
        B: T.Buffer((6, 12), "float32"),
        C: T.Buffer((8, 12), "float32"),
    ):
        for i, k, j in T.grid(8, 6, 12):
            with T.block("C"):
                vi, vk, vj = T.axis.remap("SRS", [i, k, j])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    sch = tir.Schedule(mm)
    _, _, j = sch.get_loops(sch.get_block("C"))
    outer = sch.get(sch.blockize(j))
    assert outer.init is not None  # the init covers the whole row tile, run at k == 0
    a = np.random.rand(8, 6).astype("float32")
    b = np.random.rand(6, 12).astype("float32")
    c = tvm.nd.array(np.full((8, 12), 5, "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), tvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5)


def test_tensorize_refuses_an_output_that_is_also_an_input():
    @T.prim_func
    def self_dot(M: T.Buffer((8, 4), "float32"), R: T.Buffer((8, 4), "float32")):
        for i, k in T.grid(8, 4):
            with T.block("R"):
                vi, vk = T.axis.remap("SR", [i, k])
                R[vi, 0] = R[vi, 0] + M[vi, vk] * R[vi, vk]  # reads the element it updates

    sch = tir.Schedule(self_dot)
    _, k = sch.get_loops(sch.get_block("R"))
    with pytest.raises(ScheduleError, match="'R' is both the output and an input of the tile"):
        sch.tensorize(k, "prims_a_test_dot4")


def test_tensorize_a_blockized_block():
    sch = tir.Schedule(mv)
    blk = sch.get_block("R")
    _, k = sch.get_loops(blk)
    ko, ki = sch.split(k, factors=[None, 4])
    sch.decompose_reduction(blk, ko)
    outer = sch.blockize(ki)
    sch.tensorize(outer, "prims_a_test_dot4_loop")
    m = np.random.rand(8, 16).astype("float32")
    v = np.random.rand(16).astype("float32")
    r = tvm.nd.array(np.zeros(8, "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(m), tvm.nd.array(v), r)
    np.testing.assert_allclose(r.numpy(), m @ v, rtol=1e-5)
    _replays(sch, mv)


def test_tensorize_refuses_a_shifted_tile_loop():
    @T.prim_func
    def shifted(
        M: T.Buffer((8, 16), "float32"), V: T.Buffer((16,), "float32"), R: T.Buffer((8,), "float32")
    ):
        for i in range(8):
            with T.block("R_o"):
                vi = T.axis.spatial(8, i)
                for k in range(1, 5):  # the tile's loop runs over 1..4, the intrinsic's over 0..3
                    with T.block("R"):
                        vk = T.axis.reduce(16, k)
                        R[vi] = R[vi] + M[vi, vk] * V[vk]

    sch = tir.Schedule(shifted)
    with pytest.raises(ScheduleError, match="loop 'k' starts at 1, not 0"):
        sch.tensorize(sch.get_block("R_o"), "prims_a_test_dot4")
