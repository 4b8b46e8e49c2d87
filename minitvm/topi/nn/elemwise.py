"""Activation functions."""

from __future__ import annotations

import math

from ... import te
from ...tir import op as tir_op
from ...tir.expr import make_const


def relu(x: te.Tensor) -> te.Tensor:
    """max(x, 0) elementwise."""
    return te.compute(
        x.shape, lambda *i: tir_op.max(x[i], make_const(x.dtype, 0)), name="T_relu", tag="elemwise"
    )


def gelu(x: te.Tensor) -> te.Tensor:
    """x * Phi(x) with the exact erf form: 0.5 * x * (1 + erf(x / sqrt(2)))."""

    def body(*i):
        v = x[i]
        half = make_const(x.dtype, 0.5)
        return (
            half
            * v
            * (make_const(x.dtype, 1.0) + tir_op.erf(v * make_const(x.dtype, 1 / math.sqrt(2))))
        )

    return te.compute(x.shape, body, name="T_gelu", tag="elemwise")
