"""Shape arithmetic at import time: small int tensors whose elements may be symbolic dims.

Exporters compute a reshape target as Shape(x) -> Gather -> Unsqueeze -> Concat; with a
dynamic batch the gathered dim is a tir Var. These rules run such nodes on numpy object
arrays holding ints and PrimExprs, so the chain folds to a shape the converters can use.
A rule returns None when it cannot decide (a comparison of two unknown dims); the node is
then converted as a run-time op, which reports what is missing.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ....arith import Analyzer
from ....error import OpAttributeInvalid
from ....ir.dtype import ML_DTYPES
from ....tir.expr import IntImm, PrimExpr


@dataclass(frozen=True)
class SymTensor:
    """A small int tensor known at import time except for some symbolic elements."""

    values: np.ndarray  # dtype object: python ints and PrimExprs
    dtype: str = "int64"

    @property
    def shape(self) -> tuple:
        return self.values.shape

    def __str__(self) -> str:
        return f"[{', '.join(str(v) for v in self.values.reshape(-1))}]"


def applies(inputs: list) -> bool:
    """Shape rules take symbolic tensors and integer/bool arrays only."""
    return all(isinstance(v, SymTensor) or v.dtype.kind in "iub" for v in inputs)


def as_objects(value: Any) -> np.ndarray:
    if isinstance(value, SymTensor):
        return value.values
    return np.asarray(value).astype(object)


def make(values: np.ndarray, dtype: str) -> np.ndarray | SymTensor:
    """Simplify symbolic elements; all-int results become a plain numpy array."""
    if not isinstance(values, np.ndarray):  # one element picked out of an array
        scalar = np.empty((), dtype=object)
        scalar[()] = values
        values = scalar
    analyzer = Analyzer()
    flat = []
    for v in values.reshape(-1):
        if isinstance(v, PrimExpr):
            v = analyzer.simplify(v)
            v = int(v.value) if isinstance(v, IntImm) else v
        flat.append(v)
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    out = out.reshape(values.shape)
    if all(not isinstance(v, PrimExpr) for v in flat):
        return np.asarray(out.tolist() if out.ndim else out.item(), dtype=dtype)
    return SymTensor(out, dtype)


def _dtype(value: Any) -> str:
    return value.dtype if isinstance(value, SymTensor) else str(value.dtype)


def _ints(value: Any) -> list[int]:
    return [int(v) for v in np.asarray(value).reshape(-1)]


def _axes(ctx, inputs: list, attrs: dict, index: int) -> list[int] | None:
    """Axes from the attribute (before opset 13) or the input at `index`."""
    if len(inputs) > index and inputs[index] is not None:
        if isinstance(inputs[index], SymTensor):
            return None
        return _ints(inputs[index])
    return attrs.get("axes")


# ------------------------------------------------------------------ rules


def _gather(ctx, inputs, attrs):
    data, indices = inputs
    if isinstance(indices, SymTensor):
        return None
    return [
        make(
            np.take(as_objects(data), np.asarray(indices), axis=attrs.get("axis", 0)), _dtype(data)
        )
    ]


def _concat(ctx, inputs, attrs):
    arrays = [as_objects(v) for v in inputs if v is not None]
    return [make(np.concatenate(arrays, axis=attrs["axis"]), _dtype(inputs[0]))]


def _unsqueeze(ctx, inputs, attrs):
    axes = _axes(ctx, inputs, attrs, 1)
    if axes is None:
        return None
    values = as_objects(inputs[0])
    rank = values.ndim + len(axes)
    for axis in sorted(a % rank for a in axes):
        values = np.expand_dims(values, axis)
    return [make(values, _dtype(inputs[0]))]


def _squeeze(ctx, inputs, attrs):
    axes = _axes(ctx, inputs, attrs, 1)
    values = as_objects(inputs[0])
    if axes is None and len(inputs) > 1 and inputs[1] is not None:
        return None
    squeezed = np.squeeze(values, axis=None if axes is None else tuple(axes))
    return [make(squeezed, _dtype(inputs[0]))]


def _slice(ctx, inputs, attrs):
    data, starts, ends = inputs[:3]
    if any(isinstance(v, SymTensor) for v in inputs[1:]):
        return None
    values = as_objects(data)
    axes = (
        _ints(inputs[3]) if len(inputs) > 3 and inputs[3] is not None else range(len(_ints(starts)))
    )
    steps = (
        _ints(inputs[4]) if len(inputs) > 4 and inputs[4] is not None else [1] * len(_ints(starts))
    )
    index = [slice(None)] * values.ndim
    for axis, b, e, s in zip(axes, _ints(starts), _ints(ends), steps):
        index[axis] = slice(b, e, s)
    return [make(values[tuple(index)], _dtype(data))]


def _cast(ctx, inputs, attrs):
    from .onnx_frontend import onnx_dtype

    dtype = onnx_dtype(attrs["to"])
    if not isinstance(inputs[0], SymTensor):
        if dtype in ML_DTYPES:
            return None  # onnx's reference evaluator folds it, with Cast's `saturate` rule
        return [np.asarray(inputs[0]).astype(dtype)]
    if not dtype.startswith("int"):
        return None  # a symbolic dim as float or bool has no import-time value
    return [SymTensor(inputs[0].values, dtype)]


def _binary(fn: Callable) -> Callable:
    """Elementwise fn over broadcast operands; None when some element cannot be decided."""

    def rule(ctx, inputs, attrs):
        a, b = inputs
        values = np.asarray(np.frompyfunc(fn, 2, 1)(as_objects(a), as_objects(b)), dtype=object)
        if any(v is None for v in values.reshape(-1)):
            return None
        return [make(values, _dtype(a))]

    return rule


def _div(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        return int(a / b) if b else None  # ONNX integer Div truncates
    return a // b  # dims are non-negative, so floor equals truncation


def _equal(a: Any, b: Any) -> Any:
    """Decided element equality; a dim (>= 0) never equals a negative constant."""
    if not isinstance(a, PrimExpr) and not isinstance(b, PrimExpr):
        return bool(a == b)
    for sym, other in ((a, b), (b, a)):
        if isinstance(sym, PrimExpr) and isinstance(other, int) and other < 0:
            return False
    analyzer = Analyzer()
    diff = analyzer.simplify(a - b)
    if isinstance(diff, IntImm):
        return diff.value == 0
    return None


def _equal_rule(ctx, inputs, attrs):
    out = _binary(_equal)(ctx, inputs, attrs)
    return None if out is None else [np.asarray(out[0], dtype=bool)]


def _where(ctx, inputs, attrs):
    cond, x, y = inputs
    if isinstance(cond, SymTensor):
        return None
    values = np.where(np.asarray(cond, dtype=bool), as_objects(x), as_objects(y))
    return [make(np.asarray(values, dtype=object), _dtype(x))]


def _identity(ctx, inputs, attrs):
    return [inputs[0]]


def _reshape(ctx, inputs, attrs):
    data, shape = inputs
    if isinstance(shape, SymTensor):
        return None
    values = as_objects(data)
    dims = [
        values.shape[i] if d == 0 and not attrs.get("allowzero") else d
        for i, d in enumerate(_ints(shape))
    ]
    try:
        return [make(values.reshape(dims), _dtype(data))]
    except ValueError as err:
        raise OpAttributeInvalid(
            f"cannot reshape a tensor of shape {values.shape} to {dims}"
        ) from err


RULES: dict[str, Callable] = {
    "Gather": _gather,
    "Concat": _concat,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Slice": _slice,
    "Cast": _cast,
    "Identity": _identity,
    "Reshape": _reshape,
    "Add": _binary(operator.add),
    "Sub": _binary(operator.sub),
    "Mul": _binary(operator.mul),
    "Div": _binary(_div),
    "Equal": _equal_rule,
    "Where": _where,
}
