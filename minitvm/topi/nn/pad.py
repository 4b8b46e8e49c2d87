"""Constant padding."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import te
from ...tir import op as tir_op
from ...tir.expr import make_const
from ..utils import const_int, simplify


def pad(
    data: te.Tensor,
    pad_before: Sequence[Any],
    pad_after: Sequence[Any] | None = None,
    pad_value: float = 0.0,
    name: str = "T_pad",
) -> te.Tensor:
    """Pad each dim with `pad_before[n]` / `pad_after[n]` elements of `pad_value`."""
    pad_after = pad_before if pad_after is None else pad_after
    nd = len(data.shape)
    before = list(pad_before) + [0] * (nd - len(pad_before))
    after = list(pad_after) + [0] * (nd - len(pad_after))
    out_shape = tuple(
        d if const_int(b) == 0 and const_int(a) == 0 else simplify(d + b + a)
        for d, b, a in zip(data.shape, before, after)
    )
    value = make_const(data.dtype, pad_value)

    def body(*idx: Any):
        conds, index = [], []
        for i, d, b, a in zip(idx, data.shape, before, after):
            if const_int(b) == 0 and const_int(a) == 0:
                index.append(i)
                continue
            index.append(i - b)
            if const_int(b) != 0:
                conds.append(i >= b)
            if const_int(a) != 0:
                conds.append(i < d + b)
        if not conds:
            return data[tuple(index)]
        return tir_op.if_then_else(tir_op.all(*conds), data[tuple(index)], value)

    return te.compute(out_shape, body, name=name, tag="injective,pad")
