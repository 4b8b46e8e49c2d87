"""numpy reference of affine_grid."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def affine_grid_python(data: np.ndarray, target_shape: Sequence[int]) -> np.ndarray:
    """(N, 2, H, W): each (N, 2, 3) matrix applied to the points (x, y, 1), x and y from
    linspace(-1, 1) over W and H."""
    height, width = target_shape
    y, x = np.meshgrid(np.linspace(-1, 1, height), np.linspace(-1, 1, width), indexing="ij")
    points = np.stack([x, y, np.ones_like(x)]).reshape(3, -1)
    return (data @ points).reshape(data.shape[0], 2, height, width).astype(data.dtype)
