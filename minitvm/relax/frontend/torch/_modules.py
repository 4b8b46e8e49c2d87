"""Converters for torch.nn modules that torch.fx keeps as leaves (call_module nodes).

Each reads the module's hyper-parameters and weights and calls the functional converter
of `_ops`, so a module and its functional form import to the same relax code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ....error import OpAttributeUnImplemented
from ... import op as R
from ...expr import Expr
from . import _base as base
from . import _nn as nn_ops
from . import _shape as shape
from ._ops import FUNCTIONS


def _param(t, tensor: Any) -> Expr | None:
    return None if tensor is None else t.tensor(tensor)


def _conv(t, m, x):
    if m.padding_mode != "zeros":
        raise OpAttributeUnImplemented(f"padding_mode={m.padding_mode!r} (only 'zeros')")
    w, b = _param(t, m.weight), _param(t, m.bias)
    return nn_ops._conv_nd(
        t, x, w, b, m.stride, m.padding, m.dilation, m.groups, len(m.kernel_size)
    )


def _conv_transpose(t, m, x):
    if m.padding_mode != "zeros":
        raise OpAttributeUnImplemented(f"padding_mode={m.padding_mode!r} (only 'zeros')")
    w, b = _param(t, m.weight), _param(t, m.bias)
    nd = len(m.kernel_size)
    return nn_ops._conv_transpose(nd)(
        t, x, w, b, m.stride, m.padding, m.output_padding, m.groups, m.dilation
    )


def _linear(t, m, x):
    return nn_ops._linear(t, x, _param(t, m.weight), _param(t, m.bias))


def _cross_entropy(t, m, input, target):
    weight = _param(t, m.weight)
    return nn_ops._cross_entropy(
        t, input, target, weight, None, m.ignore_index, None, m.reduction, m.label_smoothing
    )


def _batch_norm(t, m, x):
    # the module's training flag is not read: modules import in inference mode, as in TVM
    if m.running_mean is None:
        raise OpAttributeUnImplemented("batch norm without running stats (track_running_stats)")
    return nn_ops._batch_norm(
        t,
        x,
        _param(t, m.weight),
        _param(t, m.bias),
        t.tensor(m.running_mean),
        t.tensor(m.running_var),
        m.eps,
    )


def _layer_norm(t, m, x):
    return nn_ops._layer_norm(
        t, x, m.normalized_shape, _param(t, m.weight), _param(t, m.bias), m.eps
    )


def _group_norm(t, m, x):
    return nn_ops._group_norm(t, x, m.num_groups, _param(t, m.weight), _param(t, m.bias), m.eps)


def _max_pool(nd: int) -> Callable:
    def convert(t, m, x):
        return nn_ops._max_pool(nd)(
            t, x, m.kernel_size, m.stride, m.padding, m.dilation, m.ceil_mode, m.return_indices
        )

    return convert


def _avg_pool(nd: int) -> Callable:
    def convert(t, m, x):
        return nn_ops._avg_pool(nd)(
            t,
            x,
            m.kernel_size,
            m.stride,
            m.padding,
            m.ceil_mode,
            m.count_include_pad,
            getattr(m, "divisor_override", None),
        )

    return convert


def _adaptive_avg_pool(nd: int) -> Callable:
    def convert(t, m, x):
        return nn_ops._adaptive_avg_pool(nd)(t, x, m.output_size)

    return convert


def _softmax(t, m, x):
    return FUNCTIONS["softmax"](t, x, m.dim)


def _log_softmax(t, m, x):
    return FUNCTIONS["log_softmax"](t, x, m.dim)


def _embedding(t, m, x):
    if m.max_norm is not None:
        raise OpAttributeUnImplemented(f"max_norm={m.max_norm} (renormalising embeddings)")
    return nn_ops._embedding(t, t.tensor(m.weight), x)


def _flatten(t, m, x):
    return shape._flatten(t, x, m.start_dim, m.end_dim)


def _upsample(t, m, x):
    return nn_ops._interpolate(t, x, m.size, m.scale_factor, m.mode, m.align_corners)


def _multihead_attention(
    t,
    m,
    query,
    key,
    value,
    key_padding_mask=None,
    need_weights=True,
    attn_mask=None,
    average_attn_weights=True,
    is_causal=False,
):
    """nn.MultiheadAttention: in-projections, per-head softmax(q k^T / sqrt(d)) v, out-projection."""
    if key_padding_mask is not None:
        raise OpAttributeUnImplemented("MultiheadAttention with key_padding_mask")
    if m.bias_k is not None or m.add_zero_attn or not m._qkv_same_embed_dim:
        raise OpAttributeUnImplemented(
            "MultiheadAttention with add_bias_kv, add_zero_attn or kdim/vdim"
        )
    if not m.batch_first:  # (L, N, E) -> (N, L, E)
        query, key, value = (shape._transpose(t, v, 0, 1) for v in (query, key, value))
    embed, heads = m.embed_dim, m.num_heads
    w = t.tensor(m.in_proj_weight)
    b = _param(t, m.in_proj_bias)
    weights = shape._split_sizes(t, w, [embed] * 3, 0)
    biases = shape._split_sizes(t, b, [embed] * 3, 0) if b is not None else (None,) * 3

    def heads_first(x, i):  # (N, L, E) -> (N, H, L, E / H)
        y = nn_ops._linear(
            t, x, shape._item(t, weights, i), None if b is None else shape._item(t, biases, i)
        )
        n, length, _ = base.shape_of(y)
        return t.emit(
            R.permute_dims(t.emit(R.reshape(y, (n, length, heads, embed // heads))), (0, 2, 1, 3))
        )

    q, k, v = heads_first(query, 0), heads_first(key, 1), heads_first(value, 2)
    probs = nn_ops.attention_probs(t, q, k, attn_mask, is_causal)
    ctx = t.emit(R.matmul(probs, v))
    n, _, length, _ = base.shape_of(ctx)
    out = t.emit(R.reshape(t.emit(R.permute_dims(ctx, (0, 2, 1, 3))), (n, length, embed)))
    out = nn_ops._linear(t, out, t.tensor(m.out_proj.weight), _param(t, m.out_proj.bias))
    if not m.batch_first:
        out = shape._transpose(t, out, 0, 1)
    if not need_weights:
        return (out, None)
    if average_attn_weights:  # (N, H, L, S) -> (N, L, S)
        probs = t.emit(R.mean(probs, axis=[1], keepdims=False))
    return (out, probs)


def _activation(name: str, *attrs: str) -> Callable:
    def convert(t, m, x):
        return FUNCTIONS[name](t, x, *(getattr(m, a) for a in attrs))

    return convert


def _identity(t, m, x, *args, **kwargs):
    return x


def view_modules() -> tuple[type, ...]:
    """Module classes whose output may share memory with their input (for in-place checks)."""
    from torch import nn

    return (nn.Flatten, nn.Unflatten, nn.Identity, nn.Dropout)


def table() -> dict[type, Callable]:
    """Module class -> converter; built on first use so that importing needs no torch."""
    from torch import nn

    return {
        nn.Conv1d: _conv,
        nn.Conv2d: _conv,
        nn.Conv3d: _conv,
        nn.ConvTranspose1d: _conv_transpose,
        nn.ConvTranspose2d: _conv_transpose,
        nn.Linear: _linear,
        nn.BatchNorm1d: _batch_norm,
        nn.BatchNorm2d: _batch_norm,
        nn.LayerNorm: _layer_norm,
        nn.GroupNorm: _group_norm,
        nn.ReLU: _activation("relu"),
        nn.ReLU6: _activation("relu6"),
        nn.GELU: _activation("gelu", "approximate"),
        nn.SiLU: _activation("silu"),
        nn.Sigmoid: _activation("sigmoid"),
        nn.Tanh: _activation("tanh"),
        nn.Hardswish: _activation("hardswish"),
        nn.Hardsigmoid: _activation("hardsigmoid"),
        nn.Hardtanh: _activation("hardtanh", "min_val", "max_val"),
        nn.LeakyReLU: _activation("leaky_relu", "negative_slope"),
        nn.Softplus: _activation("softplus", "beta", "threshold"),
        nn.ZeroPad2d: _activation("pad", "padding"),
        nn.ConstantPad2d: _activation("constant_pad_nd", "padding", "value"),
        nn.Softmax: _softmax,
        nn.LogSoftmax: _log_softmax,
        nn.MaxPool1d: _max_pool(1),
        nn.MaxPool2d: _max_pool(2),
        nn.AvgPool1d: _avg_pool(1),
        nn.AvgPool2d: _avg_pool(2),
        nn.AdaptiveAvgPool1d: _adaptive_avg_pool(1),
        nn.AdaptiveAvgPool2d: _adaptive_avg_pool(2),
        nn.Flatten: _flatten,
        nn.Dropout: _identity,
        nn.Identity: _identity,
        nn.Embedding: _embedding,
        nn.Upsample: _upsample,
        nn.MultiheadAttention: _multihead_attention,
        nn.CrossEntropyLoss: _cross_entropy,
    }
