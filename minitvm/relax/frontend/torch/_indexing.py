"""torch's sorting and scatter ops onto relax.op.sort / argsort / topk / scatter_elements /
scatter_nd / one_hot: sort, argsort, topk, scatter (src and value), scatter_add,
scatter_reduce, one_hot, and index_put with integer indices. Sorting is stable whatever
`stable=` says (torch allows any order when it is False).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....error import OpAttributeInvalid, OpAttributeUnImplemented, OpNotImplemented
from ... import op as R
from ...expr import Expr, TupleGetItem, const
from ._base import _axis, _dtype, _ndim, shape_of

# scatter_reduce's names -> relax.scatter_elements reductions, and the value a position
# starts from when include_self=False (its own value is left out of the reduction)
_REDUCE = {"sum": "add", "prod": "mul", "amax": "max", "amin": "min", "mean": "mean"}
_START = {"sum": 0, "prod": 1, "mean": 0, "amax": float("-inf"), "amin": float("inf")}


def _start(reduce: str, dtype: str) -> Any:
    """The identity of `reduce` in `dtype` (integers have no infinities: their extremes)."""
    if reduce in ("amax", "amin") and not dtype.startswith(("float", "bfloat")):
        info = np.iinfo(dtype) if dtype != "bool" else None
        if info is None:
            return reduce == "amin"
        return int(info.min if reduce == "amax" else info.max)
    return _START[reduce]


def _dim(input: Expr, dim: Any) -> int:
    return _axis(dim, max(_ndim(input), 1))


def _sort(t, input, dim=-1, descending=False, *, stable=None):
    """torch.sort -> (values, int64 indices)."""
    if stable is not None and not isinstance(stable, bool):  # sort.stable(input, *, stable)
        raise OpAttributeInvalid(f"sort: stable must be a bool, got {stable!r}")
    axis = _dim(input, dim)
    order = t.emit(R.argsort(input, axis, bool(descending), "int64"))
    values = t.emit(R.sort(input, axis, bool(descending)))
    return (values, order)


def _argsort(t, input, dim=-1, descending=False, *, stable=None):
    return t.emit(R.argsort(input, _dim(input, dim), bool(descending), "int64"))


def _topk(t, input, k, dim=-1, largest=True, sorted=True):
    """torch.topk -> (values, int64 indices), sorted (also when sorted=False: any order is
    allowed then)."""
    axis = _dim(input, dim)
    if not isinstance(k, int):
        raise OpAttributeUnImplemented(f"topk: k must be a Python int, got {k!r}")
    length = shape_of(input)[axis] if _ndim(input) else 1
    if k < 0 or (isinstance(length, int) and k > length):
        raise OpAttributeInvalid(f"topk: k={k} is outside [0, {length}] (dim {dim})")
    if k == 0:  # relax.topk reads k < 1 as the whole axis
        empty = t.emit(R.strided_slice(input, [axis], [0], [0]))
        return (empty, t.emit(R.astype(empty, "int64")))
    both = t.emit(R.topk(input, k, axis, "both", bool(largest), "int64"))
    return (t.emit(TupleGetItem(both, 0)), t.emit(TupleGetItem(both, 1)))


def _updates(t, input: Expr, index: Expr, src: Any) -> Expr:
    """The values scattered: src cut to index's shape (torch reads only that corner of it),
    or a Python number broadcast to it, in input's dtype."""
    shape = shape_of(index)
    if not isinstance(src, Expr):
        return t.emit(R.full(shape, const(src, _dtype(input)), _dtype(input)))
    if _dtype(src) != _dtype(input):
        src = t.emit(R.astype(src, _dtype(input)))
    src_shape = shape_of(src)
    if tuple(src_shape) != tuple(shape):
        axes = list(range(len(shape)))
        src = t.emit(R.strided_slice(src, axes, [0] * len(axes), list(shape)))
    return src


