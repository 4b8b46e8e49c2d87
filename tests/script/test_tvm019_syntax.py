"""TVMScript forms that TVM v0.19's own test scripts use: TVM builtins (`T.tvm_fill_fragment`,
`T.type_annotation`, `T.reinterpret`, ...), `T.match_buffer` of a region inside a block, and the
printer cases they exposed. Each form parses, prints back to an equal function, and where it can
run it is built and compared with numpy."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm.error import BuildError, ParseError
from minitvm.ir import assert_structural_equal
from minitvm.script import from_source
from minitvm.script import tir as T
from minitvm.tir.expr import Call


def _round_trip(func):
    text = func.script()
    back = from_source(text)
    assert_structural_equal(back, func)
    return text


def _run(func, *arrays):
    mod = tvm.build(func, target="llvm")
    nds = [tvm.nd.array(a) for a in arrays]
    mod(*nds)
    return [x.numpy() for x in nds]


# ----------------------------------------------------------------------------- builtins


@T.prim_func
def fragments(A: T.Buffer((16, 16), "float16"), C: T.Buffer((16, 16), "float32")):
    with T.block("root"):
        T.reads(A[0:16, 0:16])
        T.writes(C[0:16, 0:16])
        T.evaluate(T.tvm_fill_fragment(C.data, 16, 16, 16, 0, T.float32(0), dtype="handle"))
        T.evaluate(
            T.tvm_load_matrix_sync(
                C.data, 16, 16, 16, 0,
                T.tvm_access_ptr(T.type_annotation(dtype="float16"), A.data, 0, 256, 1, dtype="handle"),
                16, "row_major", dtype="handle",
            )
        )  # fmt: skip


def test_builtins_parse_with_tvm_result_dtypes_and_round_trip():
    text = _round_trip(fragments)
    assert "T.tvm_fill_fragment(C.data" in text
    calls = []
    tvm.tir.post_order_visit(
        fragments.body, lambda n: calls.append(n) if isinstance(n, Call) else None
    )
    by_name = {c.op.name: c for c in calls}
    assert by_name["tir.tvm_fill_fragment"].dtype.is_handle
    assert str(by_name["tir.type_annotation"].dtype) == "float16"
    assert not by_name["tir.tvm_fill_fragment"].op.pure  # never dropped as dead code


def test_a_builtin_codegen_cannot_lower_is_a_build_error():
    with pytest.raises(BuildError, match="tvm_fill_fragment"):
        tvm.build(fragments, target="llvm")


def test_builtin_dtype_that_contradicts_its_rule_is_refused():
    src = """
@T.prim_func
def f(A: T.Buffer((4,), "int32")):
    A[0] = T.q_multiply_shift(A[1], 3, 31, 0, dtype="float32")
"""
    with pytest.raises(ParseError, match=r"q_multiply_shift computes int32.*float32"):
        from_source(src)


def test_aliases_name_the_same_builtin():
    x = T.call_packed("f", 1)
    y = T.tvm_call_packed("f", 1)
    assert x.op is y.op and str(x.dtype) == "int32"


@T.prim_func
def bits_of(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "int32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = T.reinterpret("int32", A[vi])


def test_reinterpret_takes_the_dtype_first_and_keeps_the_bits():
    _round_trip(bits_of)
    a = np.random.randn(8).astype("float32")
    _, b = _run(bits_of, a, np.zeros(8, "int32"))
    np.testing.assert_array_equal(b, a.view("int32"))


def test_reinterpret_of_a_different_width_is_refused():
    src = """
@T.prim_func
def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "int64")):
    B[0] = T.reinterpret("int64", A[0])
"""
    with pytest.raises(ParseError, match="reinterpret of float32 as int64: the sizes differ"):
        from_source(src)


def test_call_extern_with_empty_dtype_is_a_void_call():
    src = """
