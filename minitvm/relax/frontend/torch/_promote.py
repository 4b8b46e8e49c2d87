"""torch's type promotion (`torch.result_type`), stated once for every converter of an
elementwise op or a reduction, so an imported graph computes in the dtype torch computes in.

torch sorts dtypes into categories, bool < integer < floating, and operands into three tiers:
dimensioned tensors, 0-dim tensors, Python numbers. Each tier promotes its own dtypes as
`torch.promote_types` does; a lower tier changes the result only when it brings a higher
category (int32 tensor + 0-dim int64 -> int32, int32 tensor + 2.5 -> float32, bool tensor + 1
-> int64). A Python float counts as torch's default dtype, a Python int as int64.
"""

from __future__ import annotations

from functools import reduce
from typing import Any

import numpy as np

from ....error import OpAttributeInvalid
from ....tir.expr import PrimExpr
from ... import op as R
from ...expr import Expr
from ._base import _dtype, _ndim

_INTS = ("uint8", "int8", "int16", "int32", "int64")
_FLOATS = ("float16", "bfloat16", "float32", "float64")
_BITS = {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}


def category(dtype: str) -> int:
    """0 for bool, 1 for integers, 2 for floating point."""
    if dtype == "bool":
        return 0
    if dtype in _INTS:
        return 1
    if dtype in _FLOATS:
        return 2
    raise OpAttributeInvalid(f"dtype {dtype} has no torch type promotion rule here")


def is_float(dtype: str) -> bool:
    return category(dtype) == 2


def promote_types(a: str, b: str) -> str:
    """torch.promote_types for the dtypes the importers know."""
    if a == b:
        return a
    if category(a) != category(b):  # int64 with float16 is float16, as in torch
        return a if category(a) > category(b) else b
    if category(a) == 2:
        if {a, b} == {"float16", "bfloat16"}:
            return "float32"
        return a if _BITS[a] > _BITS[b] else b
    if "uint8" in (a, b):  # uint8 joins a signed type: the smallest one holding both
        signed = b if a == "uint8" else a
        return "int16" if signed == "int8" else signed
    return a if _INTS.index(a) > _INTS.index(b) else b


def default_float() -> str:
    """torch.get_default_dtype() as a relax dtype: the dtype of a Python float operand."""
    import torch

    return str(torch.get_default_dtype()).removeprefix("torch.")


def number_dtype(value: Any) -> str:
    """The dtype torch gives a Python number operand."""
    if isinstance(value, bool | np.bool_):
        return "bool"
    if isinstance(value, PrimExpr):  # a symbolic size, or a float computed from one
        return "int64" if "int" in str(value.dtype) else default_float()
    if isinstance(value, int | np.integer):
        return "int64"
    if isinstance(value, float | np.floating):
        return default_float()
    raise OpAttributeInvalid(f"operand {value!r} is neither a tensor nor a number")


def result_type(*operands: Any) -> str:
    """torch.result_type of tensors (relax values) and Python numbers; None operands skipped."""
    tiers: tuple[list, list, list] = ([], [], [])  # dimensioned, 0-dim, Python numbers
    for value in operands:
        if value is None:
            continue
        if isinstance(value, Expr):
            tiers[1 if _ndim(value) == 0 else 0].append(_dtype(value))
        else:
            tiers[2].append(number_dtype(value))
    result = None
    for dtypes in reversed(tiers):  # lowest tier first; a higher tier wins within its category
        if not dtypes:
            continue
        tier = reduce(promote_types, dtypes)
        if result is None or category(result) <= category(tier):
            result = tier
        else:
            result = promote_types(tier, result)
    if result is None:
        raise OpAttributeInvalid("type promotion needs at least one operand")
    return result


def cast(t, value: Any, dtype: str) -> Expr:
    """A tensor or Python number as a tensor of `dtype` (ints wrap as torch's do)."""
    if isinstance(value, Expr):
        return value if _dtype(value) == dtype else t.emit(R.astype(value, dtype))
    if isinstance(value, PrimExpr):
        raise OpAttributeInvalid(
            f"a symbolic size ({value}) used as a tensor operand is not supported; make it a "
            "tensor in the model (torch.tensor(x.shape[0]))"
        )
    if category(dtype) == 1 and not isinstance(value, bool):
        return t.const(np.asarray(value, "int64").astype(dtype))
    return t.const(value, dtype)


def promoted(t, *operands: Any) -> tuple[str, list]:
    """(torch's result dtype, the operands cast to it; None stays None)."""
    dtype = result_type(*operands)
    return dtype, [None if v is None else cast(t, v, dtype) for v in operands]
