"""qnn.add, qnn.subtract, qnn.mul and qnn.concatenate: constructors and table rows (their
lowerings are in `_lower.py`)."""

from __future__ import annotations

from typing import Any

from ....relax import op as rop
from ...expr import Expr, Tuple
from ...op._registry import call, register
from ._lower import LOWERINGS

# the relax forms give the result type: broadcast (or joined) inputs in the input dtype
register("qnn.add", lambda emit, args, attrs: rop.add(args[0], args[1]),
         canonicalize=LOWERINGS["qnn.add"])  # fmt: skip
register("qnn.subtract", lambda emit, args, attrs: rop.subtract(args[0], args[1]),
         canonicalize=LOWERINGS["qnn.subtract"])  # fmt: skip
register("qnn.mul", lambda emit, args, attrs: rop.multiply(args[0], args[1]),
         canonicalize=LOWERINGS["qnn.mul"])  # fmt: skip
register("qnn.concatenate", lambda emit, args, attrs: rop.concat(args[0], attrs.axis),
         canonicalize=LOWERINGS["qnn.concatenate"])  # fmt: skip


def _binary(name: str, doc: str):
    def build(lhs: Expr, rhs: Expr, lhs_scale: Expr, lhs_zero_point: Expr, rhs_scale: Expr,
              rhs_zero_point: Expr, output_scale: Expr, output_zero_point: Expr,
              lhs_axis: int = -1, rhs_axis: int = -1) -> Expr:  # fmt: skip
        args = (lhs, rhs, lhs_scale, lhs_zero_point, rhs_scale, rhs_zero_point, output_scale,
                output_zero_point)  # fmt: skip
        return call(f"qnn.{name}", args, {"lhs_axis": int(lhs_axis), "rhs_axis": int(rhs_axis)})

    build.__name__ = build.__qualname__ = name
    build.__doc__ = doc
    return build


add = _binary("add", "Quantized lhs + rhs, the result at (output_scale, output_zero_point).")
subtract = _binary("subtract", "Quantized lhs - rhs, the result at the output parameters.")
mul = _binary("mul", "Quantized lhs * rhs (per-tensor scales), the result at the output's.")


def concatenate(data: Any, input_scales: Any, input_zero_points: Any, output_scale: Expr,
                output_zero_point: Expr, axis: int) -> Expr:  # fmt: skip
    """Quantized tensors joined along `axis`, each first requantized to the output's
    (scale, zero point) where its own differ."""
    data = data if isinstance(data, Expr) else Tuple(list(data))
    scales = input_scales if isinstance(input_scales, Expr) else Tuple(list(input_scales))
    zeros = (
        input_zero_points if isinstance(input_zero_points, Expr) else Tuple(list(input_zero_points))
    )
    args = (data, scales, zeros, output_scale, output_zero_point)
    return call("qnn.concatenate", args, {"axis": int(axis)})
