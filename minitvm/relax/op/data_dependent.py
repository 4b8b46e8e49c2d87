"""Ops whose result shape depends on the input's values: `nonzero`, `unique` (TVM's names and
parameters) and `vision.all_class_non_max_suppression` (ONNX NonMaxSuppression).

Their struct info knows each result's rank and dtype but not its dims. LegalizeOps turns each
into a checked VM builtin (minitvm/runtime/vm_builtin_data.py) that computes it with numpy: a
size read from the data cannot be a compiled kernel's loop bound before the data exists. Name
the result's dims with `R.match_cast` (fresh symbolic vars) and later kernels compile over them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...error import ArgumentError, DTypeError, ShapeError
from ...runtime import vm_builtin_data
from ..expr import Call, Expr, ExternFunc, PrimValue
from ..struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from . import _infer as I
from ._table import OpPattern, make_call, register_op
from .base import call_pure_packed
from .shape_ops import BUILTIN_LOWERING

_INT64 = "int64"


def _lower_to(builtin: str, attrs: tuple[str, ...]) -> Any:
    """call -> call_pure_packed(builtin, *args, *attrs as PrimValues); a None attr is left off
    (the builtin's default)."""

    def lower(call: Call) -> Expr:
        extra = [PrimValue(int(call.attrs[a])) for a in attrs if call.attrs.get(a) is not None]
        return call_pure_packed(
            ExternFunc(builtin), *call.args, *extra, sinfo_args=call.struct_info
        )

    return lower


# ------------------------------------------------------------------------------------ nonzero


def _infer_nonzero(call: Call) -> StructInfo:
    I.tensor_arg(call, 0, "x")
    return TensorStructInfo(None, _INT64, 2)


def _numpy_nonzero(x):
    return vm_builtin_data.nonzero(x).numpy()


_nonzero = register_op("relax.nonzero", _infer_nonzero, None, _numpy_nonzero, OpPattern.OPAQUE)


def nonzero(x: Expr) -> Call:
    """The indices of x's nonzero elements, an int64 tensor of shape (rank, count) in row-major
    order (ONNX NonZero; a 0-d x counts as 1-d, as in ONNX Runtime): `R.nonzero(x)`."""
    return make_call(_nonzero, (x,))


# ------------------------------------------------------------------------------------- unique

_UNIQUE_FLAGS = ("sorted", "return_index", "return_inverse", "return_counts")


def _infer_unique(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    axis = call.attrs.get("axis")
    if axis is not None and x.ndim >= 0:
        I.axis_of(call, axis, max(x.ndim, 1))
    if x.ndim == 0:  # one element: every result has shape (1,)
        values = TensorStructInfo((1,), x.dtype)
        index = TensorStructInfo((1,), _INT64)
    else:
        values = TensorStructInfo(None, x.dtype, 1 if axis is None else x.ndim)
        index = TensorStructInfo(None, _INT64, 1)
    extra = [index for flag in _UNIQUE_FLAGS[1:] if call.attrs[flag]]
    return TupleStructInfo((values, *extra)) if extra else values


def _numpy_unique(x, **attrs):
    out = vm_builtin_data.unique(x, *(attrs[f] for f in _UNIQUE_FLAGS), attrs.get("axis"))
    return tuple(o.numpy() for o in out) if isinstance(out, tuple) else out.numpy()


_unique = register_op("relax.unique", _infer_unique, None, _numpy_unique, OpPattern.OPAQUE)


def _plain(value: Any) -> Any:
    """A PrimValue / IntImm (as TVM accepts) as its Python value."""
    while hasattr(value, "value"):
        value = value.value
    return value


def _flag(value: Any, name: str) -> bool:
    value = _plain(value)
    if not isinstance(value, bool | int | np.integer | np.bool_):
        raise ArgumentError(
            f"relax.unique: {name} must be a bool known at build time, got {value!r}"
        )
    return bool(value)


def unique(
    x: Expr,
    sorted: bool = True,
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
    axis: int | None = None,
) -> Call:
    """x's distinct elements (of the flattened x, or slices along `axis`), ascending when
    `sorted`, else in order of first occurrence; with the `return_*` flags also each one's first
    index, each element's position in the result and each one's count (int64), as a tuple.
    `R.unique(x, sorted=False, return_counts=True)`."""
    flags = dict(zip(_UNIQUE_FLAGS, (sorted, return_index, return_inverse, return_counts)))
    attrs: dict[str, Any] = {name: _flag(v, name) for name, v in flags.items()}
    axis = _plain(axis)
    if axis is not None and not isinstance(axis, int | np.integer):
        raise ArgumentError(f"relax.unique: axis must be an int or None, got {axis!r}")
    attrs["axis"] = None if axis is None else int(axis)
    return make_call(_unique, (x,), attrs)


# ------------------------------------------------------------------------------ vision: NMS

_NMS = "relax.vision.all_class_non_max_suppression"


def _infer_all_class_nms(call: Call) -> StructInfo:
    boxes = I.tensor_arg(call, 0, "boxes")
    scores = I.tensor_arg(call, 1, "scores")
    for sinfo, pname, last in ((boxes, "boxes", 4), (scores, "scores", None)):
        if sinfo.ndim not in (-1, 3):
            raise ShapeError(f"{_NMS}: {pname} has rank {sinfo.ndim}; it must be 3-d")
        if sinfo.dtype is not None and not sinfo.dtype.is_float:
            raise DTypeError(f"{_NMS}: {pname} has dtype {sinfo.dtype}; it must be float")
        dim = getattr(sinfo.shape[2], "value", None) if last and sinfo.shape is not None else None
        if dim is not None and dim != last:
            raise ShapeError(f"{_NMS}: boxes has {dim} coordinates per box; ONNX uses 4")
    limit = I.tensor_arg(call, 2, "max_output_boxes_per_class")
    if limit.dtype is not None and not limit.dtype.is_integer:
        raise DTypeError(
            f"{_NMS}: max_output_boxes_per_class has dtype {limit.dtype}; it must be int64"
        )
    for index, pname in ((3, "iou_threshold"), (4, "score_threshold")):
        t = I.tensor_arg(call, index, pname)
        if t.dtype is not None and not t.dtype.is_float:
            raise DTypeError(f"{_NMS}: {pname} has dtype {t.dtype}; it must be float")
    return TupleStructInfo((TensorStructInfo(None, _INT64, 2), TensorStructInfo((1,), _INT64)))


def _numpy_all_class_nms(boxes, scores, limit, iou, score, **attrs):
    out = vm_builtin_data.all_class_non_max_suppression(
        boxes, scores, limit, iou, score, attrs["center_point_box"]
    )
    return tuple(o.numpy() for o in out)


_all_class_nms = register_op(
    _NMS, _infer_all_class_nms, None, _numpy_all_class_nms, OpPattern.OPAQUE
)


def all_class_non_max_suppression(
    boxes: Expr,
    scores: Expr,
    max_output_boxes_per_class: Expr,
    iou_threshold: Expr,
    score_threshold: Expr,
    output_format: str = "onnx",
    center_point_box: int = 0,
) -> Call:
    """ONNX NonMaxSuppression over every batch and class: returns (selected, count), an int64
    (count, 3) tensor of [batch, class, box] rows and a (1,) tensor holding count. An empty
    threshold/limit tensor stands for an omitted ONNX input; `center_point_box=1` reads boxes
    as [x_center, y_center, width, height] (ONNX's attribute; TVM's op has no such parameter).
    Only output_format="onnx" is supported."""
    if output_format != "onnx":
        raise ArgumentError(
            f"{_NMS}: output_format {output_format!r} is not supported; minitvm computes the "
            "'onnx' format (rows of [batch, class, box])"
        )
    if center_point_box not in (0, 1):
        raise ArgumentError(f"{_NMS}: center_point_box is {center_point_box}; use 0 or 1")
    args = (boxes, scores, max_output_boxes_per_class, iou_threshold, score_threshold)
    return make_call(_all_class_nms, args, {"center_point_box": int(center_point_box)})


BUILTIN_LOWERING["relax.nonzero"] = _lower_to(vm_builtin_data.NONZERO, ())
BUILTIN_LOWERING["relax.unique"] = _lower_to(vm_builtin_data.UNIQUE, (*_UNIQUE_FLAGS, "axis"))
BUILTIN_LOWERING[_NMS] = _lower_to(vm_builtin_data.ALL_CLASS_NMS, ("center_point_box",))
