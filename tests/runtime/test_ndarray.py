import numpy as np
import pytest

from minitvm.error import ArgumentError, DTypeError, RuntimeError_, ShapeError
from minitvm.runtime import NDArray, cpu, cuda
from minitvm.runtime import ndarray as nd

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "int32", "int64", "uint8", "bool"])
def test_array_round_trips_and_is_aligned(dtype):
    src = (RNG.standard_normal((3, 5)) * 10).astype(dtype)
    a = nd.array(src, cpu(0))
    assert a.shape == (3, 5) and a.dtype == dtype and a.device == cpu(0)
    assert a.data_ptr % 64 == 0 and a.handle == a.data_ptr
    np.testing.assert_array_equal(a.numpy(), src)
    np.testing.assert_array_equal(a.asnumpy(), src)
    assert a.numpy() is not a.numpy()  # a copy each time


def test_array_copies_its_source():
    src = np.arange(6, dtype="float32")
    a = nd.array(src)
    src[0] = 100
    assert a.numpy()[0] == 0


def test_array_accepts_non_contiguous_and_misaligned_numpy():
    base = np.arange(40, dtype="float32")
    view = base[1:].reshape(3, 13)[:, ::2]  # misaligned and strided
    a = nd.array(view)
    assert a.data_ptr % 64 == 0
    np.testing.assert_array_equal(a.numpy(), view)


def test_array_from_lists_ndarrays_and_with_dtype():
    assert nd.array([[1, 2], [3, 4]]).dtype == "int64"
    b = nd.array([1.5, 2.5], dtype="float32")
    assert b.dtype == "float32"
    c = nd.array(b, ctx=cpu(0))
    assert c.data_ptr != b.data_ptr
    np.testing.assert_array_equal(c.numpy(), b.numpy())


def test_empty_shapes_and_dtypes():
    e = nd.empty((2, 3), "int32", cpu(0))
    assert e.shape == (2, 3) and e.dtype == "int32" and e.data_ptr % 64 == 0
    assert nd.empty(4).shape == (4,) and nd.empty(4).dtype == "float32"
    assert nd.empty((0, 3)).shape == (0, 3)


def test_empty_rejects_bad_shapes():
    with pytest.raises(ShapeError, match=r"shape \(2, -1\) has a negative dimension"):
        nd.empty((2, -1))
    with pytest.raises(ShapeError, match="shape must be ints"):
        nd.empty((2, None))


def test_unsupported_numpy_dtype_is_an_error():
    with pytest.raises(DTypeError, match="cannot hold numpy dtype complex64"):
        nd.array(np.zeros(3, dtype="complex64"))


def test_copyfrom_and_copyto():
    a = nd.empty((2, 2))
    src = RNG.standard_normal((2, 2)).astype("float32")
    assert a.copyfrom(src) is a
    np.testing.assert_array_equal(a.numpy(), src)
    b = nd.empty((2, 2))
    a.copyto(b)
    np.testing.assert_array_equal(b.numpy(), src)
    c = a.copyto(cpu(0))
    assert isinstance(c, NDArray) and c.data_ptr != a.data_ptr
    a[:] = np.zeros((2, 2), "float32")
    assert not a.numpy().any()
    a.copyfrom([[1, 2], [3, 4]])
    np.testing.assert_array_equal(a.numpy(), [[1, 2], [3, 4]])


def test_copyfrom_checks_shape_and_dtype():
    a = nd.empty((2, 2))
    with pytest.raises(ShapeError, match=r"source has shape \(3,\), this array has shape \(2, 2\)"):
        a.copyfrom(np.zeros(3, "float32"))
    with pytest.raises(DTypeError, match=r"source NDArray has dtype float64.*convert with"):
        a.copyfrom(nd.array(np.zeros((2, 2))))
    a.copyfrom(np.full((2, 2), 1.5))  # a numpy source of another dtype converts, as in TVM
    np.testing.assert_array_equal(a.numpy(), np.full((2, 2), 1.5, "float32"))
    with pytest.raises(ArgumentError, match="expected an NDArray or a Device"):
        a.copyto("cpu")
    with pytest.raises(ArgumentError, match=r"only whole assignment"):
        a[0] = 1.0


def test_repr_shows_values():
    text = repr(nd.array(np.array([1.0, 2.0], "float32")))
    assert text.startswith("<minitvm.nd.NDArray shape=(2,), cpu(0)>")
    assert "array([1., 2.], dtype=float32)" in text


def test_ndarray_is_not_picklable():
    import pickle

    with pytest.raises(TypeError, match="not picklable by design"):
        pickle.dumps(nd.array([1, 2]))


def test_numpy_reads_ndarray_through_dlpack_zero_copy():
    a = nd.array(np.arange(6, dtype="float32").reshape(2, 3))
    view = np.from_dlpack(a)
    assert view.ctypes.data == a.data_ptr
    view[1, 2] = -1
    assert a.numpy()[1, 2] == -1
    assert a.__dlpack_device__() == (1, 0)
    assert np.asarray(a).ctypes.data == a.data_ptr


def test_from_dlpack_wraps_numpy_zero_copy():
    src = np.arange(8, dtype="int32")
    a = nd.from_dlpack(src)
    assert a.data_ptr == src.ctypes.data and a.dtype == "int32"
    src[3] = 42
    assert a.numpy()[3] == 42
    assert nd.from_dlpack(a) is a


def test_from_dlpack_rejects_non_contiguous():
    with pytest.raises(ShapeError, match=r"not C-contiguous .*np.ascontiguousarray"):
        nd.from_dlpack(np.zeros((4, 4), "float32")[:, ::2])


def test_torch_exchange_is_zero_copy_both_ways():
    torch = pytest.importorskip("torch")
    a = nd.array(np.arange(4, dtype="float32"))
    t = torch.from_dlpack(a)
    assert t.data_ptr() == a.data_ptr
    t[0] = 9
    assert a.numpy()[0] == 9
    src = torch.arange(5, dtype=torch.float64)
    b = nd.from_dlpack(src)
    assert b.data_ptr == src.data_ptr() and b.dtype == "float64"
    c = nd.array(src)  # nd.array copies
    assert c.data_ptr != src.data_ptr()
    np.testing.assert_array_equal(c.numpy(), src.numpy())


def test_storage_on_an_absent_gpu_is_refused():
    if cuda(0).exist:
        pytest.skip("this machine has a CUDA device")
    with pytest.raises(RuntimeError_, match=r"CUDA is not available: libcuda"):
        nd.empty((2,), dev=cuda(0))
    with pytest.raises(RuntimeError_, match=r"CUDA is not available"):
        nd.array(np.zeros(2), cuda(0))
