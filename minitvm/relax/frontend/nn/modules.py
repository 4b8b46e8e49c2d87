"""Layers of nn (TVM's names and parameter shapes, which are PyTorch's): Linear, Embedding,
convolutions, norms and activations. Parameters are unbound until given data."""

from __future__ import annotations

from typing import Any

from ....error import ArgumentError
from . import op
from .core import Effect, Module, Parameter, Tensor
from .effects import IOEffect, KVCache  # TVM defines its effects in nn.modules


class ReLU(Module):
    """max(x, 0)."""

    def forward(self, x: Tensor) -> Tensor:
        return op.relu(x)


class PReLU(Module):
    """x where x > 0, else weight[c] * x over channels c (axis 1); `num_parameters` is 1 (one
    slope shared by all channels) or the channel count, as torch.nn.PReLU. The weight is a
    Parameter, bound like every other (there is no init value before export)."""

    def __init__(self, num_parameters: int = 1, dtype: str | None = None) -> None:
        if (
            isinstance(num_parameters, bool)
            or not isinstance(num_parameters, int)
            or (num_parameters <= 0)
        ):
            raise ArgumentError(
                f"nn.PReLU: num_parameters must be a positive int, got {num_parameters!r}"
            )
        self.num_parameters = num_parameters
        self.weight = Parameter((num_parameters,), dtype)

    def forward(self, x: Tensor) -> Tensor:
        alpha = self.weight
        if self.num_parameters == 1 and x.ndim >= 2:  # one slope: repeat it per channel
            alpha = op.broadcast_to(alpha, [x.shape[1]])
        return op.prelu(x, alpha)


class SiLU(Module):
    """x * sigmoid(x)."""

    def forward(self, x: Tensor) -> Tensor:
        return op.silu(x)


class GELU(Module):
    """The exact (erf) GELU; `approximate="tanh"` for the tanh formula."""

    def __init__(self, approximate: str | None = None) -> None:
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return op.gelu(x, approximate=self.approximate)


class Identity(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x


class Dropout(Module):
    """Dropout: exported programs are for inference, where it is the identity."""

    def __init__(self, p: float = 0.5) -> None:
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return x


class Linear(Module):
    """y = x W^T + b, W of shape (out_features, in_features)."""

    def __init__(
        self,
        in_features: Any,
        out_features: Any,
        bias: bool = True,
        dtype: str | None = None,
        out_dtype: str | None = None,
    ) -> None:
        self.in_features, self.out_features, self.out_dtype = in_features, out_features, out_dtype
        self.weight = Parameter((out_features, in_features), dtype)
        bias_dtype = dtype if out_dtype is None else out_dtype
        self.bias = Parameter((out_features,), bias_dtype) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        y = op.matmul(x, op.permute_dims(self.weight), out_dtype=self.out_dtype)
        return y if self.bias is None else y + self.bias

    def to(self, dtype: str | None = None) -> None:
        """Converts the bias too unless it is kept in `out_dtype`."""
        self.weight.to(dtype)
        if self.bias is not None and self.out_dtype is None:
            self.bias.to(dtype)


class Embedding(Module):
    """Rows of a (num, dim) table looked up by integer ids of any shape."""

    def __init__(self, num: Any, dim: Any, dtype: str | None = None) -> None:
        self.num, self.dim = num, dim
        self.weight = Parameter((num, dim), dtype)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim == 1:
            return op.take(self.weight, x, axis=0)
        flat = op.reshape(x, [-1])
        return op.reshape(op.take(self.weight, flat, axis=0), [*x.shape, self.dim])


def _per_group(channels: Any, groups: int) -> Any:
    """Channels per group; a symbolic count with groups 1 stays the bare var (TVM folds
    `in_channels // 1`, so the weight reads (32, in_channels, 3, 3))."""
    return channels if groups == 1 else channels // groups


class Conv3D(Module):
    """3-d convolution, NCDHW input (or NDHWC), weight (out, in / groups, kd, kh, kw)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: list[int] | int,
        stride: list[int] | int = 1,
        padding: list[int] | int = 0,
        dilation: int = 1,
        groups: int = 1,
        bias: bool = True,
        dtype: str | None = None,
        data_layout: str = "NCDHW",
    ) -> None:
        self.in_channels, self.out_channels, self.data_layout = (
            in_channels,
            out_channels,
            data_layout,
        )
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.kernel_size = [kernel_size] * 3 if isinstance(kernel_size, int) else list(kernel_size)
        in_per_group = _per_group(in_channels, groups)
        self.weight = Parameter([out_channels, in_per_group, *self.kernel_size], dtype)
        self.bias = Parameter((out_channels,), dtype) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        return op.conv3d(
            x,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            self.dilation,
            self.groups,
            self.data_layout,
        )


class ConvTranspose1D(Module):
    """Transposed 1-d convolution, NCW input, weight (in, out / groups, kernel) as in PyTorch."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        stride: int = 1,
        padding: int = 0,
        output_padding: int = 0,
        dilation: int = 1,
        groups: int = 1,
        bias: bool = True,
        dtype: str | None = None,
    ) -> None:
        self.in_channels, self.out_channels, self.kernel_size = (
            in_channels,
            out_channels,
            kernel_size,
        )
        self.stride, self.padding, self.output_padding = stride, padding, output_padding
        self.dilation, self.groups = dilation, groups
        self.weight = Parameter((in_channels, _per_group(out_channels, groups), kernel_size), dtype)
        self.bias = Parameter((out_channels,), dtype) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        return op.conv1d_transpose(
            x,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            self.output_padding,
            self.dilation,
            self.groups,
        )


