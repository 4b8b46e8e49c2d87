"""numpy reference of crop_and_resize (TensorFlow's definition, computed in float32)."""

from __future__ import annotations

from typing import Any

import numpy as np


def _coords(start: np.float32, end: np.float32, size: int, crop: int) -> np.ndarray:
    last = np.float32(size - 1)
    if crop == 1:
        return np.array([np.float32(0.5) * (start + end) * last], "float32")
    step = (end - start) * last / np.float32(crop - 1)
    return (start * last + np.arange(crop, dtype="float32") * step).astype("float32")


def _resample(img: np.ndarray, ys: np.ndarray, xs: np.ndarray, method: str) -> np.ndarray:
    """img (H, W, C) sampled at rows ys and columns xs (both inside the image)."""
    if method == "nearest_neighbor":
        return img[np.round(ys).astype(int)][:, np.round(xs).astype(int)]
    y0, x0 = np.floor(ys), np.floor(xs)
    y1, x1 = np.ceil(ys).astype(int), np.ceil(xs).astype(int)
    dy, dx = (ys - y0)[:, None, None], (xs - x0)[None, :, None]
    y0, x0 = y0.astype(int), x0.astype(int)
    top = img[y0][:, x0] + (img[y0][:, x1] - img[y0][:, x0]) * dx
    bottom = img[y1][:, x0] + (img[y1][:, x1] - img[y1][:, x0]) * dx
    return top + (bottom - top) * dy


def crop_and_resize_python(
    image: np.ndarray,
    boxes: np.ndarray,
    box_indices: np.ndarray,
    crop_size: Any,
    layout: str,
    method: str = "bilinear",
    extrapolation_value: float = 0,
) -> np.ndarray:
    """Box b = (y1, x1, y2, x2), fractions of (H - 1, W - 1), of image box_indices[b] resized
    to crop_size (h, w); samples outside the image are extrapolation_value."""
    crop_h, crop_w = (int(c) for c in crop_size)
    images = image if layout == "NHWC" else image.transpose(0, 2, 3, 1)
    height, width, channels = images.shape[1:]
    out = np.full((len(boxes), crop_h, crop_w, channels), extrapolation_value, "float32")
    for b, (y1, x1, y2, x2) in enumerate(boxes.astype("float32")):
        ys = _coords(y1, y2, height, crop_h)
        xs = _coords(x1, x2, width, crop_w)
        row_ok = (ys >= 0) & (ys <= height - 1)
        col_ok = (xs >= 0) & (xs <= width - 1)
        if row_ok.any() and col_ok.any():
            img = images[int(box_indices[b])].astype("float32")
            out[b][np.ix_(row_ok, col_ok)] = _resample(img, ys[row_ok], xs[col_ok], method)
    return out if layout == "NHWC" else out.transpose(0, 3, 1, 2)
