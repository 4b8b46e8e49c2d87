"""More neural-network ONNX converters: GlobalLpPool, LRN, MaxUnpool and Col2Im, each built
from relax ops that already exist (pools, scatter, transposed convolutions)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from ....error import OpAttributeInvalid, OpAttributeUnImplemented
from ....tir.expr import PrimExpr
from ... import op as R
from ...expr import Expr
from ._helpers import _const_like, _dtype, _ndim, _prod, _required, shape_of
from ._nn import _explicit_pads, _positive_ints
from ._runtime_axes import _i64, checked_reshape, element, poisoned, static_length


def _global_lp_pool(ctx, inputs, attrs):
    """(sum of |x|^p over the spatial dims)^(1/p), dims kept."""
    x = ctx.expr(inputs[0])
    p = int(attrs.get("p", 2))
    if p < 1:
        raise OpAttributeInvalid(f"attribute p={p} must be a positive integer")
    powered = ctx.emit(R.abs(x))
    if p != 1:
        powered = ctx.emit(R.power(powered, _const_like(ctx, x, p)))
    total = ctx.emit(R.sum(powered, list(range(2, _ndim(x))), keepdims=True))
    if p == 1:
        return total
    return ctx.emit(R.power(total, _const_like(ctx, x, 1.0 / p)))


def _lrn(ctx, inputs, attrs):
    """x / (bias + alpha / size * (sum of x^2 over `size` neighbouring channels))^beta.

    The channel window is an average pool over a (N, 1, C, rest) view that counts its zero
    padding, so alpha * mean is alpha / size * sum."""
    x = ctx.expr(inputs[0])
    size = int(_required(attrs, "size"))
    if size < 1:
        raise OpAttributeInvalid(f"attribute size={size} must be a positive integer")
    alpha, beta = float(attrs.get("alpha", 1e-4)), float(attrs.get("beta", 0.75))
    bias = float(attrs.get("bias", 1.0))
    if _ndim(x) < 2:
        raise OpAttributeInvalid(
            f"LRN needs an input of rank 2 or more (N, C, ...), got {_ndim(x)}"
        )
    shape = shape_of(x)
    view = ctx.emit(R.reshape(ctx.emit(R.multiply(x, x)), (shape[0], 1, shape[1], -1)))
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    mean = ctx.emit(R.nn.avg_pool2d(view, (size, 1), (1, 1), (lo, 0, hi, 0), (1, 1), False, True))
    scale = ctx.emit(R.multiply(ctx.emit(R.reshape(mean, shape)), _const_like(ctx, x, alpha)))
    scale = ctx.emit(R.add(scale, _const_like(ctx, x, bias)))
    return ctx.emit(R.divide(x, ctx.emit(R.power(scale, _const_like(ctx, x, beta)))))


def _static(dims, what: str) -> list[int]:
    if any(isinstance(d, PrimExpr) for d in dims):
        raise OpAttributeUnImplemented(
            f"{what} {list(dims)} has symbolic dims; give the input's shape in shape_dict"
        )
    return [int(d) for d in dims]


def _max_unpool(ctx, inputs, attrs):
    """Y (zeros of the output shape) with Y.flat[I[j]] = X.flat[j]: I holds flat indices into
    the whole output, as MaxPool's Indices do; on repeated indices the last write wins, as in
    onnxruntime."""
    x, indices = ctx.expr(inputs[0]), ctx.expr(inputs[1])
    nd = _ndim(x) - 2
    _required(attrs, "kernel_shape")
    kernel = _positive_ints(attrs, "kernel_shape", [], nd)
    strides = _positive_ints(attrs, "strides", [1] * nd, nd)
    pads = _explicit_pads(attrs, nd)
    shape = shape_of(x)
    spatial = _static(shape[2:], "MaxUnpool's input shape")
    out_shape = list(shape[:2]) + [
        (size - 1) * s + k - pads[i] - pads[i + nd]
        for i, (size, k, s) in enumerate(zip(spatial, kernel, strides))
    ]
    given = None
    if len(inputs) > 2 and inputs[2] is not None and ctx.known_or_none(inputs[2]) is None:
        # computed at run time: the VM checks it is the default shape, for the reason below
        given = ctx.expr(inputs[2])
        if len(shape_of(given)) != 1 or shape_of(given)[0] != nd + 2:
            raise OpAttributeInvalid(
                f"input output_shape has shape {list(shape_of(given))}; it must be ({nd + 2},)"
            )
    elif len(inputs) > 2 and inputs[2] is not None:
        given = [int(v) for v in ctx.ints(inputs[2], "output_shape")]
        if len(given) != nd + 2 or any(
            isinstance(d, int) and g != d for g, d in zip(given, out_shape)
        ):
            # onnxruntime takes I as indices into output_shape, ONNX's reference (and its node
            # case) as indices into the default shape, zero-padded to output_shape
            raise OpAttributeUnImplemented(
                f"input output_shape {given} differs from the default shape {out_shape}, where "
                "onnxruntime and ONNX's reference disagree on what I indexes; unpool to the "
                "default shape and Pad or Slice it"
            )
    if any(isinstance(d, int) and d < 1 for d in out_shape):
        raise OpAttributeInvalid(
            f"MaxUnpool's output shape {out_shape} has an empty dim; check pads {pads}"
        )
    if len(shape_of(indices)) != len(shape) or any(
        isinstance(a, int) and isinstance(b, int) and a != b
        for a, b in zip(shape_of(indices), shape)
    ):
        raise OpAttributeInvalid(
            f"input I has shape {list(shape_of(indices))}; it must equal X's {list(shape)}"
        )
    flat = ctx.emit(R.zeros((_prod(out_shape),), _dtype(x)))
    index = ctx.emit(R.reshape(ctx.emit(R.astype(indices, "int64")), (-1,)))
    flat = ctx.emit(R.scatter_elements(flat, index, ctx.emit(R.reshape(x, (-1,))), 0))
    if given is not None:
        return checked_reshape(ctx, flat, given, "output_shape", tuple(out_shape))
    return ctx.emit(R.reshape(flat, tuple(out_shape)))


# ----------------------------------------------------------------------------- Col2Im


def _col2im(ctx, inputs, attrs):
    """Sums the columns (N, C * prod(block), L) back into images (N, C, *image_shape).

    Column c * prod(block) + j carries block offset j of channel c: a transposed convolution
    with a one-hot kernel per column (groups = C) adds each column at its offset; the result is
    then cropped by the pads and widened where the last blocks stop short of the image."""
    x = ctx.expr(inputs[0])
    if ctx.known_or_none(inputs[1]) is None or ctx.known_or_none(inputs[2]) is None:
        return _col2im_at_run_time(ctx, x, inputs[1], inputs[2], attrs)
    image = [int(v) for v in ctx.ints(inputs[1], "image_shape")]
    block = [int(v) for v in ctx.ints(inputs[2], "block_shape")]
    nd = len(image)
    if nd not in (1, 2, 3) or len(block) != nd or min(image + block) < 1:
        raise OpAttributeUnImplemented(
            f"image_shape {image} and block_shape {block} must be 1 to 3 positive dims each, "
            "of one length"
        )
    if _dtype(x) not in ("float16", "float32", "float64"):
        raise OpAttributeUnImplemented(f"Col2Im of {_dtype(x)} input (only float types)")
    strides = _positive_ints(attrs, "strides", [1] * nd, nd)
    dilations = _positive_ints(attrs, "dilations", [1] * nd, nd)
    pads = _explicit_pads(attrs, nd)
    n, ck, length = _static(shape_of(x), "Col2Im's input shape")
    blocks = [
        (size + pads[i] + pads[i + nd] - d * (k - 1) - 1) // s + 1
        for i, (size, k, s, d) in enumerate(zip(image, block, strides, dilations))
    ]
    k_total = int(np.prod(block))
    if min(blocks) < 1 or int(np.prod(blocks)) != length or ck % k_total:
        raise OpAttributeInvalid(
            f"input shape {[n, ck, length]} does not match image_shape {image}, block_shape "
            f"{block}, pads {pads}, strides {strides}, dilations {dilations}: dim 1 must be a "
            f"multiple of {k_total} and dim 2 must be {int(np.prod(blocks))} (blocks {blocks})"
        )
    channels = ck // k_total
    weight = np.zeros((ck, 1, *block), _dtype(x))
    for c, (j, offset) in itertools.product(
        range(channels), enumerate(itertools.product(*map(range, block)))
    ):
        weight[(c * k_total + j, 0, *offset)] = 1
    columns = ctx.emit(R.reshape(x, (n, ck, *blocks)))
    y = ctx.emit(_TRANSPOSED[nd](columns, ctx.expr(weight), strides, 0, 0, dilations, channels))
    natural = [
        (b - 1) * s + d * (k - 1) + 1 for b, s, d, k in zip(blocks, strides, dilations, block)
    ]
    short = [max(pads[i] + image[i] - natural[i], 0) for i in range(nd)]
    if any(short):
        y = ctx.emit(R.nn.pad(y, [(0, 0), (0, 0)] + [(0, s) for s in short]))
    axes = list(range(2, nd + 2))
    return ctx.emit(R.strided_slice(y, axes, pads[:nd], [p + size for p, size in zip(pads, image)]))


def _col2im_at_run_time(ctx, x: Expr, image: Any, block: Any, attrs: dict) -> Expr:
    """Col2Im with image_shape or block_shape computed at run time: every input element gets
    its flat output position by index arithmetic on the run-time shapes (0 with a zero value
    where it lands in the padding) and a scatter-add sums them; the output's dims are fresh
    symbolic dims, and a call whose shapes do not fit is refused by the VM."""
    image, block = (_i64(ctx, ctx.expr(v)) for v in (image, block))
    nd = static_length(image, "image_shape")
    if static_length(block, "block_shape") != nd:
        raise OpAttributeInvalid("inputs image_shape and block_shape must have one length")
    strides = _positive_ints(attrs, "strides", [1] * nd, nd)
    dilations = _positive_ints(attrs, "dilations", [1] * nd, nd)
    pads = _explicit_pads(attrs, nd)
    n, ck, length = _static(shape_of(x), "Col2Im's input shape")

    def i64(v: int) -> Expr:
        return ctx.expr(np.int64(v))

    img = [element(ctx, image, i) for i in range(nd)]
    blk = [element(ctx, block, i) for i in range(nd)]
    blocks = []  # sliding positions per axis: (size + pads - d * (k - 1) - 1) // s + 1
    for i in range(nd):
        span = R.add(img[i], i64(pads[i] + pads[i + nd] - 1 + dilations[i]))
        span = R.subtract(span, R.multiply(blk[i], i64(dilations[i])))
        blocks.append(ctx.emit(R.add(R.floor_divide(span, i64(strides[i])), i64(1))))
    k_total = ctx.emit(R.prod(block))
    ok = [R.equal(R.prod(ctx.emit(R.concat([R.reshape(b, (1,)) for b in blocks], 0))), i64(length))]
    ok += [R.equal(R.floor_mod(i64(ck), R.maximum(k_total, i64(1))), i64(0))]
    ok += [R.greater(v, i64(0)) for v in img + blk + blocks]
    valid = ctx.emit(ok[0])
    for cond in ok[1:]:
        valid = ctx.emit(R.logical_and(valid, cond))
    k_total = ctx.emit(R.maximum(k_total, i64(1)))  # no division by 0 before the VM refuses
    channels = ctx.emit(R.floor_divide(i64(ck), k_total))
    # per input element (n, ck, l): channel c and block offset j of column ck, block l
    col = ctx.expr(np.arange(ck, dtype="int64").reshape(1, ck, 1))
    pos_l = ctx.expr(np.arange(length, dtype="int64").reshape(1, 1, length))
    j = ctx.emit(R.floor_mod(col, k_total))
    flat, inside = ctx.emit(R.floor_divide(col, k_total)), None
    batch = ctx.expr(np.arange(n, dtype="int64").reshape(n, 1, 1))
    flat = ctx.emit(R.add(R.multiply(batch, channels), flat))  # n * C + c
    inner_k, inner_b = i64(1), i64(1)
    for i in reversed(range(nd)):  # unravel j over block and l over blocks, row-major
        off = ctx.emit(R.floor_mod(R.floor_divide(j, inner_k), R.maximum(blk[i], i64(1))))
        at = ctx.emit(R.floor_mod(R.floor_divide(pos_l, inner_b), R.maximum(blocks[i], i64(1))))
        inner_k = ctx.emit(R.multiply(inner_k, blk[i]))
        inner_b = ctx.emit(R.multiply(inner_b, blocks[i]))
        p = R.add(R.multiply(at, i64(strides[i])), R.multiply(off, i64(dilations[i])))
        axes_pos = ctx.emit(R.subtract(p, i64(pads[i])))
        here = ctx.emit(R.logical_and(R.greater_equal(axes_pos, i64(0)), R.less(axes_pos, img[i])))
        inside = here if inside is None else ctx.emit(R.logical_and(inside, here))
        if i == nd - 1:
            spatial, stride = axes_pos, img[i]
        else:
            spatial = ctx.emit(R.add(spatial, R.multiply(axes_pos, stride)))
            stride = ctx.emit(R.multiply(stride, img[i]))
    flat = ctx.emit(R.add(R.multiply(flat, stride), spatial))
    flat = ctx.emit(R.reshape(R.where(inside, flat, i64(0)), (-1,)))
    values = ctx.emit(R.reshape(R.where(inside, x, _const_like(ctx, x, 0)), (-1,)))
    total = ctx.emit(R.reshape(R.multiply(R.multiply(i64(n), channels), stride), (1,)))
    total = ctx.runtime_shape(poisoned(ctx, total, valid), "image_shape")
    zeros = ctx.emit(R.full(total, _const_like(ctx, x, 0), _dtype(x)))
    out = ctx.emit(R.scatter_elements(zeros, flat, values, 0, "add"))
    head = [ctx.expr(np.array([n], "int64")), ctx.emit(R.reshape(channels, (1,)))]
    out_shape = ctx.emit(R.concat([*head, image], 0))
    return ctx.emit(R.reshape(out, ctx.runtime_shape(out_shape, "image_shape")))


_TRANSPOSED: dict[int, Callable] = {
    1: R.nn.conv1d_transpose,
    2: R.nn.conv2d_transpose,
    3: R.nn.conv3d_transpose,
}


NN_MORE_CONVERTERS: dict[str, Callable] = {
    "GlobalLpPool": _global_lp_pool,
    "LRN": _lrn,
    "MaxUnpool": _max_unpool,
    "Col2Im": _col2im,
}
