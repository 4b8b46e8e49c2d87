"""TVMScript slices used as values (TVM's rule): `B[0:4] = A[0:4] + A[4:8]` is a vector store of
vector loads (T.Ramp indices), `A[0:8:2]` a strided load; in T.reads/T.match_buffer a slice
stays a region. Also `>>`/`<<`, string attribute values, and T.attr/T.LetStmt as statements."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import tir
from minitvm.script import from_source
from minitvm.script import tir as T


@T.prim_func
def _slices(
    A: T.Buffer((10,), "float32"), B: T.Buffer((10,), "float32"), C: T.Buffer((10,), "uint32")
):
    T.func_attr({"global_symbol": "slices"})
    B[0:5] = A[0:5] + B[5:10]
    B[5:10] = -A[0:10:2]
    C[0:5] = C[0:5] >> 4
    C[5:10] = C[5:10] << T.Broadcast(T.uint32(1), 5)


def test_slices_in_expressions_are_ramp_loads_and_stores():
    first = _slices.body.seq[0]
    assert isinstance(first, tir.BufferStore) and isinstance(first.indices[0], tir.Ramp)
    assert first.indices[0].lanes == 5
    loads = [first.value.a, first.value.b]
    assert all(isinstance(x, tir.BufferLoad) and isinstance(x.indices[0], tir.Ramp) for x in loads)
    strided = _slices.body.seq[1].value.b
    assert strided.indices[0].stride.value == 2


def test_slices_compute_like_numpy():
    f = tvm.build(_slices, target="llvm")
    rng = np.random.default_rng(0)
    a = rng.random(10, dtype="float32")
    b = rng.random(10, dtype="float32")
    c = rng.integers(0, 1 << 30, size=10, dtype="uint32")
    ta, tb, tc = (tvm.nd.array(x) for x in (a, b, c))
    f(ta, tb, tc)
    want_b = b.copy()
    want_b[0:5] = a[0:5] + b[5:10]
    want_b[5:10] = -a[0:10:2]
    want_c = c.copy()
    want_c[0:5] >>= 4
    want_c[5:10] <<= 1
    np.testing.assert_array_equal(tb.numpy(), want_b)
    np.testing.assert_array_equal(tc.numpy(), want_c)


def test_slices_in_reads_stay_regions():
    @T.prim_func
    def copy(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4, 4), "float32")):
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                T.reads(A[vi, 0:4])
                T.writes(B[vi, 0:4])
                for j in range(4):
                    B[vi, j] = A[vi, j]

    block = copy.body.block.body.body.block
    assert isinstance(block.reads[0], tir.BufferRegion)
    assert block.reads[0].region[1].extent.value == 4


def test_slice_of_symbolic_lanes_is_refused():
    src = """
@T.prim_func
def f(A: T.Buffer((16,), "float32"), n: T.int32):
    A[0:n] = A[0:n] + A[0:n]
"""
    with pytest.raises(tvm.error.TVMError, match="constant, positive number of lanes"):
        from_source(src)


def test_attr_with_string_value_parses_as_string_imm_and_round_trips():
    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        with T.attr(0, "pragma_key", "auto"):
            A[0] = T.float32(1)

    assert isinstance(f.body.value, tir.StringImm) and f.body.value.value == "auto"
    tvm.ir.assert_structural_equal(from_source(f.script()), f)


def test_attr_and_let_stmt_as_statements_scope_the_rest_of_the_body():
    @T.prim_func
    def f(A: T.Buffer((4,), "int32"), i: T.int32):
        j = T.int32()
        T.LetStmt(i + 1, var=j)
        T.attr(0, "pragma_key", 1)
        A[0] = j
        A[1] = j

    let = f.body
    assert isinstance(let, tir.LetStmt) and let.var.name == "j"
    assert isinstance(let.body, tir.AttrStmt) and len(let.body.body.seq) == 2
    tvm.ir.assert_structural_equal(from_source(f.script()), f)


def test_storing_a_vector_into_a_scalar_element_is_refused():
    src = """
@T.prim_func
def f(A: T.Buffer((16, 16), "float32")):
    for i, j in T.grid(8, 16):
        A[i, j] = A[i : i + 2, j] + T.float32(1)
"""
    with pytest.raises(SyntaxError, match="value of 2 lanes into 'A' at 1 lanes"):
        from_source(src)
    src_mismatch = src.replace("A[i, j] =", "A[i, 0:4] =")
    with pytest.raises(SyntaxError, match="value of 2 lanes into 'A' at 4 lanes"):
        from_source(src_mismatch)
