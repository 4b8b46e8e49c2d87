"""Data for training examples: MNIST IDX files, the bundled 8x8 digits, synthetic MNIST.

Every loader returns float32 features in [0, 1] (one row per sample) and int64 labels.

>>> x, y = load_digits(); x_tr, y_tr, x_val, y_val = train_val_split(x, y)
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..error import TVMError

__all__ = [
    "DatasetError",
    "iterate_minibatches",
    "load_digits",
    "load_mnist",
    "load_mnist_idx",
    "one_hot",
    "synthetic_mnist",
    "train_val_split",
]

_DATA_DIR = Path(__file__).resolve().parent / "data"
_GZIP_MAGIC = b"\x1f\x8b"
# IDX type byte -> big-endian numpy dtype (the format's own table).
_IDX_DTYPES = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
# (split, kind) -> accepted file names: the official ones, and the dotted spelling some
# mirrors use; each plain or gzipped.
_MNIST_FILES = {
    ("train", "images"): ("train-images-idx3-ubyte", "train-images.idx3-ubyte"),
    ("train", "labels"): ("train-labels-idx1-ubyte", "train-labels.idx1-ubyte"),
    ("test", "images"): ("t10k-images-idx3-ubyte", "t10k-images.idx3-ubyte"),
    ("test", "labels"): ("t10k-labels-idx1-ubyte", "t10k-labels.idx1-ubyte"),
}
_PICKLE_SUFFIXES = (".pkl", ".pkl.gz", ".pickle")
MNIST_FEATURES = 28 * 28
MNIST_CLASSES = 10


class DatasetError(TVMError, ValueError):
    """A data file is missing, malformed or of a kind that needs an explicit opt-in."""


# ---------------------------------------------------------------------- MNIST
def _read_bytes(path: Path) -> bytes:
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise DatasetError(f"cannot read '{path}': {err.strerror or err}") from err
    if raw[:2] != _GZIP_MAGIC:
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError) as err:
        raise DatasetError(
            f"'{path}' starts like a gzip file but does not decompress ({err}); "
            "the download is probably incomplete"
        ) from err


def load_mnist_idx(path: str | os.PathLike) -> np.ndarray:
    """The array stored in one IDX file (e.g. `train-images-idx3-ubyte`), gzipped or not.

    Gzip is detected by its magic bytes, not by the file name. Returns the stored dtype in
    native byte order and the stored shape (images (n, 28, 28), labels (n,)).
    """
    path = Path(path)
    data = _read_bytes(path)
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_DTYPES:
        raise DatasetError(
            f"'{path}' is not an IDX file: its magic number is {data[:4].hex() or 'missing'}, "
            "expected 0000 followed by a type byte (08 for ubyte) and the number of dims; "
            "pass one of MNIST's *-idx3-ubyte / *-idx1-ubyte files"
        )
    dtype, ndim = _IDX_DTYPES[data[2]], data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise DatasetError(
            f"'{path}' is truncated: its header declares {ndim} dimensions but the file "
            f"has only {len(data)} bytes"
        )
    shape = tuple(int(d) for d in np.frombuffer(data, dtype=">u4", count=ndim, offset=4))
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(data) - header != expected:
        raise DatasetError(
            f"'{path}' is truncated or has trailing data: shape {shape} of {dtype.name} needs "
            f"{expected} data bytes, the file holds {len(data) - header}; download it again"
        )
    array = np.frombuffer(data, dtype=dtype, offset=header).reshape(shape)
    return array.astype(dtype.type)  # native byte order


def _find_mnist_file(folder: Path, split: str, kind: str) -> Path:
    for stem in _MNIST_FILES[(split, kind)]:
        for name in (stem, stem + ".gz"):
            if (folder / name).is_file():
                return folder / name
    raise DatasetError(
        f"load_mnist: no {split} {kind} file in '{folder}'; expected "
        f"'{_MNIST_FILES[(split, kind)][0]}' or '{_MNIST_FILES[(split, kind)][0]}.gz' "
        "(the files from the MNIST site)"
    )


def _mnist_pair(folder: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    images_path = _find_mnist_file(folder, split, "images")
    labels_path = _find_mnist_file(folder, split, "labels")
    images, labels = load_mnist_idx(images_path), load_mnist_idx(labels_path)
    if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
        raise DatasetError(
            f"load_mnist: '{images_path}' has shape {images.shape} and '{labels_path}' has "
            f"shape {labels.shape}; expected (n, rows, cols) images and (n,) labels"
        )
    x = images.reshape(len(images), -1).astype(np.float32) / np.float32(255.0)
    return x, labels.astype(np.int64)


# What an MNIST pickle (tuples of numpy arrays, Python 2 or 3) may name; anything else a pickle
# asks for (os.system, builtins.eval, ...) is refused before it is looked up, so even the
# allow_pickle opt-in cannot run code from the file.
_PICKLE_ALLOWED = frozenset(
    {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy.core.numeric", "_frombuffer"),  # protocol 5's out-of-band buffers
        ("numpy._core.numeric", "_frombuffer"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("_codecs", "encode"),  # how protocol 2 spells bytes
    }
)


def _restricted_unpickler(file, path: Path):
    import pickle  # only reached with allow_pickle=True

    class Unpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str):
            if (module, name) not in _PICKLE_ALLOWED:
                raise DatasetError(
                    f"load_mnist: '{path}' asks to load {module}.{name}, which an MNIST pickle "
                    "(tuples of numpy arrays) never needs; refusing it (it could run code)"
                )
            return super().find_class(module, name)

    return Unpickler(file, encoding="latin1")


def _load_mnist_pickle(path: Path) -> tuple[np.ndarray, ...]:
    import pickle

    opener = gzip.open if _read_prefix(path) == _GZIP_MAGIC else open
    try:
        with opener(path, "rb") as f:
            data = _restricted_unpickler(f, path).load()
        (x_tr, y_tr), (x_va, y_va), (x_te, y_te) = data
        arrays = [np.asarray(a) for a in (x_tr, y_tr, x_va, y_va, x_te, y_te)]
    except DatasetError:
        raise
    except (pickle.UnpicklingError, EOFError, OSError, ValueError, TypeError, AttributeError,
            IndexError, KeyError, MemoryError, RecursionError) as err:  # fmt: skip
        raise DatasetError(
            f"load_mnist: '{path}' is not an MNIST pickle (three (images, labels) pairs of "
            f"arrays): {type(err).__name__}: {err}"
        ) from err
    x_tr, y_tr, x_va, y_va, x_te, y_te = arrays
    if any(x.ndim != 2 or len(x) != len(y) for x, y in ((x_tr, y_tr), (x_va, y_va), (x_te, y_te))):
        raise DatasetError(
            f"load_mnist: '{path}' holds arrays of shapes {[a.shape for a in arrays]}; expected "
            "(n, 784) images with (n,) labels for train, validation and test"
        )
    x_train = np.concatenate([x_tr, x_va]).astype(np.float32)
    y_train = np.concatenate([y_tr, y_va]).astype(np.int64)
    return x_train, y_train, x_te.astype(np.float32), y_te.astype(np.int64)


def _read_prefix(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.read(2)


def load_mnist(
    path_dir: str | os.PathLike, allow_pickle: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, y_train, x_test, y_test) from a folder holding the four MNIST IDX files.

    x is float32 in [0, 1] of shape (n, 784), y int64. The classic dlsys `mnist.pkl.gz` is
    read only with `allow_pickle=True`, through an unpickler that admits only numpy arrays and
    tuples (so a hostile pickle is refused, not run); its training and
    validation parts are joined into the 60 000-sample training set.
    """
    path = Path(path_dir)
    if path.name.endswith(_PICKLE_SUFFIXES):
        if not allow_pickle:
            raise DatasetError(
                f"load_mnist: '{path}' is a pickle; loading it can run arbitrary code from the "
                "file, so it needs an explicit opt-in: pass allow_pickle=True if you trust it, "
                "or point load_mnist at a folder with the MNIST IDX files"
            )
        if not path.is_file():
            raise DatasetError(f"load_mnist: '{path}' does not exist")
        return _load_mnist_pickle(path)
    if not path.is_dir():
        raise DatasetError(
            f"load_mnist: '{path}' is not a folder; pass the folder that holds "
            "train-images-idx3-ubyte(.gz) and the other three MNIST files"
        )
    x_train, y_train = _mnist_pair(path, "train")
    x_test, y_test = _mnist_pair(path, "test")
    return x_train, y_train, x_test, y_test


