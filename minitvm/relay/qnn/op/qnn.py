"""qnn.quantize, qnn.dequantize and qnn.requantize: constructors and table rows.

A row's relax form gives only the result type; the computation is the Relay lowering in
`_lower.py` (TVM's canonicalization), which relay.build applies to each call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ....error import OpNotImplemented
from ....relax import op as rop
from ...expr import Expr
from ...op._registry import call, register
from . import _lower
from ._lower import CONFIG, INT_TYPES, fixed_point_multiplier  # noqa: F401 (re-exported)

_ROUNDINGS = ("UPWARD", "TONEAREST")
_COMPUTE_DTYPES = ("int64", "float32", "float64")


def _as_out_dtype(emit, args, attrs):
    return rop.astype(args[0], attrs.out_dtype)


for _name in ("qnn.quantize", "qnn.dequantize", "qnn.requantize"):
    register(_name, _as_out_dtype, canonicalize=_lower.LOWERINGS[_name])


def _check_choice(op: str, what: str, value: str, choices: tuple) -> None:
    if value not in choices:
        raise OpNotImplemented(f"qnn.{op}: {what} {value!r}; use one of {list(choices)}")


def quantize(data: Expr, output_scale: Expr, output_zero_point: Expr, axis: int = -1,
             out_dtype: str = "int8") -> Expr:  # fmt: skip
    """clip(round(data / output_scale) + output_zero_point) as `out_dtype` (ties to even)."""
    _check_choice("quantize", "out_dtype", out_dtype, INT_TYPES)
    attrs = {"axis": int(axis), "out_dtype": out_dtype}
    return call("qnn.quantize", (data, output_scale, output_zero_point), attrs)


def dequantize(data: Expr, input_scale: Expr, input_zero_point: Expr, axis: int = -1,
               out_dtype: str = "float32") -> Expr:  # fmt: skip
    """(data - input_zero_point) * input_scale, computed in float32, as `out_dtype`."""
    _check_choice("dequantize", "out_dtype", out_dtype, ("float32", "float16", "float64"))
    attrs = {"axis": int(axis), "out_dtype": out_dtype}
    return call("qnn.dequantize", (data, input_scale, input_zero_point), attrs)


def requantize(
    data: Expr,
    input_scale: Expr,
    input_zero_point: Expr,
    output_scale: Expr,
    output_zero_point: Expr,
    axis: int = -1,
    rounding: str = "None",
    compute_dtype: str = "None",
    out_dtype: str = "int8",
) -> Expr:
    """Integer data at (input_scale, input_zero_point) re-expressed at (output_scale,
    output_zero_point); "None" takes rounding / compute_dtype from `requantize_config`."""
    config = CONFIG[-1]
    rounding = config["rounding"] if rounding == "None" else rounding
    compute_dtype = config["compute_dtype"] if compute_dtype == "None" else compute_dtype
    _check_choice("requantize", "rounding", rounding, _ROUNDINGS)
    _check_choice("requantize", "compute_dtype", compute_dtype, _COMPUTE_DTYPES)
    _check_choice("requantize", "out_dtype", out_dtype, INT_TYPES)
    attrs = {"axis": int(axis), "rounding": rounding, "compute_dtype": compute_dtype,
             "out_dtype": out_dtype}  # fmt: skip
    args = (data, input_scale, input_zero_point, output_scale, output_zero_point)
    return call("qnn.requantize", args, attrs)


@contextlib.contextmanager
def requantize_config(**kwargs: Any) -> Iterator[None]:
    """`with relay.qnn.requantize_config(rounding="TONEAREST"):` sets the defaults that
    requantize calls made inside (and the requantizes inside other QNN ops' lowerings) use."""
    unknown = set(kwargs) - {"rounding", "compute_dtype"}
    if unknown:
        raise OpNotImplemented(f"requantize_config: unknown options {sorted(unknown)}")
    config = {**CONFIG[-1], **kwargs}
    _check_choice("requantize_config", "rounding", config["rounding"], _ROUNDINGS)
    _check_choice("requantize_config", "compute_dtype", config["compute_dtype"], _COMPUTE_DTYPES)
    CONFIG.append(config)
    try:
        yield
    finally:
        CONFIG.pop()
