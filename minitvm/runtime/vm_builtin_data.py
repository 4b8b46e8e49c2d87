"""VM builtins for ops whose result shape depends on the input's values: `R.nonzero`,
`R.unique` and `R.vision.all_class_non_max_suppression`. Their extents exist only once the data
is read, so no compiled kernel can allocate the result: these run on the host with numpy, check
their arguments first, and return fresh tensors whose dims the graph then names (match_cast)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..error import ArgumentError, DTypeError, ShapeError
from .ndarray import NDArray
from .registry import register_func
from .vm_builtin import _host_array

NONZERO = "vm.builtin.minitvm.nonzero"
UNIQUE = "vm.builtin.minitvm.unique"
ALL_CLASS_NMS = "vm.builtin.minitvm.all_class_non_max_suppression"


def nonzero(tensor: Any) -> NDArray:
    """The indices of x's nonzero elements as an int64 (rank, count) tensor, in row-major
    order; a 0-d x counts as 1-d of length 1 (as ONNX Runtime and TVM do)."""
    data = np.atleast_1d(_host_array(tensor, "R.nonzero: x"))
    return NDArray(np.ascontiguousarray(np.stack(np.nonzero(data), axis=0).astype("int64")))


def unique(
    tensor: Any,
    sorted: bool,
    return_index: bool,
    return_inverse: bool,
    return_counts: bool,
    axis: int | None = None,
) -> Any:
    """x's distinct elements (or slices along `axis`), ascending when `sorted`, else in order of
    first occurrence; then, as asked, each one's first index in x, each element's position in
    the result, and each one's count (all int64). A lone result is a tensor, several a tuple."""
    data = _host_array(tensor, "R.unique: x")
    if axis is None:
        data, axis = data.reshape(-1), 0
    elif not -data.ndim <= axis < data.ndim:
        raise ShapeError(f"R.unique: axis {axis} is out of range for x of rank {data.ndim}")
    values, first, inverse, counts = np.unique(
        data, return_index=True, return_inverse=True, return_counts=True, axis=axis
    )
    inverse = inverse.reshape(-1)
    if not sorted:  # reorder by first occurrence; inverse follows each value to its new slot
        order = np.argsort(first, kind="stable")
        slot = np.empty_like(order)
        slot[order] = np.arange(order.size)
        values = np.take(values, order, axis=axis)
        first, counts, inverse = first[order], counts[order], slot[inverse]
    picked = [values]
    for wanted, part in ((return_index, first), (return_inverse, inverse), (return_counts, counts)):
        if wanted:
            picked.append(part.astype("int64"))
    out = [NDArray(np.ascontiguousarray(p)) for p in picked]
    return out[0] if len(out) == 1 else tuple(out)


def _optional_scalar(value: Any, what: str, default: float) -> tuple[float, bool]:
    """(value, given): a 0-d or 1-element tensor; an empty one means the input was omitted."""
    arr = _host_array(value, f"R.vision.all_class_non_max_suppression: {what}").reshape(-1)
    if arr.size == 0:
        return default, False
    if arr.size != 1:
        raise ShapeError(
            f"R.vision.all_class_non_max_suppression: {what} holds {arr.size} values; it must "
            "hold one (a scalar or a 1-element tensor)"
        )
    return arr[0], True


def _corners(boxes: np.ndarray, center_point_box: int) -> np.ndarray:
    """(x_min, x_max, y_min, y_max) per box in the boxes' own dtype, as ONNX's reference
    computes them (corner boxes may come flipped; center boxes are not reordered)."""
    if center_point_box:
        half_w, half_h = boxes[:, 2] / 2, boxes[:, 3] / 2
        return np.stack(
            [boxes[:, 0] - half_w, boxes[:, 0] + half_w, boxes[:, 1] - half_h, boxes[:, 1] + half_h]
        )
    x = np.sort(boxes[:, [1, 3]], axis=1)
    y = np.sort(boxes[:, [0, 2]], axis=1)
    return np.stack([x[:, 0], x[:, 1], y[:, 0], y[:, 1]])


