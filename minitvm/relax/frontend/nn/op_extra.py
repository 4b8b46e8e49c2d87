"""More nn.op functions (TVM's names and arguments): 3-d and transposed convolutions, resizing,
sorting and the collectives. Each one emits one relax op call (plus the bias add of a conv)."""

from __future__ import annotations

import math
from typing import Any

from ....error import ArgumentError
from ... import op as _op
from ...expr import const
from .core import Tensor, get_default_dtype, wrap_nested
from .op import _expr

# PyTorch interpolate modes -> resize2d methods
_RESIZE_METHODS = {
    "nearest": "nearest_neighbor",
    "linear": "linear",
    "bilinear": "linear",
    "cubic": "cubic",
    "bicubic": "cubic",
}
_BIAS_SHAPES = {"NCW": [1, -1, 1], "NCDHW": [1, -1, 1, 1, 1], "NDHWC": [1, 1, 1, 1, -1]}


def _with_bias(out: Any, bias: Tensor | None, layout: str, what: str) -> Any:
    """`out + bias` with the bias reshaped to broadcast over the channel dim of `layout`."""
    if bias is None:
        return out
    if layout not in _BIAS_SHAPES:
        raise ArgumentError(
            f"nn.op.{what}: a bias with data_layout {layout!r} is not supported; use one of "
            f"{sorted(_BIAS_SHAPES)} or add the bias yourself"
        )
    return _op.add(out, _op.reshape(_expr(bias, what), _BIAS_SHAPES[layout]))


def conv3d(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | tuple | None = 1,
    padding: int | tuple | str | None = 0,
    dilation: int | tuple | None = 1,
    groups: int | None = 1,
    data_layout: str | None = "NCDHW",
    name: str = "conv3d",
) -> Tensor:
    """3-d convolution (weight OIDHW), plus an optional per-channel bias."""
    layout = data_layout or "NCDHW"
    out = _op.nn.conv3d(
        _expr(x, "conv3d"),
        _expr(weight, "conv3d"),
        strides=stride,
        padding=padding,
        dilation=dilation,
        groups=groups,
        data_layout=layout,
    )
    return wrap_nested(_with_bias(out, bias, layout, "conv3d"), name)


def conv1d_transpose(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | tuple[int] | None = 1,
    padding: int | tuple[int, ...] | None = 0,
    output_padding: int | tuple[int] | None = 0,
    dilation: int | tuple | None = 1,
    groups: int | None = 1,
    name: str = "conv1d_transpose",
) -> Tensor:
    """Transposed 1-d convolution, NCW input, weight IOW (in, out / groups, width)."""
    out = _op.nn.conv1d_transpose(
        _expr(x, "conv1d_transpose"),
        _expr(weight, "conv1d_transpose"),
        strides=stride,
        padding=padding,
        output_padding=output_padding,
        dilation=dilation,
        groups=groups,
    )
    return wrap_nested(_with_bias(out, bias, "NCW", "conv1d_transpose"), name)


def interpolate(
    x: Tensor,
    size: int | tuple[int] | None = None,
    scale_factor: float | tuple[float] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool | None = None,
    data_layout: str | None = "NCHW",
    name: str = "interpolate",
) -> Tensor:
    """Resize the spatial dims of `x` (PyTorch's `F.interpolate` arguments) with resize2d."""
    layout = data_layout or "NCHW"
    for flag, value in (
        ("recompute_scale_factor", recompute_scale_factor),
        ("antialias", antialias),
    ):
        if value is not None:
            raise ArgumentError(f"nn.op.interpolate: {flag} is not supported; leave it None")
    if (size is None) == (scale_factor is None):
        raise ArgumentError("nn.op.interpolate: give exactly one of size and scale_factor")
    spatial = [i for i, dim in enumerate(layout) if dim not in "NC"]
    if size is None:
        factors = scale_factor if isinstance(scale_factor, list | tuple) else [scale_factor] * 2
        size = [int(x.shape[i] * f) for i, f in zip(spatial, factors)]
    elif isinstance(size, int):
        size = [size, size]
    if mode not in _RESIZE_METHODS:
        raise ArgumentError(
            f"nn.op.interpolate: mode {mode!r} is not supported; use one of {list(_RESIZE_METHODS)}"
        )
    method = _RESIZE_METHODS[mode]
    if method == "nearest_neighbor":
        # PyTorch's "nearest" floors the source index; TVM's form rounds it, which picks a
        # different pixel than torch whenever the fraction is >= 0.5
        coord, rounding = "asymmetric", "floor"
    else:
        coord, rounding = ("align_corners" if align_corners else "half_pixel"), "round"
    call = _op.image.resize2d(
        _expr(x, "interpolate"),
        list(size),
        layout=layout,
        method=method,
        coordinate_transformation_mode=coord,
        rounding_method=rounding,
        cubic_alpha=-0.75,  # PyTorch's (and TVM's) bicubic kernel
    )
    return wrap_nested(call, name)


