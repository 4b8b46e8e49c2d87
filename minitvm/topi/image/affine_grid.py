"""affine_grid: the sampling grid of a 2-D affine transform (Spatial Transformer Networks)."""

from __future__ import annotations

from collections.abc import Sequence

from ... import te
from ...error import TEError
from ...tir.expr import cast as tir_cast
from ...tir.expr import make_const


def affine_grid(data: te.Tensor, target_shape: Sequence[int]) -> te.Tensor:
    """out[n, :, i, j] = data[n] @ (x_j, y_i, 1) for (N, 2, 3) affine matrices, with x and y
    spaced evenly over [-1, 1] (both ends included): shape (N, 2, H, W) for target (H, W)."""
    if len(target_shape) != 2 or min(int(d) for d in target_shape) < 2:
        raise TEError(
            f"topi.image.affine_grid: target_shape {list(target_shape)} must be (H, W), both > 1"
        )
    height, width = (int(d) for d in target_shape)
    dtype = data.dtype
    y_step, x_step = make_const(dtype, 2.0 / (height - 1)), make_const(dtype, 2.0 / (width - 1))
    start = make_const(dtype, -1.0)

    def body(n, dim, i, j):
        y = start + tir_cast(dtype, i) * y_step
        x = start + tir_cast(dtype, j) * x_step
        return data[n, dim, 0] * x + data[n, dim, 1] * y + data[n, dim, 2]

    return te.compute(
        (data.shape[0], 2, height, width), body, name="T_affine_grid", tag="injective"
    )
