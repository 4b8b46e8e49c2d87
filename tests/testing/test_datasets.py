import gzip

import numpy as np
import pytest

from minitvm.error import MiniTVMError
from minitvm.testing import datasets as D


def _idx_bytes(array: np.ndarray, type_byte: int = 0x08) -> bytes:
    header = bytes([0, 0, type_byte, array.ndim]) + np.asarray(array.shape, ">u4").tobytes()
    return header + array.tobytes()


def _write(path, data: bytes, gz: bool):
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


@pytest.mark.parametrize("gz", [False, True])
def test_load_mnist_idx_reads_images_and_labels(tmp_path, gz):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (5, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, 5, dtype=np.uint8)
    # gzip is detected by magic, so the gzipped file deliberately has no .gz suffix
    img = _write(tmp_path / "imgs", _idx_bytes(images), gz)
    lab = _write(tmp_path / "labs", _idx_bytes(labels), gz)
    np.testing.assert_array_equal(D.load_mnist_idx(img), images)
    np.testing.assert_array_equal(D.load_mnist_idx(lab), labels)


def test_load_mnist_idx_big_endian_types_are_converted(tmp_path):
    values = (np.arange(6).reshape(2, 3) - 3).astype(">i4")
    path = _write(tmp_path / "ints", _idx_bytes(values, 0x0C), False)
    got = D.load_mnist_idx(path)
    assert got.dtype == np.int32 and got.dtype.isnative
    np.testing.assert_array_equal(got, values)


def test_load_mnist_idx_rejects_wrong_magic(tmp_path):
    path = _write(tmp_path / "bad-idx", b"\x12\x34\x08\x01" + bytes(8), False)
    with pytest.raises(
        D.DatasetError, match=r"'.*bad-idx' is not an IDX file.*magic number is 12340801"
    ):
        D.load_mnist_idx(path)


def test_load_mnist_idx_rejects_truncated_data(tmp_path):
    data = _idx_bytes(np.zeros((4, 28, 28), np.uint8))[:-10]
    path = _write(tmp_path / "short-idx3-ubyte.gz", data, True)
    with pytest.raises(D.DatasetError, match=r"short-idx3-ubyte.gz' is truncated.*\(4, 28, 28\)"):
        D.load_mnist_idx(path)


def test_load_mnist_idx_rejects_truncated_header(tmp_path):
    path = _write(tmp_path / "hdr", bytes([0, 0, 8, 3, 0, 0]), False)
    with pytest.raises(D.DatasetError, match=r"'.*hdr' is truncated: its header declares 3"):
        D.load_mnist_idx(path)


def test_load_mnist_idx_rejects_broken_gzip(tmp_path):
    path = _write(tmp_path / "broken.gz", gzip.compress(b"x" * 100)[:15], False)
    with pytest.raises(D.DatasetError, match=r"broken.gz' starts like a gzip file"):
        D.load_mnist_idx(path)


def test_load_mnist_idx_missing_file_names_it(tmp_path):
    with pytest.raises(D.DatasetError, match=r"cannot read '.*nothere'"):
        D.load_mnist_idx(tmp_path / "nothere")


def _fake_mnist(folder, n_train=6, n_test=4, gz=True):
    rng = np.random.default_rng(1)
    parts = {}
    for split, n, stem in (("train", n_train, "train"), ("test", n_test, "t10k")):
        images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, n, dtype=np.uint8)
        suffix = ".gz" if gz else ""
        _write(folder / f"{stem}-images-idx3-ubyte{suffix}", _idx_bytes(images), gz)
        _write(folder / f"{stem}-labels-idx1-ubyte{suffix}", _idx_bytes(labels), gz)
        parts[split] = (images, labels)
    return parts


