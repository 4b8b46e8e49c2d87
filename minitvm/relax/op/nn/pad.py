"""`relax.op.nn.pad`: constant, edge and reflect padding of any dims."""

from __future__ import annotations

from typing import Any

import numpy as np

from ....error import ShapeError
from ....topi import nn as topi_nn
from ....topi.utils import const_int, fmt_dim, fmt_shape
from ...expr import Call, Expr
from ...struct_info import StructInfo, TensorStructInfo
from .. import _infer as I
from .._table import OpPattern, make_call, register_op
from ..elementwise import _scalar

PAD_MODES = ("constant", "edge", "reflect")


def _pairs(call: Call, ndim: int) -> list[tuple[int, int]]:
    width = call.attrs["pad_width"]
    if len(width) != 2 * ndim:
        raise ShapeError(
            f"relax.nn.pad: pad_width has {len(width)} numbers for data of rank {ndim}; give "
            f"(before, after) for every dim: {2 * ndim} numbers"
        )
    return [(width[2 * k], width[2 * k + 1]) for k in range(ndim)]


def _infer_pad(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    if x.ndim == -1:
        return x
    pairs = _pairs(call, x.ndim)
    if x.shape is None:
        return x
    if call.attrs["pad_mode"] == "reflect":
        for k, ((b, a), d) in enumerate(zip(pairs, x.shape)):
            c = const_int(d)
            if (b or a) and (c is None or max(b, a) >= c):
                raise ShapeError(
                    f"relax.nn.pad: reflect padding ({b}, {a}) of dim {k} of data "
                    f"{fmt_shape(x.shape)} must be smaller than the dim ({fmt_dim(d)}), which "
                    "must be static"
                )
    return TensorStructInfo(
        tuple(I.dim_arith(lambda v, p=b + a: v + p, d) for (b, a), d in zip(pairs, x.shape)),
        x.dtype,
    )


def _te_pad(data, pad_width, pad_value, pad_mode):
    before, after = list(pad_width[0::2]), list(pad_width[1::2])
    if pad_mode == "constant":
        return topi_nn.pad(data, before, after, pad_value)
    return topi_nn.mirror_pad(data, before, after, pad_mode)


def _np_pad(data, pad_width, pad_value, pad_mode):
    pairs = list(zip(pad_width[0::2], pad_width[1::2]))
    if pad_mode == "constant":
        return np.pad(data, pairs, constant_values=np.asarray(pad_value, data.dtype))
    return np.pad(data, pairs, mode=pad_mode)


_pad = register_op("relax.nn.pad", _infer_pad, _te_pad, _np_pad, OpPattern.INJECTIVE)


def pad(data: Expr, pad_width: Any, pad_value: Any = 0, pad_mode: str = "constant") -> Call:
    """Pad every dim: pad_width is (before_0, after_0, before_1, after_1, ...) or pairs.

    `pad_mode` "constant" fills `pad_value`; "edge" repeats the border; "reflect" mirrors it
    without repeating it (numpy's modes). Widths are non-negative (slice to crop)."""
    flat = []
    for w in pad_width:
        flat.extend(w if isinstance(w, list | tuple) else [w])
    flat = [int(w) for w in flat]
    if len(flat) % 2 or any(w < 0 for w in flat):
        raise ShapeError(
            f"relax.nn.pad: pad_width {list(pad_width)} must be (before, after) pairs of "
            "non-negative ints, one pair per dim (crop with strided_slice)"
        )
    if pad_mode not in PAD_MODES:
        raise ShapeError(f"relax.nn.pad: pad_mode {pad_mode!r} is not one of {PAD_MODES}")
    value = _scalar(pad_value, "pad_value", "relax.nn.pad")
    attrs = {"pad_width": tuple(flat), "pad_value": value, "pad_mode": pad_mode}
    return make_call(_pad, (data,), attrs)
