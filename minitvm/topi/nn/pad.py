"""Padding: constant, edge (replicate) and reflect."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import te
from ...error import TEError
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


def _edge_index(j: Any, d: Any) -> Any:
    """Position j of a dim of extent d with the border elements repeated outward."""
    return tir_op.max(tir_op.min(j, d - 1), 0)


def _reflect_index(j: Any, d: Any) -> Any:
    """Position j reflected at the borders without repeating them (numpy's 'reflect')."""
    j = tir_op.abs(j)
    return tir_op.Select_(j > d - 1, (d - 1) * 2 - j, j)


_BORDER_INDEX = {"edge": _edge_index, "reflect": _reflect_index}


def mirror_pad(
    data: te.Tensor,
    pad_before: Sequence[Any],
    pad_after: Sequence[Any] | None = None,
    mode: str = "reflect",
    name: str = "T_pad",
) -> te.Tensor:
    """Pad by repeating the border ("edge") or reflecting at it ("reflect"); reflect needs
    each pad smaller than its dim (checked by the caller when dims are symbolic)."""
    if mode not in _BORDER_INDEX:
        raise TEError(f"topi.nn.mirror_pad: mode {mode!r} is not one of 'edge', 'reflect'")
    pad_after = pad_before if pad_after is None else pad_after
    nd = len(data.shape)
    before = list(pad_before) + [0] * (nd - len(pad_before))
    after = list(pad_after) + [0] * (nd - len(pad_after))
    out_shape = tuple(simplify(d + b + a) for d, b, a in zip(data.shape, before, after))
    border = _BORDER_INDEX[mode]

    def body(*idx: Any):
        index = [
            i if const_int(b) == 0 and const_int(a) == 0 else border(i - b, d)
            for i, d, b, a in zip(idx, data.shape, before, after)
        ]
        return data[tuple(index)]

    return te.compute(out_shape, body, name=name, tag="injective,pad")
