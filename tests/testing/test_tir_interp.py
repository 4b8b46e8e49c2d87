"""The reference interpreter of TensorIR: compiler semantics at every stage, never garbage."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, tir
from minitvm.driver import lower_primfunc
from minitvm.error import MiniTVMError
from minitvm.script import tir as T
from minitvm.testing import InterpreterError, run_prim_func


def _matmul(n=8):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), "k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def _ab(n=8):
    rng = np.random.default_rng(0)
    return rng.random((n, n), "float32"), rng.random((n, n), "float32")


def test_blocks_and_lowered_code_match_numpy():
    A, B, C = _matmul(16)
    a, b = _ab(16)
    got = run_prim_func(te.create_prim_func([A, B, C]), a, b, np.zeros((16, 16), "float32"))[2]
    np.testing.assert_allclose(got, a @ b, rtol=1e-5)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    jo, ji = s[C].split(j, factor=4)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=3)  # non-divisible: guarded tail
    s[C].reorder(i, ko, jo, ki, ji)
    s[C].vectorize(ji)
    s[C].parallel(i)
    lowered = lower_primfunc(tvm.lower(s, [A, B, C])["main"])
    got = run_prim_func(lowered, a, b, np.zeros((16, 16), "float32"))[2]
    np.testing.assert_allclose(got, a @ b, rtol=1e-5)


def test_symbolic_shapes_bind_from_arrays():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    a = np.arange(7, dtype="float32")
    got = run_prim_func(te.create_prim_func([A, B]), a, np.zeros(7, "float32"))[1]
    np.testing.assert_array_equal(got, a * 2 + 1)


def _binary_int(op, dtype="int32"):
    A = te.placeholder((4,), dtype, name="A")
    B = te.placeholder((4,), dtype, name="B")
    C = te.compute((4,), lambda i: op(A[i], B[i]), name="C")
    return te.create_prim_func([A, B, C])


@pytest.mark.parametrize(
    "op, expected",
    [
        (tir.truncdiv, [-3, -3, 3, 3]),
        (tir.truncmod, [-1, 1, -1, 1]),
        (tir.floordiv, [-4, -4, 3, 3]),
        (tir.floormod, [1, -1, -1, 1]),
    ],
)
def test_integer_division_follows_tvm(op, expected):
    a = np.array([-7, 7, -7, 7], "int32")
    b = np.array([2, -2, -2, 2], "int32")
    got = run_prim_func(_binary_int(op), a, b, np.zeros(4, "int32"))[2]
    np.testing.assert_array_equal(got, expected)


def test_int_min_floordiv_minus_one_wraps():
    a = np.full(4, np.iinfo("int32").min, "int32")
    got = run_prim_func(_binary_int(tir.floordiv), a, -np.ones(4, "int32"), np.zeros(4, "int32"))
    np.testing.assert_array_equal(got[2], a)


def test_integer_division_by_zero_is_an_error():
    a, b = np.ones(4, "int32"), np.array([1, 2, 0, 3], "int32")
    with pytest.raises(InterpreterError, match=r"integer division by zero in .*divisor is 0"):
        run_prim_func(_binary_int(tir.floordiv), a, b, np.zeros(4, "int32"))


def test_integers_wrap_and_casts_truncate_like_numpy():
    A = te.placeholder((3,), "float32", name="A")
    I = te.placeholder((3,), "int32", name="I")
    B = te.compute((3,), lambda i: A[i].astype("int32") + I[i].astype("int8"), name="B")
    a = np.array([2.9, -2.9, 0.5], "float32")
    ints = np.array([300, -129, 2**31 - 1], "int32")
    got = run_prim_func(te.create_prim_func([A, I, B]), a, ints, np.zeros(3, "int32"))[2]
    np.testing.assert_array_equal(got, a.astype("int32") + ints.astype("int8").astype("int32"))


def test_float32_arithmetic_stays_float32():
    A = te.placeholder((1,), "float32", name="A")
    B = te.compute((1,), lambda i: A[i] + 1.0 - A[i], name="B")
    got = run_prim_func(te.create_prim_func([A, B]), np.float32([2**24]), np.zeros(1, "float32"))
    assert got[1][0] == 0.0  # 2**24 + 1 rounds to 2**24 in float32


def test_out_of_bounds_load_is_an_error():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i + 1], name="B")
    with pytest.raises(InterpreterError, match=r"load of A\[8\] is out of bounds: 'A' has shape \(8\)"):
        run_prim_func(te.create_prim_func([A, B]), np.zeros(8, "float32"), np.zeros(8, "float32"))


def test_out_of_bounds_vector_store_is_an_error():
    B = tir.decl_buffer((10,), "float32", "B")
    i = tir.Var("i")
    store = tir.BufferStore(B, tir.Broadcast(tir.const(1.0, "float32"), 4), (tir.Ramp(i * 4, 1, 4),))
    loop = tir.For(i, 0, 3, tir.ForKind.SERIAL, store)
    param = tir.Var("b", "handle")
    func = tir.PrimFunc((param,), loop, buffer_map={param: B})
    with pytest.raises(InterpreterError, match=r"store of B\[\[ 8  9 10 11\]\] is out of bounds"):
        run_prim_func(func, np.zeros(10, "float32"))
    with pytest.raises(InterpreterError, match="buffer 'B' needs 10 here, the array has 9"):
        run_prim_func(func, np.zeros(9, "float32"))


@T.prim_func
def _blocky(a: T.handle, c: T.handle):
    A = T.match_buffer(a, (4, 8), "float32")
    C = T.match_buffer(c, (4,), "float32")
    for i, k in T.grid(4, 8):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            T.where(k < 6)
            with T.init():
                C[vi] = T.float32(1)
            C[vi] = C[vi] + A[vi, vk]


def test_init_and_where_predicate():
    a = np.random.default_rng(1).random((4, 8), "float32")
    got = run_prim_func(_blocky, a, np.zeros(4, "float32"))[1]
    np.testing.assert_allclose(got, 1 + a[:, :6].sum(1), rtol=1e-6)


def _views():
    """Per row: a match_buffer view of A[vi, 2:6] summed through an alloc_buffer."""
    A, C = tir.decl_buffer((4, 8), "float32", "A"), tir.decl_buffer((4,), "float32", "C")
    row, tmp = tir.decl_buffer((4,), "float32", "row"), tir.decl_buffer((1,), "float32", "tmp")
    i, k, vi = tir.Var("i"), tir.Var("k"), tir.IterVar(tir.Range.from_min_extent(0, 4), tir.Var("vi"))
    body = tir.seq(
        tir.BufferStore(tmp, tir.const(0.0, "float32"), (0,)),
        tir.For(k, 0, 4, tir.ForKind.SERIAL, tir.BufferStore(tmp, tmp[0] + row[k], (0,))),
        tir.BufferStore(C, tmp[0], (vi.var,)),
    )
    region = tir.BufferRegion(A, (tir.Range.from_min_extent(vi.var, 1), tir.Range.from_min_extent(2, 4)))
    block = tir.Block(
        (vi,), (), (), "row", body, alloc_buffers=(tmp,),
        match_buffers=(tir.MatchBufferRegion(row, region),),
    )
    loop = tir.For(i, 0, 4, tir.ForKind.SERIAL, tir.BlockRealize((i,), True, block))
    params = (tir.Var("a", "handle"), tir.Var("c", "handle"))
    return tir.PrimFunc(params, loop, buffer_map={params[0]: A, params[1]: C})


def test_match_buffer_views_and_alloc_buffers():
    a = np.random.default_rng(2).random((4, 8), "float32")
    got = run_prim_func(_views(), a, np.zeros(4, "float32"))[1]
    np.testing.assert_allclose(got, a[:, 2:6].sum(1), rtol=1e-6)


@T.prim_func
def _control(a: T.handle, n: T.int32):
    A = T.match_buffer(a, (8,), "int32")
    i = T.alloc_buffer((1,), "int32")
    assert n <= 8, "n is at most 8"
    i[0] = 0
    while i[0] < n:
        A[i[0]] = i[0] * i[0]
        i[0] = i[0] + 1


def test_scalar_params_while_and_assert():
    got = run_prim_func(_control, np.zeros(8, "int32"), 5)[0]
    np.testing.assert_array_equal(got, [0, 1, 4, 9, 16, 0, 0, 0])
    with pytest.raises(InterpreterError, match="assertion failed: n is at most 8"):
        run_prim_func(_control, np.zeros(8, "int32"), 9)


@T.prim_func
def _bad_binding(a: T.handle, b: T.handle):
    A = T.match_buffer(a, (28,), "float32")
    B = T.match_buffer(b, (14,), "float32")
    for v0, v1 in T.grid(4, 6):
        with T.block("B"):
            vi = T.axis.spatial(14, v0 * v0 + v1)
            B[vi % 14] = A[vi]


def test_block_binding_outside_its_domain_is_an_error():
    with pytest.raises(InterpreterError, match=r"block 'B': iterator 'vi' is bound to 14"):
        run_prim_func(_bad_binding, np.zeros(28, "float32"), np.zeros(14, "float32"))


def test_interpreter_errors_are_minitvm_errors_and_check_arguments():
    A, B, C = _matmul(4)
    func = te.create_prim_func([A, B, C])
    with pytest.raises(MiniTVMError, match=r"buffer 'A' is float32 with 2 dims, got a float64"):
        run_prim_func(func, np.zeros((4, 4)), np.zeros((4, 4), "float32"), np.zeros((4, 4), "float32"))
    with pytest.raises(InterpreterError, match="takes 3 arguments"):
        run_prim_func(func, np.zeros((4, 4), "float32"))


def test_non_contiguous_arguments_are_written_back():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    out = np.zeros((4, 2), "float32")[:, 0]
    run_prim_func(te.create_prim_func([A, B]), np.ones(4, "float32"), out)
    np.testing.assert_array_equal(out, 2.0)


@pytest.mark.parametrize("dtype, values, expected", [
    ("bool", [True, False], [False, True]),
    ("int8", [0, -128], [-1, 127]),
    ("uint8", [0, 200], [255, 55]),
])
def test_bitwise_not_in_every_width(dtype, values, expected):
    A = te.placeholder((2,), dtype, name="A")
    B = te.compute((2,), lambda i: tir.call_intrin(dtype, "tir.bitwise_not", A[i]), name="B")
    got = run_prim_func(te.create_prim_func([A, B]), np.array(values, dtype), np.zeros(2, dtype))
    np.testing.assert_array_equal(got[1], np.array(expected, dtype))


def test_accepts_an_irmodule_and_free_symbols_by_name():
    A, B = tir.decl_buffer((8,), "float32", "A"), tir.decl_buffer((8,), "float32", "B")
    i, n = tir.Var("i"), tir.Var("n")  # n: free in the function, given by name
    store = tir.BufferStore(B, A[i] * n.astype("float32"), (i,))
    params = (tir.Var("a", "handle"), tir.Var("b", "handle"))
    func = tir.PrimFunc(params, tir.For(i, 0, 8, tir.ForKind.SERIAL, store),
                        buffer_map={params[0]: A, params[1]: B})
    mod = tvm.IRModule({"main": func})
    a = np.arange(8, dtype="float32")
    np.testing.assert_array_equal(run_prim_func(mod, a, np.zeros(8, "float32"), n=3)[1], a * 3)
    with pytest.raises(InterpreterError, match="variable 'n' is used but not defined"):
        run_prim_func(mod, a, np.zeros(8, "float32"))


@T.prim_func
def _racy(a: T.handle, c: T.handle):
    A = T.match_buffer(a, (20,), "float32")
    C = T.match_buffer(c, (20,), "float32")
    for io in T.parallel(3):
        for ii in range(8):
            if io * 8 + ii < 20:
                C[io // 8 + ii] = A[io * 8 + ii]


def test_a_data_race_in_a_parallel_loop_is_an_error():
    with pytest.raises(InterpreterError, match=r"data race in parallel loop 'io': iteration 1 writes element 0 of 'C', which iteration 0 writes"):
        run_prim_func(_racy, np.zeros(20, "float32"), np.zeros(20, "float32"))
    A, B, C = _matmul(8)  # parallel rows, each iteration its own rows of C: no race
    s = te.create_schedule(C.op)
    s[C].parallel(C.op.axis[0])
    a, b = _ab(8)
    got = run_prim_func(lower_primfunc(tvm.lower(s, [A, B, C])["main"]), a, b, np.zeros((8, 8), "float32"))
    np.testing.assert_allclose(got[2], a @ b, rtol=1e-5)