# ---------------------------------------------------------------------- bundled digits
def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The bundled UCI 8x8 handwritten digits: x (1797, 64) float32 in [0, 1], y (1797,) int64.

    See minitvm/testing/data/DIGITS_LICENSE.txt for the source and licence (CC BY 4.0).
    """
    with np.load(_DATA_DIR / "digits.npz", allow_pickle=False) as data:
        images, labels = data["images"], data["labels"]
    x = images.reshape(len(images), -1).astype(np.float32) / np.float32(16.0)
    return x, labels.astype(np.int64)


def train_val_split(
    x: np.ndarray, y: np.ndarray, val_fraction: float = 0.2, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, y_train, x_val, y_val): a seeded random split with `val_fraction` held out."""
    if len(x) != len(y):
        raise DatasetError(f"train_val_split: x has {len(x)} samples but y has {len(y)}")
    if not 0.0 < val_fraction < 1.0:
        raise DatasetError(
            f"train_val_split: val_fraction must be between 0 and 1 (exclusive), got {val_fraction}"
        )
    order = np.random.default_rng(seed).permutation(len(x))
    n_val = max(1, round(len(x) * val_fraction))
    val, train = order[:n_val], order[n_val:]
    return x[train], y[train], x[val], y[val]


# ---------------------------------------------------------------------- synthetic data
# Class prototypes are fixed (independent of `seed`) so that sets drawn with different seeds
# come from the same distribution: train on seed 0, test on seed 1.
_PROTOTYPE_SEED = 20180101