def _check_index(index: Expr, input: Expr) -> None:
    if _dtype(index) not in ("int64", "int32"):
        raise OpAttributeInvalid(f"scatter: index must be an integer tensor, got {_dtype(index)}")
    if _ndim(index) != _ndim(input):
        raise OpAttributeInvalid(
            f"scatter: index has rank {_ndim(index)}, input has rank {_ndim(input)}; they "
            "must be equal"
        )


def _scatter(t, input, dim, index, src=None, *, value=None, reduce=None):
    """torch.scatter (src tensor or value), with the old reduce="add"/"multiply"."""
    _check_index(index, input)
    src = value if src is None else src
    reduction = {None: "update", "add": "add", "multiply": "mul"}.get(reduce)
    if reduction is None:
        raise OpAttributeInvalid(f"scatter: reduce={reduce!r} is not 'add' or 'multiply'")
    updates = _updates(t, input, index, src)
    return t.emit(R.scatter_elements(input, index, updates, _dim(input, dim), reduction))


def _scatter_add(t, input, dim, index, src):
    _check_index(index, input)
    updates = _updates(t, input, index, src)
    return t.emit(R.scatter_elements(input, index, updates, _dim(input, dim), "add"))


def _scatter_reduce(t, input, dim, index, src, reduce, *, include_self=True):
    """torch.scatter_reduce: sum/prod/amax/amin/mean, with or without input's own value."""
    _check_index(index, input)
    if reduce not in _REDUCE:
        raise OpAttributeInvalid(f"scatter_reduce: reduce={reduce!r} is not one of {list(_REDUCE)}")
    axis = _dim(input, dim)
    updates = _updates(t, input, index, src)
    dtype = _dtype(input)
    if include_self:
        return t.emit(R.scatter_elements(input, index, updates, axis, _REDUCE[reduce]))
    # positions that receive an update start from the reduction's identity instead of input
    ones = t.emit(R.ones(shape_of(index), "int64"))
    hits = t.emit(
        R.scatter_elements(t.emit(R.zeros(shape_of(input), "int64")), index, ones, axis, "add")
    )
    hit = t.emit(R.greater(hits, const(0, "int64")))
    start = t.emit(R.where(hit, const(_start(reduce, dtype), dtype), input))
    if reduce != "mean":
        return t.emit(R.scatter_elements(start, index, updates, axis, _REDUCE[reduce]))
    total = t.emit(R.scatter_elements(start, index, updates, axis, "add"))
    count = t.emit(R.astype(t.emit(R.maximum(hits, const(1, "int64"))), dtype))
    is_float = dtype.startswith(("float", "bfloat"))
    mean = t.emit(R.divide(total, count) if is_float else R.floor_divide(total, count))
    return t.emit(R.where(hit, mean, input))


def _one_hot(t, input, num_classes=-1):
    """F.one_hot: int64 result with num_classes a Python int (-1, "the largest index + 1",
    depends on the data and is refused)."""
    if not isinstance(num_classes, int) or num_classes < 0:
        raise OpAttributeUnImplemented(
            "one_hot: num_classes=-1 (the largest index + 1) makes the output shape depend on "
            "the data; pass num_classes explicitly"
        )
    return t.emit(R.one_hot(input, 1, 0, num_classes, -1))


