"""Tensor-manipulation ONNX converters: shapes, slicing, gathers, padding, reductions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ....error import OpAttributeInvalid, OpAttributeRequired, OpAttributeUnImplemented
from ....tir.expr import IntImm, PrimExpr
from ... import op as R
from ...expr import Expr, TupleGetItem
from ._helpers import (
    _axis,
    _const_like,
    _dtype,
    _ndim,
    _prod,
    _required,
    _scalar,
    _unsupported,
    shape_of,
)
from ._runtime_axes import (
    axis_hits,
    checked_reshape,
    dims_tensor,
    poisoned,
    reduce_at_run_time,
    slice_at_run_time,
    split_at_run_time,
    squeeze_at_run_time,
    static_length,
    unsqueeze_at_run_time,
)
from ._runtime_index import pad_at_run_time, range_at_run_time, tile_at_run_time
from ._shape import SymTensor

_INT64_MAX = 2**63 - 1


# ----------------------------------------------------------------------------- shapes


def _shape(ctx, inputs, attrs):
    value = inputs[0]
    dims = list(value.shape) if isinstance(value, np.ndarray | SymTensor) else list(shape_of(value))
    start, end = attrs.get("start", 0), attrs.get("end", len(dims))  # opset 15
    dims = dims[start:end]
    from ._shape import make

    values = np.empty(len(dims), dtype=object)
    values[:] = dims
    return make(values, "int64")


def _size(ctx, inputs, attrs):
    from ._shape import make

    dims = list(shape_of(ctx.expr(inputs[0])))
    return make(np.asarray(_prod(dims), dtype=object), "int64")


def _target_shape(ctx, x: Expr, shape: list, allowzero: bool) -> tuple:
    """ONNX reshape rules: 0 copies the input dim (unless allowzero), one -1 is inferred."""
    in_shape = shape_of(x)
    dims = [
        in_shape[i] if (isinstance(d, int) and d == 0 and not allowzero) else d
        for i, d in enumerate(shape)
    ]
    unknown = [i for i, d in enumerate(dims) if isinstance(d, int) and d == -1]
    if len(unknown) > 1:
        raise OpAttributeInvalid(f"shape {shape} has more than one -1")
    if unknown:
        known = [d for i, d in enumerate(dims) if i != unknown[0]]
        dims[unknown[0]] = _quotient(list(in_shape), known)
    return tuple(dims)


def _quotient(numerator: list, denominator: list) -> Any:
    """prod(numerator) // prod(denominator), cancelling symbolic dims found on both sides."""
    from ....arith import Analyzer
    from ....ir.structural import structural_equal

    rest = list(numerator)
    for d in list(denominator):
        match = next(
            (
                i
                for i, n in enumerate(rest)
                if isinstance(d, PrimExpr) and isinstance(n, PrimExpr) and structural_equal(n, d)
            ),
            None,
        )
        if match is not None:
            rest.pop(match)
            denominator.remove(d)
    out = Analyzer().simplify(_as_prim(_prod(rest)) // _as_prim(_prod(denominator)))
    return int(out.value) if isinstance(out, IntImm) else out


def _as_prim(value: Any) -> PrimExpr:
    return value if isinstance(value, PrimExpr) else IntImm("int64", int(value))


def _reshape(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    if ctx.opset < 5:
        shape = list(attrs["shape"])
    elif ctx.known_or_none(inputs[1]) is None:
        return _runtime_reshape(ctx, x, ctx.expr(inputs[1]), bool(attrs.get("allowzero", 0)))
    else:
        shape = ctx.ints(inputs[1], "shape")
    return ctx.emit(R.reshape(x, _target_shape(ctx, x, shape, bool(attrs.get("allowzero", 0)))))


def _runtime_reshape(ctx, x: Expr, shape: Expr, allowzero: bool) -> Expr:
    """Reshape to a shape tensor computed at run time: its 0s (unless allowzero) and one -1 are
    resolved with int64 tensor ops, the rest checked by the VM (a negative dim, a wrong count)."""
    rank = _ndim(x)
    length = shape.struct_info.shape[0] if shape.struct_info.shape is not None else None
    if not isinstance(length, IntImm):
        raise OpAttributeUnImplemented(
            f"input 'shape' is computed at run time with an unknown length ({shape.struct_info}); "
            "fix it in shape_dict"
        )
    k = int(length.value)
    t = ctx.emit(R.astype(shape, "int64")) if _dtype(shape) != "int64" else shape
    dims = ctx.emit(R.shape_to_tensor(R.shape_of(x)))
    if not allowzero:  # 0 copies the input's dim at the same position
        if k <= rank:
            same = ctx.emit(R.strided_slice(dims, [0], [0], [k])) if k < rank else dims
        else:  # a 0 past the input's rank stays 0: the count check then refuses it
            same = ctx.emit(R.concat([dims, ctx.expr(np.zeros(k - rank, "int64"))], 0))
        t = ctx.emit(R.where(R.equal(t, ctx.expr(np.int64(0))), same, t))
    minus = ctx.emit(R.equal(t, ctx.expr(np.int64(-1))))
    one, bad = ctx.expr(np.int64(1)), ctx.expr(np.int64(-1))
    known = ctx.emit(R.maximum(R.prod(R.where(minus, one, t)), one))
    fill = ctx.emit(R.floor_divide(R.prod(dims), known))
    several = ctx.emit(R.greater(R.sum(R.astype(minus, "int64")), one))
    fill = ctx.emit(R.where(several, bad, fill))  # two -1s: left negative, refused by the VM
    t = ctx.emit(R.where(minus, fill, t))
    return ctx.emit(R.reshape(x, ctx.runtime_shape(t, "shape")))


def _flatten(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    shape = shape_of(x)
    axis = int(attrs.get("axis", 1))
    if not -len(shape) <= axis <= len(shape):
        raise OpAttributeInvalid(
            f"attribute axis={axis} is out of range [{-len(shape)}, {len(shape)}] for an input "
            f"of rank {len(shape)}"
        )
    axis = axis % len(shape) if axis < 0 else axis
    return ctx.emit(R.reshape(x, (_prod(shape[:axis]), _prod(shape[axis:]))))


def _transpose(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    perm = attrs.get("perm", list(range(_ndim(x)))[::-1])
    return ctx.emit(R.permute_dims(x, list(perm)))


def _axes_input(ctx, inputs: list, attrs: dict, index: int, since: int) -> list[int] | None:
    """Axes given as an input from opset `since`, as an attribute before it."""
    if ctx.opset >= since:
        value = inputs[index] if len(inputs) > index else None
        return None if value is None else [int(a) for a in ctx.ints(value, "axes")]
    return attrs.get("axes")


def _runtime_axes(ctx, inputs: list, index: int, since: int, what: str) -> Expr | None:
    """Input `index` (ONNX's `what`) when it is given (from opset `since`), non-empty, and
    computed at run time; else None."""
    value = inputs[index] if ctx.opset >= since and len(inputs) > index else None
    if value is None or ctx.known_or_none(value) is not None:
        return None
    value = ctx.expr(value)
    return value if static_length(value, what) else None


def _unsqueeze(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    if (runtime := _runtime_axes(ctx, inputs, 1, 13, "axes")) is not None:
        return unsqueeze_at_run_time(ctx, x, runtime)
    axes = _axes_input(ctx, inputs, attrs, 1, 13)
    if axes is None:
        raise OpAttributeRequired("Unsqueeze needs axes")
    rank = _ndim(x) + len(axes)
    for axis in _distinct_axes([_axis(a, rank) for a in axes], axes):
        x = ctx.emit(R.expand_dims(x, axis))
    return x


def _squeeze(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    if (runtime := _runtime_axes(ctx, inputs, 1, 13, "axes")) is not None:
        return squeeze_at_run_time(ctx, x, runtime)
    axes = _axes_input(ctx, inputs, attrs, 1, 13)
    if axes is not None:
        axes = _distinct_axes([_axis(a, _ndim(x)) for a in axes], axes)
        shape = shape_of(x)
        wide = [a for a in axes if isinstance(shape[a], int) and shape[a] != 1]
        if wide:
            raise OpAttributeInvalid(
                f"axes {axes} name dims of size {[shape[a] for a in wide]}; only dims of size 1 "
                f"can be squeezed (input shape {list(shape)})"
            )
    return ctx.emit(R.squeeze(x, axes))


def _distinct_axes(normalized: list[int], given: list) -> list[int]:
    """The axes sorted; the same axis named twice (2 and -1 of rank 3 too) is an error."""
    if len(set(normalized)) != len(normalized):
        raise OpAttributeInvalid(f"axes {list(given)} name the same axis twice")
    return sorted(normalized)


def _concat(ctx, inputs, attrs):
    tensors = [ctx.expr(v) for v in inputs if v is not None]
    axis = _axis(int(_required(attrs, "axis")), _ndim(tensors[0]))
    dtype = _dtype(tensors[0])
    tensors = [t if _dtype(t) == dtype else ctx.emit(R.astype(t, dtype)) for t in tensors]
    return ctx.emit(R.concat(tensors, axis))


def _split(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    axis = _axis(int(attrs.get("axis", 0)), _ndim(x))
    if (runtime := _runtime_axes(ctx, inputs, 1, 13, "split")) is not None:
        return split_at_run_time(ctx, x, axis, runtime, len(ctx.node.output))
    split = _axes_input(ctx, inputs, {"axes": attrs.get("split")}, 1, 13)
    num_outputs = int(attrs.get("num_outputs", len(ctx.node.output)))
    dim = shape_of(x)[axis]
    if split is None:
        if num_outputs < 1:
            raise OpAttributeInvalid(f"num_outputs={num_outputs} must be at least 1")
        if ctx.opset < 18 and isinstance(dim, int) and dim % num_outputs:
            raise OpAttributeInvalid(
                f"axis {axis} of length {dim} does not split into {num_outputs} equal parts "
                "(uneven parts need opset 18, or give the sizes)"
            )
        if isinstance(dim, PrimExpr):
            return _tuple_items(ctx, ctx.emit(R.split(x, num_outputs, axis)), num_outputs)
        chunk = -(-dim // num_outputs)  # opset 18: the last chunk may be smaller
        split = [min(chunk, dim - i * chunk) for i in range(num_outputs)]
    if any(s < 0 for s in split) or (isinstance(dim, int) and sum(split) != dim):
        raise OpAttributeInvalid(
            f"split sizes {split} must be non-negative and sum to the length {dim} of axis {axis}"
        )
    if len(split) != len([n for n in ctx.node.output]):
        raise OpAttributeInvalid(
            f"split sizes {split} give {len(split)} parts for {len(ctx.node.output)} outputs"
        )
    if len(split) == 1:
        return [x]
    bounds = list(np.cumsum(split)[:-1])
    parts = ctx.emit(R.split(x, [int(b) for b in bounds], axis))
    return _tuple_items(ctx, parts, len(split))


def _tuple_items(ctx, tup: Expr, n: int) -> list:
    return [ctx.emit(TupleGetItem(tup, i)) for i in range(n)]


def _gather(ctx, inputs, attrs):
    data = ctx.expr(inputs[0])
    axis = _axis(int(attrs.get("axis", 0)), _ndim(data))
    indices = inputs[1]
    dim = shape_of(data)[axis]
    if isinstance(indices, np.ndarray):
        if not isinstance(dim, PrimExpr):
            bad = indices[(indices < -dim) | (indices >= dim)]
            if bad.size:
                raise OpAttributeInvalid(
                    f"indices {bad.tolist()} are out of range for a dim of size {dim}"
                )
            indices = np.where(indices < 0, indices + dim, indices)
        elif (indices < 0).any():
            raise OpAttributeUnImplemented(f"negative indices on a symbolic dim {dim}")
        # on a symbolic dim a known index may still be out of range: the run-time check reports it
        return ctx.emit(R.take(data, ctx.expr(indices.astype("int64")), axis, mode="fast"))
    indices = ctx.expr(indices)
    # negative indices count from the end: i + dim where i < 0
    zero = ctx.expr(np.asarray(0, _dtype(indices)))
    if isinstance(dim, PrimExpr):
        raise OpAttributeUnImplemented(f"run-time indices on a symbolic dim {dim}")
    shifted = ctx.emit(R.add(indices, ctx.expr(np.asarray(dim, _dtype(indices)))))
    indices = ctx.emit(R.where(ctx.emit(R.less(indices, zero)), shifted, indices))
    return ctx.emit(R.take(data, indices, axis, mode="fast"))


def _gather_elements(ctx, inputs, attrs):
    """out[i][j][k] = data[index][j][k] (axis 0): a take from the flat data at computed offsets."""
    data, indices = ctx.expr(inputs[0]), ctx.expr(inputs[1])
    d_shape, i_shape = shape_of(data), shape_of(indices)
    if any(isinstance(d, PrimExpr) for d in d_shape + i_shape):
        raise OpAttributeUnImplemented("GatherElements on symbolic dims; give them in shape_dict")
    axis = _axis(int(attrs.get("axis", 0)), len(d_shape))
    strides = np.cumprod((1,) + d_shape[::-1][:-1])[::-1].astype("int64")
    grid = np.indices(i_shape, dtype="int64")
    base = sum(grid[k] * strides[k] for k in range(len(d_shape)) if k != axis)
    idx = ctx.emit(R.astype(indices, "int64")) if _dtype(indices) != "int64" else indices
    zero, dim = ctx.expr(np.asarray(0, "int64")), ctx.expr(np.asarray(d_shape[axis], "int64"))
    idx = ctx.emit(R.where(ctx.emit(R.less(idx, zero)), ctx.emit(R.add(idx, dim)), idx))
    offsets = ctx.emit(R.add(ctx.emit(R.multiply(idx, ctx.expr(strides[axis]))), ctx.expr(base)))
    # an index outside the axis becomes -1, which the compiled code's index check reports
    inside = ctx.emit(
        R.logical_and(ctx.emit(R.greater_equal(idx, zero)), ctx.emit(R.less(idx, dim)))
    )
    offsets = ctx.emit(R.where(inside, offsets, ctx.expr(np.asarray(-1, "int64"))))
    flat = ctx.emit(R.reshape(data, (_prod(d_shape),)))
    return ctx.emit(R.take(flat, offsets, 0, mode="fast"))


def _slice(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    shape = shape_of(x)
    if ctx.opset < 10:
        starts, ends, axes, steps = attrs["starts"], attrs["ends"], attrs.get("axes"), None
    elif any(v is not None and ctx.known_or_none(v) is None for v in inputs[1:5]):
        starts, ends, axes, steps = (inputs[i] if len(inputs) > i else None for i in range(1, 5))
        return slice_at_run_time(ctx, x, starts, ends, axes, steps)
    else:
        starts, ends = ctx.ints(inputs[1], "starts"), ctx.ints(inputs[2], "ends")
        axes = ctx.ints(inputs[3], "axes") if len(inputs) > 3 and inputs[3] is not None else None
        steps = ctx.ints(inputs[4], "steps") if len(inputs) > 4 and inputs[4] is not None else None
    axes = list(range(len(starts))) if axes is None else [_axis(a, len(shape)) for a in axes]
    steps = [1] * len(starts) if steps is None else steps
    keep = [
        (a, b, e, s)
        for a, b, e, s in zip(axes, starts, ends, steps)
        if not _is_full(shape[a], b, e, s)
    ]
    if not keep:
        return x
    for part in keep:
        if any(isinstance(v, PrimExpr) for v in part[1:]):
            raise OpAttributeUnImplemented(
                f"slice bounds {part[1:]} on axis {part[0]} are symbolic"
            )
    a, b, e, s = zip(*keep)
    e = [min(v, _INT64_MAX) for v in e]
    return ctx.emit(R.strided_slice(x, list(a), list(b), list(e), list(s)))


def _is_full(dim: Any, begin: int, end: int, step: int) -> bool:
    """A slice that keeps the whole axis (end may be INT64_MAX or the symbolic dim itself)."""
    if step != 1 or not (isinstance(begin, int) and begin == 0):
        return False
    if isinstance(end, int) and end >= _INT64_MAX // 2:
        return True
    return not isinstance(dim, PrimExpr) and isinstance(end, int) and end >= dim or end is dim


def _expand(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    if ctx.known_or_none(inputs[1]) is None:
        return _runtime_expand(ctx, x, ctx.expr(inputs[1]))
    target = ctx.ints(inputs[1], "shape")
    in_shape = list(shape_of(x))
    rank = max(len(in_shape), len(target))
    in_shape = [1] * (rank - len(in_shape)) + in_shape
    target = [1] * (rank - len(target)) + target
    out = []
    for i, (a, b) in enumerate(zip(in_shape, target)):
        if isinstance(b, int) and b == 1:
            out.append(a)
        elif isinstance(a, int) and a == 1:
            out.append(b)
        elif isinstance(a, int) and isinstance(b, int) and a != b:
            raise OpAttributeInvalid(f"cannot expand dim {i} of size {a} to {b}")
        else:
            out.append(a)
    if tuple(out) == tuple(shape_of(x)):
        return x
    return ctx.emit(R.broadcast_to(x, tuple(out)))


def _runtime_expand(ctx, x: Expr, shape: Expr) -> Expr:
    """Expand to a shape tensor computed at run time: a target 1 keeps the input's dim; where
    the input's dim is not 1 the VM checks the target equals it (broadcasting never guesses)."""
    in_shape = list(shape_of(x))
    length = shape.struct_info.shape[0] if shape.struct_info.shape is not None else None
    if not isinstance(length, IntImm):
        raise OpAttributeUnImplemented(
            f"input 'shape' is computed at run time with an unknown length ({shape.struct_info}); "
            "fix it in shape_dict"
        )
    k, rank = int(length.value), len(in_shape)
    out_rank = max(k, rank)
    t = ctx.emit(R.astype(shape, "int64")) if _dtype(shape) != "int64" else shape
    if k < out_rank:
        t = ctx.emit(R.concat([ctx.expr(np.ones(out_rank - k, "int64")), t], 0))
    dims = ctx.emit(R.shape_to_tensor(R.shape_of(x)))
    if rank < out_rank:
        dims = ctx.emit(R.concat([ctx.expr(np.ones(out_rank - rank, "int64")), dims], 0))
    t = ctx.emit(R.where(R.equal(t, ctx.expr(np.int64(1))), dims, t))
    in_shape = [1] * (out_rank - rank) + in_shape
    expect = [None if (isinstance(d, int) and d == 1) else d for d in in_shape]
    return ctx.emit(R.broadcast_to(x, ctx.runtime_shape(t, "shape", expect)))


def _constant_of_shape(ctx, inputs, attrs):
    value = np.asarray(attrs.get("value", np.zeros(1, "float32")))
    if ctx.known_or_none(inputs[0]) is None:
        dims = ctx.runtime_shape(ctx.expr(inputs[0]), "input")
        return ctx.emit(R.full(dims, ctx.expr(value.reshape(())), str(value.dtype)))
    dims = ctx.ints(inputs[0], "input")
    return ctx.emit(R.full(tuple(dims), ctx.expr(value.reshape(())), str(value.dtype)))


def _tile(ctx, inputs, attrs):
    if ctx.known_or_none(inputs[1]) is None:
        return tile_at_run_time(ctx, ctx.expr(inputs[0]), inputs[1])
    return ctx.emit(R.tile(ctx.expr(inputs[0]), ctx.ints(inputs[1], "repeats")))


def _pad(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    ndim = _ndim(x)
    mode = attrs.get("mode", "constant")
    # wrap has no relax.nn.pad mode: it takes the gather path of pads known at run time
    modes = {"constant": "constant", "edge": "edge", "reflect": "reflect", "wrap": "wrap"}
    if ctx.opset < 11:  # Pad-2: pads and value are attributes; no wrap mode yet
        modes.pop("wrap")
    if mode not in modes:
        _unsupported("mode", mode, sorted(modes))
    value = inputs[2] if len(inputs) > 2 else None
    runtime_fill = isinstance(value, Expr) and not isinstance(ctx.known_or_none(value), np.ndarray)
    if mode == "wrap" or (
        ctx.opset >= 11
        and any(v is not None and ctx.known_or_none(v) is None for v in [inputs[1]] + inputs[3:4])
    ):
        if runtime_fill and mode == "constant":
            fill = ctx.emit(R.reshape(ctx.expr(value), ()))
        else:
            known = _scalar(ctx, value, "constant_value") if value is not None else 0.0
            fill = _const_like(ctx, x, known if mode == "constant" else 0.0)
        axes = inputs[3] if len(inputs) > 3 else None
        return pad_at_run_time(ctx, x, inputs[1], axes, modes[mode], fill)
    pads = ctx.ints(inputs[1], "pads") if ctx.opset >= 11 else list(_required(attrs, "pads"))
    if runtime_fill or mode != "constant":
        fill = 0.0  # a fill computed at run time is put in below; other modes ignore it
    elif value is not None:
        fill = _scalar(ctx, value, "constant_value")
    else:
        fill = float(attrs.get("value", 0.0))
    axes = ctx.ints(inputs[3], "axes") if len(inputs) > 3 and inputs[3] is not None else range(ndim)
    axes = [_axis(a, ndim) for a in axes]
    if len(pads) != 2 * len(axes):
        raise OpAttributeInvalid(
            f"pads {pads} must hold 2 values per padded axis ({len(axes)} axes)"
        )
    if any(p < 0 for p in pads):
        raise OpAttributeUnImplemented(f"negative pads {pads} (cropping); use Slice")
    pairs = [(0, 0)] * ndim
    for i, a in enumerate(axes):
        pairs[a] = (pads[i], pads[i + len(axes)])
    y = ctx.emit(R.nn.pad(x, pad_width=pairs, pad_value=fill, pad_mode=modes[mode]))
    if not runtime_fill or mode != "constant":
        return y
    # the padding of a ones tensor marks what came from x; the rest takes the run-time fill
    ones = ctx.emit(R.full(shape_of(x), _const_like(ctx, x, 1), _dtype(x)))
    inside = ctx.emit(R.nn.pad(ones, pad_width=pairs, pad_value=0.0, pad_mode="constant"))
    inside = ctx.emit(R.not_equal(inside, _const_like(ctx, x, 0)))
    fill_value = ctx.emit(R.reshape(ctx.expr(value), ()))
    return ctx.emit(R.where(inside, y, fill_value))


def _range(ctx, inputs, attrs):
    # a Range of values known at import is folded before it gets here
    return range_at_run_time(ctx, *inputs[:3])


def _blocksize(x: Expr, attrs: dict, to_space: bool) -> int:
    """DepthToSpace (`to_space`) / SpaceToDepth's blocksize: >= 1, dividing the dims it splits."""
    b = int(_required(attrs, "blocksize"))
    if b < 1:
        raise OpAttributeInvalid(f"attribute blocksize={b} must be at least 1")
    if _ndim(x) != 4:
        raise OpAttributeInvalid(f"the input has rank {_ndim(x)}; it must be NCHW (rank 4)")
    _, c, h, w = shape_of(x)
    divided = [(c, b * b)] if to_space else [(h, b), (w, b)]
    bad = [d for d, by in divided if isinstance(d, int) and d % by]
    if bad:
        raise OpAttributeInvalid(
            f"attribute blocksize={b} does not divide the input dims {bad} (input shape "
            f"{list(shape_of(x))})"
        )
    return b


def _depth_to_space(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    b = _blocksize(x, attrs, to_space=True)
    n, c, h, w = shape_of(x)
    mode = attrs.get("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        _unsupported("mode", mode, ["DCR", "CRD"])
    if mode == "DCR":
        y = ctx.emit(R.reshape(x, (n, b, b, c // b // b, h, w)))
        y = ctx.emit(R.permute_dims(y, [0, 3, 4, 1, 5, 2]))
    else:  # CRD
        y = ctx.emit(R.reshape(x, (n, c // b // b, b, b, h, w)))
        y = ctx.emit(R.permute_dims(y, [0, 1, 4, 2, 5, 3]))
    return ctx.emit(R.reshape(y, (n, c // b // b, h * b, w * b)))


def _space_to_depth(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    b = _blocksize(x, attrs, to_space=False)
    n, c, h, w = shape_of(x)
    mode = attrs.get("mode", "DCR")  # opset 25: CRD keeps each channel's block together
    if mode not in ("DCR", "CRD"):
        _unsupported("mode", mode, ["DCR", "CRD"])
    y = ctx.emit(R.reshape(x, (n, c, h // b, b, w // b, b)))
    y = ctx.emit(R.permute_dims(y, [0, 3, 5, 1, 2, 4] if mode == "DCR" else [0, 1, 3, 5, 2, 4]))
    return ctx.emit(R.reshape(y, (n, c * b * b, h // b, w // b)))


# ----------------------------------------------------------------------------- reductions


def _reduce(relax_op: Callable, since: int) -> Callable:
    """ReduceX: axes became an input at opset `since` (13 for ReduceSum, 18 for the others).
    `relax_op(ctx, x, axes, keepdims)` reduces through `axes.reduce` and `axes.squeeze`, so one
    formula serves axes known at import (_StaticAxes) and at run time (RuntimeAxes)."""

    def convert(ctx, inputs, attrs):
        x = ctx.expr(inputs[0])
        keepdims = bool(attrs.get("keepdims", 1))
        given = inputs[1] if ctx.opset >= since and len(inputs) > 1 else None
        if given is not None and ctx.known_or_none(given) is None:
            given = ctx.expr(given)
            if static_length(given, "axes") > 0:
                return reduce_at_run_time(ctx, x, given, keepdims, relax_op)
            axes = []
        else:
            axes = _axes_input(ctx, inputs, attrs, 1, since)
        if not axes:
            if attrs.get("noop_with_empty_axes", 0):
                return x
            axes = list(range(_ndim(x)))
        axes = [_axis(a, _ndim(x)) for a in axes]
        return ctx.emit(relax_op(ctx, x, _StaticAxes(axes), keepdims))

    return convert


class _StaticAxes:
    """Reduction axes known at import."""

    def __init__(self, axes: list[int]):
        self.axes = axes

    def reduce(self, op: Callable, t: Expr, keepdims: bool) -> Expr:
        return op(t, self.axes, keepdims)

    def squeeze(self, t: Expr) -> Expr:
        return R.squeeze(t, self.axes)


def _simple_reduce(relax_op: Callable) -> Callable:
    return lambda ctx, x, axes, keepdims: axes.reduce(relax_op, x, keepdims)


def _reduce_l2(ctx, x, axes, keepdims):
    return R.sqrt(ctx.emit(axes.reduce(R.sum, ctx.emit(R.multiply(x, x)), keepdims)))


def _reduce_sum_square(ctx, x, axes, keepdims):
    return axes.reduce(R.sum, ctx.emit(R.multiply(x, x)), keepdims)


def _reduce_l1(ctx, x, axes, keepdims):
    return axes.reduce(R.sum, ctx.emit(R.abs(x)), keepdims)


def _reduce_log_sum(ctx, x, axes, keepdims):
    return R.log(ctx.emit(axes.reduce(R.sum, x, keepdims)))


def _reduce_log_sum_exp(ctx, x, axes, keepdims):
    top = ctx.emit(axes.reduce(R.max, x, True))
    shifted = ctx.emit(R.exp(ctx.emit(R.subtract(x, top))))
    summed = ctx.emit(axes.reduce(R.sum, shifted, True))
    out = ctx.emit(R.add(ctx.emit(R.log(summed)), top))
    return axes.squeeze(out) if not keepdims else R.add(out, _const_like(ctx, out, 0.0))


def _arg_reduce(relax_op: Callable) -> Callable:
    def convert(ctx, inputs, attrs):
        x = ctx.expr(inputs[0])
        axis = _axis(int(attrs.get("axis", 0)), _ndim(x))
        keepdims = bool(attrs.get("keepdims", 1))
        if not attrs.get("select_last_index", 0):
            return ctx.emit(relax_op(x, axis, keepdims))
        # the last extreme: the first one of the flipped tensor, counted from the end
        size = shape_of(x)[axis]
        if isinstance(size, PrimExpr):
            _unsupported("select_last_index", 1, "0 on a symbolic axis")
        idx = ctx.emit(relax_op(ctx.emit(R.flip(x, axis)), axis, keepdims))
        last = ctx.expr(np.asarray(size - 1, _dtype(idx)))
        return ctx.emit(R.subtract(last, idx))

    return convert


def _cumulative(relax_op: Callable) -> Callable:
    """CumSum / CumProd: a running sum/product along `axis`, optionally exclusive, reversed."""

    def along(ctx, x, axis, attrs):
        if attrs.get("reverse", 0):
            x = ctx.emit(R.flip(x, axis))
        y = ctx.emit(relax_op(x, axis, exclusive=bool(attrs.get("exclusive", 0))))
        return ctx.emit(R.flip(y, axis)) if attrs.get("reverse", 0) else y

    def convert(ctx, inputs, attrs):
        x = ctx.expr(inputs[0])
        ndim = _ndim(x)
        if ctx.known_or_none(inputs[1]) is not None or ndim == 1:  # rank 1: the axis is 0
            axis = 0 if ndim == 1 else _axis(int(_scalar(ctx, inputs[1], "axis")), ndim)
            return along(ctx, x, axis, attrs)
        # the axis is known only at run time: every axis is computed and the asked one picked;
        # the VM refuses an axis out of range
        hits, ok = axis_hits(ctx, ctx.emit(R.reshape(ctx.expr(inputs[1]), (1,))), ndim)
        y = ctx.emit(R.zeros(shape_of(x), _dtype(x)))
        for a in range(ndim):
            hit = ctx.emit(R.reshape(ctx.emit(R.strided_slice(hits, [1], [a], [a + 1])), ()))
            y = ctx.emit(R.where(hit, along(ctx, x, a, attrs), y))
        return checked_reshape(ctx, y, poisoned(ctx, dims_tensor(ctx, y), ok), "axis", shape_of(x))

    return convert


def _einsum(ctx, inputs, attrs):
    return ctx.emit(
        R.einsum([ctx.expr(v) for v in inputs], _required(attrs, "equation").replace(" ", ""))
    )
