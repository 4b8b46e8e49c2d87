"""`tvm.topi.testing`: numpy references and default schedules that TVM's operator tests use.

>>> b_np = topi.testing.conv2d_nchw_python(a_np, w_np, stride=1, padding=1)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ... import te
from ...error import ArgumentError
from ...target import Target
from .. import nn, reference
from .affine_grid_python import affine_grid_python
from .crop_and_resize_python import crop_and_resize_python
from .nll_loss_python import nll_loss
from .resize_python import resize1d_python, resize2d_python, resize3d_python
from .space_batch_python import batch_to_space_nd_python, space_to_batch_nd_python


def _pad_tuple(padding: Any, kernel: tuple[int, int]) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from TVM's padding forms: an int, (pad_h, pad_w), four
    values, "VALID" or "SAME" (the output keeps the input's size at stride 1)."""
    kh, kw = kernel
    if isinstance(padding, str):
        if padding.upper() == "VALID":
            return (0, 0, 0, 0)
        if padding.upper() == "SAME":
            top, left = kh // 2, kw // 2
            return (top, left, kh - 1 - top, kw - 1 - left)
        raise ArgumentError(f"padding {padding!r}: use 'SAME', 'VALID' or integers")
    if isinstance(padding, int):
        return (padding,) * 4
    values = tuple(int(p) for p in padding)
    if len(values) == 2:
        return (values[0], values[1], values[0], values[1])
    if len(values) == 4:
        return values  # type: ignore[return-value]
    raise ArgumentError(f"padding {padding!r}: give 1, 2 or 4 integers")


def conv2d_nchw_python(
    a_np: np.ndarray, w_np: np.ndarray, stride: Any, padding: Any, groups: int = 1
) -> np.ndarray:
    """Convolution of NCHW data with an OIHW (O, I/groups, KH, KW) kernel, in numpy."""
    pad = _pad_tuple(padding, w_np.shape[2:4])
    return reference.conv2d_nchw(a_np, w_np, stride, pad, 1, groups)


def conv2d_nhwc_python(
    a_np: np.ndarray, w_np: np.ndarray, stride: Any, padding: Any, groups: int = 1
) -> np.ndarray:
    """Convolution of NHWC data with an HWIO (KH, KW, I/groups, O) kernel, in numpy."""
    a_nchw = a_np.transpose(0, 3, 1, 2)
    w_oihw = w_np.transpose(3, 2, 0, 1)
    return conv2d_nchw_python(a_nchw, w_oihw, stride, padding, groups).transpose(0, 2, 3, 1)


def _default_schedule(outs: Any) -> Any:
    """A schedule computing every stage at root, in order (correct for any TE graph)."""
    outs = [outs] if isinstance(outs, te.Tensor) else list(outs)
    return te.create_schedule([t.op for t in outs])


def _for_target(target: Any) -> Callable[[Any], Any]:
    Target(target)  # a bad target string fails here, with the target's own message
    return _default_schedule


def get_injective_schedule(target: Any) -> Callable[[Any], Any]:
    """The schedule function for elementwise/broadcast ops on `target`: `f(outs) -> Schedule`."""
    return _for_target(target)


get_broadcast_schedule = get_injective_schedule
get_elemwise_schedule = get_injective_schedule


def get_reduce_schedule(target: Any) -> Callable[[Any], Any]:
    """The schedule function for reductions on `target`: `f(outs) -> Schedule`."""
    return _for_target(target)


def _conv2d_nchw(
    data: te.Tensor,
    kernel: te.Tensor,
    stride: Any,
    padding: Any,
    dilation: Any,
    out_dtype: str | None = None,
) -> te.Tensor:
    """TVM's argument order: (Input, Filter, stride, padding, dilation, out_dtype)."""
    return nn.conv2d_nchw(data, kernel, stride, padding, dilation, out_dtype=out_dtype)


def get_conv2d_nchw_implement(target: Any) -> tuple[Callable, Callable]:
    """(compute, schedule) of NCHW conv2d for `target`, as TVM's operator tests use them."""
    return _conv2d_nchw, _for_target(target)


__all__ = [
    "affine_grid_python",
    "batch_to_space_nd_python",
    "conv2d_nchw_python",
    "conv2d_nhwc_python",
    "crop_and_resize_python",
    "get_broadcast_schedule",
    "get_conv2d_nchw_implement",
    "get_elemwise_schedule",
    "get_injective_schedule",
    "get_reduce_schedule",
    "nll_loss",
    "resize1d_python",
    "resize2d_python",
    "resize3d_python",
    "space_to_batch_nd_python",
]
