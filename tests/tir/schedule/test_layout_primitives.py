"""IndexMap and the buffer-layout primitives (transform_layout, transform_block_layout,
set_axis_separator, storage_align, unsafe_set_dtype): results match numpy on odd shapes, and
what cannot be proven legal is refused with a message naming the block and buffer."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import tir
from minitvm.error import ScheduleError
from minitvm.script import tir as T
from minitvm.tir import IndexMap


def run(mod, inputs, out_shape, out_dtype="float32"):
    f = tvm.build(mod, target="llvm")
    nds = [tvm.nd.array(x) for x in inputs] + [tvm.nd.array(np.zeros(out_shape, out_dtype))]
    f(*nds)
    return nds[-1].numpy()


def rand(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype("float32")


@T.prim_func
def two_steps(A: T.Buffer((7, 13), "float32"), C: T.Buffer((7, 13), "float32")):
    B = T.alloc_buffer((7, 13))
    for i, j in T.grid(7, 13):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * 2.0
    for i, j in T.grid(7, 13):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + 1.0


@T.prim_func
def row_sum(A: T.Buffer((7, 13), "float32"), C: T.Buffer((7,), "float32")):
    for i, k in T.grid(7, 13):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = 0.0
            C[vi] = C[vi] + A[vi, vk]


def expect_two_steps(a):
    return a * 2 + 1


# ---------------------------------------------------------------------- IndexMap
def test_index_map_split_shape_and_inverse():
    m = IndexMap.from_func(lambda i: [i // 4, i % 4])
    assert [int(x) for x in m.map_shape([16])] == [4, 4]
    inv = m.inverse([16])
    ax = inv.initial_indices
    for a in range(4):
        for b in range(4):
            (i,) = inv.map_indices([a, b])
            assert int(i) == a * 4 + b
    assert len(ax) == 2


def test_index_map_fuse_inverse_round_trips():
    m = IndexMap.from_func(lambda i, j: [i * 13 + j])
    inv = m.inverse([7, 13])
    for flat in (0, 12, 13, 90):
        i, j = inv.map_indices([flat])
        assert (int(i), int(j)) == divmod(flat, 13)


def test_index_map_shape_keeps_the_dtype_of_an_int64_shape():
    """Extents built from int64 dims stay int64 (an int32 extent mixed into int64 index
    arithmetic broke the simplifier's dtype check when a layout transform was inlined)."""
    m = IndexMap.from_func(lambda n, c: [n, c // 16, c % 16])
    shape = [tir.IntImm("int64", 2), tir.IntImm("int64", 32)]
    assert [(int(x), str(x.dtype)) for x in m.map_shape(shape)] == [
        (2, "int64"),
        (2, "int64"),
        (16, "int64"),
    ]
    assert {str(x.dtype) for x in m.map_shape([2, 32])} == {"int32"}


def test_index_map_padding_predicate_marks_the_tail():
    m = IndexMap.from_func(lambda i: [i // 4, i % 4])
    assert [int(x) for x in m.map_shape([14])] == [4, 4]
    inv, pred = m.non_surjective_inverse([14])
    a, b = inv.initial_indices
    padding = [
        (x, y)
        for x in range(4)
        for y in range(4)
        if tvm.arith.Analyzer().can_prove(tir.substitute(pred, {a: tir.const(x), b: tir.const(y)}))
    ]
    assert padding == [(3, 2), (3, 3)]
    with pytest.raises(ScheduleError, match="not a bijection"):
        m.inverse([14])


def test_index_map_refuses_a_non_injective_inverse():
    m = IndexMap.from_func(lambda i, j: [i + j])
    with pytest.raises(ScheduleError, match="cannot prove this map is injective"):
        m.inverse([4, 8])


def test_index_map_arity_and_var_args():
    m = IndexMap.from_func(lambda *ix, k: [*ix, k // 4, k % 4], ndim=3)
    assert m.ndim == 3 and len(m) == 4
    with pytest.raises(ScheduleError, match="pass ndim="):
        IndexMap.from_func(lambda *ix: ix)
    with pytest.raises(ScheduleError, match="takes 1 indices but the buffer has 2"):
        IndexMap.from_func(lambda i: [i]).map_shape([2, 3])
    with pytest.raises(ScheduleError, match="AXIS_SEPARATOR"):
        IndexMap.from_func(lambda i: [i // 4, IndexMap.AXIS_SEPARATOR, i % 4])


def test_index_map_equivalence_and_ndarray():
    m = IndexMap.from_func(lambda i, j: [j, i])
    assert m.is_equivalent_to(IndexMap.from_func(lambda a, b: [b, a]))
    assert not m.is_equivalent_to(IndexMap.from_func(lambda a, b: [a, b]))
    src = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(m.map_ndarray(src), src.T)
    padded = IndexMap.from_func(lambda i: [i // 4, i % 4]).map_ndarray(np.arange(1, 7))
    np.testing.assert_array_equal(padded, [[1, 2, 3, 4], [5, 6, 0, 0]])


# ---------------------------------------------------------------------- transform_layout
def test_transform_layout_of_an_intermediate_keeps_results():
    sch = tir.Schedule(two_steps)
    sch.transform_layout("B", ("write", 0), lambda i, j: (j, i))
    assert [int(s) for s in sch.get(sch.get_block("B")).writes[0].buffer.shape] == [13, 7]
    a = rand(7, 13)
    np.testing.assert_allclose(run(sch.mod, [a], (7, 13)), expect_two_steps(a), rtol=1e-6)
    assert "transform_layout" in str(sch.trace)


def test_transform_layout_with_padding_writes_the_pad_value():
    sch = tir.Schedule(two_steps)
    sch.transform_layout(sch.get_block("C"), "B", lambda i, j: (i, j // 4, j % 4), pad_value=0.0)
    buf = sch.get(sch.get_block("B")).writes[0].buffer
    assert [int(s) for s in buf.shape] == [7, 4, 4]
    assert "T.if_then_else" in sch.mod.script()  # the producer writes the padding itself
    a = rand(7, 13)
    np.testing.assert_allclose(run(sch.mod, [a], (7, 13)), expect_two_steps(a), rtol=1e-6)


@T.prim_func
def two_outputs(A: T.Buffer((7, 13), "float32"), C: T.Buffer((7, 13), "float32")):
    B = T.alloc_buffer((7, 13))
    D = T.alloc_buffer((7, 13))
    for i, j in T.grid(7, 13):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * 2.0
            D[vi, vj] = A[vi, vj]
    for i, j in T.grid(7, 13):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + D[vi, vj]


def test_transform_layout_padding_of_a_producer_with_side_effects_uses_a_block():
    sch = tir.Schedule(two_outputs)
    sch.transform_layout("B", "B", lambda i, j: (i, j // 4, j % 4), pad_value=-1.0)
    assert "B_pad_B" in sch.mod.script() and "T.where" in sch.mod.script()
    a = rand(7, 13)
    np.testing.assert_allclose(run(sch.mod, [a], (7, 13)), a * 3, rtol=1e-6)


def test_layout_traces_replay_through_python_and_json():
    from minitvm.tir.schedule.testing import verify_trace_roundtrip

    sch = tir.Schedule(two_steps)
    sch.transform_layout(
        "B", "B", lambda i, j: [i, IndexMap.AXIS_SEPARATOR, j // 4, j % 4], pad_value=0.0
    )
    sch.transform_block_layout("C", lambda i, j: (i * 13 + j,))
    sch.reindex_cache_read("C", 0, "global", lambda i: (i // 4, i % 4))
    assert "set_axis_separator" in str(sch.trace)
    verify_trace_roundtrip(sch, two_steps)


def test_transform_layout_of_a_parameter_changes_the_signature():
    sch = tir.Schedule(two_steps)
    sch.transform_layout("C", ("write", 0), lambda i, j: (j // 13, i, j % 13))
    a = rand(7, 13)
    out = run(sch.mod, [a], (1, 7, 13))
    np.testing.assert_allclose(out[0], expect_two_steps(a), rtol=1e-6)


def test_transform_layout_refuses_padding_without_pad_value():
    sch = tir.Schedule(two_steps)
    with pytest.raises(ScheduleError, match="adds padding; pass pad_value="):
        sch.transform_layout("B", ("write", 0), lambda i, j: (i, j // 4, j % 4))


def test_transform_layout_refuses_what_it_cannot_prove_injective():
    sch = tir.Schedule(two_steps)
    with pytest.raises(ScheduleError, match="block 'B', buffer 'B'.*one to one"):
        sch.transform_layout("B", ("write", 0), lambda i, j: (i + j,))


def test_transform_layout_errors_name_the_buffer():
    sch = tir.Schedule(two_steps)
    with pytest.raises(ScheduleError, match="takes 1 indices but 'B' has 2 dimensions"):
        sch.transform_layout("B", ("write", 0), IndexMap.from_func(lambda i: [i]))
    with pytest.raises(ScheduleError, match="has 1 write buffers"):
        sch.transform_layout("B", ("write", 3), lambda i, j: (j, i))
    with pytest.raises(ScheduleError, match="no buffer named 'Q'"):
        sch.transform_layout("B", "Q", lambda i, j: (j, i))
    with pytest.raises(ScheduleError, match="pad_value has dtype int32 but 'B' holds float32"):
        sch.transform_layout("B", "B", lambda i, j: (i, j // 4, j % 4), pad_value=0)


# ---------------------------------------------------------------------- transform_block_layout
def test_transform_block_layout_fuses_the_iteration_space():
    sch = tir.Schedule(two_steps)
    sch.transform_block_layout("B", lambda i, j: (i * 13 + j,))
    (loop,) = sch.get_loops(sch.get_block("B"))
    assert int(sch.get(loop).extent) == 91
    a = rand(7, 13)
    np.testing.assert_allclose(run(sch.mod, [a], (7, 13)), expect_two_steps(a), rtol=1e-6)


def test_transform_block_layout_of_a_reduction():
    sch = tir.Schedule(row_sum)
    sch.transform_block_layout("C", lambda i, k: (k, i))
    a = rand(7, 13)
    np.testing.assert_allclose(run(sch.mod, [a], (7,)), a.sum(1), rtol=1e-5)


def test_transform_block_layout_refusals():
    sch = tir.Schedule(row_sum)
    with pytest.raises(ScheduleError, match="mixes spatial and reduction iterators"):
        sch.transform_block_layout("C", lambda i, k: (i * 13 + k,))
    with pytest.raises(ScheduleError, match="not a bijection"):
        sch.transform_block_layout("C", lambda i, k: (i + k, k))
    sch = tir.Schedule(two_steps)
    _, j = sch.get_loops(sch.get_block("B"))
    sch.split(j, factors=[None, 4])
    with pytest.raises(ScheduleError, match="bound one-to-one to the loops"):
        sch.transform_block_layout("B", lambda i, j: (j, i))


# ---------------------------------------------------------------------- axis separators, align
def test_set_axis_separator_keeps_results():
    sch = tir.Schedule(two_steps)
    sch.set_axis_separator("B", ("write", 0), [1])
    assert sch.get(sch.get_block("B")).writes[0].buffer.axis_separators == (1,)
    a = rand(7, 13)
    np.testing.assert_allclose(run(sch.mod, [a], (7, 13)), expect_two_steps(a), rtol=1e-6)
    with pytest.raises(ScheduleError, match="strictly between 0 and 2"):
        sch.set_axis_separator("B", ("write", 0), [2])


def test_transform_layout_with_axis_separator_marker():
    sch = tir.Schedule(two_steps)
    sch.transform_layout("B", "B", lambda i, j: [i, IndexMap.AXIS_SEPARATOR, j])
    assert sch.get(sch.get_block("B")).writes[0].buffer.axis_separators == (1,)


def test_storage_align_annotates_and_keeps_results():
    sch = tir.Schedule(two_steps)
    sch.storage_align("B", 0, axis=0, factor=16, offset=1)
    sch.storage_align("B", 0, axis=0, factor=16, offset=3)
    assert sch.get(sch.get_block("B")).annotations["buffer_dim_align"] == [[0, 0, 16, 3]]
    a = rand(7, 13)
    np.testing.assert_allclose(run(sch.mod, [a], (7, 13)), expect_two_steps(a), rtol=1e-6)


def test_storage_align_refusals():
    sch = tir.Schedule(two_steps)
    with pytest.raises(ScheduleError, match="factor must be a positive int"):
        sch.storage_align("B", 0, axis=0, factor=0, offset=1)
    with pytest.raises(ScheduleError, match="'C' is a parameter of the function"):
        sch.storage_align("C", 0, axis=0, factor=16, offset=1)
    with pytest.raises(ScheduleError, match="axis is out of range"):
        sch.storage_align("B", 0, axis=2, factor=16, offset=1)
    with pytest.raises(ScheduleError, match="use a buffer_index in 0..0"):
        sch.storage_align("B", 1, axis=0, factor=16, offset=1)


# ---------------------------------------------------------------------- unsafe_set_dtype
def test_unsafe_set_dtype_casts_on_store_and_load():
    sch = tir.Schedule(two_steps)
    sch.unsafe_set_dtype("B", 0, "float16")
    assert str(sch.get(sch.get_block("B")).writes[0].buffer.dtype) == "float16"
    a = rand(7, 13)
    expected = (a * 2).astype("float16").astype("float32") + 1
    np.testing.assert_allclose(run(sch.mod, [a], (7, 13)), expected, rtol=1e-6)


def test_unsafe_set_dtype_refuses_a_parameter():
    sch = tir.Schedule(two_steps)
    with pytest.raises(ScheduleError, match="'C' is a parameter of the function"):
        sch.unsafe_set_dtype("C", 0, "float16")
    with pytest.raises(ScheduleError, match="use a buffer_index in 0..0"):
        sch.unsafe_set_dtype("B", -1, "float16")


# ---------------------------------------------------------------------- decompose_padding
@T.prim_func
def pad_2d(X: T.Buffer((7, 13), "float32"), Y: T.Buffer((11, 17), "float32")):
    for i, j in T.grid(11, 17):
        with T.block("pad"):
            vi, vj = T.axis.remap("SS", [i, j])
            Y[vi, vj] = T.if_then_else(
                2 <= vi < 9 and 1 <= vj < 14, X[vi - 2, vj - 1], T.float32(-5)
            )


def expect_pad_2d(x):
    y = np.full((11, 17), -5, "float32")
    y[2:9, 1:14] = x
    return y


@pytest.mark.parametrize("level", [0, 1])
def test_decompose_padding_keeps_results(level):
    sch = tir.Schedule(pad_2d)
    block = sch.get_block("pad")
    fill = sch.decompose_padding(block, sch.get_loops(block)[level])
    assert sch.get(fill).name_hint == "pad_pad_const"
    x = rand(7, 13)
    np.testing.assert_array_equal(run(sch.mod, [x], (11, 17)), expect_pad_2d(x))
    assert "decompose_padding" in str(sch.trace)


def test_decompose_padding_after_split_uses_a_predicate():
    sch = tir.Schedule(pad_2d)
    block = sch.get_block("pad")
    i, _ = sch.get_loops(block)
    sch.split(i, factors=[None, 4])
    sch.decompose_padding(block, sch.get_loops(block)[0])
    assert "T.where" in sch.mod.script()
    x = rand(7, 13)
    np.testing.assert_array_equal(run(sch.mod, [x], (11, 17)), expect_pad_2d(x))


@T.prim_func
def no_padding(X: T.Buffer((7,), "float32"), Y: T.Buffer((7,), "float32")):
    for i in range(7):
        with T.block("copy"):
            vi = T.axis.remap("S", [i])
            Y[vi] = T.if_then_else(0 <= vi < 7, X[vi], T.float32(0))


def test_decompose_padding_refusals():
    sch = tir.Schedule(no_padding)
    block = sch.get_block("copy")
    (loop,) = sch.get_loops(block)
    assert not sch.can_decompose_padding(block, loop)
    with pytest.raises(ScheduleError, match="leaves nothing to decompose"):
        sch.decompose_padding(block, loop)
    sch = tir.Schedule(two_steps)
    block = sch.get_block("B")
    with pytest.raises(ScheduleError, match="one store `buf"):
        sch.decompose_padding(block, sch.get_loops(block)[0])
    with pytest.raises(ScheduleError, match="is not above the block"):
        sch.decompose_padding(block, sch.get_loops(sch.get_block("C"))[0])


# ---------------------------------------------------------------------- reindex
@T.prim_func
def transpose_scale(A: T.Buffer((13, 7), "float32"), B: T.Buffer((7, 13), "float32")):
    for i, j in T.grid(7, 13):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vj, vi] * 3.0


@T.prim_func
def accumulate(A: T.Buffer((7, 13), "float32"), C: T.Buffer((7,), "float32")):
    for i, k in T.grid(7, 13):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            C[vi] = C[vi] + A[vi, vk]


@T.prim_func
def twice(A: T.Buffer((7, 13), "float32"), B: T.Buffer((7, 13), "float32")):
    for i, j in T.grid(7, 13):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + A[vj % 7, vi]


def test_reindex_read_and_write_keep_results():
    a = rand(13, 7)
    for spec in (("read", 0), "A", ("write", 0)):
        sch = tir.Schedule(transpose_scale)
        copy = sch.reindex("B", spec)
        name = sch.get(copy).name_hint
        assert name in ("A_reindex", "B_reindex")
        np.testing.assert_allclose(run(sch.mod, [a], (7, 13)), a.T * 3, rtol=1e-6)
    assert "reindex" in str(sch.trace)


def test_reindex_of_a_reduction_output():
    sch = tir.Schedule(row_sum)
    sch.reindex("C", ("write", 0))
    a = rand(7, 13)
    np.testing.assert_allclose(run(sch.mod, [a], (7,)), a.sum(1), rtol=1e-5)


def test_reindex_cache_read_and_write_with_an_index_map():
    a = rand(13, 7)
    sch = tir.Schedule(transpose_scale)
    sch.reindex_cache_read("B", 0, "global", lambda i, j: (j, i))
    sch.reindex_cache_write("B", 0, "global", lambda i, j: (j // 4, i, j % 4))
    assert "A_global" in sch.mod.script() and "B_global" in sch.mod.script()
    np.testing.assert_allclose(run(sch.mod, [a], (7, 13)), a.T * 3, rtol=1e-6)


def test_reindex_refusals():
    sch = tir.Schedule(twice)
    with pytest.raises(ScheduleError, match="accesses 'A' at .* and at"):
        sch.reindex("B", "A")
    sch = tir.Schedule(accumulate)
    with pytest.raises(ScheduleError, match="has no init, so a fresh copy would lose"):
        sch.reindex("C", ("write", 0))
    with pytest.raises(ScheduleError, match="also writes 'C'"):
        sch.reindex("C", ("read", 0))
    sch = tir.Schedule(transpose_scale)
    with pytest.raises(ScheduleError, match="map only the iterators its indices use|takes 1"):
        sch.reindex_cache_read("B", 0, "global", lambda i: (i,))


# ---------------------------------------------------------------------- set_scope
def test_set_scope_renames_and_keeps_results():
    sch = tir.Schedule(two_steps)
    sch.set_scope("B", "B", "global.tmp")
    buf = sch.get(sch.get_block("B")).writes[0].buffer
    assert (buf.name, buf.scope()) == ("B_global_tmp", "global.tmp")
    a = rand(7, 13)
    np.testing.assert_allclose(run(sch.mod, [a], (7, 13)), expect_two_steps(a), rtol=1e-6)
    assert "set_scope" in str(sch.trace)


def test_set_scope_refusals():
    sch = tir.Schedule(two_steps)
    with pytest.raises(ScheduleError, match="C is a parameter"):
        sch.set_scope("C", 0, "shared")
    with pytest.raises(ScheduleError, match="not a storage scope"):
        sch.set_scope("B", 0, "test_scope")
    with pytest.raises(ScheduleError, match="use an index in 0..0"):
        sch.set_scope("B", -1, "shared")
    with pytest.raises(AssertionError, match="names none"):  # TVM asserts on these
        sch.set_axis_separator("B", ("write", 1), [1])


def test_transform_layout_keeps_a_narrow_pad_value_and_sampled_factors():
    @T.prim_func
    def copy_int8(A: T.Buffer((14,), "int8"), C: T.Buffer((14,), "int8")):
        B = T.alloc_buffer((14,), "int8")
        for i in range(14):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi]
        for i in range(14):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                C[vi] = B[vi]

    sch = tir.Schedule(copy_int8, seed=1)
    (loop,) = sch.get_loops(sch.get_block("C"))
    _, inner = sch.sample_perfect_tile(loop, 2, decision=[7, 2])
    sch.transform_layout("B", "B", lambda i: (i // (inner * 2), i % (inner * 2)), pad_value=-3)
    assert [int(s) for s in sch.get(sch.get_block("B")).writes[0].buffer.shape] == [4, 4]
    assert "T.int8(-3)" in sch.mod.script()
    a = np.arange(14, dtype="int8")
    np.testing.assert_array_equal(run(sch.mod, [a], (14,), "int8"), a)


# ---------------------------------------------------------------------- rolling_buffer
@T.prim_func
def two_box_sums(A: T.Buffer((5, 17), "float32"), C: T.Buffer((5, 13), "float32")):
    B = T.alloc_buffer((5, 15))
    for c, i, k in T.grid(5, 15, 3):
        with T.block("B"):
            vc, vi, vk = T.axis.remap("SSR", [c, i, k])
            with T.init():
                B[vc, vi] = 0.0
            B[vc, vi] = B[vc, vi] + A[vc, vi + vk]
    for c, i, k in T.grid(5, 13, 3):
        with T.block("C"):
            vc, vi, vk = T.axis.remap("SSR", [c, i, k])
            with T.init():
                C[vc, vi] = 0.0
            C[vc, vi] = C[vc, vi] + B[vc, vi + vk]


def expect_box_sums(a):
    b = a[:, :-2] + a[:, 1:-1] + a[:, 2:]
    return b[:, :-2] + b[:, 1:-1] + b[:, 2:]


@pytest.mark.parametrize("tile", [4, 5])
def test_rolling_buffer_folds_and_keeps_results(tile):
    sch = tir.Schedule(two_box_sums)
    _, i, _ = sch.get_loops(sch.get_block("C"))
    io, _ = sch.split(i, factors=[None, tile])
    sch.compute_at(sch.get_block("B"), io)
    sch.rolling_buffer(sch.get_block("B"), 0)
    assert [int(s) for s in sch.get(sch.get_block("B")).writes[0].buffer.shape] == [5, tile + 2]
    assert "T.where" in sch.mod.script() and "rolling_buffer" in str(sch.trace)
    a = rand(5, 17)
    np.testing.assert_allclose(run(sch.mod, [a], (5, 13)), expect_box_sums(a), rtol=1e-5)


def test_rolling_buffer_refusals():
    sch = tir.Schedule(two_box_sums)
    with pytest.raises(ScheduleError, match="share no loop; move the block"):
        sch.rolling_buffer(sch.get_block("B"), 0)
    with pytest.raises(ScheduleError, match="'C' must be an intermediate"):
        sch.rolling_buffer(sch.get_block("C"), 0)
    sch = tir.Schedule(two_box_sums)
    c, _, _ = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), c)  # tiles along c do not overlap
    with pytest.raises(ScheduleError, match="no axis of 'B' has tiles that overlap"):
        sch.rolling_buffer(sch.get_block("B"), 0)


# ---------------------------------------------------------------------- pad_einsum
@T.prim_func
def small_matmul(
    A: T.Buffer((7, 13), "float32"), B: T.Buffer((13, 5), "float32"), C: T.Buffer((7, 5), "float32")
):
    for i, j, k in T.grid(7, 5, 13):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = 0.0
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def accumulate_rows(A: T.Buffer((7, 13), "float32"), C: T.Buffer((7,), "float32")):
    for i, k in T.grid(7, 13):
        with T.block("C"):
            vi, vk = T.axis.remap("SS", [i, k])
            C[vi] = C[vi] + A[vi, vk]


@T.prim_func
def row_max(A: T.Buffer((7, 13), "float32"), C: T.Buffer((7,), "float32")):
    for i, k in T.grid(7, 13):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = T.float32(-1e30)
            C[vi] = T.max(C[vi], A[vi, vk])


def test_pad_einsum_keeps_results():
    sch = tir.Schedule(small_matmul)
    sch.pad_einsum("C", [4, 4, 8])
    names = sch.mod.script()
    assert "A_pad" in names and "B_pad" in names and "C_pad" in names
    loops = sch.get_loops(sch.get_block("C"))
    assert [int(sch.get(lp).extent) for lp in loops] == [8, 8, 16]
    a, b = rand(7, 13), rand(13, 5)
    np.testing.assert_allclose(run(sch.mod, [a, b], (7, 5)), a @ b, rtol=1e-5, atol=1e-5)
    assert "pad_einsum" in str(sch.trace)


def test_pad_einsum_refusals():
    sch = tir.Schedule(row_max)
    with pytest.raises(ScheduleError, match="padding reduction iterator 'vk' adds terms"):
        sch.pad_einsum("C", [1, 16])
    sch = tir.Schedule(two_box_sums)
    with pytest.raises(ScheduleError, match="indexed by `vi \\+ vk`"):
        sch.pad_einsum("C", [1, 4, 1])
    sch = tir.Schedule(small_matmul)
    with pytest.raises(ScheduleError, match="one positive int per block iterator"):
        sch.pad_einsum("C", [4, 4])


# ---------------------------------------------------------------------- read_at / write_at
def _tiled_matmul():
    sch = tir.Schedule(small_matmul)
    i, j, k = sch.get_loops(sch.get_block("C"))
    k0, _ = sch.split(k, factors=[None, 4])  # 13 = 4 * 4 - 3: a guarded tail
    sch.reorder(i, k0, j)
    return sch, i, k0


def test_read_at_and_write_at_keep_results():
    sch, i, k0 = _tiled_matmul()
    reads = [rg.buffer.name for rg in sch.get(sch.get_block("C")).reads]
    copy = sch.read_at(k0, sch.get_block("C"), reads.index("A"), "global")
    assert sch.get(copy).annotations["auto_copy"] == 1
    sch.write_at(i, sch.get_block("C"), 0, "global")
    assert "A_global" in sch.mod.script() and "C_global" in sch.mod.script()
    a, b = rand(7, 13), rand(13, 5)
    np.testing.assert_allclose(run(sch.mod, [a, b], (7, 5)), a @ b, rtol=1e-5, atol=1e-5)
    assert "read_at" in str(sch.trace) and "write_at" in str(sch.trace)


def test_read_at_refusals():
    sch, _, k0 = _tiled_matmul()
    with pytest.raises(ScheduleError, match="index out of range"):
        sch.read_at(k0, sch.get_block("C"), 5, "global")
    # a block with an init leaves its accumulator out of its reads (as TVM); one without an
    # init keeps it, and read_at must refuse to copy a buffer the block also writes
    acc = tir.Schedule(accumulate_rows)
    reads = [rg.buffer.name for rg in acc.get(acc.get_block("C")).reads]
    with pytest.raises(ScheduleError, match="also writes 'C'"):
        acc.read_at(
            acc.get_loops(acc.get_block("C"))[0], acc.get_block("C"), reads.index("C"), "global"
        )
    other = tir.Schedule(two_steps)
    loop = other.get_loops(other.get_block("B"))[0]
    with pytest.raises(ScheduleError, match="not above the block"):
        other.read_at(loop, other.get_block("C"), 0, "global")


@T.prim_func
def scale_rows(a: T.handle, c: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (3, n), "float32")
    C = T.match_buffer(c, (3, n), "float32")
    for i, j in T.grid(3, n):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * 2.0


def test_layouts_with_a_symbolic_extent():
    sch = tir.Schedule(scale_rows)
    n = sch.mod["main"].buffer_map[sch.mod["main"].params[0]].shape[1]
    sch.transform_block_layout("C", lambda i, j: (i * n + j,))
    sch.transform_layout("C", ("write", 0), lambda i, j: (i * n + j,))
    assert "n * 3" in sch.mod.script() or "3 * n" in sch.mod.script()
    a = rand(3, 5)
    f = tvm.build(sch.mod, target="llvm")
    out = tvm.nd.array(np.zeros(15, "float32"))
    f(tvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), (a * 2).reshape(-1), rtol=1e-6)
    with pytest.raises(ScheduleError, match="cannot prove"):
        IndexMap.from_func(lambda i, j: (i * n + j // 2,)).inverse([3, n])


@T.prim_func
def producer_in_tiles(A: T.Buffer((91,), "float32"), C: T.Buffer((91,), "float32")):
    B = T.alloc_buffer((91,))
    D = T.alloc_buffer((91,))
    for i in range(7):
        for j in range(13):
            with T.block("B"):
                vi = T.axis.spatial(91, i * 13 + j)
                B[vi] = A[vi] * 2.0
        for j in range(13):
            with T.block("D"):
                vi = T.axis.spatial(91, i * 13 + j)
                D[vi] = B[vi] + 1.0
    for i in range(91):
        with T.block("C"):
            vi = T.axis.spatial(91, i)
            C[vi] = D[vi] + B[vi]


def test_reindex_cache_read_inside_the_shared_loop():
    sch = tir.Schedule(producer_in_tiles)
    sch.reindex_cache_read("D", 0, "global", lambda v: (v // 13, v % 13))
    # the copy sits under loop i, between the producer and the consumer
    (i,) = sch.get_loops(sch.get_block("B_global"))[:1]
    assert sch.get(i).loop_var.name == "i"
    a = rand(91)
    np.testing.assert_allclose(run(sch.mod, [a], (91,)), a * 4 + 1, rtol=1e-6)


def test_reindex_cache_refuses_a_map_that_merges_elements():
    sch = tir.Schedule(transpose_scale)
    with pytest.raises(ScheduleError, match="distinct cache elements"):
        sch.reindex_cache_read("B", 0, "global", lambda i, j: (j * 2,))
    with pytest.raises(ScheduleError, match="distinct cache elements"):
        sch.reindex_cache_write("B", 0, "global", lambda i, j: (i + j,))


@T.prim_func
def opaque_row_sums(A: T.Buffer((14, 5), "float32"), C: T.Buffer((14,), "float32")):
    B = T.alloc_buffer((14,))
    for i in range(14):
        B[i] = T.float32(0)
        for k in range(5):
            with T.block("acc"):
                B[i] = B[i] + A[i, k]
    for i in range(14):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi]


def test_transform_layout_pads_inside_a_loop_producer():
    sch = tir.Schedule(opaque_row_sums)
    sch.transform_layout("C", "B", lambda i: (i // 4, i % 4), pad_value=0.0)
    script = sch.mod.script()
    assert "T.if_then_else" in script and "T.grid(4, 4)" in script
    a = rand(14, 5)
    np.testing.assert_allclose(run(sch.mod, [a], (14,)), a.sum(1), rtol=1e-5)


def test_transform_layout_with_an_offset_pads_both_ends():
    sch = tir.Schedule(two_steps)
    sch.transform_layout("B", "B", lambda i, j: (i, (j + 3) // 4, (j + 3) % 4), pad_value=0.0)
    assert [int(s) for s in sch.get(sch.get_block("B")).writes[0].buffer.shape] == [7, 4, 4]
    a = rand(7, 13)
    np.testing.assert_allclose(run(sch.mod, [a], (7, 13)), expect_two_steps(a), rtol=1e-6)
    with pytest.raises(ScheduleError, match="cannot prove"):
        IndexMap.from_func(lambda i: [(i + 1) // 8, i % 8]).inverse([16])
