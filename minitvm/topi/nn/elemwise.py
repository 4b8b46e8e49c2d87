"""Activation functions."""

from __future__ import annotations

import math

from ... import te
from ...tir import op as tir_op
from ...tir.expr import make_const
from ..broadcast import tanh_expr


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


def _elemwise(x: te.Tensor, fn, name: str) -> te.Tensor:
    return te.compute(x.shape, lambda *i: fn(x[i]), name=name, tag="elemwise")


def silu(x: te.Tensor) -> te.Tensor:
    """x * sigmoid(x) (SiLU, swish)."""
    return _elemwise(x, lambda v: v * tir_op.sigmoid(v), "T_silu")


def leaky_relu(x: te.Tensor, alpha: float = 0.01) -> te.Tensor:
    """x where x > 0, else alpha * x."""
    zero, a = make_const(x.dtype, 0), make_const(x.dtype, alpha)
    return _elemwise(x, lambda v: tir_op.Select_(v > zero, v, v * a), "T_leaky_relu")


def softplus(x: te.Tensor, beta: float = 1.0, threshold: float = 20.0) -> te.Tensor:
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold (as torch)."""
    b, t, one = make_const(x.dtype, beta), make_const(x.dtype, threshold), make_const(x.dtype, 1)

    def body(v):
        bx = v * b
        # log1p(exp(-|bx|)) + max(bx, 0) never overflows, unlike log(1 + exp(bx))
        soft = (
            tir_op.log(one + tir_op.exp(-tir_op.abs(bx))) + tir_op.max(bx, make_const(x.dtype, 0))
        ) / b
        return tir_op.Select_(bx > t, v, soft)

    return _elemwise(x, body, "T_softplus")


def gelu_tanh(x: te.Tensor) -> te.Tensor:
    """GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))."""
    c = make_const(x.dtype, math.sqrt(2.0 / math.pi))
    k, half, one = make_const(x.dtype, 0.044715), make_const(x.dtype, 0.5), make_const(x.dtype, 1)
    return _elemwise(
        x, lambda v: half * v * (one + tanh_expr(c * (v + k * v * v * v))), "T_gelu_tanh"
    )
