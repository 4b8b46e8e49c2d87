"""Names and contracts the lead added while running TVM v0.19's unit tests under the shim."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm.script import tir as T


@T.prim_func
def _sum_rows(a: T.Buffer((4, 8), "float32"), b: T.Buffer((4,), "float32")):
    for i, k in T.grid(4, 8):
        with T.block("S"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                b[vi] = T.float32(0)
            b[vi] = b[vi] + a[vi, vk]


def test_block_names_do_not_take_part_in_structural_equality():
    sch = tvm.tir.Schedule(_sum_rows)
    renamed = tvm.tir.Schedule(_sum_rows)
    renamed.decompose_reduction(renamed.get_block("S"), renamed.get_loops(renamed.get_block("S"))[1])
    sch.decompose_reduction(sch.get_block("S"), sch.get_loops(sch.get_block("S"))[1])
    assert "S_update" in renamed.mod.script()
    text = sch.mod.script().replace('"S_update"', '"T_other"')
    other = tvm.script.from_source(text)
    tvm.ir.assert_structural_equal(sch.mod, other)
    assert tvm.ir.structural_hash(sch.mod["main"]) == tvm.ir.structural_hash(other["main"])


def test_blocks_that_differ_in_body_are_still_unequal():
    sch = tvm.tir.Schedule(_sum_rows)
    text = sch.mod.script().replace("b[vi] + a[vi, vk]", "b[vi] - a[vi, vk]")
    with pytest.raises(AssertionError):
        tvm.ir.assert_structural_equal(sch.mod, tvm.script.from_source(text))


def test_same_as_is_identity():
    sch = tvm.tir.Schedule(_sum_rows)
    block = sch.get(sch.get_block("S"))
    assert block.same_as(sch.get(sch.get_block("S")))
    assert not block.same_as(block.replace(name_hint="other"))


def test_nd_empty_takes_the_device_keyword():
    a = tvm.nd.empty((2, 3), dtype="float32", device=tvm.cpu(0))
    assert a.shape == (2, 3) and a.dtype == "float32"
    a.copyfrom(np.ones((2, 3), "float32"))
    np.testing.assert_array_equal(a.numpy(), np.ones((2, 3)))


def test_ffi_and_instrument_resolve_after_a_plain_import():
    assert issubclass(tvm._ffi.base.TVMError, RuntimeError)
    assert tvm.instrument.PrintBeforeAll is not None


def test_buffer_names_do_not_take_part_in_structural_equality():
    text = _sum_rows.script()
    renamed = tvm.script.from_source(text.replace("a[", "x[").replace("a: T.Buffer", "x: T.Buffer"))
    assert "x[vi, vk]" in renamed.script()
    tvm.ir.assert_structural_equal(_sum_rows, renamed)
    other_shape = tvm.script.from_source(text.replace("(4, 8)", "(4, 9)"))
    with pytest.raises(AssertionError):
        tvm.ir.assert_structural_equal(_sum_rows, other_shape)


_LAUNCH = '''
@T.prim_func
def launch(A: T.Buffer((4,), "float32")):
    tx = T.launch_thread("threadIdx.x", 4)
    A[0] = A[0] + T.float32(1)
'''


def test_a_gpu_thread_scope_does_not_build_for_the_cpu():
    func = tvm.script.from_source(_LAUNCH)
    with pytest.raises(tvm.error.BuildError, match="threadIdx.x"):
        tvm.build(func, target="llvm")


def test_tir_exports_vscale_reinterpret_and_allocate_const():
    bits = tvm.tir.reinterpret("int32", tvm.tir.const(1.0, "float32"))
    assert str(bits.dtype) == "int32"
    assert tvm.tir.AllocateConst is not None
    A = tvm.te.placeholder((8,), name="A")
    B = tvm.te.compute((8,), lambda i: A[i] * (4 * tvm.tir.vscale()).astype("float32"), name="B")
    with pytest.raises(tvm.error.BuildError, match="vscale"):
        tvm.build(tvm.te.create_schedule(B.op), [A, B])


def test_runtime_convert_and_container_map():
    arr = tvm.runtime.convert([1, 2.5, [3]])
    assert isinstance(arr, tvm.container.Array) and len(arr) == 3
    assert arr[0].value == 1 and str(arr[0].dtype) == "int32"
    assert str(arr[1].dtype) == "float32" and isinstance(arr[2], tvm.container.Array)
    m = tvm.runtime.convert({"k": 7})
    assert isinstance(m, tvm.container.Map) and m["k"].value == 7
    with pytest.raises(tvm.error.TVMError, match="cannot convert a object"):
        tvm.runtime.convert(object())
    A = tvm.te.placeholder((8,), name="A")
    B = tvm.te.compute((8,), lambda i: A[i] + 1, name="B")
    s = tvm.te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=4)
    bounds = tvm.te.schedule.InferBound(s)
    assert isinstance(bounds, tvm.container.Map)
    assert int(bounds[xo].extent) == 2 and int(bounds[xi].extent) == 4


_MAX_OF_TWO = '''
@T.prim_func
def max_of_two(A: T.Buffer((6, 10), "float32"), B: T.Buffer((6, 10), "float32")):
    for i in T.parallel(6):
        for k in range(10):
            with T.block("m"):
                vi, vk = T.axis.remap("SS", [i, k])
                with T.init():
                    B[vi, vk] = T.float32("-inf")
                B[vi, vk] = T.max(B[vi, vk], A[vi, vk])
'''


def test_two_free_buffers_of_one_layout_are_not_structurally_equal():
    func = tvm.script.from_source(_MAX_OF_TWO)
    a, b = (func.buffer_map[p] for p in func.params)
    i = tvm.tir.Var("i", "int32")
    assert not tvm.ir.structural_equal(a[i, i], b[i, i])
    assert tvm.ir.structural_equal(a[i, i], a[i, i])
    assert tvm.ir.structural_equal(a[i, i], b[i, i], map_free_vars=True)


def test_max_of_two_buffers_is_not_simplified_to_one():
    # the simplifier's max(x, x) -> x once took B[i] and A[i] for the same value (NaN softmax)
    mod = tvm.build(tvm.script.from_source(_MAX_OF_TWO), target="llvm")
    a = np.random.default_rng(0).standard_normal((6, 10)).astype("float32")
    b = tvm.nd.array(np.zeros((6, 10), "float32"))
    mod(tvm.nd.array(a), b)
    np.testing.assert_array_equal(b.numpy(), a)


def test_lists_and_tuples_compare_as_tvm_arrays():
    i, j = tvm.tir.Var("i", "int32"), tvm.tir.Var("j", "int32")
    tvm.ir.assert_structural_equal([i, j], (i, j))
    assert not tvm.ir.structural_equal([i, j], (j, i))
    assert tvm.ir.structural_hash([i, j]) == tvm.ir.structural_hash((i, j))


def test_a_prim_expr_plus_a_tensor_is_a_broadcasting_compute():
    n = tvm.te.var("n", dtype="float32")
    A = tvm.te.placeholder((5,), name="A")
    B = n + A
    C = tvm.te.placeholder((), name="C") + 1.0
    assert tuple(int(d) for d in B.shape) == (5,) and tuple(C.shape) == ()
    s = tvm.te.create_schedule(B.op)
    f = tvm.build(s, [n, A, B])
    a = np.arange(5, dtype="float32")
    b = tvm.nd.array(np.zeros(5, "float32"))
    f(2.5, tvm.nd.array(a), b)
    np.testing.assert_allclose(b.numpy(), a + 2.5)


def test_python_attribute_values_equal_their_tvm_constants():
    assert tvm.ir.structural_equal({"a": True}, {"a": tvm.tir.const(True, "bool")})
    assert tvm.ir.structural_equal({"a": 3}, {"a": tvm.tir.const(3, "int32")})
    assert not tvm.ir.structural_equal({"a": True}, {"a": tvm.tir.const(1, "int32")})
    assert not tvm.ir.structural_equal({"a": 3}, {"a": tvm.tir.const(4, "int32")})


def test_an_empty_scope_is_the_global_scope():
    buf = tvm.tir.decl_buffer((4,), "float32", name="X", scope="")
    assert buf.scope() == "global"


_RUNNING_ROWS = '''
@T.prim_func
def running_rows(A: T.Buffer((6, 16), "float32")):
    for t in range(1, 6):
        for i in range(16):
            with T.block("step"):
                vt, vi = T.axis.remap("SS", [t, i])
                A[vt, vi] = A[vt - 1, vi] + A[vt, vi]
'''


def test_a_row_scan_vectorizes_over_its_columns():
    # scan[t, i] reads scan[t - 1, i]: the column loop carries nothing (the scan tutorial's bind)
    func = tvm.script.from_source(_RUNNING_ROWS)
    sch = tvm.tir.Schedule(func)
    t, i = sch.get_loops(sch.get_block("step"))
    sch.vectorize(i)
    with pytest.raises(tvm.tir.ScheduleError, match="loop-carried dependence"):
        sch.parallel(t)  # the row loop does carry the running sum
    a = np.random.default_rng(1).standard_normal((6, 16)).astype("float32")
    arr = tvm.nd.array(a.copy())
    tvm.build(sch.mod, target="llvm")(arr)
    np.testing.assert_allclose(arr.numpy(), np.cumsum(a, axis=0), rtol=1e-5)


_EVENS = '''
@T.prim_func
def evens(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for i in range(32):
        with T.block("B"):
            vi = T.axis.spatial(32, i)
            B[vi * 2] = A[vi * 2] + T.float32(1)
'''


def test_cache_write_of_a_writer_with_holes_is_refused():
    # the copy back would write the skipped (odd) elements from uninitialised cache memory
    sch = tvm.tir.Schedule(tvm.script.from_source(_EVENS))
    with pytest.raises(tvm.tir.ScheduleError, match="cannot prove that 'B' writes every element"):
        sch.cache_write(sch.get_block("B"), 0, "global")


def test_cache_write_of_a_fused_dense_writer_keeps_the_numbers():
    sch = tvm.tir.Schedule(tvm.script.from_source(_MAX_OF_TWO))
    sch.cache_write(sch.get_block("m"), 0, "global")
    a = np.random.default_rng(2).standard_normal((6, 10)).astype("float32")
    b = tvm.nd.array(np.zeros((6, 10), "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), b)
    np.testing.assert_array_equal(b.numpy(), a)