class Conv1D(Module):
    """1-D convolution, NCW input, weight (out, in / groups, kernel)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        stride: int = 1,
        padding: int = 0,
        dilation: int = 1,
        groups: int = 1,
        bias: bool = True,
        dtype: str | None = None,
    ) -> None:
        self.in_channels, self.out_channels, self.kernel_size = (
            in_channels,
            out_channels,
            kernel_size,
        )
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.weight = Parameter((out_channels, _per_group(in_channels, groups), kernel_size), dtype)
        self.bias = Parameter((out_channels,), dtype) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        return op.conv1d(
            x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )


class Conv2D(Module):
    """2-D convolution, weight (out, in / groups, kh, kw); `data_layout` "NCHW" or "NHWC"."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | list[int],
        stride: int = 1,
        padding: int = 0,
        dilation: int = 1,
        groups: int = 1,
        bias: bool = True,
        dtype: str | None = None,
        data_layout: str = "NCHW",
    ) -> None:
        self.in_channels, self.out_channels = in_channels, out_channels
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.data_layout = data_layout
        ks = [kernel_size] * 2 if isinstance(kernel_size, int) else list(kernel_size)
        self.kernel_size = ks
        self.weight = Parameter([out_channels, _per_group(in_channels, groups), *ks], dtype)
        self.bias = Parameter((out_channels,), dtype) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        return op.conv2d(
            x,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            self.dilation,
            self.groups,
            self.data_layout,
        )


class LayerNorm(Module):
    """Layer normalisation over the last dim, with learnable weight and bias."""

    def __init__(
        self,
        normalized_shape: int,
        eps: float | None = 1e-5,
        elementwise_affine: bool = True,
        dtype: str | None = None,
    ) -> None:
        self.normalized_shape, self.eps = normalized_shape, eps
        self.elementwise_affine = elementwise_affine
        shape = (normalized_shape,)
        self.weight = Parameter(shape, dtype) if elementwise_affine else None
        self.bias = Parameter(shape, dtype) if elementwise_affine else None

    def forward(self, x: Tensor) -> Tensor:
        return op.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class RMSNorm(Module):
    """x / rms(x over `axes`) * weight (+ bias)."""

    def __init__(
        self,
        hidden_size: int,
        axes: int | list[int],
        epsilon: float = 1e-5,
        bias: bool = True,
        dtype: str | None = None,
    ) -> None:
        self.epsilon, self.axes = epsilon, axes
        self.weight = Parameter((hidden_size,), dtype)
        self.bias = Parameter((hidden_size,), dtype) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        out = op.rms_norm(x, self.weight, self.axes, self.epsilon)
        return out if self.bias is None else op.add(out, self.bias)


class GroupNorm(Module):
    """Group normalisation of `num_channels` channels in `num_groups` groups."""

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        dtype: str | None = None,
    ) -> None:
        self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
        self.weight = Parameter((num_channels,), dtype) if affine else None
        self.bias = Parameter((num_channels,), dtype) if affine else None

    def forward(self, x: Tensor, channel_axis: int = 1, axes: list[int] | None = None) -> Tensor:
        return op.group_norm(
            x, self.num_groups, self.weight, self.bias, self.eps, channel_axis, axes
        )


# TVM keeps the diffusion layers in nn.modules too; they build on the layers above
from .modules_diffusers import Attention, TimestepEmbedding, Timesteps

__all__ = [
    "GELU", "Attention", "Conv1D", "Conv2D", "Conv3D", "ConvTranspose1D", "Dropout", "Effect",
    "Embedding", "GroupNorm", "IOEffect", "Identity", "KVCache", "LayerNorm", "Linear",
    "RMSNorm", "ReLU", "SiLU", "TimestepEmbedding", "Timesteps",
]  # fmt: skip
