"""Single TVM names with TVM's semantics, each checked against numpy or TVM's documented behaviour."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, topi
from minitvm.error import DTypeError, ShapeError, TEError


def test_copyfrom_converts_numpy_sources_to_the_array_dtype():
    a = tvm.nd.empty((2, 3), "float32")
    a.copyfrom(np.arange(6, dtype="float64").reshape(2, 3) / 4)
    np.testing.assert_array_equal(a.numpy(), np.arange(6, dtype="float32").reshape(2, 3) / 4)
    b = tvm.nd.empty((3,), "int32")
    b.copyfrom(np.array([1.7, -2.2, 3.0]))  # C-style truncation, as np.asarray(x, dtype) does
    np.testing.assert_array_equal(b.numpy(), [1, -2, 3])


def test_copyfrom_still_checks_shape_and_ndarray_dtype():
    a = tvm.nd.empty((2, 2), "float32")
    with pytest.raises(ShapeError, match=r"source has shape \(3,\), this array has shape \(2, 2\)"):
        a.copyfrom(np.zeros(3))
    with pytest.raises(DTypeError, match=r"source NDArray has dtype float64, this array has dtype "
                                         r"float32; convert with tvm.nd.array"):
        a.copyfrom(tvm.nd.array(np.zeros((2, 2))))


def test_topi_broadcast_to_matches_numpy():
    A = te.placeholder((3, 1), "float32", name="A")
    C = topi.broadcast_to(A, (2, 3, 4))
    assert C.op.tag == "broadcast"
    f = tvm.build(te.create_prim_func([A, C]), target="llvm")
    x = np.random.default_rng(0).standard_normal((3, 1)).astype("float32")
    out = tvm.nd.empty((2, 3, 4), "float32")
    f(tvm.nd.array(x), out)
    np.testing.assert_array_equal(out.numpy(), np.broadcast_to(x, (2, 3, 4)))


def test_topi_broadcast_to_rejects_a_shape_numpy_rejects():
    A = te.placeholder((3, 2), "float32", name="A")
    with pytest.raises(TEError, match=r"broadcast_to"):
        topi.broadcast_to(A, (3, 4))
    with pytest.raises(TEError, match=r"cannot broadcast A of shape \(3, 2\) to \(2,\)"):
        topi.broadcast_to(A, (2,))
