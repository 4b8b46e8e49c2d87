"""TVM v0.19 TIR passes: ConvertBlocksToOpaque, RemoveAssume, RemoveStoreUndef and the
block-level CompactBufferAllocation(is_strict=). Each pass is checked structurally and by
running before/after through the TIR interpreter on seeded random inputs against numpy."""

import numpy as np
import pytest

from minitvm import TVMError, tir
from minitvm.script import tir as T
from minitvm.testing import run_prim_func
from minitvm.tir.transform import (
    CompactBufferAllocation,
    ConvertBlocksToOpaque,
    ConvertForLoopsToSerial,
    ForceNarrowIndexToInt32,
    HoistIfThenElse,
    LowerOpaqueBlock,
    NarrowDataType,
    RemoveAssume,
    RemoveStoreUndef,
)


def _alloc_shapes(func):
    shapes = []
    tir.post_order_visit(
        func.body,
        lambda n: (
            shapes.extend(tuple(int(e) for e in b.shape) for b in n.alloc_buffers)
            if isinstance(n, tir.Block)
            else None
        ),
    )
    return shapes


@T.prim_func
def _elemwise(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i in range(16):
        with T.block():
            T.reads(A[i, 0:16])
            T.writes(C[i, 0:16])
            B = T.alloc_buffer((16, 16), "float32")
            for j in range(16):
                with T.block():
                    T.reads(A[i, j])
                    T.writes(B[i, j])
                    B[i, j] = A[i, j] + 1.0
            for j in range(16):
                with T.block():
                    T.reads(B[i, j])
                    T.writes(C[i, j])
                    C[i, j] = B[i, j] * 2.0


@T.prim_func
def _diagonal(A: T.Buffer((256,), "float32"), C: T.Buffer((256,), "float32")):
    for i in range(4):
        with T.block():
            B = T.alloc_buffer((256, 256), "float32")
            for j, k in T.grid(8, 8):
                with T.block():
                    T.where(j * 8 + k < 60)
                    B[i * 64 + j * 8 + k, i * 64 + j * 8 + k] = A[i * 64 + j * 8 + k] * 3.0
            for j, k in T.grid(8, 8):
                with T.block():
                    T.where(j * 8 + k < 60)
                    C[i * 64 + j * 8 + k] = B[i * 64 + j * 8 + k, i * 64 + j * 8 + k]


@T.prim_func
def _branches(A: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    with T.block():
        B1 = T.alloc_buffer((32, 32), "float32")
        B2 = T.alloc_buffer((32, 32), "float32")
        for i, j in T.grid(32, 32):
            with T.block():
                if i < 16 or j < 16:
                    B1[i, j] = A[i, j] * 2.0
                else:
                    B2[i, j] = A[i, j] + 3.0
        for i, j in T.grid(32, 32):
            with T.block():
                if i < 16 or j < 16:
                    C[i, j] = B1[i, j]
                else:
                    C[i, j] = B2[i, j]


def _rand(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype("float32")


def _same_result(before, after, *inputs_and_outputs):
    ref = run_prim_func(before, *[x.copy() for x in inputs_and_outputs])
    got = run_prim_func(after, *[x.copy() for x in inputs_and_outputs])
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(r, g)
    return got


def test_compact_shrinks_row_buffer_and_keeps_results():
    after = CompactBufferAllocation()(_elemwise)
    assert _alloc_shapes(after) == [(1, 16)]
    a = _rand(16, 16)
    got = _same_result(_elemwise, after, a, np.zeros((16, 16), "float32"))
    np.testing.assert_allclose(got[1], (a + 1) * 2, rtol=1e-6)
    lowered = LowerOpaqueBlock()(after)
    np.testing.assert_allclose(
        run_prim_func(lowered, a, np.zeros((16, 16), "float32"))[1], (a + 1) * 2, rtol=1e-6
    )


def test_compact_uses_block_predicate_to_bound_fused_index():
    after = CompactBufferAllocation(is_strict=True)(_diagonal)
    assert _alloc_shapes(after) == [(60, 60)]
    a = _rand(256)
    got = _same_result(_diagonal, after, a, np.zeros(256, "float32"))
    mask = (np.arange(256) % 64) < 60
    np.testing.assert_allclose(got[1], np.where(mask, a * 3, 0), rtol=1e-6)


def test_compact_narrows_else_branch_of_or_condition():
    after = CompactBufferAllocation()(_branches)
    assert _alloc_shapes(after) == [(32, 32), (16, 16)]  # B1 is used on an L-shape; B2 a corner
    a = _rand(32, 32)
    got = _same_result(_branches, after, a, np.zeros((32, 32), "float32"))
    i, j = np.indices((32, 32))
    np.testing.assert_allclose(got[1], np.where((i < 16) | (j < 16), a * 2, a + 3), rtol=1e-6)


def test_compact_keeps_buffer_whose_data_pointer_escapes():
    @T.prim_func
    def func(A: T.Buffer((16, 16), "float32")):
        for i in range(16):
            with T.block():
                B = T.alloc_buffer((16, 16), "float32")
                for j in range(16):
                    T.evaluate(T.call_extern("dummy", B.data, dtype="int32"))
                    B[i, j] = A[i, j]

    assert _alloc_shapes(CompactBufferAllocation()(func)) == [(16, 16)]


def test_compact_rejects_blocks_with_iter_vars():
    @T.prim_func
    def func(A: T.Buffer((4,), "float32")):
        with T.block():
            B = T.alloc_buffer((4,), "float32")
            for i in range(4):
                with T.block("b"):
                    vi = T.axis.spatial(4, i)
                    B[vi] = A[vi]

    with pytest.raises(TVMError, match="ConvertBlocksToOpaque first"):
        CompactBufferAllocation()(func)


@T.prim_func
def _with_iters(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
    for i, j in T.grid(8, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(A[vj, vi])
            T.writes(C[vi, vj])
            C[vi, vj] = A[vj, vi] + 1.0


def test_convert_blocks_to_opaque_substitutes_bindings():
    after = ConvertBlocksToOpaque()(_with_iters)
    blocks = []
    tir.post_order_visit(
        after.body, lambda n: blocks.append(n) if isinstance(n, tir.Block) else None
    )
    assert all(not b.iter_vars for b in blocks)
    a = _rand(8, 8)
    got = _same_result(_with_iters, after, a, np.zeros((8, 8), "float32"))
    np.testing.assert_allclose(got[1], a.T + 1, rtol=1e-6)
    # and the opaque form is what CompactBufferAllocation accepts
    assert CompactBufferAllocation()(after) is not None


def test_convert_blocks_to_opaque_rejects_predicate_on_block_var():
    iv = tir.IterVar(tir.Range(0, 8), tir.Var("vi", "int32"), 0)
    i = tir.Var("i", "int32")
    block = tir.Block((iv,), (), (), "b", tir.Evaluate(0))
    realize = tir.BlockRealize((i,), iv.var < 6, block)
    func = tir.PrimFunc((), tir.For(i, 0, 8, tir.ForKind.SERIAL, realize))
    with pytest.raises(TVMError, match="defined only inside"):
        ConvertBlocksToOpaque()(func)


def test_remove_assume_drops_hint_and_empty_loop():
    @T.prim_func
    def before(A: T.Buffer((16,), "int32")):
        for i in range(16):
            T.evaluate(T.assume(A[i] == 0))
        for i in range(16):
            A[i] = 10

    after = RemoveAssume()(before)
    assert isinstance(after.body, tir.For)
    np.testing.assert_array_equal(run_prim_func(after, np.zeros(16, "int32"))[0], np.full(16, 10))


def test_remove_store_undef_drops_store_and_let():
    @T.prim_func
    def before(A: T.Buffer((2,), "int32")):
        val = T.undef(dtype="int32")
        A[0] = val
        A[1] = 7

    after = RemoveStoreUndef()(before)
    assert isinstance(after.body, tir.BufferStore)
    np.testing.assert_array_equal(run_prim_func(after, np.zeros(2, "int32"))[0], [0, 7])


def test_remove_store_undef_rejects_undef_index():
    @T.prim_func
    def before(A: T.Buffer((1,), "int32"), B: T.Buffer((1,), "int32")):
        B[0] = A[T.undef(dtype="int32")]

    with pytest.raises(TVMError, match="T.undef"):
        RemoveStoreUndef()(before)


@T.prim_func
def _i64_loops(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    for i in T.serial(0, T.int64(16)):
        for j in T.serial(0, T.int64(8)):
            with T.block():
                vi = T.axis.spatial(T.int64(128), i * T.int64(8) + j)
                B[vi] = A[vi] * 2.0 + T.float32(1)


def _loop_var_dtypes(func):
    out = []
    tir.post_order_visit(
        func.body, lambda n: out.append(str(n.loop_var.dtype)) if isinstance(n, tir.For) else None
    )
    return out


@pytest.mark.parametrize("narrow", ["NarrowDataType", "ForceNarrowIndexToInt32"])
def test_narrowing_makes_int64_loops_int32_and_keeps_results(narrow):
    from minitvm.tir import transform

    make = getattr(transform, narrow)
    after = (make(32) if narrow == "NarrowDataType" else make())(_i64_loops)
    assert _loop_var_dtypes(_i64_loops) == ["int64", "int64"]
    assert _loop_var_dtypes(after) == ["int32", "int32"]
    a = _rand(128)
    got = _same_result(_i64_loops, after, a, np.zeros(128, "float32"))
    np.testing.assert_allclose(got[1], a * 2 + 1, rtol=1e-6)


def test_narrow_datatype_keeps_int64_when_index_overflows_int32():
    n = tir.const(2**16, "int64")
    A = tir.decl_buffer((n * n,), "float32", "A")
    i, j = tir.Var("i", "int64"), tir.Var("j", "int64")
    store = tir.BufferStore(A, tir.FloatImm("float32", 1.0), (i * n + j,))
    body = tir.For(
        i,
        tir.const(0, "int64"),
        n,
        tir.ForKind.SERIAL,
        tir.For(j, tir.const(0, "int64"), n, tir.ForKind.SERIAL, store),
    )
    after = NarrowDataType(32)(tir.PrimFunc((A,), body))
    assert _loop_var_dtypes(after) == ["int64", "int64"]


def test_force_narrow_rejects_int64_buffer():
    @T.prim_func
    def func(A: T.Buffer((4,), "int64")):
        for i in range(4):
            A[i] = T.int64(1)

    with pytest.raises(TVMError, match="int64 elements"):
        ForceNarrowIndexToInt32()(func)


def test_convert_for_loops_to_serial():
    @T.prim_func
    def func(A: T.Buffer((8,), "float32")):
        for i in T.parallel(8):
            A[i] = A[i] + 1.0

    after = ConvertForLoopsToSerial()(func)
    assert after.body.kind == tir.ForKind.SERIAL
    a = _rand(8)
    np.testing.assert_allclose(_same_result(func, after, a)[0], a + 1, rtol=1e-6)


@T.prim_func
def _invariant_ifs(A: T.Buffer((1000,), "float32")):
    for i in range(10):
        for j in range(10):
            for k in range(10):
                if 3 <= i:
                    if 3 <= j:
                        A[i * 100 + j * 10 + k] = A[i * 100 + j * 10 + k] + 0.5
                    else:
                        A[i * 100 + j * 10 + k] = A[i * 100 + j * 10 + k] * 2.0


def test_hoist_if_then_else_moves_invariant_conditions_out_and_keeps_results():
    after = HoistIfThenElse()(_invariant_ifs)
    outer = after.body  # for i: if 3 <= i: for j: if 3 <= j: for k (else: its own for k)
    assert isinstance(outer, tir.For) and isinstance(outer.body, tir.IfThenElse)
    inner = outer.body.then_case.body
    assert isinstance(inner, tir.IfThenElse)
    assert isinstance(inner.then_case, tir.For) and isinstance(inner.else_case, tir.For)
    a = _rand(1000)
    got = _same_result(_invariant_ifs, after, a)[0]
    i, j = np.arange(1000) // 100, np.arange(1000) // 10 % 10
    np.testing.assert_allclose(
        got, np.where(i >= 3, np.where(j >= 3, a + 0.5, a * 2), a), rtol=1e-6
    )


def test_hoist_if_then_else_keeps_condition_reading_memory_inside():
    @T.prim_func
    def func(A: T.Buffer((8,), "float32"), F: T.Buffer((1,), "int32")):
        for i in range(8):
            if F[0] > 0:
                F[0] = F[0] - 1
                A[i] = 1.0

    after = HoistIfThenElse()(func)
    assert isinstance(after.body, tir.For)
    a, f = _rand(8), np.array([3], "int32")
    got = _same_result(func, after, a, f)
    np.testing.assert_array_equal(got[0][:3], [1, 1, 1])


def test_compact_leaves_buffer_with_an_aliasing_view_alone():
    @T.prim_func
    def func(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
        for i in range(4):
            with T.block():
                B = T.alloc_buffer((16,), "float32")
                B2 = T.Buffer((16,), "float32", data=B.data)
                for j in range(4):
                    B[i * 4 + j] = A[i * 4 + j]
                for j in range(4):
                    C[i * 4 + j] = B2[i * 4 + j]

    after = CompactBufferAllocation()(func)
    assert _alloc_shapes(after) == [(16,)]
    a = _rand(16)
    np.testing.assert_array_equal(_same_result(func, after, a, np.zeros(16, "float32"))[1], a)


def test_decorate_device_scope_and_apply():
    from minitvm.tir.transform import Apply, DecorateDeviceScope

    x = tir.Var("x", "int32")
    func = tir.PrimFunc((x,), tir.Evaluate(x))
    body = DecorateDeviceScope()(func).body
    assert isinstance(body, tir.AttrStmt) and body.attr_key == "device_scope"
    assert Apply(lambda f: f.with_attr("target_tag", "t"))(func).attrs["target_tag"] == "t"


def test_cse_binds_repeated_computation_once_and_keeps_results():
    from minitvm.tir.transform import CommonSubexprElimTIR

    B = tir.decl_buffer((8,), "int32", "B")
    x, y, z = (tir.Var(n, "int32") for n in "xyz")
    body = tir.SeqStmt(
        (
            tir.BufferStore(B, (x + y) + z, (0,)),
            tir.BufferStore(B, (x + y) + z, (1,)),
            tir.BufferStore(B, x + y, (2,)),
        )
    )
    func = tir.PrimFunc((B, x, y, z), body)
    after = CommonSubexprElimTIR()(func)
    outer, inner = after.body, after.body.body
    assert outer.var.name == "cse_var_2" and inner.var.name == "cse_var_1"
    assert isinstance(inner.body, tir.SeqStmt)
    ref = run_prim_func(func, np.zeros(8, "int32"), 3, 4, 5)[0]
    np.testing.assert_array_equal(run_prim_func(after, np.zeros(8, "int32"), 3, 4, 5)[0], ref)
    np.testing.assert_array_equal(ref[:3], [12, 12, 7])


def test_cse_does_not_move_computations_out_of_loop_bodies():
    from minitvm.tir.transform import CommonSubexprElimTIR

    @T.prim_func
    def func(A: T.Buffer((4,), "int32"), x: T.int32, y: T.int32, n: T.int32):
        for i in range(n):
            A[i] = x // y
        for i in range(n):
            A[i + 2] = x // y

    after = CommonSubexprElimTIR()(func)
    assert isinstance(after.body, tir.SeqStmt)  # no let above the loops: y may be 0 when n is 0
    np.testing.assert_array_equal(run_prim_func(after, np.zeros(4, "int32"), 7, 0, 0)[0], 0)
