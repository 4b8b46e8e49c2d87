"""numpy references of space_to_batch_nd and batch_to_space_nd, written from TensorFlow's
definition: batch index = block offset (row-major over block_shape) * N + n."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np


def _spatial_index(offset: tuple, blocks: list, sizes: list) -> tuple:
    """Strided slices picking positions o, o + b, o + 2b, ... of each padded spatial dim."""
    return tuple(slice(o, o + s * b, b) for o, b, s in zip(offset, blocks, sizes))


def space_to_batch_nd_python(
    data: np.ndarray, block_shape: Any, pad_before: Any, pad_after: Any, pad_value: float = 0
) -> np.ndarray:
    """(N, *S, *R) padded, then each block offset of the spatial dims a new batch group."""
    blocks = [int(b) for b in block_shape]
    m = len(blocks)
    widths = [(0, 0)] + list(zip(pad_before, pad_after)) + [(0, 0)] * (data.ndim - m - 1)
    padded = np.pad(data, widths, constant_values=pad_value)
    sizes = [s // b for s, b in zip(padded.shape[1 : m + 1], blocks)]
    groups = [
        padded[(slice(None), *_spatial_index(offset, blocks, sizes))]
        for offset in itertools.product(*(range(b) for b in blocks))
    ]
    return np.concatenate(groups, axis=0)


def batch_to_space_nd_python(
    data: np.ndarray, block_shape: Any, crop_begin_list: Any, crop_end_list: Any
) -> np.ndarray:
    """The inverse: batch group k fills block offset k of the spatial dims, then crops."""
    blocks = [int(b) for b in block_shape]
    m = len(blocks)
    n = data.shape[0] // int(np.prod(blocks))
    sizes = list(data.shape[1 : m + 1])
    full = np.zeros((n, *[s * b for s, b in zip(sizes, blocks)], *data.shape[m + 1 :]), data.dtype)
    offsets = itertools.product(*(range(b) for b in blocks))
    for k, offset in enumerate(offsets):
        full[(slice(None), *_spatial_index(offset, blocks, sizes))] = data[k * n : (k + 1) * n]
    crop = tuple(
        slice(lo, full.shape[i + 1] - hi)
        for i, (lo, hi) in enumerate(zip(crop_begin_list, crop_end_list))
    )
    return full[(slice(None), *crop)]