@T.prim_func
def f(A: T.Buffer((4,), "int32")):
    T.evaluate(T.call_extern("side_effect", A.data, dtype=""))
"""
    func = from_source(src)
    assert func.body.value.dtype.is_handle
    _round_trip(func)


def test_unknown_t_name_reports_the_name_and_line():
    src = "@T.prim_func\ndef f(A: T.Buffer((4,), 'int32')):\n    A[0] = T.no_such_intrinsic(1)\n"
    with pytest.raises(ParseError, match=r"<string>:3:.*unknown name 'T.no_such_intrinsic'"):
        from_source(src)


# ----------------------------------------------------------------------------- match_buffer


@T.prim_func
def tiles(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32")):
    for i, j in T.grid(2, 2):
        with T.block("tile"):
            vi, vj = T.axis.remap("SS", [i, j])
            At = T.match_buffer(A[vi * 4 : vi * 4 + 4, vj * 4 : vj * 4 + 4], (4, 4))
            Bt = T.match_buffer(B[vi * 4 : vi * 4 + 4, vj * 4 : vj * 4 + 4], (4, 4))
            for x, y in T.grid(4, 4):
                Bt[x, y] = At[x, y] + T.float32(1)


@T.prim_func
def tile_offsets(B: T.Buffer((8, 8), "float32")):
    for i, j in T.grid(2, 2):
        with T.block("tile"):
            vi, vj = T.axis.remap("SS", [i, j])
            Bt = T.match_buffer(
                B[vi * 4 : vi * 4 + 4, vj * 4 : vj * 4 + 4], (4, 4), offset_factor=1
            )
            for x, y in T.grid(4, 4):
                Bt[x, y] = T.Cast("float32", Bt.elem_offset)


def test_match_buffer_of_a_region_round_trips_and_names_the_source_regions():
    text = _round_trip(tiles)
    assert "T.reads" not in text  # inferred on the source buffers, so not printed
    block = tiles.body.block.body.body.body.block
    assert [r.buffer.name for r in block.reads] == ["A"]
    assert [r.buffer.name for r in block.writes] == ["B"]


def test_match_buffer_of_a_region_computes_on_the_region():
    a = np.random.rand(8, 8).astype("float32")
    _, b = _run(tiles, a, np.zeros((8, 8), "float32"))
    np.testing.assert_allclose(b, a + 1, rtol=1e-6)


def test_a_views_offset_variable_is_where_its_region_starts():
    _round_trip(tile_offsets)
    (b,) = _run(tile_offsets, np.zeros((8, 8), "float32"))
    rows, cols = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    np.testing.assert_array_equal(b, (rows // 4 * 4) * 8 + cols // 4 * 4)


@T.prim_func
def row_heads(A: T.Buffer((4, 6), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("head"):
            vi = T.axis.spatial(4, i)
            head = T.match_buffer(A[vi, 0], ())
            row = T.match_buffer(A[vi, 0:6], (6,))
            B[vi] = head[()] + row[5]


def test_scalar_and_rank_dropping_views():
    _round_trip(row_heads)
    a = np.random.rand(4, 6).astype("float32")
    _, b = _run(row_heads, a, np.zeros(4, "float32"))
    np.testing.assert_allclose(b, a[:, 0] + a[:, 5], rtol=1e-6)


def test_view_whose_pointer_is_used_needs_its_real_offset():
    src = """
@T.prim_func
def f(A: T.Buffer((8,), "float32")):
    for i in range(2):
        with T.block("b"):
            vi = T.axis.spatial(2, i)
            V = T.match_buffer(A[vi * 4 : vi * 4 + 4], (4,))
            T.evaluate(T.call_extern("int32", "abs", V.data))
"""
    func = from_source(src)
    with pytest.raises(BuildError, match=r"T.match_buffer 'V' of 'A': its elem_offset is 0"):
        tvm.build(func, target="llvm")


def test_view_of_another_dtype_is_a_build_error():
    src = """
