"""The data sets `minitvm train --data` names: bundled digits, MNIST IDX files, synthetic digits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..error import MiniTVMError
from ..testing import datasets
from .layers import TrainError


@dataclass(frozen=True)
class Dataset:
    """Flat float32 rows in [0, 1] and int64 labels, plus the image shape (C, H, W) of a row."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    image_shape: tuple[int, int, int]
    val_name: str = "validation"

    @property
    def num_classes(self) -> int:
        """1 + the largest label seen (at least 2): the width the model's head needs."""
        labels = [y for y in (self.y_train, self.y_val) if len(y)]
        return max(2, 1 + max(int(np.max(y)) for y in labels)) if labels else 2


def _digits(arg: str | None, seed: int) -> Dataset:
    x, y = datasets.load_digits()
    x_tr, y_tr, x_val, y_val = datasets.train_val_split(x, y, 0.2, seed=seed)
    return Dataset("digits", x_tr, y_tr, x_val, y_val, (1, 8, 8))


def _mnist(arg: str | None, seed: int) -> Dataset:
    if not arg:
        raise TrainError(
            "--data mnist:PATH needs the folder with the four MNIST IDX files after the colon, "
            "e.g. --data mnist:~/data/mnist"
        )
    path = Path(arg).expanduser()
    if not path.exists():
        raise TrainError(f"--data mnist:{arg}: '{path}' does not exist; pass the folder holding "
                         "train-images-idx3-ubyte(.gz) and the other three MNIST files")  # fmt: skip
    x_tr, y_tr, x_te, y_te = datasets.load_mnist(path)
    return Dataset("mnist", x_tr, y_tr, x_te, y_te, (1, 28, 28), "test")


def _synthetic(arg: str | None, seed: int) -> Dataset:
    n = int(arg) if arg else 6000
    if n < 2:
        raise TrainError(f"--data synthetic:N needs N >= 2 training samples, got {arg}")
    x_tr, y_tr = datasets.synthetic_mnist(n, seed=seed)
    x_val, y_val = datasets.synthetic_mnist(max(n // 6, 1), seed=seed + 1)
    return Dataset("synthetic", x_tr, y_tr, x_val, y_val, (1, 28, 28))


# --data NAME[:ARG] -> loader(ARG, seed)
DATASETS: dict[str, Callable[[str | None, int], Dataset]] = {
    "digits": _digits,
    "mnist": _mnist,
    "synthetic": _synthetic,
}


def load_dataset(spec: str, seed: int = 0) -> Dataset:
    """`digits`, `mnist:PATH` (a folder of MNIST IDX files) or `synthetic[:N]`."""
    name, _, arg = spec.partition(":")
    if name not in DATASETS:
        raise TrainError(f"unknown data set {spec!r}; use digits, mnist:PATH or synthetic[:N]")
    if name == "digits" and arg:
        raise TrainError(f"--data digits takes no argument, got {spec!r}")
    try:
        return DATASETS[name](arg or None, seed)
    except ValueError as err:
        if isinstance(err, MiniTVMError):
            raise
        raise TrainError(f"--data {spec!r}: {err}") from err
