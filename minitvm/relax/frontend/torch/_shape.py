"""Converters of torch ops that move data: views, permutes, concat/split, indexing."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ....error import OpAttributeUnImplemented
from ....tir.expr import PrimExpr
from ... import op as R
from ...expr import Expr, Tuple, TupleGetItem, const
from ...struct_info import TupleStructInfo
from ._base import (
    _axis,
    _axis_as_given,
    _dims,
    _dtype,
    _is_torch_dtype,
    _ndim,
    _need,
    _pair,
    shape_of,
)
from ._te import broadcast_new_dims, infer_minus_one, symbolic_slice

_INT64_MAX = 9223372036854775807  # torch.export's "to the end" for slice bounds


def _reshape(t, x, *shape):
    dims = _dims(shape)
    if any(isinstance(d, PrimExpr) for d in (*dims, *shape_of(x))):
        dims = infer_minus_one(shape_of(x), dims)
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


def _to_copy(t, x, *args, **kwargs):
    """aten._to_copy: an astype even to the same dtype (a copy), as TVM's importer writes it."""
    dtype = kwargs.get("dtype") or next((a for a in args if _is_torch_dtype(a)), None)
    if dtype is None:
        return x
    return t.emit(R.astype(x, t.dtype(dtype)))


def _cast(dtype: str) -> Callable:
    def convert(t, x, *args, **kwargs):
        # an astype even to x's own dtype, as TVM's importer writes x.float()
        return t.emit(R.astype(x, dtype))

    return convert


def _type(t, x, dtype=None, non_blocking=False, **kwargs):
    """Tensor.type(dtype) / astype(dtype): an astype, as TVM's importer writes it; type() with
    no dtype returns a string in torch, which no graph can hold."""
    if dtype is None or not _is_torch_dtype(dtype):
        raise OpAttributeUnImplemented(
            f"Tensor.type({dtype!r}): only a torch dtype argument is supported; write "
            "x.to(torch.float32) for a cast"
        )
    return t.emit(R.astype(x, t.dtype(dtype)))


def _type_as(t, x, other):
    return x if _dtype(x) == _dtype(other) else t.emit(R.astype(x, _dtype(other)))


def _unsqueeze(t, x, dim):
    return t.emit(R.expand_dims(x, _axis_as_given(dim, _ndim(x) + 1)))


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
    if not all(isinstance(d, int) for d in shape):  # which symbolic dims are 1 is unknown
        return t.emit(R.reshape(x, tuple(d for i, d in enumerate(shape) if i not in dims)))
    if not dims:
        return x
    if dim is None:
        return t.emit(R.squeeze(x, None))
    given = [int(d) for d in (dim if isinstance(dim, list | tuple) else [dim])]
    return t.emit(R.squeeze(x, [d for d in given if _axis(d, len(shape)) in dims]))


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
    if new_symbolic:  # dims the kernel cannot read off its input: a TE compute takes them
        return broadcast_new_dims(t, x, target)
    return t.emit(_need("broadcast_to")(x, target))


def _copy(t, input, src, non_blocking=False):
    """aten.copy, the functional `input.copy_(src)`: src in input's dtype and shape."""
    dtype = _dtype(input)
    if not isinstance(src, Expr):
        src = t.const(src, dtype)
    elif _dtype(src) != dtype:
        src = t.emit(R.astype(src, dtype))
    return _expand(t, src, shape_of(input))


def _expand_as(t, x, other):
    return _expand(t, x, shape_of(other))


def _cat(t, tensors, dim=0):
    """torch.cat; as in torch, 1-d empty tensors (an empty cache) are skipped."""
    tensors = [x for x in tensors if shape_of(x) != (0,)] or list(tensors)[:1]
    if len(tensors) == 1:
        return tensors[0]
    return t.emit(R.concat(tensors, axis=_axis(dim, _ndim(tensors[0]))))


def _stack(t, tensors, dim=0):
    tensors = list(tensors)
    ndim = _ndim(tensors[0])
    axis = _axis(dim, ndim + 1)
    if axis == ndim:  # a new last dim: concat has no such axis to join along
        return t.emit(R.concat([t.emit(R.expand_dims(x, axis)) for x in tensors], axis=axis))
    # TVM's importer form: join along dim, then split that dim into (count, size)
    shape = shape_of(tensors[0])
    joined = t.emit(R.concat(tensors, axis=axis))
    return t.emit(R.reshape(joined, (*shape[:axis], len(tensors), *shape[axis:])))


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
    if size > 0 and length % size == 0 and length // size > 1:
        # equal pieces: a section count, as TVM's importer writes it (only then: relax's
        # sections round up, which is not torch's split_size when it does not divide)
        return t.emit(R.split(tensor, length // size, axis=_axis_as_given(dim, _ndim(tensor))))
    return _split_sizes(
        t, tensor, [size] * (length // size) + [length % size] * bool(length % size), dim
    )


def _chunk(t, input, chunks, dim=0):
    length = shape_of(input)[_axis(dim, _ndim(input))]
    if not isinstance(length, int):
        raise OpAttributeUnImplemented("chunk along a symbolic dim is not supported")
    return _split(t, input, -(-length // int(chunks)), dim)


def _unbind(t, input, dim=0):
    """TVM's importer form: split at 1..n (the last piece is empty), squeeze each piece, and
    bind the pieces as one tuple."""
    axis = _axis(dim, _ndim(input))
    length = shape_of(input)[axis]
    if not isinstance(length, int):
        raise OpAttributeUnImplemented("unbind along a symbolic dim is not supported")
    parts = t.emit(R.split(input, list(range(1, length + 1)), axis=int(dim)))
    pieces = [t.emit(R.squeeze(_item(t, parts, i), [int(dim)])) for i in range(length)]
    return t.emit(Tuple(tuple(pieces)))


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
    if any(isinstance(v, PrimExpr) for v in (start, end)) and isinstance(length, int):
        return symbolic_slice(t, input, axis, start, end, step)
    return t.emit(R.strided_slice(input, [axis], [start], [end], [step]))


def _select(t, input, dim, index):
    """aten.select: a take of one int64 index along the axis, as TVM's importer writes it."""
    if isinstance(index, PrimExpr):
        return _select_slice(t, input, dim, index)
    axis = _axis(dim, _ndim(input))
    length = shape_of(input)[axis]
    index = index + length if index < 0 and isinstance(length, int) else index
    if index < 0:
        return _select_slice(t, input, dim, index)
    return t.emit(R.take(input, const(index, "int64"), axis=axis))


def _select_slice(t, input, dim, index):
    """x[index] along `dim` as a slice of length one reshaped away (indexing's form)."""
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
            x = _select_slice(t, x, axis, i)
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
    return t.emit(R.take(input, index, axis=axis, mode="wrap"))  # x[-1] is the last row


def _index_select(t, input, dim, index):
    return t.emit(R.take(input, index, axis=_axis(dim, _ndim(input))))


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


def _triangle(name: str) -> Callable:
    """tril/triu: relax.tril / relax.triu (any dims, symbolic ones too), as TVM's importer."""

    def convert(t, input, diagonal=0):
        if isinstance(diagonal, Expr):
            raise OpAttributeUnImplemented(f"{name} with a tensor diagonal; pass an int")
        return t.emit(_need(name)(input, diagonal))

    return convert


# ----------------------------------------------------------------------------- more tensor ops