@T.prim_func
def f(A: T.Buffer((8,), "float32")):
    for i in range(2):
        with T.block("b"):
            vi = T.axis.spatial(2, i)
            V = T.match_buffer(A[vi * 4 : vi * 4 + 4], (4,), "int32")
            V[0] = 1
"""
    with pytest.raises(BuildError, match="dtype int32 differs from the source's float32"):
        tvm.build(from_source(src), target="llvm")


def test_dropping_a_region_dimension_wider_than_one_is_a_build_error():
    src = """
@T.prim_func
def f(A: T.Buffer((4, 4), "float32")):
    with T.block("b"):
        V = T.match_buffer(A[0:2, 0:4], (4,))
        V[0] = T.float32(1)
"""
    with pytest.raises(BuildError, match="region dimension 0 has extent 2"):
        tvm.build(from_source(src), target="llvm")


def test_match_buffer_of_a_handle_needs_a_shape():
    src = """
@T.prim_func
def f(a: T.handle):
    A = T.match_buffer(a)
"""
    with pytest.raises(ParseError, match="needs its shape"):
        from_source(src)


# ----------------------------------------------------------------------------- printer cases


@T.prim_func
def triangle(A: T.Buffer((8, 8), "float32")):
    for i in range(8):
        for j in range(i):
            with T.block("t"):
                vi, vj = T.axis.remap("SS", [i, j])
                A[vi, vj] = T.float32(1)


def test_a_loop_whose_extent_uses_the_outer_loop_is_not_folded_into_a_grid():
    text = _round_trip(triangle)
    assert "T.grid" not in text


def test_a_size_param_after_the_buffers_that_use_it():
    src = """
@T.prim_func
def f(a: T.handle, n: T.int32):
    A = T.match_buffer(a, (n,))
    for i in range(n):
        with T.block("b"):
            vi = T.axis.spatial(n, i)
            A[vi] = T.float32(0)
"""
    _round_trip(from_source(src))


def test_operations_on_two_constants_print_without_folding():
    src = """
@T.prim_func
def f(A: T.Buffer((4,), "int32")):
    A[0] = T.floordiv(T.int32(7), 2) + 1
"""
    func = from_source(src)
    assert "T.int32(7) // 2" in _round_trip(func)


def test_a_free_variable_made_outside_the_script_keeps_its_identity():
    n_outer = tvm.tir.Var("n_outer", "int32")  # as TVM tests do with te.var(...) inside scripts

    @T.prim_func
    def f(a: T.handle):
        n = n_outer
        A = T.match_buffer(a, (n,))
        for i in range(n):
            A[i] = T.float32(0)

    assert f.buffer_map[f.params[0]].shape[0] is n_outer
    _round_trip(f)


# ----------------------------------------------------------------------------- memory, threads


@T.prim_func
def plus_table(A: T.Buffer((4,), "float32"), C: T.Buffer((4,), "float32")):
    table = T.allocate_const([0.5, 1.5, -2.0, 4.0], "float32", [4])
    t = T.decl_buffer((4,), "float32", data=table)
    for i in range(4):
        with T.block("C"):
            vi = T.axis.spatial(4, i)
            C[vi] = A[vi] + t[vi]


def test_allocate_const_round_trips():
    assert "T.allocate_const([0.5, 1.5, -2.0, 4.0]" in _round_trip(plus_table)


def test_allocate_const_holds_its_values():
    a = np.random.rand(4).astype("float32")
    _, c = _run(plus_table, a, np.zeros(4, "float32"))
    np.testing.assert_allclose(c, a + np.array([0.5, 1.5, -2.0, 4.0], "float32"), rtol=1e-6)


def test_allocate_const_with_the_wrong_number_of_values_is_a_parse_error():
    src = """
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    t = T.allocate_const([1.0, 2.0], "float32", [4])
    A[0] = T.float32(0)