def get_timestep_embedding(
    x: Tensor,
    embedding_dim: int,
    flip_sin_to_cos: bool = False,
    downscale_freq_shift: float = 1,
    scale: float = 1,
    max_period: int = 10000,
    name: str = "get_timestep_embedding",
) -> Tensor:
    """Sinusoidal embeddings (N, embedding_dim) of the N timesteps `x`, as diffusion models
    (DDPM, diffusers' `get_timestep_embedding`) make them: [sin, cos] of x * freq_i with
    freq_i = exp(-log(max_period) * i / (half - downscale_freq_shift)), in the default dtype."""
    half = embedding_dim // 2
    f32 = lambda v: const(v, "float32")
    exponent = _op.multiply(f32(-math.log(max_period)), _op.arange(0, half, 1, "float32"))
    freqs = _op.exp(_op.divide(exponent, f32(half - downscale_freq_shift)))
    steps = _op.astype(_expr(x, "get_timestep_embedding"), "float32")
    emb = _op.multiply(_op.expand_dims(steps, 1), _op.expand_dims(freqs, 0))
    if scale != 1:
        emb = _op.multiply(f32(scale), emb)
    emb = wrap_nested(emb, "emb")._expr  # bound once: sin and cos read it (as in TVM)
    halves = [_op.cos(emb), _op.sin(emb)] if flip_sin_to_cos else [_op.sin(emb), _op.cos(emb)]
    emb = _op.concat(halves, axis=-1)
    if embedding_dim % 2 == 1:  # one zero column makes the width embedding_dim
        emb = _op.nn.pad(emb, [0, 0, 0, 1])
    return wrap_nested(_op.astype(emb, get_default_dtype()), name)


def sort(x: Tensor, axis: int = -1, descending: bool = False, name: str = "sort") -> Tensor:
    """`x` sorted along `axis`."""
    return wrap_nested(_op.sort(_expr(x, "sort"), axis, descending), name)


def argsort(
    data: Tensor,
    axis: int = -1,
    descending: bool = False,
    dtype: str = "int32",
    name: str = "argsort",
) -> Tensor:
    """The indices that sort `data` along `axis`."""
    return wrap_nested(_op.argsort(_expr(data, "argsort"), axis, descending, dtype), name)


def topk(
    data: Tensor,
    k: int = 1,
    axis: int = -1,
    ret_type: str = "both",
    largest: bool = True,
    dtype: str = "int32",
    name: str = "topk",
) -> Any:
    """The k largest (or smallest) along `axis`: (values, indices) for ret_type "both", else
    the one asked for."""
    call = _op.topk(_expr(data, "topk"), k, axis, ret_type, largest, dtype)
    return wrap_nested(call, name)


def ccl_allreduce(
    x: Tensor, op_type: str = "sum", in_group: bool = True, name: str = "ccl_allreduce"
) -> Tensor:
    """Reduce `x` over the workers of a disco session (every worker gets the result)."""
    return wrap_nested(_op.ccl.allreduce(_expr(x, "ccl_allreduce"), op_type, in_group), name)


def ccl_allgather(x: Tensor, num_workers: int, name: str = "ccl_allgather") -> Tensor:
    """Concatenate `x` of every worker along dim 0."""
    return wrap_nested(_op.ccl.allgather(_expr(x, "ccl_allgather"), num_workers), name)


def ccl_broadcast_from_worker0(x: Tensor, name: str = "broadcast_from_worker") -> Tensor:
    """Worker 0's `x`, on every worker."""
    return wrap_nested(_op.ccl.broadcast_from_worker0(_expr(x, "ccl_broadcast_from_worker0")), name)


__all__ = [
    "argsort",
    "ccl_allgather",
    "ccl_allreduce",
    "ccl_broadcast_from_worker0",
    "conv1d_transpose",
    "conv3d",
    "get_timestep_embedding",
    "interpolate",
    "sort",
    "topk",
]
