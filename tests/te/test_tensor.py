"""te.Tensor: shapes, dtypes, indexing, identity, astype; placeholder errors."""

import numpy as np
import pytest
from minitvm.testing import run_prim_func

from minitvm import te, tir
from minitvm.error import DTypeError, TEError
from minitvm.te.tensor import ProducerLoad, TensorSlice


def test_placeholder_shape_dtype_name():
    A = te.placeholder((3, 4), "float64", name="A")
    assert isinstance(A, te.Tensor)
    assert type(A).__name__ == "Tensor"
    assert A.ndim == 2 and A.dtype == "float64" and A.name == "A"
    assert all(isinstance(d, tir.IntImm) for d in A.shape)
    assert [int(d) for d in A.shape] == [3, 4]
    assert isinstance(A.op, te.PlaceholderOp) and A.op.name == "A"
    assert A.op.input_tensors == []


def test_placeholder_defaults():
    A = te.placeholder((5,))
    assert A.dtype == "float32" and A.name == "placeholder"
    B = te.placeholder(7, name="B")  # a bare int is a 1-D shape
    assert [int(d) for d in B.shape] == [7]


def test_shape_entries_work_in_python_arithmetic():
    A = te.placeholder((3, 4), name="A")
    assert int(A.shape[0]) * 2 == 6
    assert list(range(A.shape[1])) == [0, 1, 2, 3]
    assert int(A.shape[0] + A.shape[1]) == 7
    assert list(range(A.shape[1] // 2)) == [0, 1] and int(A.shape[1] % 3) == 1
    assert A.shape[0] == 3 and A.shape[1] != 3
    assert bool(A.shape[0] == 4) is False
    assert np.zeros(A.shape, dtype=A.dtype).shape == (3, 4)


def test_symbolic_shape_keeps_the_var():
    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    assert A.shape[0] is n
    B = te.compute((A.shape[0], A.shape[1] * 2), lambda i, j: A[i, j // 2], name="B")
    assert B.shape[0] is n and int(B.shape[1]) == 8


def test_indexing_builds_producer_loads():
    A = te.placeholder((3, 4), "float32", name="A")
    i, j = te.var("i"), te.var("j")
    load = A[i, j]
    assert isinstance(load, ProducerLoad)
    assert load.producer == A and load.dtype == "float32"
    assert load.indices[0] is i and load.indices[1] is j
    assert isinstance(A(i, j), ProducerLoad)
    partial = A[i]
    assert isinstance(partial, TensorSlice)
    assert isinstance(partial[j], ProducerLoad)


def test_indexing_errors_name_the_tensor():
    A = te.placeholder((3, 4), name="A")
    i = te.var("i")
    with pytest.raises(TEError, match="tensor 'A' has 2 dimensions but was indexed with 3"):
        A[i, i, i]
    with pytest.raises(TEError, match="tensor 'A' has 2 dimensions but is used with 1 indices"):
        A[i] + 1.0
    with pytest.raises(TEError, match="tensor 'A': index 0 .*float32"):
        A[tir.const(1.5, "float32"), i]
    with pytest.raises(TEError, match="tensor 'A' has 2 dimensions but was called with 1"):
        A(i)


def test_tensor_identity_and_dict_keys():
    A = te.placeholder((3,), name="A")
    B = te.compute((3,), lambda i: A[i] + 1.0, name="B")
    assert B.op.output(0) == B and B.output(0) == B
    assert hash(B.op.output(0)) == hash(B)
    table = {A: "a", B: "b"}
    assert table[B.op.output(0)] == "b" and table[A] == "a"
    assert A != B
    same_name = te.placeholder((3,), name="A")
    assert same_name != A  # different operations, even with the same name


def test_tensor_repr_mentions_name_and_shape():
    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    assert repr(A) == "Tensor(shape=(n, 4), op.name=A, dtype=float32)"


def test_tensor_is_immutable():
    A = te.placeholder((3,), name="A")
    with pytest.raises(AttributeError):
        A.shape = (4,)


def test_astype_makes_a_cast_compute():
    A = te.placeholder((2, 3), "float32", name="A")
    B = A.astype("float64")
    assert B.dtype == "float64" and B.op.input_tensors == [A]
    a = np.arange(6, dtype="float32").reshape(2, 3) / 7
    b = np.zeros((2, 3), "float64")
    run_prim_func(te.create_prim_func([A, B]), a, b)
    np.testing.assert_array_equal(b, a.astype("float64"))


def test_placeholder_unknown_dtype_is_dtype_error():
    with pytest.raises(DTypeError, match="placeholder 'A': unknown dtype 'flaot32'"):
        te.placeholder((3,), "flaot32", name="A")


@pytest.mark.parametrize("bad", [(3, 2.5), (3, "n"), (None,), (te.var("x", "float32"),)])
def test_placeholder_rejects_non_integer_shape(bad):
    with pytest.raises(TEError, match="placeholder 'A': shape entry .* ints or integer"):
        te.placeholder(bad, name="A")


def test_negative_shape_is_rejected():
    with pytest.raises(TEError, match="placeholder 'A': shape entry 0 is negative"):
        te.placeholder((-1, 3), name="A")


def test_arithmetic_on_a_whole_tensor_says_to_index_it():
    # + - * / on whole tensors broadcast (tests/compat/test_classic_tutorials.py); the rest
    # is a slip, and a compute body that returns the resulting tensor says to index it.
    C = te.placeholder((1,), name="C")
    with pytest.raises(TEError, match=r"tensor 'C' is used in arithmetic as a whole; .*C\[i\]"):
        te.compute((1,), lambda i: C % 6, name="D")
    with pytest.raises(TEError, match="compute 'D': fcompute returned the tensor 'T_divide'"):
        te.compute((1,), lambda i: C / 6, name="D")
