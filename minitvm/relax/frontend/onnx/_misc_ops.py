"""Det, TensorScatter, the ai.onnx.ml ops Binarizer and ArrayFeatureExtractor, and the
ai.onnx.preview.training optimizer steps (Adagrad, Adam, Momentum), from existing relax ops.

`MISC_CONVERTERS` are default-domain ops; `ML_CONVERTERS` and `TRAINING_CONVERTERS` are looked
up by the importer only for nodes of their own domain.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ....error import OpAttributeInvalid, OpAttributeUnImplemented
from ... import op as R
from ._helpers import _axis, _const_like, _dtype, _ndim, _required, _tensor, _unsupported, shape_of
from ._runtime_axes import checked_reshape, dims_tensor, element, poisoned


def _all(ctx, flags):
    """A 0-d bool: every element of `flags` is set (an empty tensor's are)."""
    least = ctx.emit(R.min(ctx.emit(R.astype(flags, "int32"))))
    return ctx.emit(R.not_equal(least, ctx.expr(np.int32(0))))


# ----------------------------------------------------------------------------- Det


_MAX_DET_SIZE = 256


def _det(ctx, inputs, attrs):
    """Determinant of the last two dims by Gaussian elimination with partial pivoting, unrolled
    over the (import-time) matrix size: each step swaps the largest remaining pivot into place,
    multiplies it into the result and eliminates its column from a matrix one smaller."""
    a = ctx.expr(inputs[0])
    dims = shape_of(a)
    if len(dims) < 2 or not isinstance(dims[-1], int) or dims[-1] != dims[-2]:
        raise OpAttributeInvalid(
            f"Det needs square matrices in the last two dims of a known size, got {dims}"
        )
    if not _dtype(a).startswith("float"):
        raise OpAttributeInvalid(f"Det takes float tensors, got {_dtype(a)}")
    batch, n = tuple(dims[:-2]), dims[-1]
    if n > _MAX_DET_SIZE:  # unrolled: about 15 bindings per row
        raise OpAttributeUnImplemented(
            f"Det of {n} x {n} matrices is unrolled at import into {n} elimination steps; "
            f"minitvm converts up to {_MAX_DET_SIZE} x {_MAX_DET_SIZE}"
        )
    if n == 0:
        return ctx.expr(np.ones(batch, _dtype(a)))
    zero, one = _const_like(ctx, a, 0.0), _const_like(ctx, a, 1.0)
    det = None
    for m in range(n, 0, -1):  # `a` is the remaining m x m matrix
        column = ctx.emit(R.abs(ctx.emit(R.strided_slice(a, [len(dims) - 1], [0], [1]))))
        pick = ctx.emit(R.argmax(ctx.emit(R.reshape(column, (*batch, m))), -1))
        onehot = ctx.emit(R.one_hot(pick, one, zero, m, -1))  # (..., m): the pivot row
        first = ctx.expr(np.eye(m, dtype=_dtype(a))[0])
        pivot_row = ctx.emit(R.sum(R.multiply(R.expand_dims(onehot, -1), a), [-2], keepdims=True))
        first_row = ctx.emit(R.strided_slice(a, [len(dims) - 2], [0], [1]))
        # swap rows 0 and `pick`: a + (e0 - e_pick) (row_pick - row_0); no-op when pick is 0
        swap = ctx.emit(R.expand_dims(R.subtract(first, onehot), -1))
        a = ctx.emit(R.add(a, R.multiply(swap, R.subtract(pivot_row, first_row))))
        minus = _const_like(ctx, a, -1.0)
        sign = ctx.emit(R.where(R.equal(pick, ctx.expr(np.int64(0))), one, minus))
        pivot = ctx.emit(
            R.reshape(R.strided_slice(a, [len(dims) - 2, len(dims) - 1], [0, 0], [1, 1]), batch)
        )
        step = ctx.emit(R.multiply(sign, pivot))
        det = step if det is None else ctx.emit(R.multiply(det, step))
        if m == 1:
            break
        rest = ctx.emit(R.strided_slice(a, [len(dims) - 2], [1], [m]))  # (..., m-1, m)
        lead = ctx.emit(R.strided_slice(rest, [len(dims) - 1], [0], [1]))  # (..., m-1, 1)
        top = ctx.emit(R.strided_slice(a, [len(dims) - 2, len(dims) - 1], [0, 1], [1, m]))
        # a zero pivot means a zero column: the det is 0 already; keep the rest finite
        safe = ctx.emit(R.where(R.equal(pivot, zero), one, pivot))
        factor = ctx.emit(R.divide(lead, R.reshape(safe, (*batch, 1, 1))))
        a = ctx.emit(
            R.subtract(R.strided_slice(rest, [len(dims) - 1], [1], [m]), R.multiply(factor, top))
        )
    return det


# ----------------------------------------------------------------------------- TensorScatter


def _tensor_scatter(ctx, inputs, attrs):
    """Write `update` into the cache along `axis` from each batch row's write index (wrapping
    in "circular" mode); a linear write past the end is refused at run time."""
    cache = ctx.expr(inputs[0])
    update = _tensor(ctx, inputs[1], cache)
    rank = _ndim(cache)
    axis = _axis(int(attrs.get("axis", -2)), rank)
    mode = attrs.get("mode", "linear")
    if mode not in ("linear", "circular"):
        _unsupported("mode", mode, ["linear", "circular"])
    if axis == 0:
        raise OpAttributeInvalid("axis must not be 0, the batch axis the write indices follow")
    cdims, udims = shape_of(cache), shape_of(update)
    if len(udims) != rank or any(c != u for i, (c, u) in enumerate(zip(cdims, udims)) if i != axis):
        raise OpAttributeInvalid(
            f"update {udims} must match past_cache {cdims} in every dim but axis {axis}"
        )
    length, seq = cdims[axis], udims[axis]
    if not isinstance(length, int) or not isinstance(seq, int):
        raise OpAttributeUnImplemented("the sequence dims of past_cache and update must be known")
    batch = cdims[0]
    spread = [1] * rank
    if len(inputs) > 2 and inputs[2] is not None:
        starts = ctx.emit(R.astype(ctx.expr(inputs[2]), "int64"))
        starts = ctx.emit(R.reshape(starts, (batch,) + (1,) * (rank - 1)))
    else:
        starts = ctx.expr(np.zeros((1,) * rank, "int64"))
    spread[axis] = seq
    steps = ctx.expr(np.arange(seq, dtype="int64").reshape(spread))
    index = ctx.emit(R.add(starts, steps))
    if mode == "circular":
        index = ctx.emit(R.floor_mod(index, ctx.expr(np.int64(length))))
    index = ctx.emit(R.broadcast_to(index, udims))
    out = ctx.emit(R.scatter_elements(cache, index, update, axis))
    if mode == "circular":
        return out
    ok = ctx.emit(
        R.logical_and(
            _all(ctx, R.greater_equal(index, ctx.expr(np.int64(0)))),
            _all(ctx, R.less(index, ctx.expr(np.int64(length)))),
        )
    )
    return checked_reshape(
        ctx, out, poisoned(ctx, dims_tensor(ctx, out), ok), "write_indices", cdims
    )


MISC_CONVERTERS = {"Det": _det, "TensorScatter": _tensor_scatter}

# ----------------------------------------------------------------------------- ai.onnx.ml


def _binarizer(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    hit = ctx.emit(R.greater(x, _const_like(ctx, x, float(attrs.get("threshold", 0.0)))))
    return ctx.emit(R.where(hit, _const_like(ctx, x, 1.0), _const_like(ctx, x, 0.0)))


def _array_feature_extractor(ctx, inputs, attrs):
    """x[..., indices] (indices flattened); a 1-d x gives one row, as ONNX Runtime does. An
    index outside [0, last dim) is refused (at run time when the indices are computed)."""
    x = ctx.expr(inputs[0])
    dims = shape_of(x)
    width = dims[-1]
    known = ctx.known_or_none(inputs[1])
    if known is not None:
        flat = np.asarray(known).reshape(-1).astype("int64")
        if isinstance(width, int) and ((flat < 0) | (flat >= width)).any():
            raise OpAttributeInvalid(
                f"indices {flat.tolist()} must lie in [0, {width}) (the last dim of X)"
            )
        index = ctx.expr(flat)
    else:
        index = ctx.expr(inputs[1])
        index = ctx.emit(R.reshape(R.astype(index, "int64"), (-1,)))
    y = ctx.emit(R.take(x, index, axis=len(dims) - 1))
    if len(dims) == 1:
        y = ctx.emit(R.expand_dims(y, 0))
    if known is not None:
        return y
    bound = element(ctx, dims_tensor(ctx, x), len(dims) - 1)
    ok = ctx.emit(
        R.logical_and(
            _all(ctx, R.greater_equal(index, ctx.expr(np.int64(0)))),
            _all(ctx, R.less(index, bound)),
        )
    )
    return checked_reshape(ctx, y, poisoned(ctx, dims_tensor(ctx, y), ok), "Y", shape_of(y))


ML_CONVERTERS = {"Binarizer": _binarizer, "ArrayFeatureExtractor": _array_feature_extractor}

# ----------------------------------------------------------------------------- training


def _optimizer(groups: int, step: Callable) -> Callable:
    """An optimizer node: inputs R, T, then `groups` lists of n tensors (X, G, and state);
    outputs the new X's then each new state list. `step` updates one tensor."""

    def convert(ctx, inputs, attrs):
        rest = len(inputs) - 2
        if rest <= 0 or rest % groups:
            raise OpAttributeInvalid(
                f"expected R, T and {groups} equally long lists of tensors, got {len(inputs)} "
                "inputs"
            )
        n = rest // groups
        first = ctx.expr(inputs[2])
        rate = ctx.emit(R.astype(R.reshape(_tensor(ctx, inputs[0], first), ()), _dtype(first)))
        count = ctx.emit(R.astype(R.reshape(ctx.expr(inputs[1]), ()), _dtype(first)))
        results = []
        for i in range(n):
            x = ctx.expr(inputs[2 + i])
            args = [_tensor(ctx, inputs[2 + g * n + i], x) for g in range(1, groups)]
            results.append(step(ctx, rate, count, x, *args, attrs))
        return [r[j] for j in range(groups - 1) for r in results]

    return convert


def _regularized(ctx, x, g, attrs):
    norm = float(attrs.get("norm_coefficient", 0.0))
    return ctx.emit(R.add(R.multiply(_const_like(ctx, x, norm), x), g))


def _adagrad_step(ctx, rate, count, x, g, h, attrs):
    decay, eps = float(attrs.get("decay_factor", 0.0)), float(attrs.get("epsilon", 1e-6))
    lr = ctx.emit(
        R.divide(
            rate, R.add(_const_like(ctx, x, 1.0), R.multiply(count, _const_like(ctx, x, decay)))
        )
    )
    g = _regularized(ctx, x, g, attrs)
    h_new = ctx.emit(R.add(h, R.multiply(g, g)))
    scale = ctx.emit(R.add(R.sqrt(h_new), _const_like(ctx, x, eps)))
    x_new = ctx.emit(R.subtract(x, R.divide(R.multiply(lr, g), scale)))
    return [x_new, h_new]


def _adam_step(ctx, rate, count, x, g, v, h, attrs):
    alpha, beta = float(attrs.get("alpha", 0.9)), float(attrs.get("beta", 0.999))
    eps, post = float(attrs.get("epsilon", 1e-6)), float(attrs.get("norm_coefficient_post", 0.0))

    def c(value: float):  # a constant of x's dtype
        return _const_like(ctx, x, value)

    g = _regularized(ctx, x, g, attrs)
    v_new = ctx.emit(R.add(R.multiply(c(alpha), v), R.multiply(c(1 - alpha), g)))
    h_new = ctx.emit(R.add(R.multiply(c(beta), h), R.multiply(c(1 - beta), R.multiply(g, g))))
    # bias correction from the second step on (T > 0); the first uses R as is
    corrected = ctx.emit(
        R.divide(
            R.multiply(rate, R.sqrt(R.subtract(c(1.0), R.power(c(beta), count)))),
            R.subtract(c(1.0), R.power(c(alpha), count)),
        )
    )
    lr = ctx.emit(R.where(R.greater(count, c(0.0)), corrected, rate))
    x_new = ctx.emit(R.subtract(x, R.multiply(lr, R.divide(v_new, R.add(R.sqrt(h_new), c(eps))))))
    return [ctx.emit(R.multiply(c(1 - post), x_new)), v_new, h_new]


def _momentum_step(ctx, rate, count, x, g, v, attrs):
    alpha, beta = float(_required(attrs, "alpha")), float(_required(attrs, "beta"))
    mode = _required(attrs, "mode")
    if mode not in ("standard", "nesterov"):
        _unsupported("mode", mode, ["standard", "nesterov"])
    _required(attrs, "norm_coefficient")
    g = _regularized(ctx, x, g, attrs)
    # the gradient's coefficient is 1 on the first step (T == 0)
    b = ctx.emit(
        R.where(
            R.greater(count, _const_like(ctx, x, 0.0)),
            _const_like(ctx, x, beta),
            _const_like(ctx, x, 1.0),
        )
    )
    v_new = ctx.emit(R.add(R.multiply(_const_like(ctx, x, alpha), v), R.multiply(b, g)))
    if mode == "standard":
        move = v_new
    else:
        move = ctx.emit(R.add(g, R.multiply(_const_like(ctx, x, alpha), v_new)))
    return [ctx.emit(R.subtract(x, R.multiply(rate, move))), v_new]


TRAINING_CONVERTERS = {
    "Adagrad": _optimizer(3, _adagrad_step),
    "Adam": _optimizer(4, _adam_step),
    "Momentum": _optimizer(3, _momentum_step),
}
