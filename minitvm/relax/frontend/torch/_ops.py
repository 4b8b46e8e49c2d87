"""Converters from PyTorch operators to relax.op calls: one function per torch op, in tables.

A converter takes the importer (`t`: emits bindings, makes constants) and the op's arguments
in PyTorch's own order and names (`F.conv2d(input, weight, bias, stride, ...)`), already
translated: tensors are relax expressions, ints may be symbolic (tir PrimExprs), lists stay
lists. The fx importer and the torch.export importer both look names up here
(`FUNCTIONS` for functions and aten ops, `METHODS` for `Tensor` methods, `MODULES` for
`nn.Module` leaves); `ATEN` and `FX` hold the few names whose argument order differs
between `torch.nn.functional` and aten (batch_norm, embedding).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ....error import OpAttributeInvalid, OpAttributeUnImplemented
from ....tir.expr import IntImm, PrimExpr
from ... import op as R
from ...expr import Expr, TupleGetItem
from ...struct_info import TensorStructInfo, TupleStructInfo

_INT64_MAX = 9223372036854775807  # torch.export's "to the end" for slice bounds


# ----------------------------------------------------------------------------- helpers


def _sinfo(x: Expr) -> TensorStructInfo:
    sinfo = x.struct_info
    if not isinstance(sinfo, TensorStructInfo):
        raise OpAttributeInvalid(f"expected a tensor, got a value of type {sinfo}")
    return sinfo


def shape_of(x: Expr) -> tuple:
    """Dims of a tensor: ints where static, tir PrimExprs where symbolic."""
    sinfo = _sinfo(x)
    if sinfo.shape is None:
        raise OpAttributeUnImplemented(f"a tensor of unknown shape ({sinfo}) cannot be converted")
    return tuple(int(d.value) if isinstance(d, IntImm) else d for d in sinfo.shape)


def _ndim(x: Expr) -> int:
    return _sinfo(x).ndim


def _dtype(x: Expr) -> str:
    return str(_sinfo(x).dtype)


def _axis(dim: int, ndim: int) -> int:
    dim = int(dim)
    if not -ndim <= dim < max(ndim, 1):
        raise OpAttributeInvalid(f"dim {dim} is out of range for a tensor of rank {ndim}")
    return dim % ndim if ndim else 0


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def _pair(v: Any, n: int = 2) -> tuple:
    if isinstance(v, list | tuple):
        return tuple(v) if len(v) == n else tuple(v) * n if len(v) == 1 else tuple(v)
    return (v,) * n


def _dims(args: Sequence) -> list:
    """Varargs or one list, as Tensor.view(2, 3) and view((2, 3)) both allow."""
    if len(args) == 1 and isinstance(args[0], list | tuple):
        return list(args[0])
    return list(args)


def _scalar_dtype(value: Any) -> str:
    return "bool" if isinstance(value, bool) else "int64" if isinstance(value, int) else "float32"


def _result_dtype(a: Any, b: Any) -> str:
    """torch's promotion, as far as models use it: a float operand makes the result float."""
    tensors = [_dtype(v) for v in (a, b) if isinstance(v, Expr)]
    floats = [d for d in tensors if _is_float(d)]
    if floats:
        return floats[0]
    if any(isinstance(v, float) for v in (a, b)):
        return "float32"
    return tensors[0]


def _as_tensor(t, value: Any, dtype: str) -> Expr:
    if not isinstance(value, Expr):
        return t.const(value, dtype)
    return value if _dtype(value) == dtype else t.emit(R.astype(value, dtype))


def _pair_operands(t, a: Any, b: Any) -> tuple[Expr, Expr]:
    """(a, b) as tensors of one dtype; at least one of them is a tensor."""
    dtype = _result_dtype(a, b)
    return _as_tensor(t, a, dtype), _as_tensor(t, b, dtype)


# ----------------------------------------------------------------------------- elementwise


def _binary(relax_op: Callable, py_op: Callable) -> Callable:
    def convert(t, a, b, *, alpha=1, out=None):
        if out is not None:
            raise OpAttributeUnImplemented("out= is not supported; use the returned value")
        if not isinstance(a, Expr) and not isinstance(b, Expr):  # symbolic sizes, scalars
            return py_op(a, b * alpha if alpha != 1 else b)
        if alpha != 1:
            b = (
                b * alpha
                if not isinstance(b, Expr)
                else _binary(R.multiply, operator.mul)(t, b, alpha)
            )
        x, y = _pair_operands(t, a, b)
        return t.emit(relax_op(x, y))

    return convert


def _div(t, a, b, *, rounding_mode=None):
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        return a // b if rounding_mode == "floor" else a / b
    if rounding_mode is not None:
        return (
            _binary(_need("floor_divide"), operator.floordiv)(t, a, b)
            if rounding_mode == "floor"
            else _unsupported_attr("rounding_mode", rounding_mode)
        )
    x, y = _pair_operands(t, a, b)
    if not _is_float(_dtype(x)):  # torch's true division of integers gives floats
        x, y = t.emit(R.astype(x, "float32")), t.emit(R.astype(y, "float32"))
    return t.emit(R.divide(x, y))


def _rsub(t, a, b, alpha=1):  # b - alpha * a
    return _binary(R.subtract, operator.sub)(t, b, a, alpha=alpha)


def _unsupported_attr(name: str, value: Any):
    raise OpAttributeUnImplemented(f"{name}={value!r} is not supported")


def _need(name: str) -> Callable:
    """A relax op by its TVM name ("nn.silu"), or a clear error when this build lacks it."""
    fn: Any = R
    for part in name.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise OpAttributeUnImplemented(f"needs relax.op.{name}, which is not available")
    return fn


def _unary(relax_op: Callable) -> Callable:
    def convert(t, x, *, inplace=False):
        return t.emit(relax_op(x))

    return convert


def _float_unary(relax_op: Callable) -> Callable:
    def convert(t, x, *, inplace=False):
        if not _is_float(_dtype(x)):
            x = t.emit(R.astype(x, "float32"))
        return t.emit(relax_op(x))

    return convert


