"""Names and checks TVM v0.19's own unit tests need (issue 27, item 6), each against TVM's
documented behaviour; numbers against numpy through the TIR interpreter."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import tir
from minitvm.error import ParseError, ShapeError
from minitvm.script import tir as T
from minitvm.testing.tir_interp import run_prim_func


# ---- a fact about a buffer's contents is not kept: the buffer may be written in between
@T.prim_func
def _altered_buffer(A: T.Buffer((1,), "int32"), n: T.int32):
    if A[0] == n:
        A[0] = A[0] + 1
        if A[0] == n:
            A[0] = 5
        else:
            A[0] = 10


def test_simplify_does_not_assume_a_condition_on_a_buffer_it_then_writes():
    after = tvm.tir.transform.Simplify()(tvm.IRModule({"main": _altered_buffer}))["main"]
    for a0, n in [(3, 3), (2, 3)]:
        want = run_prim_func(_altered_buffer, np.array([a0], "int32"), n)[0]
        got = run_prim_func(after, np.array([a0], "int32"), n)[0]
        np.testing.assert_array_equal(got, want)
    assert run_prim_func(after, np.array([3], "int32"), 3)[0][0] == 10


def test_arith_simplify_keeps_buffer_conditions_out_of_its_facts():
    after = tvm.arith.simplify(_altered_buffer)
    assert run_prim_func(after, np.array([3], "int32"), 3)[0][0] == 10


def test_conditions_on_variables_are_still_used():
    i = tir.Var("i", "int32")
    ana = tvm.arith.Analyzer()
    with ana.constraint_scope(i == 5):
        assert ana.can_prove(i < 7)
    buf = tir.decl_buffer((4,), "int32", name="B")
    with ana.constraint_scope(buf[0] == 5):
        assert not ana.can_prove(buf[0] == 5)  # the buffer may change under the scope


# ---- TVMScript
def test_if_on_an_integer_tests_non_zero():
    @T.prim_func
    def f(A: T.Buffer((6,), "int32")):
        for i in range(6):
            if i % 3:
                A[i] = 1

    out = run_prim_func(f, np.zeros(6, "int32"))[0]
    np.testing.assert_array_equal(out, [0, 1, 1, 0, 1, 1])


def test_range_takes_loop_annotations():
    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        for i in range(4, annotations={"pragma_loop_partition_hint": 1}):
            A[i] = T.float32(1)

    loop = f.body
    assert dict(loop.annotations) == {"pragma_loop_partition_hint": 1}
    np.testing.assert_array_equal(run_prim_func(f, np.zeros(4, "float32"))[0], np.ones(4))


def test_letstmt_frame_binds_a_new_var():
    @T.prim_func
    def f(A: T.Buffer((4,), "int32"), x: T.int32, y: T.int32):
        with T.LetStmt(x * y + 1) as v:
            for i in range(4):
                A[i] = v + i

    assert isinstance(f.body, tir.LetStmt) and f.body.var.name == "v"
    out = run_prim_func(f, np.zeros(4, "int32"), 3, 5)[0]
    np.testing.assert_array_equal(out, 16 + np.arange(4))


def test_private_function_with_global_symbol_is_refused():
    with pytest.raises(ParseError, match="private function 'f' sets a global_symbol"):

        @T.prim_func(private=True)
        def f(A: T.Buffer((4,), "int32")):
            T.func_attr({"global_symbol": "f"})
            A[0] = 1


def test_prim_func_name_is_its_global_symbol():
    @T.prim_func
    def matmul(A: T.Buffer((4,), "int32")):
        A[0] = 1

    assert matmul.__name__ == "matmul" and type(matmul).__name__ == "PrimFunc"


# ---- dtypes
@pytest.mark.parametrize(
    "dtype, size", [("float32", 4), ("float32x4", 16), ("e5m2_float8x4", 4), ("bool", 1)]
)
def test_dtype_itemsize(dtype, size):
    assert tvm.DataType(dtype).itemsize() == size


def test_v019_float8_spellings():
    assert tvm.DataType("e4m3_float8") == tvm.DataType("float8_e4m3fn")
    assert tvm.DataType("e5m2_float8x2") == tvm.DataType("float8_e5m2x2")


# ---- PrimFunc.specialize
@T.prim_func
def _mem_copy(a: T.handle, b: T.handle, m: T.int32, n: T.int32):
    A = T.match_buffer(a, (m, n), "float32")
    B = T.match_buffer(b, (m, n), "float32")
    for i, j in T.grid(m, n):
        with T.block("copy"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


def test_specialize_to_a_buffer_fixes_its_shape_and_drops_scalar_params():
    a = _mem_copy.params[0]
    func = _mem_copy.specialize({a: tir.decl_buffer((3, 5), "float32")})
    assert [p.name for p in func.params] == ["a", "b"]
    assert [int(s) for s in func.buffer_map[func.params[1]].shape] == [3, 5]
    x = np.arange(15, dtype="float32").reshape(3, 5)
    out = run_prim_func(func, x, np.zeros((3, 5), "float32"))[1]
    np.testing.assert_array_equal(out, x * 2)


def test_specialize_to_a_value_and_nothing():
    assert _mem_copy.specialize({}) is _mem_copy
    n = _mem_copy.params[3]
    func = _mem_copy.specialize({n: 4})
    assert [p.name for p in func.params] == ["a", "b", "m"]
    x = np.ones((2, 4), "float32")
    np.testing.assert_array_equal(run_prim_func(func, x, np.zeros((2, 4), "float32"), 2)[1], x * 2)


def test_specialize_refuses_a_conflicting_buffer():
    @T.prim_func
    def fixed(A: T.Buffer((4, 4), "float32")):
        A[0, 0] = T.float32(1)

    with pytest.raises(tvm.error.MiniTVMError, match="dim 0 .* is 4 in the function but 8"):
        fixed.specialize({fixed.params[0]: tir.decl_buffer((8, 4), "float32")})
    with pytest.raises(tvm.error.MiniTVMError, match="not a parameter"):
        fixed.specialize({tir.Var("z", "int32"): 1})


# ---- Buffer.get_flattened_buffer and axis_separators
def test_get_flattened_buffer():
    buf = tir.decl_buffer((16, 32))
    flat = buf.get_flattened_buffer()
    assert flat.data is buf.data and [int(s) for s in flat.shape] == [512]
    one = tir.decl_buffer((16,))
    assert one.get_flattened_buffer() is one
    sep = tir.decl_buffer((4, 16, 32), axis_separators=[2]).get_flattened_buffer()
    assert [int(s) for s in sep.shape] == [64, 32] and tuple(sep.axis_separators) == (1,)


def test_axis_separators_out_of_range_are_refused():
    with pytest.raises(ShapeError, match="axis_separators"):
        tir.decl_buffer((1,), axis_separators=[1, 2])
    with pytest.raises(ShapeError):
        tir.decl_buffer((4, 4), axis_separators=[2, 1])


# ---- arith.detect_linear_equation
def test_detect_linear_equation():
    a, b = tir.Var("a", "int32"), tir.Var("b", "int32")
    m = tvm.arith.detect_linear_equation(a * 4 + (a + 1) + b * 6 + 7, [a])
    assert m[0].value == 5
    tvm.testing.assert_prim_expr_equal(m[1], b * 6 + 8)
    assert tvm.arith.detect_linear_equation(a * 4 * (a + 1), [a]) == []
    m = tvm.arith.detect_linear_equation(a * (b + 4) + a, [a, b])
    assert m == []  # a * b is not linear in [a, b]
    m = tvm.arith.detect_linear_equation(a * (b + 4) + a, [a])
    tvm.testing.assert_prim_expr_equal(m[0], b + 5)
    assert m[1].value == 0
    assert len(tvm.arith.detect_linear_equation(b * 7, [])) == 1


# ---- tir.analysis.verify_ssa / expr_deep_equal
def test_verify_ssa():
    x, y = tir.Var("x", "int32"), tir.Var("y", "int32")
    z = tir.Evaluate(x + y)
    assert tir.analysis.verify_ssa(tir.PrimFunc([x, y], z))
    assert not tir.analysis.verify_ssa(tir.PrimFunc([x, y], tir.LetStmt(x, 1, z)))
    z1, z2 = tir.Let(x, 1, x + 1), tir.Let(x, 2, x + 2)
    assert tir.analysis.verify_ssa(tir.PrimFunc([], tir.Evaluate(z1 + z1)))
    assert not tir.analysis.verify_ssa(tir.PrimFunc([], tir.Evaluate(z1 * z2)))


def test_expr_deep_equal_compares_vars_by_identity():
    x, y = tir.Var("x", "int32"), tir.Var("x", "int32")
    assert tir.analysis.expr_deep_equal(x + 1, x + 1)
    assert not tir.analysis.expr_deep_equal(x + 1, y + 1)


def test_one_name_over_a_grid_is_the_tuple_of_loop_vars():
    @T.prim_func
    def f(A: T.Buffer((2, 3), "int32")):
        for ij in T.grid(2, 3):
            A[ij[0], ij[1]] = ij[0] * 10 + ij[1]

    out = run_prim_func(f, np.zeros((2, 3), "int32"))[0]
    np.testing.assert_array_equal(out, [[0, 1, 2], [10, 11, 12]])


def test_verify_well_formed_assert_mode_and_modules():
    x = tir.Var("x", "int32")
    bad = tir.PrimFunc([], tir.Evaluate(x + 1))  # x is never defined
    assert tir.analysis.verify_well_formed(bad, assert_mode=False) is False
    with pytest.raises(tvm.error.InternalError):
        tir.analysis.verify_well_formed(bad)
    good = tir.PrimFunc([x], tir.Evaluate(x + 1))
    assert tir.analysis.verify_well_formed(tvm.IRModule({"main": good})) is True


def test_ir_module_class_name():
    from minitvm.script import ir as I

    @I.ir_module
    class Blank:
        pass

    assert Blank.__name__ == "Blank" and type(Blank).__name__ == "IRModule"
    with pytest.raises(AttributeError):
        _ = tvm.IRModule({}).__name__


def test_cast_of_a_handle_to_a_number_is_refused():
    with pytest.raises(tvm.error.TVMError, match="Can't cast a handle to other types"):
        tir.StringImm("s").astype("int32")
    ptr = tir.Var("p", "handle")
    assert tir.Cast("int64", ptr).dtype == "int64"  # the node itself, as TVM's T.Cast, still builds


def test_detect_buffer_access_lca():
    @T.prim_func
    def f(a: T.handle, b: T.handle):
        A = T.match_buffer(a, (8, 8), "float32")
        B = T.match_buffer(b, (8, 8), "float32")
        C = T.alloc_buffer((8, 8), "float32")
        for i, j in T.grid(8, 8):
            with T.block("c"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj]
        for i in range(8):
            for j in range(8):
                with T.block("b"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = C[vi, vj] + A[vi, vj]

    A, B = (f.buffer_map[p] for p in f.params)
    root = f.body.block
    (C,) = root.alloc_buffers
    lca = tir.analysis.detect_buffer_access_lca(f)
    assert lca[A] is root and lca[C] is root
    assert lca[B] is root.body[1].body.body.block  # only block "b" writes B


def test_ndarray_create_view_shares_memory_inside_bounds():
    x = np.arange(1024, dtype="int32")
    a = tvm.nd.array(x)
    view = a._create_view([2, 256], relative_byte_offset=512 * 4)
    np.testing.assert_array_equal(view.numpy(), x[512:].reshape(2, 256))
    sub = view._create_view([4], dtype="int16", relative_byte_offset=4)
    np.testing.assert_array_equal(sub.numpy(), x[513:515].view("int16"))
    view.copyfrom(np.zeros((2, 256), "int32"))
    assert not a.numpy()[512:].any()  # written through the view
    np.testing.assert_array_equal(a.numpy()[:512], x[:512])
    with pytest.raises(ValueError, match="would occupy bytes 2048 <= i_byte < 6144"):
        a._create_view([1024], relative_byte_offset=512 * 4)
