"""Converters of torch.nn.functional ops: convolution, linear, norms, pools, attention, resize."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ....error import OpAttributeInvalid, OpAttributeRequired, OpAttributeUnImplemented
from ... import op as R
from ...expr import Expr, TupleGetItem
from ._base import (
    NotComputed,
    _dims,
    _drop_axis,
    _dtype,
    _ndim,
    _need,
    _pair,
    _unsupported_attr,
    shape_of,
)


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


def _conv_nd(t, x, weight, bias, stride, padding, dilation, groups, nd: int):
    """relax.nn.conv1d / conv2d / conv3d with out_dtype spelt out (the input's), as TVM's
    importer does."""
    stride, dilation = _pair(stride, nd), _pair(dilation, nd)
    before, after = _conv_padding(padding, shape_of(weight)[2:], dilation)
    conv = {1: R.nn.conv1d, 2: R.nn.conv2d, 3: R.nn.conv3d}[nd]
    pads = (*before, *after)
    y = t.emit(conv(x, weight, stride, pads, dilation, int(groups), out_dtype=_dtype(x)))
    if bias is not None:  # bias as (1, C, 1, ...), as TVM's importer shapes it
        y = t.emit(R.add(y, t.emit(R.reshape(bias, (1, -1) + (1,) * (_ndim(y) - 2)))))
    return y


def _conv1d(t, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv_nd(t, input, weight, bias, stride, padding, dilation, groups, 1)


def _conv2d(t, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv_nd(t, input, weight, bias, stride, padding, dilation, groups, 2)


def _conv3d(t, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv_nd(t, input, weight, bias, stride, padding, dilation, groups, 3)


def _convolution(
    t, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
):
    nd = _ndim(input) - 2
    if nd not in (1, 2, 3) or (transposed and nd == 3):
        kind = "transposed convolution" if transposed else "convolution"
        raise OpAttributeUnImplemented(
            f"{nd}-d {kind} is not supported (only 1-d and 2-d, and 3-d non-transposed)"
        )
    if transposed:
        return _conv_transpose_nd(
            t, input, weight, bias, stride, padding, output_padding, groups, dilation, nd
        )
    return _conv_nd(t, input, weight, bias, stride, padding, dilation, groups, nd)


def _conv_transpose_nd(t, x, weight, bias, stride, padding, output_padding, groups, dilation, nd):
    """relax.nn.conv1d_transpose / conv2d_transpose on torch's weights (in, out / groups, *k),
    out_dtype spelt out and bias as (1, C, 1, ...), as TVM's importer writes them."""
    stride, padding = _pair(stride, nd), _pair(padding, nd)
    output_padding, dilation = _pair(output_padding, nd), _pair(dilation, nd)
    conv = _need("nn.conv1d_transpose" if nd == 1 else "nn.conv2d_transpose")
    pads = (*padding, *padding)
    y = t.emit(
        conv(x, weight, stride, pads, output_padding, dilation, int(groups), out_dtype=_dtype(x))
    )
    if bias is not None:
        y = t.emit(R.add(y, t.emit(R.reshape(bias, (1, -1) + (1,) * (_ndim(y) - 2)))))
    return y


def _conv_transpose(nd: int) -> Callable:
    def convert(
        t, input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
    ):
        return _conv_transpose_nd(
            t, input, weight, bias, stride, padding, output_padding, groups, dilation, nd
        )

    return convert


def _linear(t, input, weight, bias=None):
    """x @ weight.T + bias as permute_dims, matmul and add, TVM's importer form: FoldConstant
    stores a constant weight transposed once, so the kernel is the plain matmul."""
    w_t = t.emit(R.permute_dims(weight, None))
    y = t.emit(R.matmul(input, w_t, out_dtype=_dtype(input)))
    return y if bias is None else t.emit(R.add(y, bias))


def _addmm(t, input, mat1, mat2, *, beta=1, alpha=1):
    return _scaled_matmul_add(t, input, mat1, mat2, beta, alpha, addmm=True)


def _baddbmm(t, input, batch1, batch2, *, beta=1, alpha=1):
    return _scaled_matmul_add(t, input, batch1, batch2, beta, alpha, addmm=False)


def _scaled_matmul_add(t, input, a, b, beta, alpha, addmm: bool):
    """beta * input + alpha * (a @ b). The operand order of the add and the matmul's out_dtype
    follow TVM's importer (addmm: bias first, out_dtype spelt out; baddbmm: product first)."""
    y = t.emit(R.matmul(a, b, out_dtype=_dtype(a) if addmm else None))
    if alpha != 1:
        y = t.emit(R.multiply(y, t.const(alpha, _dtype(y))))
    if beta != 0:
        bias = input if beta == 1 else t.emit(R.multiply(input, t.const(beta, _dtype(input))))
        y = t.emit(R.add(bias, y) if addmm else R.add(y, bias))
    return y


def _matmul(t, input, other, *, out=None):
    # out_dtype spelt out (the operands' dtype), as TVM's importer writes it
    return t.emit(R.matmul(input, other, out_dtype=_dtype(input)))


def _einsum(t, equation, *operands, path=None):
    return t.emit(_need("einsum")(_dims(operands), equation))


def _bn_params(t, x, weight, bias) -> tuple:
    """gamma and beta, with torch's defaults (ones, zeros) for an affine=False norm."""
    c = shape_of(x)[1]
    weight = weight if weight is not None else t.const(np.ones(c, _dtype(x)))
    bias = bias if bias is not None else t.const(np.zeros(c, _dtype(x)))
    return weight, bias


def _batch_norm(t, x, weight, bias, mean, var, eps):
    """Inference batch norm: normalised by the running statistics."""
    weight, bias = _bn_params(t, x, weight, bias)
    out = t.emit(
        R.nn.batch_norm(x, weight, bias, mean, var, axis=1, epsilon=float(eps), training=False)
    )
    return t.emit(TupleGetItem(out, 0))


def _check_eval(training: bool) -> None:
    if training:
        raise OpAttributeUnImplemented(
            "batch_norm in training mode is not supported; call model.eval() before importing "
            "(this graph updates the running statistics in place, out of sight), or import a "
            "torch.export program with run_ep_decomposition=True (the default), which returns "
            "the updated statistics as outputs of main"
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


def _stats(op: str) -> tuple:
    """The saved statistics (outputs 1 and 2) of a native norm op: inference needs neither."""
    return tuple(NotComputed(f"the saved statistics (output {i}) of native_{op}") for i in (1, 2))


def _batch_norm_aten(
    t, input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled=False
):
    _check_eval(training)
    return _batch_norm(t, input, weight, bias, running_mean, running_var, eps)


def _native_batch_norm(t, input, weight, bias, running_mean, running_var, training, momentum, eps):
    _check_eval(training)
    return (
        _batch_norm(t, input, weight, bias, running_mean, running_var, eps),
        *_stats("batch_norm"),
    )


def _native_batch_norm_no_training(
    t, input, weight, bias, running_mean, running_var, momentum, eps
):
    return (
        _batch_norm(t, input, weight, bias, running_mean, running_var, eps),
        *_stats("batch_norm"),
    )


def _batch_count(x, op: str) -> int:
    """The number of values per channel a training batch norm averages (static dims only)."""
    dims = [d for i, d in enumerate(shape_of(x)) if i != 1]
    if not all(isinstance(d, int) for d in dims):
        raise OpAttributeUnImplemented(
            f"{op} in training mode: input shape {shape_of(x)} has symbolic dims; torch's "
            "running_var update needs the per-channel count, so export with static shapes"
        )
    n = math.prod(dims)
    if n < 2:
        raise OpAttributeInvalid(
            f"{op} in training mode: input shape {shape_of(x)} has {n} value per channel; "
            "torch needs more than one to update running_var (use a larger batch or eval mode)"
        )
    return n


def _native_batch_norm_functional(
    t, input, weight, bias, running_mean, running_var, training, momentum, eps
):
    """aten._native_batch_norm_legit_functional: (out, save_mean, save_invstd, new_running_mean,
    new_running_var); torch.export emits it for a train-mode BatchNorm, with outputs 3 and 4
    as the running statistics' buffer mutations."""
    op = "_native_batch_norm_legit_functional"
    if not training:
        out = _batch_norm(t, input, weight, bias, running_mean, running_var, eps)
        return (out, *_stats("batch_norm"), running_mean, running_var)
    if not isinstance(momentum, int | float):
        raise OpAttributeUnImplemented(
            f"{op}: momentum is {momentum!r}, not a number; a BatchNorm with momentum=None "
            "(cumulative average) is not supported, give it a float momentum"
        )
    n = _batch_count(input, op)
    weight, bias = _bn_params(t, input, weight, bias)
    # relax (as TVM) blends the biased batch variance into moving_var; torch blends the
    # unbiased one: torch's (1 - m) * v + m * var * n / (n - 1) is relax's new_var * n / (n - 1)
    # less v * (1 - m) / (n - 1). The batch norm keeps the running_var itself as its moving_var,
    # so DecomposeOpsForInference turns this graph into the eval-mode one.
    dtype = _dtype(running_var)
    m = float(momentum)
    bn = t.emit(
        R.nn.batch_norm(
            input, weight, bias, running_mean, running_var, 1, float(eps), momentum=m, training=True
        )
    )
    out, new_mean, new_var = (t.emit(TupleGetItem(bn, i)) for i in range(3))
    new_var = t.emit(
        R.subtract(
            R.multiply(new_var, t.const(n / (n - 1), dtype)),
            R.multiply(running_var, t.const((1 - m) / (n - 1), dtype)),
        )
    )
    return (out, *_stats("batch_norm"), new_mean, new_var)


def _layer_norm(t, input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    normalized_shape = tuple(_pair(normalized_shape, 1))
    dtype = _dtype(input)
    weight = weight if weight is not None else t.const(np.ones(normalized_shape, dtype))
    bias = bias if bias is not None else t.const(np.zeros(normalized_shape, dtype))
    axes = tuple(range(-len(normalized_shape), 0))
    return t.emit(R.nn.layer_norm(input, weight, bias, axes=axes, epsilon=float(eps)))


def _native_layer_norm(t, input, normalized_shape, weight, bias, eps):
    return (_layer_norm(t, input, normalized_shape, weight, bias, eps), *_stats("layer_norm"))


def _group_norm(t, input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    shape, dtype = shape_of(input), _dtype(input)
    weight = weight if weight is not None else t.const(np.ones(shape[1], dtype))
    bias = bias if bias is not None else t.const(np.zeros(shape[1], dtype))
    axes = list(range(2, len(shape)))
    group_norm = _need("nn.group_norm")
    return t.emit(group_norm(input, weight, bias, int(num_groups), 1, axes, epsilon=float(eps)))


def _native_group_norm(t, input, weight, bias, n, c, hw, group, eps):
    return (_group_norm(t, input, group, weight, bias, eps), *_stats("group_norm"))


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


def _max_pool2d_with_indices(
    t, input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False
):
    y = _max_pool(2)(t, input, kernel_size, stride, padding, dilation, ceil_mode)
    return (y, NotComputed("the indices (output 1) of max_pool2d_with_indices"))


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


def _dropout(t, input, p=0.5, training=False, inplace=False, *, train=None, key=None, stream=0):
    """The identity at inference (and, as in TVM's importers, whenever no random key is given);
    in training with `key` (an int64 (seed, step) tensor, as minitvm.training passes) inverted
    dropout: input times a seeded mask of zeros and 1 / (1 - p), site `stream` of the program."""
    training = training if train is None else train
    if key is None or not training or p == 0:
        return input
    mask = R.random.dropout_mask(key, shape_of(input), float(p), _dtype(input), int(stream))
    return t.emit(R.multiply(input, t.emit(mask)))


def _native_dropout(t, input, p, train):
    """aten.native_dropout (a Dropout module exported in training mode): (output, mask). The
    output follows `_dropout` (the identity: no random key); the mask is not computed."""
    return (_dropout(t, input, p, train), NotComputed("the mask (output 1) of native_dropout"))


def _cross_entropy(
    t,
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index=-100,
    reduce=None,
    reduction="mean",
    label_smoothing=0.0,
):
    """log_softmax over the class dim, then nll_loss (class-index targets), as TVM's importer;
    it writes the class dim as -1, which is dim 1 of the (C,) and (N, C) inputs it takes."""
    if size_average is not None or reduce is not None:
        raise OpAttributeUnImplemented(
            "cross_entropy: size_average= and reduce= are deprecated in torch; pass reduction="
        )
    if label_smoothing:
        _unsupported_attr("label_smoothing", label_smoothing)
    if _dtype(target).startswith(("float", "bfloat")):
        raise OpAttributeUnImplemented(
            "cross_entropy with class-probability (float) targets; pass class indices"
        )
    axis = -1 if _ndim(input) <= 2 else 1
    log_probs = t.emit(R.nn.log_softmax(input, axis=axis))
    loss = R.nn.nll_loss(log_probs, target, weight, reduction, int(ignore_index))
    return t.emit(loss)


def _embedding(t, weight, indices):
    # int32 indices, as TVM's importer casts them: exact, as a weight has under 2**31 rows
    rows = shape_of(weight)[0]
    if _dtype(indices) == "int64" and isinstance(rows, int) and rows < 2**31:
        indices = t.emit(R.astype(indices, "int32"))
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
    if _fits_relax_attention(query, key, value, attn_mask):
        # TVM's importer form: relax.nn.attention over BSNH, between permutes from torch's BNSH
        perm = [0, 2, 1, 3]
        q, k, v = (t.emit(R.permute_dims(x, perm)) for x in (query, key, value))
        causal = "TopLeft" if is_causal else None  # torch's is_causal keeps j <= i
        out = t.emit(R.nn.attention(q, k, v, attn_mask, scale=scale, causal_mask=causal))
        return t.emit(R.permute_dims(out, perm))
    probs = attention_probs(t, query, key, attn_mask, is_causal, scale)
    return t.emit(R.matmul(probs, value))


def _same_dim(a, b) -> bool:
    """Equal static dims, or one symbolic dim (`==` on tir expressions builds a node)."""
    return a == b if isinstance(a, int) and isinstance(b, int) else a is b


def _fits_relax_attention(query, key, value, attn_mask) -> bool:
    """relax.nn.attention takes 4-d float q, k, v of equal batch and heads, and an additive
    mask of rank <= 4; anything else (bool masks, 3-d inputs) runs as matmul-softmax-matmul."""
    if any(
        _ndim(x) != 4 or _dtype(x) not in ("float16", "float32", "float64")
        for x in (query, key, value)
    ):
        return False
    q, k, v = shape_of(query), shape_of(key), shape_of(value)
    pairs = ((q[0], k[0]), (k[0], v[0]), (q[1], k[1]), (k[1], v[1]), (q[3], k[3]), (k[2], v[2]))
    if not all(_same_dim(a, b) for a, b in pairs):
        return False
    if attn_mask is None:
        return True
    return _dtype(attn_mask) == _dtype(query) and _ndim(attn_mask) <= 4


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


def _nearest_form(in_hw: tuple, out_hw: tuple, aten: bool) -> tuple[str, str]:
    """(coordinate mode, rounding) of torch's nearest resize: source = floor(out * in / size).

    TVM's importers spell it asymmetric/round (fx) and half_pixel/round (torch.export); each
    equals torch only on some grids, and is used exactly there: asymmetric/round when every
    size divides its input (the sources are integers: rounding is floor), half_pixel/round
    when every size is s times its input (output q*s + r lands at q + (2r + 1 - s) / 2s,
    closer than 1/2 - 1/2s to q; the bound on size * s keeps float32 error inside that margin).
    Any other grid gets asymmetric/floor, torch's own rule."""
    pairs = list(zip(in_hw, out_hw))
    if not all(isinstance(i, int) and isinstance(o, int) and i > 0 and o > 0 for i, o in pairs):
        return "asymmetric", "floor"
    if not aten and all(i % o == 0 for i, o in pairs):
        return "asymmetric", "round"
    if aten and all(o % i == 0 and o * (o // i) < 2**16 for i, o in pairs):
        return "half_pixel", "round"
    return "asymmetric", "floor"


def _interpolate(
    t,
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
    *,
    aten=False,
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
        raise OpAttributeRequired("interpolate needs size= or scale_factor=")
    if mode == "nearest":
        method, (coord, rounding) = "nearest_neighbor", _nearest_form((h, w), out, aten)
    elif mode == "bilinear":
        method, rounding = "linear", "round"
        coord = "align_corners" if align_corners else "half_pixel"
    else:
        _unsupported_attr("mode", mode)
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


def _upsample_nearest2d(t, input, output_size=None, scale_factors=None):
    return _interpolate(t, input, output_size, scale_factors, "nearest", aten=True)


def _upsample_bilinear2d(t, input, output_size=None, align_corners=False, scale_factors=None):
    return _interpolate(t, input, output_size, scale_factors, "bilinear", align_corners)


# ----------------------------------------------------------------------------- shapes


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
