"""Building blocks of the relay.testing networks; every weight is a typed `relay.var`."""

from __future__ import annotations

from typing import Any

from ...error import ArgumentError
from .. import op
from ..expr import Expr, var
from ..op import nn


class Net:
    """Creates the parameters of a network (name, shape, dtype) in order of use."""

    def __init__(self, dtype: str = "float32", layout: str = "NCHW"):
        if layout not in ("NCHW", "NHWC"):
            raise ArgumentError(f"relay.testing: layout must be 'NCHW' or 'NHWC', got {layout!r}")
        self.dtype = dtype
        self.layout = layout  # NHWC: HWIO weights, channels last (TVM's NHWC workloads)
        self.params: list = []

    @property
    def channel_axis(self) -> int:
        return 1 if self.layout == "NCHW" else 3

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
        nchw = self.layout == "NCHW"
        shape = (channels, in_channels // groups, kernel, kernel)
        if not nchw:
            shape = (kernel, kernel, in_channels // groups, channels)
        w = self.param(f"{name}_weight", shape)
        y = nn.conv2d(
            x,
            w,
            strides=(strides, strides),
            padding=(padding, padding),
            groups=groups,
            channels=channels,
            kernel_size=(kernel, kernel),
            data_layout=self.layout,
            kernel_layout="OIHW" if nchw else "HWIO",
        )
        if not bias:
            return y
        return nn.bias_add(y, self.param(f"{name}_bias", (channels,)), axis=self.channel_axis)

    def batch_norm(
        self, x: Expr, name: str, channels: int, epsilon: float = 1e-5, scale: bool = True
    ) -> Expr:
        stats = [
            self.param(f"{name}_{p}", (channels,))
            for p in ("gamma", "beta", "moving_mean", "moving_var")
        ]
        return nn.batch_norm(x, *stats, axis=self.channel_axis, epsilon=epsilon, scale=scale)[0]

    def dense(self, x: Expr, name: str, in_units: int, units: int) -> Expr:
        w = self.param(f"{name}_weight", (units, in_units))
        y = nn.dense(x, w, units=units)
        return nn.bias_add(y, self.param(f"{name}_bias", (units,)), axis=-1)


def relu(x: Expr) -> Any:
    return nn.relu(x)


# TVM's relay.testing.layers helpers: weights are untyped variables named after the layer;
# type inference gives them their shapes (relay/type_infer.py's weight rules).


def conv2d(data: Expr, weight: Expr | None = None, **kwargs: Any) -> Expr:
    """nn.conv2d with a `<name>_weight` variable when no weight is given."""
    name = kwargs.pop("name")
    return nn.conv2d(data, weight if weight is not None else var(f"{name}_weight"), **kwargs)


def batch_norm_infer(
    data: Expr,
    gamma: Expr | None = None,
    beta: Expr | None = None,
    moving_mean: Expr | None = None,
    moving_var: Expr | None = None,
    **kwargs: Any,
) -> Expr:
    """The output of nn.batch_norm, creating `<name>_gamma` ... `<name>_moving_var` as needed."""
    name = kwargs.pop("name")
    given = {"gamma": gamma, "beta": beta, "moving_mean": moving_mean, "moving_var": moving_var}
    stats = [v if v is not None else var(f"{name}_{k}") for k, v in given.items()]
    return nn.batch_norm(data, *stats, **kwargs)[0]


def dense_add_bias(
    data: Expr,
    weight: Expr | None = None,
    bias: Expr | None = None,
    units: int | None = None,
    **kwargs: Any,
) -> Expr:
    """nn.dense then bias_add on the last axis, creating `<name>_weight` / `<name>_bias`."""
    name = kwargs.pop("name")
    weight = weight if weight is not None else var(f"{name}_weight")
    bias = bias if bias is not None else var(f"{name}_bias")
    return nn.bias_add(nn.dense(data, weight, units, **kwargs), bias, axis=-1)


__all__ = ["Net", "batch_norm_infer", "conv2d", "dense_add_bias", "op", "relu"]