"""
    with pytest.raises(ParseError, match=r"allocate_const 't': 2 values for 4 elements"):
        from_source(src)


@T.prim_func
def launched(A: T.Buffer((64,), "float32")):
    bx = T.launch_thread("blockIdx.x", 2)
    with T.launch_thread("threadIdx.x", 32) as tx:
        A[bx * 32 + tx] = T.float32(1)


@T.prim_func
def relaunched(A: T.Buffer((8,), "float32")):
    tx = T.env_thread("threadIdx.x")
    with T.block("root"):
        T.launch_thread(tx, 4)
        A[tx] = T.float32(1)
        T.launch_thread(tx, 4)
        A[tx + 4] = T.float32(2)


def test_thread_launches_are_thread_extent_scopes_and_round_trip():
    _round_trip(launched)
    outer = launched.body
    assert outer.attr_key == "thread_extent" and outer.node.thread_tag == "blockIdx.x"
    assert outer.body.node.thread_tag == "threadIdx.x" and outer.body.value.value == 32
    text = _round_trip(relaunched)
    assert text.count("T.launch_thread(") == 2


def test_launch_thread_of_a_plain_variable_is_a_parse_error():
    src = """
@T.prim_func
def f(A: T.Buffer((4,), "float32"), n: T.int32):
    T.launch_thread(n, 4)
    A[0] = T.float32(0)
"""
    with pytest.raises(ParseError, match="T.launch_thread takes a thread tag"):
        from_source(src)


@T.prim_func
def access_pointers(A: T.Buffer((16,), "float32")):
    with T.block("root"):
        T.reads(A[0:16])
        T.writes(A[0:16])
        T.evaluate(A.access_ptr("r", offset=4, extent=8))
        T.evaluate(T.assume(A[0] == T.float32(0)))
        T.evaluate(T.vscale())


def test_access_ptr_assume_and_vscale_round_trip():
    text = _round_trip(access_pointers)
    assert 'T.tvm_access_ptr(T.type_annotation(dtype="float32"), A.data, 4, 8, 1)' in text
    assert "T.assume(" in text and "T.vscale()" in text


# ----------------------------------------------------------------------------- more T names


@T.prim_func
def lanes_and_lets(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "int8")):
    x = T.var("int32")
    A[T.Ramp(0, 1, 4)] = T.float32x4(1.5)
    B[T.Ramp(4, 1, 4)] = T.int8x4(3)
    A[5] = T.Cast("float32", T.Let(x + 1, where={x: 4})) + T.fabs(A[6])
    A[7] = T.Cast("float32", T.boolean(True))


def test_vector_constants_lets_and_aliases():
    _round_trip(lanes_and_lets)
    a = np.arange(8, dtype="float32") - 7
    b = np.zeros(8, "int8")
    a2, b2 = _run(lanes_and_lets, a.copy(), b)
    want = a.copy()
    want[0:4] = 1.5
    want[5] = 5 + abs(a[6])
    want[7] = 1
    np.testing.assert_allclose(a2, want)
    np.testing.assert_array_equal(b2[4:], 3)


def test_infinity_and_buffer_decl_spellings():
    assert T.infinity("float32").value == float("inf")
    assert T.buffer_decl is T.decl_buffer and T.buffer is T.Buffer


def test_a_views_offset_variable_takes_the_index_dtype_of_its_shape():
    src = """
@T.prim_func
def f(A: T.Buffer((T.int64(8),), "float32")):
    for i in range(T.int64(2)):
        with T.block("b"):
            vi = T.axis.spatial(T.int64(2), i)
            V = T.match_buffer(A[vi * T.int64(4) : vi * T.int64(4) + T.int64(4)], (T.int64(4),), offset_factor=1)
            V[T.int64(0)] = T.float32(1)
"""
    func = from_source(src)
    view = func.body.block.body.body.block.match_buffers[0].buffer
    assert str(view.elem_offset.dtype) == "int64"
    _round_trip(func)
