"""Building blocks of the relay.testing networks; every weight is a typed `relay.var`."""

from __future__ import annotations

from typing import Any

from .. import op
from ..expr import Expr, var
from ..op import nn


class Net:
    """Creates the parameters of a network (name, shape, dtype) in order of use."""

    def __init__(self, dtype: str = "float32"):
        self.dtype = dtype
        self.params: list = []

    def param(self, name: str, shape: tuple) -> Expr:
        v = var(name, shape=shape, dtype=self.dtype)
        self.params.append(v)
        return v

    def conv2d(
        self,
        x: Expr,
        name: str,
        in_channels: int,
        channels: int,
        kernel: int,
        strides: int = 1,
        padding: int = 0,
        groups: int = 1,
        bias: bool = False,
    ) -> Expr:
        w = self.param(f"{name}_weight", (channels, in_channels // groups, kernel, kernel))
        y = nn.conv2d(
            x,
            w,
            strides=(strides, strides),
            padding=(padding, padding),
            groups=groups,
            channels=channels,
            kernel_size=(kernel, kernel),
        )
        return nn.bias_add(y, self.param(f"{name}_bias", (channels,))) if bias else y

    def batch_norm(
        self, x: Expr, name: str, channels: int, epsilon: float = 1e-5, scale: bool = True
    ) -> Expr:
        stats = [
            self.param(f"{name}_{p}", (channels,))
            for p in ("gamma", "beta", "moving_mean", "moving_var")
        ]
        return nn.batch_norm(x, *stats, epsilon=epsilon, scale=scale)[0]

    def dense(self, x: Expr, name: str, in_units: int, units: int) -> Expr:
        w = self.param(f"{name}_weight", (units, in_units))
        y = nn.dense(x, w, units=units)
        return nn.bias_add(y, self.param(f"{name}_bias", (units,)), axis=-1)


def relu(x: Expr) -> Any:
    return nn.relu(x)


__all__ = ["Net", "op", "relu"]