def _clamp(t, x, min=None, max=None, *, inplace=False):
    lo = -math.inf if min is None else min
    hi = math.inf if max is None else max
    if isinstance(lo, Expr) or isinstance(hi, Expr):
        raise OpAttributeUnImplemented("clamp with tensor bounds is not supported")
    return t.emit(R.clip(x, lo, hi))


def _hardtanh(t, x, min_val=-1.0, max_val=1.0, inplace=False):
    return t.emit(R.clip(x, min_val, max_val))


def _relu6(t, x, inplace=False):
    return t.emit(R.nn.relu6(x))


def _gelu(t, x, approximate="none"):
    if approximate == "none":
        return t.emit(R.nn.gelu(x))
    if approximate != "tanh":
        _unsupported_attr("approximate", approximate)
    return t.emit(_need("nn.gelu_tanh")(x))


def _silu(t, x, inplace=False):
    return t.emit(_need("nn.silu")(x))


def _hardsigmoid(t, x, inplace=False):  # relu6(x + 3) / 6
    shifted = t.emit(R.clip(t.emit(R.add(x, t.const(3.0, _dtype(x)))), 0.0, 6.0))
    return t.emit(R.divide(shifted, t.const(6.0, _dtype(x))))


def _hardswish(t, x, inplace=False):  # x * relu6(x + 3) / 6
    return t.emit(R.multiply(x, _hardsigmoid(t, x)))


def _leaky_relu(t, x, negative_slope=0.01, inplace=False):
    return t.emit(_need("nn.leakyrelu")(x, float(negative_slope)))


def _log1p(t, x):
    return t.emit(R.log(t.emit(R.add(x, t.const(1.0, _dtype(x))))))


def _softplus(t, x, beta=1.0, threshold=20.0):
    return t.emit(_need("nn.softplus")(x, float(beta), float(threshold)))