def _index_put(t, input, indices, values, accumulate=False):
    """x[i0, i1, ..] = values (or += with accumulate) for integer index tensors of one shape
    on the leading dims: a scatter_nd of the stacked indices. Other forms (a full slice, a
    boolean mask, index tensors that broadcast) are refused as not implemented."""
    indices = list(indices)
    form = None
    if not indices or any(i is None for i in indices):
        form = "a full slice (None) among the indices"
    elif any(not _dtype(i).startswith(("int", "uint")) for i in indices):
        form = "a boolean mask"
    elif any(tuple(shape_of(i)) != tuple(shape_of(indices[0])) for i in indices[1:]):
        form = "index tensors of different shapes"
    if form is not None:
        raise OpNotImplemented(
            f"aten.index_put with {form} is not converted (integer index tensors of one shape "
            "on the leading dims are); supply it through custom_convert_map"
        )
    shape = tuple(shape_of(indices[0]))
    if len(indices) > _ndim(input):
        raise OpAttributeInvalid(
            f"index_put: {len(indices)} index tensors for a tensor of rank {_ndim(input)}"
        )
    columns = [t.emit(R.expand_dims(t.emit(R.astype(i, "int64")), -1)) for i in indices]
    stacked = t.emit(R.concat(columns, -1))
    target = shape + tuple(shape_of(input)[len(indices) :])
    if not isinstance(values, Expr):
        values = const(values, _dtype(input))
    elif _dtype(values) != _dtype(input):
        values = t.emit(R.astype(values, _dtype(input)))
    if tuple(shape_of(values)) != target:
        values = t.emit(R.broadcast_to(values, target))
    return t.emit(R.scatter_nd(input, stacked, values, "add" if accumulate else "update"))


def _masked_scatter(t, input, mask, source):
    """input with its masked positions filled, in order, from source's leading elements.

    TVM's importer form: the running count of the flattened mask, less one, is each masked
    position's index into the flattened source; a take gathers them and a where keeps input
    elsewhere (there the index is -1 or repeats, and take's default clip mode keeps it in
    range)."""
    shape, source_shape = shape_of(input), shape_of(source)
    n = _numel(shape, "input")
    if _numel(source_shape, "source") < n:
        raise OpAttributeUnImplemented(
            f"masked_scatter: source {tuple(source_shape)} has fewer elements than input "
            f"{tuple(shape)}; torch then needs the mask's count of True at run time (it fails "
            "when source runs out): give source at least as many elements as input"
        )
    if _dtype(mask) != "bool":
        raise OpAttributeInvalid(
            f"masked_scatter: mask dtype is {_dtype(mask)}; torch takes a bool mask (x != 0)"
        )
    if _dtype(source) != _dtype(input):
        raise OpAttributeInvalid(
            f"masked_scatter: source dtype {_dtype(source)} differs from input dtype "
            f"{_dtype(input)} (torch refuses it too); cast source first"
        )
    if tuple(shape_of(mask)) != tuple(shape):
        mask = t.emit(R.broadcast_to(mask, tuple(shape)))
    flat_mask = mask if len(shape) == 1 else t.emit(R.reshape(mask, (n,)))
    count = t.emit(R.cumsum(flat_mask, axis=0, dtype="int32", exclusive=False))
    index = t.emit(R.subtract(count, const(1, "int32")))
    if len(source_shape) != 1:
        source = t.emit(R.reshape(source, (_numel(source_shape, "source"),)))
    picked = t.emit(R.take(source, index, axis=0))
    if len(shape) != 1:
        picked = t.emit(R.reshape(picked, tuple(shape)))
    return t.emit(R.where(mask, picked, input))


def _numel(shape, what: str) -> int:
    """The static element count of `shape`; int32 positions need it under 2**31."""
    if not all(isinstance(d, int) for d in shape):
        raise OpAttributeUnImplemented(
            f"masked_scatter: {what} shape {tuple(shape)} has symbolic dims; export with "
            "static shapes"
        )
    n = int(np.prod(shape, dtype=np.int64))
    if n >= 2**31:
        raise OpAttributeUnImplemented(
            f"masked_scatter: {what} has {n} elements; int32 positions need under 2**31"
        )
    return n


INDEXING = {
    "masked_scatter": _masked_scatter,
    "index_put": _index_put,
    "sort": _sort,
    "argsort": _argsort,
    "topk": _topk,
    "scatter": _scatter,
    "scatter_add": _scatter_add,
    "scatter_reduce": _scatter_reduce,
    "one_hot": _one_hot,
}

__all__ = ["INDEXING"]