def _overlaps(c: np.ndarray, box: int, kept: list, iou_threshold: Any) -> bool:
    """Whether `box` overlaps any kept box by IoU > threshold (empty or degenerate boxes never
    suppress, as in ONNX's reference)."""
    if not kept:
        return False
    k = np.asarray(kept)
    ix = np.minimum(c[1, box], c[1, k]) - np.maximum(c[0, box], c[0, k])
    iy = np.minimum(c[3, box], c[3, k]) - np.maximum(c[2, box], c[2, k])
    area = ix * iy
    a1 = (c[1, box] - c[0, box]) * (c[3, box] - c[2, box])
    a2 = (c[1, k] - c[0, k]) * (c[3, k] - c[2, k])
    union = a1 + a2 - area
    valid = (ix > 0) & (iy > 0) & (area > 0) & (a1 > 0) & (a2 > 0) & (union > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = np.where(valid, area / np.where(valid, union, 1), 0)
    return bool(np.any(valid & (iou > iou_threshold)))


def all_class_non_max_suppression(
    boxes: Any,
    scores: Any,
    max_output_boxes_per_class: Any,
    iou_threshold: Any,
    score_threshold: Any,
    center_point_box: int = 0,
) -> tuple[NDArray, NDArray]:
    """ONNX NonMaxSuppression: per batch and class, boxes by descending score (ties: the lower
    index first), each kept unless its IoU with a kept one exceeds the threshold, at most
    `max_output_boxes_per_class` of them. Returns ((n, 3) int64 [batch, class, box] rows,
    (1,) int64 n). An empty threshold or limit tensor means the input was omitted."""
    what = "R.vision.all_class_non_max_suppression"
    b = _host_array(boxes, f"{what}: boxes")
    s = _host_array(scores, f"{what}: scores")
    if b.ndim != 3 or b.shape[2] != 4 or s.ndim != 3 or s.shape[::2] != b.shape[:2]:
        raise ShapeError(
            f"{what}: boxes has shape {b.shape} and scores {s.shape}; expected (batch, boxes, 4) "
            "and (batch, classes, boxes)"
        )
    limit = _host_array(max_output_boxes_per_class, f"{what}: max_output_boxes_per_class")
    if limit.dtype.kind not in "iu":
        raise DTypeError(f"{what}: max_output_boxes_per_class has dtype {limit.dtype}; use int64")
    limit_value, _ = _optional_scalar(limit, "max_output_boxes_per_class", 0)
    iou, _ = _optional_scalar(iou_threshold, "iou_threshold", b.dtype.type(0))
    floor, filtered = _optional_scalar(score_threshold, "score_threshold", 0)
    if center_point_box not in (0, 1):
        raise ArgumentError(f"{what}: center_point_box is {center_point_box}; it must be 0 or 1")
    limit_value = max(int(limit_value), 0)
    rows = []
    for batch in range(b.shape[0]):
        c = _corners(b[batch], center_point_box)
        for cls in range(s.shape[1]):
            ranked = s[batch, cls]
            order = np.lexsort((np.arange(ranked.size), -ranked.astype("float64")))
            if filtered:
                order = order[ranked[order] > floor]
            kept: list = []
            for box in order:
                if len(kept) >= limit_value:
                    break
                if not _overlaps(c, int(box), kept, iou):
                    kept.append(int(box))
                    rows.append((batch, cls, int(box)))
    out = np.asarray(rows, dtype="int64").reshape(-1, 3)
    return NDArray(out), NDArray(np.asarray([out.shape[0]], dtype="int64"))


for _name, _fn in (
    (NONZERO, nonzero),
    (UNIQUE, unique),
    (ALL_CLASS_NMS, all_class_non_max_suppression),
):
    register_func(_name, _fn, override=True)