def _pad(t, input, pad, mode="constant", value=None):
    """torch's pad lists (before, after) pairs from the LAST dim backwards."""
    modes = {"constant": "constant", "replicate": "edge", "reflect": "reflect"}
    if mode not in modes:
        _unsupported_attr("mode", mode)
    pad = list(pad)
    if len(pad) % 2 or len(pad) // 2 > _ndim(input):
        raise OpAttributeInvalid(
            f"pad {pad} must hold (before, after) pairs for at most {_ndim(input)} dims"
        )
    if any(p < 0 for p in pad):
        raise OpAttributeUnImplemented(f"negative padding {pad} (cropping)")
    pairs = [(0, 0)] * (_ndim(input) - len(pad) // 2)
    pairs += [(pad[i], pad[i + 1]) for i in range(len(pad) - 2, -1, -2)]
    fill = 0.0 if value is None else float(value)
    return t.emit(_need("nn.pad")(input, pad_width=pairs, pad_value=fill, pad_mode=modes[mode]))


def _constant_pad_nd(t, input, pad, value=0):
    return _pad(t, input, pad, "constant", value)


def _pow(t, x, exponent):
    if not isinstance(x, Expr) and not isinstance(exponent, Expr):
        return x**exponent
    if exponent == 2 and not isinstance(exponent, Expr):
        return t.emit(R.multiply(x, x))
    a, b = _pair_operands(t, x, exponent)
    return t.emit(R.power(a, b))


def _softmax_like(relax_op: Callable) -> Callable:
    def convert(t, x, dim=None, *rest, dtype=None, half_to_float=False, _stacklevel=3):
        if dim is None:
            raise OpAttributeInvalid("softmax needs dim=; torch's implicit dim is deprecated")
        dtype = dtype or next((r for r in rest if _is_torch_dtype(r)), None)
        if dtype is not None:
            x = t.emit(R.astype(x, t.dtype(dtype)))
        return t.emit(relax_op(x, int(dim)))

    return convert


def _is_torch_dtype(value: Any) -> bool:
    return type(value).__name__ == "dtype" and type(value).__module__ == "torch"


# ----------------------------------------------------------------------------- nn


def _conv_padding(padding, kernel: tuple, dilation: tuple) -> tuple[tuple, tuple]:
    """(before, after) per spatial dim; "same" puts the odd extra element after, as torch does."""
    if padding == "valid":
        return (0,) * len(kernel), (0,) * len(kernel)
    if padding == "same":
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        before = tuple(p // 2 for p in total)
        return before, tuple(p - b for p, b in zip(total, before))
    if isinstance(padding, str):
        _unsupported_attr("padding", padding)
    pad = _pair(padding, len(kernel))
    return pad, pad


def _drop_axis(t, x: Expr, axis: int) -> Expr:
    shape = shape_of(x)
    return t.emit(R.reshape(x, shape[:axis] + shape[axis + 1 :]))


def _conv_nd(t, x, weight, bias, stride, padding, dilation, groups, nd: int):
    """A 1-d conv runs as a 2-d conv over (N, C, 1, L)."""
    stride, dilation = _pair(stride, nd), _pair(dilation, nd)
    before, after = _conv_padding(padding, shape_of(weight)[2:], dilation)
    if nd == 1:
        x, weight = t.emit(R.expand_dims(x, 2)), t.emit(R.expand_dims(weight, 2))
        stride, dilation, before, after = (1, *stride), (1, *dilation), (0, *before), (0, *after)
    y = t.emit(R.nn.conv2d(x, weight, stride, (*before, *after), dilation, int(groups)))
    if nd == 1:
        y = _drop_axis(t, y, 2)
    if bias is not None:
        y = t.emit(R.add(y, t.emit(R.reshape(bias, (-1,) + (1,) * (_ndim(y) - 2)))))
    return y


def _conv1d(t, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv_nd(t, input, weight, bias, stride, padding, dilation, groups, 1)


def _conv2d(t, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv_nd(t, input, weight, bias, stride, padding, dilation, groups, 2)


def _convolution(
    t, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
):
    if transposed:
        _unsupported_attr("transposed", transposed)
    nd = _ndim(input) - 2
    if nd not in (1, 2):
        raise OpAttributeUnImplemented(f"{nd}-d convolution is not supported (only 1-d and 2-d)")
    return _conv_nd(t, input, weight, bias, stride, padding, dilation, groups, nd)


def _linear(t, input, weight, bias=None):
    return t.emit(R.nn.linear(input, weight, bias))


def _addmm(t, input, mat1, mat2, *, beta=1, alpha=1):
    y = t.emit(R.matmul(mat1, mat2))
    if alpha != 1:
        y = t.emit(R.multiply(y, t.const(alpha, _dtype(y))))
    if beta != 0:
        bias = input if beta == 1 else t.emit(R.multiply(input, t.const(beta, _dtype(input))))
        y = t.emit(R.add(y, bias))
    return y


def _matmul(t, input, other, *, out=None):
    return t.emit(R.matmul(input, other))


def _batch_norm(t, x, weight, bias, mean, var, eps):
    c = shape_of(x)[1]
    weight = weight if weight is not None else t.const(np.ones(c, _dtype(x)))
    bias = bias if bias is not None else t.const(np.zeros(c, _dtype(x)))
    out = t.emit(R.nn.batch_norm(x, weight, bias, mean, var, axis=1, epsilon=float(eps)))
    return t.emit(TupleGetItem(out, 0))


def _check_eval(training: bool) -> None:
    if training:
        raise OpAttributeUnImplemented(
            "batch_norm in training mode is not supported; call model.eval() before importing"
        )


def _batch_norm_functional(
    t,
    input,
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training=False,
    momentum=0.1,
    eps=1e-5,
):
    _check_eval(training)
    return _batch_norm(t, input, weight, bias, running_mean, running_var, eps)


def _batch_norm_aten(
    t, input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled=False
):
    _check_eval(training)
    return _batch_norm(t, input, weight, bias, running_mean, running_var, eps)


def _native_batch_norm(t, input, weight, bias, running_mean, running_var, training, momentum, eps):
    _check_eval(training)
    return (_batch_norm(t, input, weight, bias, running_mean, running_var, eps), None, None)


def _native_batch_norm_no_training(
    t, input, weight, bias, running_mean, running_var, momentum, eps
):
    return (_batch_norm(t, input, weight, bias, running_mean, running_var, eps), None, None)


def _layer_norm(t, input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    normalized_shape = tuple(_pair(normalized_shape, 1))
    dtype = _dtype(input)
    weight = weight if weight is not None else t.const(np.ones(normalized_shape, dtype))
    bias = bias if bias is not None else t.const(np.zeros(normalized_shape, dtype))
    axes = tuple(range(-len(normalized_shape), 0))
    return t.emit(R.nn.layer_norm(input, weight, bias, axes=axes, epsilon=float(eps)))


def _native_layer_norm(t, input, normalized_shape, weight, bias, eps):
    return (_layer_norm(t, input, normalized_shape, weight, bias, eps), None, None)


def _group_norm(t, input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    shape, dtype = shape_of(input), _dtype(input)
    weight = weight if weight is not None else t.const(np.ones(shape[1], dtype))
    bias = bias if bias is not None else t.const(np.zeros(shape[1], dtype))
    axes = list(range(2, len(shape)))
    group_norm = _need("nn.group_norm")
    return t.emit(group_norm(input, weight, bias, int(num_groups), 1, axes, epsilon=float(eps)))


def _pool_nd(t, x, kernel, stride, padding, dilation, ceil_mode, nd, kind, count_include_pad=True):
    stride = kernel if stride is None or stride == [] else stride
    if nd == 1:  # (N, C, L) as (N, C, 1, L) through the 2-d pool
        x2 = t.emit(R.expand_dims(x, 2))
        args = [(1, *_pair(v, 1)) for v in (kernel, stride)] + [(0, *_pair(padding, 1))]
        y = _pool_nd(t, x2, *args, (1, *_pair(dilation, 1)), ceil_mode, 2, kind, count_include_pad)
        return _drop_axis(t, y, 2)
    ph, pw = _pair(padding)
    if kind == "max":
        call = R.nn.max_pool2d(
            x, _pair(kernel), _pair(stride), (ph, pw, ph, pw), _pair(dilation), bool(ceil_mode)
        )
    else:
        call = R.nn.avg_pool2d(
            x,
            _pair(kernel),
            _pair(stride),
            (ph, pw, ph, pw),
            (1, 1),
            bool(ceil_mode),
            bool(count_include_pad),
        )
    return t.emit(call)


def _max_pool(nd: int) -> Callable:
    def convert(
        t,
        input,
        kernel_size,
        stride=None,
        padding=0,
        dilation=1,
        ceil_mode=False,
        return_indices=False,
    ):
        if return_indices:
            _unsupported_attr("return_indices", return_indices)
        return _pool_nd(t, input, kernel_size, stride, padding, dilation, ceil_mode, nd, "max")

    return convert


def _avg_pool(nd: int) -> Callable:
    def convert(
        t,
        input,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode=False,
        count_include_pad=True,
        divisor_override=None,
    ):
        if divisor_override is not None:
            _unsupported_attr("divisor_override", divisor_override)
        return _pool_nd(
            t, input, kernel_size, stride, padding, 1, ceil_mode, nd, "avg", count_include_pad
        )

    return convert


def _adaptive_avg_pool(nd: int) -> Callable:
    def convert(t, input, output_size):
        size = _pair(output_size, nd)
        if any(s is None for s in size):
            in_shape = shape_of(input)[-nd:]
            size = tuple(i if s is None else s for s, i in zip(size, in_shape))
        if nd == 1:
            y = t.emit(R.nn.adaptive_avg_pool2d(t.emit(R.expand_dims(input, 2)), (1, size[0])))
            return _drop_axis(t, y, 2)
        return t.emit(R.nn.adaptive_avg_pool2d(input, size))

    return convert


def _dropout(t, input, p=0.5, training=False, inplace=False, *, train=None):
    return input  # identity at inference, as in TVM's importers


def _embedding(t, weight, indices):
    return t.emit(R.take(weight, indices, axis=0))


def _embedding_functional(
    t,
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
):
    if max_norm is not None:
        _unsupported_attr("max_norm", max_norm)
    return _embedding(t, weight, input)


def _embedding_aten(t, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return _embedding(t, weight, indices)


def _attention(
    t,
    query,
    key,
    value,
    attn_mask=None,
    dropout_p=0.0,
    is_causal=False,
    *,
    scale=None,
    enable_gqa=False,
):
    """softmax(q k^T * scale + mask) v, over the last two dims, any leading batch dims."""
    if enable_gqa:
        _unsupported_attr("enable_gqa", enable_gqa)
    probs = attention_probs(t, query, key, attn_mask, is_causal, scale)
    return t.emit(R.matmul(probs, value))


def attention_probs(t, query, key, attn_mask=None, is_causal=False, scale=None) -> Expr:
    """softmax(q k^T * scale + mask): the attention weights."""
    q_shape, k_shape = shape_of(query), shape_of(key)
    dtype, ndim = _dtype(query), _ndim(query)
    scale = 1.0 / math.sqrt(q_shape[-1]) if scale is None else float(scale)
    perm = list(range(ndim - 2)) + [ndim - 1, ndim - 2]
    scores = t.emit(R.matmul(query, t.emit(R.permute_dims(key, perm))))
    scores = t.emit(R.multiply(scores, t.const(scale, dtype)))
    if is_causal:
        length, source = q_shape[-2], k_shape[-2]
        if not isinstance(length, int) or not isinstance(source, int):
            raise OpAttributeUnImplemented("is_causal=True needs static sequence lengths")
        mask = np.triu(np.full((length, source), -np.inf, dtype), k=1)
        scores = t.emit(R.add(scores, t.const(mask)))
    if attn_mask is not None:
        if _dtype(attn_mask) == "bool":
            scores = t.emit(_need("where")(attn_mask, scores, t.const(-np.inf, dtype)))
        else:
            scores = t.emit(R.add(scores, attn_mask))
    return t.emit(R.nn.softmax(scores, axis=-1))


def _interpolate(
    t,
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
):
    if _ndim(input) != 4:
        raise OpAttributeUnImplemented(f"interpolate of a rank-{_ndim(input)} tensor (only 4-d)")
    if antialias:
        _unsupported_attr("antialias", antialias)
    h, w = shape_of(input)[2:]
    if size is not None:
        out = _pair(size)
    elif scale_factor is not None:
        sh, sw = _pair(scale_factor)
        out = (math.floor(h * sh), math.floor(w * sw))
        if not recompute_scale_factor and (out[0] != h * sh or out[1] != w * sw):
            # torch then maps coordinates by 1/scale, not by in/out size: a different grid
            raise OpAttributeUnImplemented(
                f"scale_factor={scale_factor} on a {h}x{w} image gives a fractional size; "
                "pass size= (or recompute_scale_factor=True) instead"
            )
    else:
        raise OpAttributeRequired_("interpolate needs size= or scale_factor=")
    methods = {
        "nearest": ("nearest_neighbor", "asymmetric", "floor"),
        "bilinear": ("linear", "align_corners" if align_corners else "half_pixel", "round"),
    }
    if mode not in methods:
        _unsupported_attr("mode", mode)
    method, coord, rounding = methods[mode]
    resize2d = _need("image.resize2d")
    return t.emit(
        resize2d(
            input,
            out,
            layout="NCHW",
            method=method,
            coordinate_transformation_mode=coord,
            rounding_method=rounding,
        )
    )


def OpAttributeRequired_(message: str) -> Exception:
    from ....error import OpAttributeRequired

    return OpAttributeRequired(message)


def _upsample_nearest2d(t, input, output_size=None, scale_factors=None):
    return _interpolate(t, input, output_size, scale_factors, "nearest")


def _upsample_bilinear2d(t, input, output_size=None, align_corners=False, scale_factors=None):
    return _interpolate(t, input, output_size, scale_factors, "bilinear", align_corners)


# ----------------------------------------------------------------------------- shapes


def _reshape(t, x, *shape):
    dims = _dims(shape)
    return t.emit(R.reshape(x, tuple(dims)))


def _unflatten(t, input, dim, sizes):
    shape = shape_of(input)
    axis = _axis(dim, len(shape))
    return t.emit(R.reshape(input, (*shape[:axis], *sizes, *shape[axis + 1 :])))


def _flatten(t, input, start_dim=0, end_dim=-1):
    shape = shape_of(input)
    if not shape:
        return t.emit(R.reshape(input, (1,)))
    start, end = _axis(start_dim, len(shape)), _axis(end_dim, len(shape))
    merged = 1
    for d in shape[start : end + 1]:
        merged = merged * d
    return t.emit(R.reshape(input, (*shape[:start], merged, *shape[end + 1 :])))


def _permute(t, x, *dims):
    return t.emit(R.permute_dims(x, [_axis(d, _ndim(x)) for d in _dims(dims)]))


def _transpose(t, x, dim0, dim1):
    perm = list(range(_ndim(x)))
    a, b = _axis(dim0, len(perm)), _axis(dim1, len(perm))
    perm[a], perm[b] = perm[b], perm[a]
    return t.emit(R.permute_dims(x, perm))


def _t(t, x):
    return x if _ndim(x) < 2 else _transpose(t, x, 0, 1)


def _identity(t, x, *args, **kwargs):
    return x


def _to(t, x, *args, **kwargs):
    """Tensor.to(dtype) and to(other) cast; devices and memory formats mean nothing here."""
    like = next((a for a in args if isinstance(a, Expr)), None)
    if like is not None:
        return _type_as(t, x, like)
    dtype = kwargs.get("dtype") or next((a for a in args if _is_torch_dtype(a)), None)
    if dtype is None or t.dtype(dtype) == _dtype(x):
        return x
    return t.emit(R.astype(x, t.dtype(dtype)))


def _cast(dtype: str) -> Callable:
    def convert(t, x, *args, **kwargs):
        return x if _dtype(x) == dtype else t.emit(R.astype(x, dtype))

    return convert


def _type_as(t, x, other):
    return x if _dtype(x) == _dtype(other) else t.emit(R.astype(x, _dtype(other)))


def _unsqueeze(t, x, dim):
    return t.emit(R.expand_dims(x, _axis(dim, _ndim(x) + 1)))


def _squeeze(t, x, dim=None):
    shape = shape_of(x)
    if dim is None:
        dims = {i for i, d in enumerate(shape) if d == 1}
    else:
        dims = (
            {_axis(d, len(shape)) for d in _pair(dim, 1)}
            if isinstance(dim, list | tuple)
            else {_axis(dim, len(shape))}
        )
        dims = {d for d in dims if shape[d] == 1}  # torch leaves non-1 dims alone
    return t.emit(R.reshape(x, tuple(d for i, d in enumerate(shape) if i not in dims)))


def _expand(t, x, *sizes, implicit=False):
    shape = shape_of(x)
    sizes = _dims(sizes)
    lead = len(sizes) - len(shape)
    target = tuple(shape[i - lead] if (s == -1 and i >= lead) else s for i, s in enumerate(sizes))
    if target == shape:
        return x
    new_symbolic = [
        i
        for i, d in enumerate(target)
        if isinstance(d, PrimExpr) and (i < lead or shape[i - lead] is not d)
    ]
    if new_symbolic:  # the compiled kernel takes its output dims from its input's dims
        raise OpAttributeUnImplemented(
            f"expand to {target}: dims {new_symbolic} are symbolic and not dims of the input"
        )
    return t.emit(_need("broadcast_to")(x, target))


def _expand_as(t, x, other):
    return _expand(t, x, shape_of(other))


def _cat(t, tensors, dim=0):
    tensors = list(tensors)
    return t.emit(R.concat(tensors, axis=_axis(dim, _ndim(tensors[0]))))


def _stack(t, tensors, dim=0):
    tensors = list(tensors)
    axis = _axis(dim, _ndim(tensors[0]) + 1)
    return t.emit(R.concat([t.emit(R.expand_dims(x, axis)) for x in tensors], axis=axis))


def _split_sizes(t, x, sizes: Sequence, dim: int):
    """Split along dim into pieces of the given sizes (the last may be shorter)."""
    axis = _axis(dim, _ndim(x))
    indices, acc = [], 0
    for s in sizes[:-1]:
        acc = acc + s
        indices.append(acc)
    if not indices:
        return (x,)
    return t.emit(R.split(x, indices, axis=axis))


def _split(t, tensor, split_size_or_sections, dim=0):
    length = shape_of(tensor)[_axis(dim, _ndim(tensor))]
    if isinstance(split_size_or_sections, list | tuple):
        return _split_sizes(t, tensor, list(split_size_or_sections), dim)
    size = int(split_size_or_sections)
    if not isinstance(length, int):
        raise OpAttributeUnImplemented("split with a size along a symbolic dim is not supported")
    return _split_sizes(
        t, tensor, [size] * (length // size) + [length % size] * bool(length % size), dim
    )


def _chunk(t, input, chunks, dim=0):
    length = shape_of(input)[_axis(dim, _ndim(input))]
    if not isinstance(length, int):
        raise OpAttributeUnImplemented("chunk along a symbolic dim is not supported")
    return _split(t, input, -(-length // int(chunks)), dim)


def _unbind(t, input, dim=0):
    axis = _axis(dim, _ndim(input))
    parts = _split(t, input, 1, axis)
    shape = shape_of(input)
    rest = shape[:axis] + shape[axis + 1 :]
    return tuple(t.emit(R.reshape(_item(t, parts, i), rest)) for i in range(shape[axis]))


def _item(t, value, index):
    """value[index] for a Python sequence or a relax tuple."""
    if isinstance(value, list | tuple):
        return value[index]
    return t.emit(TupleGetItem(value, int(index)))


def _slice(t, input, dim=0, start=None, end=None, step=1):
    axis = _axis(dim, _ndim(input))
    length = shape_of(input)[axis]
    start = 0 if start is None else start
    end = length if end is None or (isinstance(end, int) and end >= _INT64_MAX) else end
    if isinstance(end, int) and isinstance(length, int):
        end = min(end, length) if end >= 0 else max(end + length, 0)
    if isinstance(start, int) and isinstance(length, int) and start < 0:
        start = max(start + length, 0)
    if start == 0 and end is length and step == 1:
        return input
    return t.emit(R.strided_slice(input, [axis], [start], [end], [step]))


def _select(t, input, dim, index):
    axis = _axis(dim, _ndim(input))
    shape = shape_of(input)
    index = index + shape[axis] if isinstance(index, int) and index < 0 else index
    piece = t.emit(R.strided_slice(input, [axis], [index], [index + 1], [1]))
    return t.emit(R.reshape(piece, shape[:axis] + shape[axis + 1 :]))


def _getitem(t, value, index):
    if not isinstance(value, Expr) or isinstance(value.struct_info, TupleStructInfo):
        return _item(t, value, index)
    return _index_tensor(t, value, index if isinstance(index, tuple) else (index,))


def _index_tensor(t, x, index: tuple):
    """Basic indexing: ints, slices, None and one Ellipsis, as x[..., 1:3, None, 0]."""
    if any(isinstance(i, Expr) for i in index):
        full = all(i == slice(None) for i in index[:-1])  # x[:, :, idx]
        return _index(t, x, [None] * (len(index) - 1) + [index[-1]] if full else list(index))
    ndim = _ndim(x)
    used = sum(1 for i in index if i is not None and i is not Ellipsis)
    if Ellipsis in index:
        at = index.index(Ellipsis)
        index = index[:at] + (slice(None),) * (ndim - used) + index[at + 1 :]
    axis = 0
    for i in index:
        if i is None:
            x = t.emit(R.expand_dims(x, axis))
            axis += 1
        elif isinstance(i, slice):
            step = 1 if i.step is None else i.step
            x = _slice(t, x, axis, i.start, i.stop, step)
            axis += 1
        elif isinstance(i, int | PrimExpr):
            x = _select(t, x, axis, i)
        else:
            raise OpAttributeUnImplemented(f"index {i!r} of type {type(i).__name__}")
    return x


def _index(t, input, indices):
    """aten.index: one integer index tensor along one dim gathers with take."""
    tensors = [(axis, i) for axis, i in enumerate(indices) if i is not None]
    if len(tensors) != 1 or not isinstance(tensors[0][1], Expr):
        raise OpAttributeUnImplemented(
            "advanced indexing is supported with one index tensor only (x[idx], x[:, idx])"
        )
    axis, index = tensors[0]
    if _dtype(index) == "bool":  # the result's length would depend on the data
        raise OpAttributeUnImplemented("boolean mask indexing (its output shape depends on data)")
    return t.emit(R.take(input, index, axis=axis))


def _size(t, x, dim=None):
    shape = shape_of(x)
    return shape if dim is None else shape[_axis(dim, len(shape))]


def _getattr(t, x, name):
    if name == "shape":
        return shape_of(x)
    if name == "dtype":
        return t.torch_dtype(_dtype(x))
    if name == "ndim":
        return _ndim(x)
    raise OpAttributeUnImplemented(f"getattr(tensor, {name!r})")


# ----------------------------------------------------------------------------- reductions


def _reduce(relax_op: Callable) -> Callable:
    def convert(t, input, dim=None, keepdim=False, *, dtype=None):
        if dtype is not None:
            input = t.emit(R.astype(input, t.dtype(dtype)))
        if dim is None or dim == []:
            return t.emit(relax_op(input, None, bool(keepdim)))
        axes = [_axis(d, _ndim(input)) for d in _pair(dim, 1)]
        return t.emit(relax_op(input, axes, bool(keepdim)))

    return convert


# ----------------------------------------------------------------------------- creation


def _numpy_const(t, array: np.ndarray):
    return t.const(array)


def _tensor(t, data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    if any(isinstance(v, Expr | PrimExpr) for v in np.ravel(np.asarray(data, dtype=object))):
        raise OpAttributeUnImplemented("torch.tensor of computed values")
    value = np.asarray(data)
    if dtype is not None:
        return t.const(value.astype(t.dtype(dtype)))
    return t.const(value.astype("float32" if value.dtype.kind == "f" else value.dtype))


def _arange(t, *args, dtype=None, device=None, layout=None, pin_memory=None, requires_grad=False):
    if any(isinstance(a, Expr | PrimExpr) for a in args):
        raise OpAttributeUnImplemented("arange with symbolic bounds is not supported")
    if dtype is None:
        dtype = "float32" if any(isinstance(a, float) for a in args) else "int64"
    return t.const(np.arange(*args).astype(t.dtype(dtype)))


def _fill(value: Any) -> Callable:
    def convert(
        t,
        *size,
        dtype=None,
        device=None,
        layout=None,
        pin_memory=None,
        requires_grad=False,
        memory_format=None,
    ):
        dims = tuple(_dims(size))
        if any(isinstance(d, PrimExpr) for d in dims):
            return t.emit(
                R.full(
                    dims, t.const(value, t.dtype(dtype or "float32")), t.dtype(dtype or "float32")
                )
            )
        return t.const(np.full(dims, value, t.dtype(dtype or "float32")))

    return convert


def _full(
    t,
    size,
    fill_value,
    *,
    dtype=None,
    device=None,
    layout=None,
    pin_memory=None,
    requires_grad=False,
):
    dtype = t.dtype(dtype) if dtype is not None else _scalar_dtype(fill_value)
    if dtype == "int64" and isinstance(fill_value, float):
        dtype = "float32"
    return t.const(np.full(tuple(size), fill_value, dtype))


def _like(value: Any) -> Callable:
    def convert(
        t,
        input,
        fill_value=None,
        *,
        dtype=None,
        device=None,
        layout=None,
        pin_memory=None,
        memory_format=None,
        requires_grad=False,
    ):
        fill = value if value is not None else fill_value
        dtype = t.dtype(dtype) if dtype is not None else _dtype(input)
        shape = shape_of(input)
        if all(isinstance(d, int) for d in shape):
            return t.const(np.full(shape, fill, dtype))
        return t.emit(R.full(shape, t.const(fill, dtype), dtype))

    return convert


def _lazy_binary(name: str, py_op: Callable) -> Callable:
    """A binary op added to relax.op by name (comparisons, floor_divide...), looked up on use."""

    def convert(t, a, b, *, out=None):
        return _binary(lambda x, y: _need(name)(x, y), py_op)(t, a, b, out=out)

    return convert


def _lazy_unary(name: str) -> Callable:
    def convert(t, x, *, inplace=False, out=None):
        return t.emit(_need(name)(x))

    return convert


def _where(t, condition, input, other):
    x, y = _pair_operands(t, input, other)
    if not isinstance(condition, Expr):
        raise OpAttributeUnImplemented("where with a Python condition")
    return t.emit(_need("where")(condition, x, y))


def _any(t, input, dim=None, keepdim=False):
    as_int = t.emit(R.astype(input, "int32"))
    axes = None if dim is None else [_axis(d, _ndim(input)) for d in _pair(dim, 1)]
    return t.emit(R.astype(t.emit(R.max(as_int, axes, bool(keepdim))), "bool"))


def _native_group_norm(t, input, weight, bias, n, c, hw, group, eps):
    return (_group_norm(t, input, group, weight, bias, eps), None, None)


def _max_pool2d_with_indices(
    t, input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False
):
    return (_max_pool(2)(t, input, kernel_size, stride, padding, dilation, ceil_mode), None)


def _scalar_tensor(t, value, *, dtype=None, layout=None, device=None, pin_memory=None):
    return t.const(value, t.dtype(dtype) if dtype is not None else "float32")


def _triangle(numpy_fn: Callable) -> Callable:
    """tril/triu: keep the elements on one side of a diagonal of the last two dims."""

    def convert(t, input, diagonal=0):
        *_, rows, cols = shape_of(input)
        if not isinstance(rows, int) or not isinstance(cols, int):
            raise OpAttributeUnImplemented("tril/triu of a matrix with symbolic dims")
        keep = numpy_fn(np.ones((rows, cols), "bool"), int(diagonal))
        zero = t.const(0, _dtype(input))
        return t.emit(_need("where")(t.const(keep), input, zero))

    return convert


# ----------------------------------------------------------------------------- more tensor ops


def _baddbmm(t, input, batch1, batch2, *, beta=1, alpha=1):
    return _addmm(t, input, batch1, batch2, beta=beta, alpha=alpha)


def _einsum(t, equation, *operands, path=None):
    return t.emit(_need("einsum")(_dims(operands), equation))


def _arg_reduce(name: str) -> Callable:
    def convert(t, input, dim=None, keepdim=False):
        axis = None if dim is None else _axis(dim, _ndim(input))
        return t.emit(_need(name)(input, axis, bool(keepdim)))

    return convert


def _max_min(reduce: Callable, arg: str, binary: Callable) -> Callable:
    """torch.max(x) / max(x, dim, keepdim) -> (values, indices) / max(a, b) elementwise."""

    def convert(t, input, dim=None, keepdim=False):
        if isinstance(dim, Expr):
            return _binary(binary, max)(t, input, dim)
        if dim is None:
            return t.emit(reduce(input, None, False))
        axis = _axis(dim, _ndim(input))
        values = t.emit(reduce(input, [axis], bool(keepdim)))
        return (values, t.emit(_need(arg)(input, axis, bool(keepdim))))

    return convert


def _cumsum(t, input, dim, *, dtype=None):
    dtype = t.dtype(dtype) if dtype is not None else None
    return t.emit(_need("cumsum")(input, _axis(dim, _ndim(input)), dtype))


def _tile(t, input, *dims):
    return t.emit(_need("tile")(input, tuple(_dims(dims))))


def _repeat_interleave(t, input, repeats, dim=None, *, output_size=None):
    if isinstance(repeats, Expr):
        raise OpAttributeUnImplemented("repeat_interleave with a tensor of repeats")
    axis = None if dim is None else _axis(dim, _ndim(input))
    return t.emit(_need("repeat")(input, int(repeats), axis))


def _flip(t, input, *dims):
    for d in _dims(dims):
        input = t.emit(_need("flip")(input, _axis(d, _ndim(input))))
    return input


def _var_std(name: str) -> Callable:
    """torch's var/std (Bessel-corrected by default) from relax's population variance."""

    def convert(t, input, dim=None, unbiased=True, keepdim=False, *, correction=None):
        if isinstance(dim, bool):  # aten.var.default(self, unbiased)
            dim, unbiased = None, dim
        shape = shape_of(input)
        axes = (
            list(range(len(shape)))
            if dim is None
            else [_axis(d, len(shape)) for d in _pair(dim, 1)]
        )
        count = 1
        for a in axes:
            count = count * shape[a]
        corr = (1 if unbiased else 0) if correction is None else correction
        if not isinstance(count, int):
            raise OpAttributeUnImplemented(f"{name} over symbolic dims")
        var = t.emit(_need("variance")(input, axes, bool(keepdim)))
        if corr:
            var = t.emit(R.multiply(var, t.const(count / (count - corr), _dtype(input))))
        return var if name == "var" else t.emit(R.sqrt(var))

    return convert


def _masked_fill(t, input, mask, value):
    fill = value if isinstance(value, Expr) else t.const(value, _dtype(input))
    return t.emit(_need("where")(mask, fill, input))


def _index_select(t, input, dim, index):
    return t.emit(R.take(input, index, axis=_axis(dim, _ndim(input))))


def _new_fill(value: Any) -> Callable:
    def convert(
        t, input, *size, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False
    ):
        dtype = t.dtype(dtype) if dtype is not None else _dtype(input)
        fill = value if value is not None else size[-1]
        dims = _dims(size[:-1] if value is None else size)
        return t.const(np.full(tuple(dims), fill, dtype))

    return convert


def _fill_like(t, input, value):
    return _like(None)(t, input, value)


def _reciprocal(t, x):
    return t.emit(R.divide(t.const(1.0, _dtype(x)), x))


# ----------------------------------------------------------------------------- tables

_UNARY = {
    "relu": R.nn.relu,
    "sigmoid": R.sigmoid,
    "tanh": R.tanh,
    "exp": R.exp,
    "log": R.log,
    "sqrt": R.sqrt,
    "abs": R.abs,
    "neg": R.negative,
}

FUNCTIONS: dict[str, Callable] = {
    **{
        name: _float_unary(fn) if name in ("exp", "log", "sqrt") else _unary(fn)
        for name, fn in _UNARY.items()
    },
    **{f"{name}_": _unary(fn) for name, fn in _UNARY.items()},
    "add": _binary(R.add, operator.add),
    "iadd": _binary(R.add, operator.add),
    "sub": _binary(R.subtract, operator.sub),
    "subtract": _binary(R.subtract, operator.sub),
    "rsub": _rsub,
    "mul": _binary(R.multiply, operator.mul),
    "multiply": _binary(R.multiply, operator.mul),
    "imul": _binary(R.multiply, operator.mul),
    "truediv": _div,
    "div": _div,
    "divide": _div,
    "floordiv": _binary(lambda a, b: _need("floor_divide")(a, b), operator.floordiv),
    "floor_divide": _binary(lambda a, b: _need("floor_divide")(a, b), operator.floordiv),
    "remainder": _binary(lambda a, b: _need("floor_mod")(a, b), operator.mod),
    "mod": _binary(lambda a, b: _need("floor_mod")(a, b), operator.mod),
    "pow": _pow,
    "maximum": _binary(R.maximum, max),
    "minimum": _binary(R.minimum, min),
    "clamp": _clamp,
    "clip": _clamp,
    "hardtanh": _hardtanh,
    "relu6": _relu6,
    "gelu": _gelu,
    "silu": _silu,
    "hardswish": _hardswish,
    "hardsigmoid": _hardsigmoid,
    "softplus": _softplus,
    "log1p": _log1p,
    "pad": _pad,
    "constant_pad_nd": _constant_pad_nd,
    "leaky_relu": _leaky_relu,
    "rsqrt": _lazy_unary("rsqrt"),
    "softmax": _softmax_like(R.nn.softmax),
    "_softmax": _softmax_like(R.nn.softmax),
    "log_softmax": _softmax_like(R.nn.log_softmax),
    "_log_softmax": _softmax_like(R.nn.log_softmax),
    "conv1d": _conv1d,
    "conv2d": _conv2d,
    "convolution": _convolution,
    "linear": _linear,
    "addmm": _addmm,
    "matmul": _matmul,
    "mm": _matmul,
    "bmm": _matmul,
    "layer_norm": _layer_norm,
    "native_layer_norm": _native_layer_norm,
    "group_norm": _group_norm,
    "_native_batch_norm_legit_no_training": _native_batch_norm_no_training,
    "native_batch_norm": _native_batch_norm,
    "max_pool1d": _max_pool(1),
    "max_pool2d": _max_pool(2),
    "avg_pool1d": _avg_pool(1),
    "avg_pool2d": _avg_pool(2),
    "adaptive_avg_pool1d": _adaptive_avg_pool(1),
    "adaptive_avg_pool2d": _adaptive_avg_pool(2),
    "dropout": _dropout,
    "scaled_dot_product_attention": _attention,
    "interpolate": _interpolate,
    "upsample_nearest2d": _upsample_nearest2d,
    "upsample_bilinear2d": _upsample_bilinear2d,
    "reshape": _reshape,
    "view": _reshape,
    "_unsafe_view": _reshape,
    "flatten": _flatten,
    "unflatten": _unflatten,
    "permute": _permute,
    "transpose": _transpose,
    "t": _t,
    "contiguous": _identity,
    "clone": _identity,
    "detach": _identity,
    "alias": _identity,
    "lift_fresh_copy": _identity,
    "_to_copy": _to,
    "to": _to,
    "float": _cast("float32"),
    "type_as": _type_as,
    "unsqueeze": _unsqueeze,
    "squeeze": _squeeze,
    "expand": _expand,
    "expand_as": _expand_as,
    "cat": _cat,
    "concat": _cat,
    "concatenate": _cat,
    "stack": _stack,
    "split": _split,
    "split_with_sizes": lambda t, x, sizes, dim=0: _split_sizes(t, x, list(sizes), dim),
    "chunk": _chunk,
    "unbind": _unbind,
    "getitem": _getitem,
    "slice": _slice,
    "select": _select,
    "size": _size,
    "sym_size": _size,
    "getattr": _getattr,
    "mean": _reduce(R.mean),
    "sum": _reduce(R.sum),
    "amax": _reduce(R.max),
    "amin": _reduce(R.min),
    "arange": _arange,
    "tensor": _tensor,
    "zeros": _fill(0),
    "empty": _fill(0),  # torch leaves it uninitialised: zeros are one valid content
    "ones": _fill(1),
    "full": _full,
    "zeros_like": _like(0),
    "ones_like": _like(1),
    "full_like": _like(None),
    "eq": _lazy_binary("equal", operator.eq),
    "ne": _lazy_binary("not_equal", operator.ne),
    "lt": _lazy_binary("less", operator.lt),
    "le": _lazy_binary("less_equal", operator.le),
    "gt": _lazy_binary("greater", operator.gt),
    "ge": _lazy_binary("greater_equal", operator.ge),
    "logical_and": _lazy_binary("logical_and", operator.and_),
    "logical_or": _lazy_binary("logical_or", operator.or_),
    "logical_not": _lazy_unary("logical_not"),
    "where": _where,
    "any": _any,
    "erf": _lazy_unary("erf"),
    "floor": _lazy_unary("floor"),
    "ceil": _lazy_unary("ceil"),
    "round": _lazy_unary("round"),
    "sign": _lazy_unary("sign"),
    "sin": _lazy_unary("sin"),
    "cos": _lazy_unary("cos"),
    "square": _lazy_unary("square"),
    "native_group_norm": _native_group_norm,
    "max_pool2d_with_indices": _max_pool2d_with_indices,
    "_adaptive_avg_pool2d": _adaptive_avg_pool(2),
    "scalar_tensor": _scalar_tensor,
    "tril": _triangle(np.tril),
    "baddbmm": _baddbmm,
    "einsum": _einsum,
    "argmax": _arg_reduce("argmax"),
    "argmin": _arg_reduce("argmin"),
    "max": _max_min(R.max, "argmax", R.maximum),
    "min": _max_min(R.min, "argmin", R.minimum),
    "cumsum": _cumsum,
    "tile": _tile,
    "repeat_interleave": _repeat_interleave,
    "flip": _flip,
    "var": _var_std("var"),
    "std": _var_std("std"),
    "masked_fill": _masked_fill,
    "index_select": _index_select,
    "index": _index,
    "new_ones": _new_fill(1),
    "new_zeros": _new_fill(0),
    "new_empty": _new_fill(0),
    "new_full": _new_fill(None),
    "fill": _fill_like,
    "reciprocal": _reciprocal,
    "triu": _triangle(np.triu),
}

# Names whose torch.nn.functional argument order differs from aten's.
FX: dict[str, Callable] = {
    "batch_norm": _batch_norm_functional,
    "embedding": _embedding_functional,
}
ATEN: dict[str, Callable] = {
    "repeat": _tile,
    "batch_norm": _batch_norm_aten,
    "embedding": _embedding_aten,
}

# Tensor methods whose names or signatures differ from the function of the same name.
METHODS: dict[str, Callable] = {
    "repeat": _tile,  # Tensor.repeat(2, 3) tiles, as numpy.tile
    "size": _size,
    "view": _reshape,
    "reshape": _reshape,
}

# Calls that only check or annotate in torch.export graphs: nothing to compute.
NO_OPS = frozenset(
    {
        "_assert_scalar",
        "_assert_tensor_metadata",
        "sym_constrain_range_for_size",
        "sym_constrain_range",
        "_assert_async",
    }
)