def synthetic_mnist(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """n MNIST-shaped samples: x (n, 784) float32 in [0, 1], y (n,) int64 in 0..9.

    Each class has its own random stroke pattern; a sample is its class pattern plus noise,
    so the classes are learnable (a linear model separates them well).
    """
    if n < 0:
        raise DatasetError(f"synthetic_mnist: n must be non-negative, got {n}")
    protos = np.random.default_rng(_PROTOTYPE_SEED).random((MNIST_CLASSES, MNIST_FEATURES)) < 0.2
    rng = np.random.default_rng(seed)
    y = rng.integers(0, MNIST_CLASSES, n)
    noise = rng.random((n, MNIST_FEATURES), dtype=np.float32)
    x = np.clip(0.6 * protos[y] + 0.5 * noise - 0.1, 0.0, 1.0).astype(np.float32)
    return x, y.astype(np.int64)


# ---------------------------------------------------------------------- batching
def one_hot(y: np.ndarray, num_classes: int = MNIST_CLASSES) -> np.ndarray:
    """(n, num_classes) float32 with a 1 in column y[i] of row i."""
    y = np.asarray(y)
    if y.ndim != 1 or (y.size and (y.min() < 0 or y.max() >= num_classes)):
        raise DatasetError(
            f"one_hot: expected 1-D integer labels in [0, {num_classes}), got shape {y.shape}"
            + (f" with values {y.min()}..{y.max()}" if y.size else "")
        )
    out = np.zeros((len(y), num_classes), dtype=np.float32)
    out[np.arange(len(y)), y.astype(np.int64)] = 1.0
    return out


def iterate_minibatches(
    x: np.ndarray,
    y: np.ndarray,
    batch_size: int,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield (x_batch, y_batch) covering every sample once, in a seeded order when shuffled.

    The last batch is shorter when batch_size does not divide len(x), unless drop_last.
    """
    if len(x) != len(y):
        raise DatasetError(f"iterate_minibatches: x has {len(x)} samples but y has {len(y)}")
    if batch_size <= 0:
        raise DatasetError(f"iterate_minibatches: batch_size must be positive, got {batch_size}")
    order = np.random.default_rng(seed).permutation(len(x)) if shuffle else np.arange(len(x))
    stop = len(x) - len(x) % batch_size if drop_last else len(x)
    for start in range(0, stop, batch_size):
        idx = order[start : start + batch_size]
        yield x[idx], y[idx]
