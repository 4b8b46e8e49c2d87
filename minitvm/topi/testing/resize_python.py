"""numpy references of image resize in 1, 2 and 3 spatial dims (`topi.testing.resize2d_python`).

Resizing is separable: each spatial axis gets an (out, in) interpolation matrix, built from
the output coordinate's source position, and the data is contracted with each matrix in
turn. Positions outside the input clamp to the edge (nearest, linear, cubic), except that
cubic with `exclude_outside` drops the outside taps and renormalises the rest (ONNX Resize).

>>> out = topi.testing.resize2d_python(x, (2.0, 2.0), "NCHW", "linear", "half_pixel")
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...error import ArgumentError

# output position x, input size i, output size o -> source coordinate (ONNX Resize's formulas)
COORDINATE_MODES: dict[str, Callable[[np.ndarray, int, int], np.ndarray]] = {
    "half_pixel": lambda x, i, o: (x + 0.5) * (i / o) - 0.5,
    "pytorch_half_pixel": lambda x, i, o: (x + 0.5) * (i / o) - 0.5 if o > 1 else 0.0 * x,
    "align_corners": lambda x, i, o: x * ((i - 1) / (o - 1)) if o > 1 else 0.0 * x,
    "asymmetric": lambda x, i, o: x * (i / o),
    "tf_half_pixel_for_nn": lambda x, i, o: (x + 0.5) * (i / o),
}

ROUNDING_METHODS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "round": lambda v: np.floor(v + 0.5),  # ties go up, as round_prefer_ceil
    "round_prefer_ceil": lambda v: np.floor(v + 0.5),
    "round_prefer_floor": lambda v: np.ceil(v - 0.5),
    "floor": np.floor,
    "ceil": np.ceil,
}

METHODS = ("nearest_neighbor", "linear", "cubic")

# layout -> (transpose to channels-first, back); spatial dims come after N and C
_LAYOUTS: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "NCW": ((0, 1, 2), (0, 1, 2)),
    "NWC": ((0, 2, 1), (0, 2, 1)),
    "NCHW": ((0, 1, 2, 3), (0, 1, 2, 3)),
    "NHWC": ((0, 3, 1, 2), (0, 2, 3, 1)),
    "NCDHW": ((0, 1, 2, 3, 4), (0, 1, 2, 3, 4)),
    "NDHWC": ((0, 4, 1, 2, 3), (0, 2, 3, 4, 1)),
}


def _cubic_weights(t: np.ndarray, alpha: float) -> np.ndarray:
    """Keys' cubic convolution weights of the taps at offsets -1, 0, 1, 2 from floor(x)."""
    dist = np.stack([t + 1, t, 1 - t, 2 - t], axis=-1)
    d = np.abs(dist)
    near = ((alpha + 2) * d - (alpha + 3)) * d * d + 1
    far = ((alpha * d - 5 * alpha) * d + 8 * alpha) * d - 4 * alpha
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def interpolation_matrix(
    in_size: int,
    out_size: int,
    method: str,
    coordinate_transformation_mode: str,
    rounding_method: str | None = None,
    cubic_alpha: float = -0.5,
    cubic_exclude: int = 0,
) -> np.ndarray:
    """The (out_size, in_size) matrix that resamples one axis."""
    x = np.arange(out_size, dtype=np.float64)
    src = np.asarray(COORDINATE_MODES[coordinate_transformation_mode](x, in_size, out_size))
    mat = np.zeros((out_size, in_size))
    rows = np.arange(out_size)
    if method == "nearest_neighbor":
        if rounding_method is None:  # TVM's reference: nearest rounds only for align_corners
            rounding_method = (
                "round" if coordinate_transformation_mode == "align_corners" else "floor"
            )
        idx = ROUNDING_METHODS[rounding_method](src).astype(np.int64)
        mat[rows, np.clip(idx, 0, in_size - 1)] = 1.0
        return mat
    base = np.floor(src)
    frac = src - base
    if method == "linear":
        taps, weights = np.stack([base, base + 1], -1), np.stack([1 - frac, frac], -1)
    else:
        taps = base[:, None] + np.arange(-1, 3)
        weights = _cubic_weights(frac, cubic_alpha)
        if cubic_exclude:
            weights = np.where((taps < 0) | (taps >= in_size), 0.0, weights)
            weights = weights / weights.sum(-1, keepdims=True)
    cols = np.clip(taps.astype(np.int64), 0, in_size - 1)
    for k in range(taps.shape[1]):
        np.add.at(mat, (rows, cols[:, k]), weights[:, k])
    return mat


