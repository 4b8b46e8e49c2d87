"""nn.op functions written after op.py's helpers: one relax op each (rms_norm, prelu), or a small
TE compute (which becomes a PrimFunc of the exported module)."""

from __future__ import annotations

from typing import Any

from ....error import ArgumentError
from ... import op as _op
from .core import Tensor, wrap_nested


def rms_norm(
    x: Tensor, weight: Tensor, axes: int | list[int], epsilon: float = 1e-5, name: str = "rms_norm"
) -> Tensor:
    """x / sqrt(mean(x^2 over `axes`) + epsilon) * weight: one `relax.op.nn.rms_norm` call."""
    return wrap_nested(_op.nn.rms_norm(x._expr, weight._expr, axes, epsilon), name)


def prelu(x: Tensor, alpha: Tensor, name: str = "prelu") -> Tensor:
    """x where x > 0, else alpha[c] * x, c the index along axis 1 (channels, as in TVM)."""
    for what, t in (("x", x), ("alpha", alpha)):
        if not isinstance(t, Tensor):
            raise ArgumentError(f"nn.op.prelu: {what} must be an nn.Tensor, got {type(t).__name__}")
    return wrap_nested(_op.nn.prelu(x._expr, alpha._expr), name)


def triu(x: Tensor, diagonal: int = 0, name: str = "triu") -> Tensor:
    """`x` with the elements below the `diagonal`-th diagonal of its last two axes set to 0:
    one `relax.op.triu` call."""
    if x.ndim < 2:
        raise ArgumentError(f"nn.op.triu: x must have at least 2 dims, got shape {x.shape}")
    return wrap_nested(_op.triu(x._expr, diagonal), name)


def arange(
    start: Any, end: Any = None, step: Any = 1, dtype: str = "float32", name: str = "arange"
) -> Tensor:
    """[start, start + step, ...) below `end` (one argument: [0, start)): one `relax.op.arange`
    call; a bound may be an int, a float or a tir.Var (a symbolic length)."""
    if end is None:
        start, end = 0, start
    if isinstance(step, int) and step == 0:
        raise ArgumentError("nn.op.arange: step must not be 0")
    return wrap_nested(_op.arange(start, end, step, dtype), name)
