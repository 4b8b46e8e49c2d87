"""nn.op functions that minitvm has no single relax op for: written with other nn ops or as a
small TE compute (which becomes a PrimFunc of the exported module)."""

from __future__ import annotations

from typing import Any

from .... import te, tir
from ....error import ArgumentError
from .core import Tensor
from .op import add, mean, multiply, sqrt, tensor_expr_op


def rms_norm(
    x: Tensor, weight: Tensor, axes: int | list[int], epsilon: float = 1e-5, name: str = "rms_norm"
) -> Tensor:
    """x / sqrt(mean(x^2 over `axes`) + epsilon) * weight."""
    axes = [axes] if isinstance(axes, int) else list(axes)
    ms = mean(multiply(x, x), axes, keepdims=True, name=f"{name}_ms")
    denom = sqrt(add(ms, Tensor.from_scalar(epsilon, x.dtype)), name=f"{name}_rms")
    return multiply(x / denom, weight, name=name)


def triu(x: Tensor, diagonal: int = 0, name: str = "triu") -> Tensor:
    """`x` with the elements below the `diagonal`-th diagonal of its last two axes set to 0."""
    if x.ndim < 2:
        raise ArgumentError(f"nn.op.triu: x must have at least 2 dims, got shape {x.shape}")

    def compute(data: Any) -> Any:
        def body(*idx: Any) -> Any:
            keep = idx[-1] - idx[-2] >= diagonal
            return tir.Select(keep, data(*idx), tir.const(0, data.dtype))

        return te.compute(data.shape, body, name=name)

    return tensor_expr_op(compute, name, [x])


def arange(
    start: int, end: int | None = None, step: int = 1, dtype: str = "float32", name: str = "arange"
) -> Tensor:
    """[start, start + step, ...) below `end` (one argument: [0, start))."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ArgumentError("nn.op.arange: step must not be 0")
    count = max(0, -(-(end - start) // step))

    def compute() -> Any:
        return te.compute((count,), lambda i: tir.Cast(dtype, start + i * step), name=name)

    return tensor_expr_op(compute, name, [])