@pytest.mark.parametrize("gz", [False, True])
def test_load_mnist_folder(tmp_path, gz):
    parts = _fake_mnist(tmp_path, gz=gz)
    x_train, y_train, x_test, y_test = D.load_mnist(tmp_path)
    assert x_train.shape == (6, 784) and x_test.shape == (4, 784)
    assert x_train.dtype == np.float32 and y_train.dtype == np.int64
    assert 0.0 <= x_train.min() and x_train.max() <= 1.0
    np.testing.assert_allclose(x_train, parts["train"][0].reshape(6, -1) / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(y_test, parts["test"][1])


def test_load_mnist_missing_file_says_which(tmp_path):
    _fake_mnist(tmp_path)
    (tmp_path / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(D.DatasetError, match=r"no test labels file in .*t10k-labels-idx1-ubyte"):
        D.load_mnist(tmp_path)


def test_load_mnist_not_a_folder(tmp_path):
    with pytest.raises(D.DatasetError, match=r"is not a folder"):
        D.load_mnist(tmp_path / "missing")


def test_load_mnist_refuses_pickle_without_opt_in(tmp_path):
    path = tmp_path / "mnist.pkl.gz"
    path.write_bytes(gzip.compress(b"not even read"))
    with pytest.raises(MiniTVMError, match=r"mnist.pkl.gz' is a pickle.*allow_pickle=True"):
        D.load_mnist(path)


def test_load_mnist_pickle_with_opt_in(tmp_path):
    import pickle

    rng = np.random.default_rng(2)
    sets = [(rng.random((n, 784), dtype=np.float32), rng.integers(0, 10, n)) for n in (5, 3, 4)]
    path = tmp_path / "mnist.pkl.gz"
    with gzip.open(path, "wb") as f:
        pickle.dump(tuple(sets), f)
    x_train, y_train, x_test, _ = D.load_mnist(path, allow_pickle=True)
    assert x_train.shape == (8, 784) and x_test.shape == (4, 784)
    np.testing.assert_array_equal(y_train, np.concatenate([sets[0][1], sets[1][1]]))


def test_load_digits_shape_range_labels():
    x, y = D.load_digits()
    assert x.shape == (1797, 64) and x.dtype == np.float32
    assert x.min() == 0.0 and x.max() == 1.0
    assert y.dtype == np.int64 and set(np.unique(y)) == set(range(10))


def test_train_val_split_is_deterministic_and_disjoint():
    x, y = D.load_digits()
    a = D.train_val_split(x, y, val_fraction=0.2, seed=3)
    b = D.train_val_split(x, y, val_fraction=0.2, seed=3)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    x_tr, _, x_val, _ = a
    assert len(x_val) == round(0.2 * 1797) and len(x_tr) + len(x_val) == 1797
    rows = {r.tobytes() for r in x_tr} & {r.tobytes() for r in x_val}
    assert len(rows) < 5  # only genuinely duplicated images may appear in both


def test_train_val_split_errors():
    with pytest.raises(D.DatasetError, match=r"val_fraction must be between 0 and 1"):
        D.train_val_split(np.zeros((4, 2)), np.zeros(4), val_fraction=1.0)
    with pytest.raises(D.DatasetError, match=r"x has 4 samples but y has 3"):
        D.train_val_split(np.zeros((4, 2)), np.zeros(3))


def test_synthetic_mnist_deterministic_and_shaped():
    x1, y1 = D.synthetic_mnist(64, seed=5)
    x2, y2 = D.synthetic_mnist(64, seed=5)
    x3, _ = D.synthetic_mnist(64, seed=6)
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_array_equal(y1, y2)
    assert not np.array_equal(x1, x3)
    assert x1.shape == (64, 784) and x1.dtype == np.float32 and y1.dtype == np.int64
    assert 0.0 <= x1.min() and x1.max() <= 1.0 and y1.max() < 10


def test_synthetic_mnist_is_learnable():
    x, y = D.synthetic_mnist(600, seed=0)
    w = np.zeros((784, 10), np.float32)

    def loss_and_grad(xb, yb):
        z = xb @ w
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        return -np.log(p[np.arange(len(yb)), yb]).mean(), xb.T @ (p - D.one_hot(yb)) / len(yb)

    first, _ = loss_and_grad(x, y)
    for xb, yb in D.iterate_minibatches(x, y, 100, seed=0):
        w -= 0.5 * loss_and_grad(xb, yb)[1]
    last, _ = loss_and_grad(x, y)
    assert last < 0.5 * first
    x_test, y_test = D.synthetic_mnist(200, seed=1)
    assert ((x_test @ w).argmax(1) == y_test).mean() > 0.8


def test_one_hot():
    np.testing.assert_array_equal(D.one_hot(np.array([2, 0]), 3), [[0, 0, 1], [1, 0, 0]])
    with pytest.raises(D.DatasetError, match=r"labels in \[0, 3\).*values 0\.\.3"):
        D.one_hot(np.array([0, 3]), 3)


def test_iterate_minibatches_covers_every_sample_once():
    x = np.arange(10, dtype=np.float32)[:, None]
    y = np.arange(10)
    batches = list(D.iterate_minibatches(x, y, 4, seed=1))
    assert [len(b[1]) for b in batches] == [4, 4, 2]
    assert sorted(np.concatenate([b[1] for b in batches])) == list(range(10))
    for xb, yb in batches:
        np.testing.assert_array_equal(xb[:, 0], yb)
    again = list(D.iterate_minibatches(x, y, 4, seed=1))
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(batches, again))
    in_order = [b[1] for b in D.iterate_minibatches(x, y, 4, shuffle=False, drop_last=True)]
    assert [list(b) for b in in_order] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    with pytest.raises(D.DatasetError, match=r"batch_size must be positive, got 0"):
        next(D.iterate_minibatches(x, y, 0))


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_load_mnist_pickle_of_any_protocol_loads_through_the_allow_list(tmp_path, protocol):
    import pickle

    rng = np.random.default_rng(protocol)
    sets = [(rng.random((n, 784)).astype(np.float32), rng.integers(0, 10, n)) for n in (2, 1, 3)]
    path = tmp_path / "mnist.pkl"
    path.write_bytes(pickle.dumps(tuple(sets), protocol=protocol))
    x_train, _, x_test, y_test = D.load_mnist(path, allow_pickle=True)
    np.testing.assert_array_equal(x_test, sets[2][0])
    np.testing.assert_array_equal(y_test, sets[2][1])
    assert x_train.shape == (3, 784)


class _RunsCode:
    """A pickle payload that would create a file when unpickled by an unrestricted loader."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


def test_load_mnist_pickle_opt_in_still_refuses_code(tmp_path):
    import pickle

    marker = tmp_path / "ran"
    path = tmp_path / "mnist.pkl.gz"
    with gzip.open(path, "wb") as f:
        pickle.dump(((_RunsCode(marker), 1), (2, 3), (4, 5)), f)
    with pytest.raises(D.DatasetError, match=r"asks to load (posix|os)\.system"):
        D.load_mnist(path, allow_pickle=True)
    assert not marker.exists()


@pytest.mark.parametrize(
    "payload", [b"", b"\x80\x04K\x01.", b"garbage that is no pickle", b"\x80\x02(((((((("]
)
def test_load_mnist_damaged_pickle_is_a_dataset_error(tmp_path, payload):
    path = tmp_path / "mnist.pkl"
    path.write_bytes(payload)
    with pytest.raises(D.DatasetError, match="mnist.pkl"):
        D.load_mnist(path, allow_pickle=True)