def _check(layout: str, method: str, mode: str, rounding: str | None, ndim: int) -> None:
    def bad(what: str, value: Any, choices: Sequence[str]) -> ArgumentError:
        return ArgumentError(
            f"topi.testing.resize{ndim}d_python: {what} {value!r} is not supported; "
            f"use one of {tuple(choices)}"
        )

    layouts = [lay for lay in _LAYOUTS if len(lay) == ndim + 2]
    if layout not in layouts:
        raise bad("layout", layout, layouts)
    if method not in METHODS:
        raise bad("method", method, METHODS)
    if mode not in COORDINATE_MODES:
        raise bad("coordinate_transformation_mode", mode, tuple(COORDINATE_MODES))
    if rounding is not None and rounding not in ROUNDING_METHODS:
        raise bad("rounding_method", rounding, tuple(ROUNDING_METHODS))


def _resize_nd(
    data: np.ndarray,
    scale: Any,
    layout: str,
    method: str,
    coordinate_transformation_mode: str,
    rounding_method: str | None,
    cubic_alpha: float,
    cubic_exclude: int,
    ndim: int,
) -> np.ndarray:
    _check(layout, method, coordinate_transformation_mode, rounding_method, ndim)
    data = np.asarray(data)
    if data.ndim != ndim + 2:
        raise ArgumentError(
            f"topi.testing.resize{ndim}d_python: data has shape {data.shape}, expected "
            f"{ndim + 2} dims for layout {layout}"
        )
    scale = (scale,) * ndim if np.isscalar(scale) else tuple(scale)
    if len(scale) != ndim or any(float(s) <= 0 for s in scale):
        raise ArgumentError(
            f"topi.testing.resize{ndim}d_python: scale {scale} must be {ndim} positive numbers"
        )
    to_cf, from_cf = _LAYOUTS[layout]
    out = data.transpose(to_cf).astype(np.float64)
    for axis, s in enumerate(scale):
        in_size = out.shape[2 + axis]
        out_size = round(in_size * float(s))
        if out_size < 1:
            raise ArgumentError(
                f"topi.testing.resize{ndim}d_python: scale {s} makes spatial dim {axis} "
                f"(size {in_size}) empty"
            )
        mat = interpolation_matrix(
            in_size, out_size, method, coordinate_transformation_mode, rounding_method,
            cubic_alpha, cubic_exclude,
        )  # fmt: skip
        out = np.moveaxis(np.tensordot(out, mat, axes=([2 + axis], [1])), -1, 2 + axis)
    return out.transpose(from_cf).astype(data.dtype)


def _resize_python(ndim: int, default_layout: str, doc: str) -> Callable[..., np.ndarray]:
    """TVM's `resize{ndim}d_python`: the same signature for 1, 2 and 3 spatial dims."""

    def resize(
        data: np.ndarray,
        scale: Any,
        layout: str = default_layout,
        method: str = "nearest_neighbor",
        coordinate_transformation_mode: str = "align_corners",
        rounding_method: str | None = None,
        cubic_alpha: float = -0.5,
        cubic_exclude: int = 0,
    ) -> np.ndarray:
        return _resize_nd(
            data, scale, layout, method, coordinate_transformation_mode, rounding_method,
            cubic_alpha, cubic_exclude, ndim,
        )  # fmt: skip

    resize.__name__ = resize.__qualname__ = f"resize{ndim}d_python"
    resize.__doc__ = doc
    return resize


resize1d_python = _resize_python(
    1,
    "NCW",
    """Resize the W dim of NCW/NWC `data` by `scale` (a 1-tuple); out size round(w * scale).
    rounding_method None rounds half up for align_corners and floors otherwise (as TVM).""",
)
resize2d_python = _resize_python(
    2,
    "NCHW",
    "Resize H, W of NCHW/NHWC `data` by `scale` = (sh, sw): out size round(size * scale).",
)
resize3d_python = _resize_python(
    3, "NCDHW", "Resize D, H, W of NCDHW/NDHWC `data` by `scale` = (sd, sh, sw)."
)


__all__ = ["resize1d_python", "resize2d_python", "resize3d_python"]
