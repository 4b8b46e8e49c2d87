"""Data movement: reshape, permute_dims, flatten, concat, split, strided_slice, take, astype,
squeeze, broadcast_to, tile, repeat, flip."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te, tir, topi
from ...error import DTypeError, ScheduleError, ShapeError
from ...ir.dtype import DataType
from ...tir import op as tir_op
from ...tir.expr import FloorDiv, FloorMod, make_const
from ...tir.functor import post_order_visit
from ...tir.index_map import IndexMap
from ...topi import reference as ref
from ...topi.layout import index_dims
from ...topi.transform import infer_reshape, slice_bounds, split_sections
from ...topi.utils import (
    const_int,
    fmt_dim,
    fmt_shape,
    normalize_axes,
    normalize_axis,
    prod,
    prove_equal,
)
from ..expr import Call, Expr, PrimValue, ShapeExpr, Tuple
from ..struct_info import PrimStructInfo, StructInfo, TensorStructInfo, TupleStructInfo
from . import _infer as I
from ._table import OpPattern, make_call, register_op

# ----------------------------------------------------------------------------- reshape


def _infer_reshape(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    new = I.shape_arg(call, 1, "shape")
    if new is None:
        return TensorStructInfo(None, x.dtype, call.args[1].struct_info.ndim)
    if x.shape is not None:
        total, new_total = I.dim(prod(x.shape)), I.dim(prod(new))
        if I.provably_differ(total, new_total):  # TVM's rule: symbolic counts may agree later
            raise ShapeError(
                f"relax.reshape: cannot reshape x of shape {fmt_shape(x.shape)} ({fmt_dim(total)} "
                f"elements) into {fmt_shape(new)} ({fmt_dim(new_total)} elements)."
            )
    return TensorStructInfo(new, x.dtype)


_reshape = register_op(
    "relax.reshape",
    _infer_reshape,
    topi.reshape,
    lambda x, shape: np.reshape(x, tuple(int(s) for s in shape)),
    OpPattern.INJECTIVE,
)


def reshape(x: Expr, shape: Any) -> Call:
    """Same elements, new shape; one dim may be -1 (resolved here from x's known shape)."""
    if not isinstance(shape, Expr):
        dims = list(shape) if isinstance(shape, tuple | list) else [shape]
        if any(const_int(d) == -1 for d in dims):
            sinfo = x.struct_info
            if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None:
                raise ShapeError("relax.reshape: -1 in the new shape needs x to have a known shape")
            dims = infer_reshape(sinfo.shape, dims, "relax.reshape")
        shape = ShapeExpr(tuple(dims))
    return make_call(_reshape, (x, shape))


# ----------------------------------------------------------------------------- permute_dims / flatten


def _infer_permute(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    axes = call.attrs["axes"]
    if x.ndim == -1:
        return x
    if axes is None:
        axes = tuple(reversed(range(x.ndim)))
    norm = [normalize_axis(a, x.ndim, "relax.permute_dims") for a in axes]
    if sorted(norm) != list(range(x.ndim)):
        raise ShapeError(
            f"relax.permute_dims: axes {list(axes)} are not a permutation of the {x.ndim} dims of x "
            f"{fmt_shape(x.shape)}"
        )
    if x.shape is None:
        return x
    return TensorStructInfo(tuple(x.shape[a] for a in norm), x.dtype)


_permute = register_op(
    "relax.permute_dims",
    _infer_permute,
    topi.transpose,
    np.transpose,
    OpPattern.INJECTIVE,
)


def permute_dims(x: Expr, axes: Any = None) -> Call:
    """Permute dims (reverse them when axes is None): `relax.op.permute_dims(w, [1, 0])`."""
    return make_call(
        _permute, (x,), {"axes": None if axes is None else tuple(int(a) for a in axes)}
    )


def _infer_flatten(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    if x.shape is None:
        return TensorStructInfo(None, x.dtype, 1)
    return TensorStructInfo((I.dim(prod(x.shape)),), x.dtype)


_flatten = register_op(
    "relax.flatten", _infer_flatten, topi.flatten, lambda x: x.reshape(-1), OpPattern.INJECTIVE
)


def flatten(x: Expr) -> Call:
    """All elements as a 1-D tensor."""
    return make_call(_flatten, (x,))


# ----------------------------------------------------------------------------- concat / split


def _infer_concat(call: Call) -> StructInfo:
    parts = I.tuple_of_tensors(call, 0, "tensors")
    if not parts:
        raise ShapeError("relax.concat: needs at least one tensor")
    dtype = I.same_dtype(call, [(f"tensors[{n}]", p) for n, p in enumerate(parts)])
    ndims = {p.ndim for p in parts if p.ndim != -1}
    if len(ndims) > 1:
        raise ShapeError(
            f"relax.concat: tensors have different ranks {sorted(ndims)}: {[I.fmt(p) for p in parts]}"
        )
    if not ndims:
        return TensorStructInfo(None, dtype, -1)
    ndim = ndims.pop()
    if call.attrs["axis"] is None and ndim != 1:  # TVM: no axis means 1-d tensors, joined
        raise ShapeError(
            f"relax.concat: axis=None joins 1-d tensors, got rank {ndim}: "
            f"{[I.fmt(p) for p in parts]}; flatten them first or give an axis"
        )
    axis = normalize_axis(call.attrs["axis"] or 0, ndim, "relax.concat")
    if any(p.shape is None for p in parts):
        return TensorStructInfo(None, dtype, ndim)
    first = parts[0]
    for n, p in enumerate(parts[1:], start=1):
        for k in range(ndim):
            if k != axis and not prove_equal(first.shape[k], p.shape[k]):
                raise ShapeError(
                    f"relax.concat: tensors[0] has shape {fmt_shape(first.shape)}, tensors[{n}] has shape "
                    f"{fmt_shape(p.shape)}: dim {k} ({fmt_dim(first.shape[k])} vs {fmt_dim(p.shape[k])}) "
                    f"must agree (only the concat axis {axis} may differ)."
                )
    total = I.dim(sum((p.shape[axis] for p in parts[1:]), parts[0].shape[axis]))
    return TensorStructInfo(
        tuple(total if k == axis else first.shape[k] for k in range(ndim)), dtype
    )


_concat = register_op(
    "relax.concat",
    _infer_concat,
    lambda tensors, axis: topi.concatenate(tensors, 0 if axis is None else axis),
    lambda tensors, axis: np.concatenate(tensors, axis),  # None: 1-d inputs, as flattened
    OpPattern.INJECTIVE,
)


def concat(tensors: Any, axis: int | None = 0) -> Call:
    """Join tensors along `axis`: `relax.op.concat([a, b], axis=1)`; axis=None joins 1-d ones."""
    tup = tensors if isinstance(tensors, Expr) else Tuple(tuple(tensors))
    return make_call(_concat, (tup,), {"axis": None if axis is None else int(axis)})


def _infer_split(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    ios = call.attrs["indices_or_sections"]
    count = ios if isinstance(ios, int) else len(ios) + 1
    if x.ndim != -1:  # the axis must exist even when the dims are unknown
        normalize_axis(call.attrs["axis"], x.ndim, "relax.split")
    if x.shape is None:
        return TupleStructInfo(tuple(TensorStructInfo(None, x.dtype, x.ndim) for _ in range(count)))
    axis = normalize_axis(call.attrs["axis"], x.ndim, "relax.split")
    try:
        pieces = split_sections(x.shape[axis], ios, "relax.split")
    except ShapeError as err:
        raise ShapeError(f"{err} (x has shape {fmt_shape(x.shape)}, axis {axis})") from err
    return TupleStructInfo(
        tuple(
            TensorStructInfo(
                tuple(I.dim(ext) if k == axis else d for k, d in enumerate(x.shape)), x.dtype
            )
            for _, ext in pieces
        )
    )


_split = register_op(
    "relax.split",
    _infer_split,
    topi.split,
    ref.split,
    OpPattern.INJECTIVE,
)


def split(x: Expr, indices_or_sections: Any, axis: int = 0) -> Call:
    """numpy.split into a tuple: an int gives equal sections, a list gives split points."""
    ios = (
        int(indices_or_sections)
        if isinstance(indices_or_sections, int)
        else tuple(int(i) for i in indices_or_sections)
    )
    return make_call(_split, (x,), {"indices_or_sections": ios, "axis": int(axis)})


# ----------------------------------------------------------------------------- slicing / gather


def _infer_strided_slice(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    a = call.attrs
    if x.ndim != -1:
        axes = [normalize_axis(ax, x.ndim, "relax.strided_slice") for ax in a["axes"]]
        if len(set(axes)) != len(axes):
            raise ShapeError(
                f"relax.strided_slice: axes {list(a['axes'])} name the same axis twice; give "
                "each axis once"
            )
    if x.shape is None:
        return TensorStructInfo(None, x.dtype, x.ndim)
    shape = list(x.shape)
    strides = a["strides"] or (1,) * len(a["axes"])
    for ax, b, e, s in zip(a["axes"], a["begin"], a["end"], strides):
        axis = normalize_axis(ax, x.ndim, "relax.strided_slice")
        if s == 0:
            raise ShapeError(
                f"relax.strided_slice: stride 0 on axis {axis}; strides must be non-zero"
            )
        shape[axis] = I.dim(slice_bounds(x.shape[axis], b, e, s)[1])
    return TensorStructInfo(tuple(shape), x.dtype)


_strided_slice = register_op(
    "relax.strided_slice",
    _infer_strided_slice,
    lambda x, axes, begin, end, strides, assume_inbound: topi.strided_slice(
        x, begin, end, strides, axes
    ),
    lambda x, axes, begin, end, strides, assume_inbound: ref.strided_slice(
        x, axes, begin, end, strides
    ),
    OpPattern.INJECTIVE,
)


_NAMES = ("axes", "begin", "end")


def _slice_ints(seq: Any, name: str) -> tuple[int, ...]:
    """Python ints from ints, or from the tuples of constant PrimValues TVM prints
    (`(R.prim_value(0),)`); a symbolic bound is refused (dynamic_strided_slice takes those)."""
    items = seq.fields if isinstance(seq, Tuple) else seq
    out = []
    for v in items:
        value = v.value if isinstance(v, PrimValue) else v
        c = const_int(value) if not isinstance(value, int) else value
        if c is None:
            raise ShapeError(
                f"relax.strided_slice: {name} {v} is not a constant; give ints, or use "
                "relax.op.dynamic_strided_slice for bounds known only at run time"
            )
        out.append(int(c))
    return tuple(out)


def strided_slice(
    x: Expr, axes: Any, begin: Any, end: Any, strides: Any = None, assume_inbound: bool = False
) -> Call:
    """x[begin:end:stride] on each of `axes` (numpy clamping rules).

    `assume_inbound` is TVM's promise that the bounds lie inside x; the bounds are clamped
    either way, which gives the same slice when the promise holds."""
    axes, begin, end = (_slice_ints(seq, name) for seq, name in zip((axes, begin, end), _NAMES))
    strides = None if strides is None else _slice_ints(strides, "strides")
    if not len(axes) == len(begin) == len(end) == (len(strides) if strides else len(axes)):
        raise ShapeError(
            f"relax.strided_slice: axes {list(axes)}, begin {list(begin)}, end {list(end)} and strides "
            f"{strides} must have the same length"
        )
    return make_call(
        _strided_slice,
        (x,),
        {
            "axes": axes,
            "begin": begin,
            "end": end,
            "strides": strides,
            "assume_inbound": bool(assume_inbound),
        },
    )


def _infer_take(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    idx = call.args[1].struct_info
    if isinstance(idx, PrimStructInfo):  # a scalar index (TVM allows R.Prim): a 0-d index
        idx = TensorStructInfo((), idx.dtype)
    idx = idx if isinstance(idx, TensorStructInfo) else I.tensor_arg(call, 1, "indices")
    if idx.dtype is not None and not idx.dtype.is_integer:
        raise DTypeError(f"relax.take: indices have dtype {idx.dtype}; they must be integers")
    axis = call.attrs["axis"]
    if x.shape is None or idx.shape is None:  # the rank may still be known
        rank = idx.ndim if axis is None else x.ndim + idx.ndim - 1
        return TensorStructInfo(None, x.dtype, -1 if -1 in (x.ndim, idx.ndim) else rank)
    if axis is None:
        return TensorStructInfo(tuple(idx.shape), x.dtype)
    axis = normalize_axis(axis, x.ndim, "relax.take")
    return TensorStructInfo(
        tuple(x.shape[:axis]) + tuple(idx.shape) + tuple(x.shape[axis + 1 :]), x.dtype
    )


def _te_take(x: Any, indices: Any, **attrs: Any) -> Any:
    """topi.take, with a scalar index (an R.Prim argument) held in a 0-d tensor first."""
    if not isinstance(indices, te.Tensor):
        value = indices
        indices = te.compute((), lambda: value, name="index")
    return topi.take(x, indices, **attrs)


_take = register_op(
    "relax.take",
    _infer_take,
    _te_take,
    ref.take,
    OpPattern.INJECTIVE,
)


def take(x: Expr, indices: Expr, axis: int | None = None, mode: str = "clip") -> Call:
    """Gather elements of x at `indices` along `axis` (flattened x when None); mode "fast"
    makes an index outside the axis a run-time error of the compiled code."""
    if mode not in ("clip", "wrap", "fast"):
        raise ShapeError(f"relax.take: mode {mode!r} is not one of 'clip', 'wrap', 'fast'")
    return make_call(
        _take, (x, indices), {"axis": None if axis is None else int(axis), "mode": mode}
    )


# ----------------------------------------------------------------------------- dtype / rank


def _infer_astype(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    return TensorStructInfo(x.shape, call.attrs["dtype"], x.ndim if x.shape is None else -1)


_astype = register_op(
    "relax.astype",
    _infer_astype,
    topi.cast,
    lambda x, dtype: x.astype(dtype),
    OpPattern.ELEMWISE,
)


def astype(x: Expr, dtype: str) -> Call:
    """Elementwise conversion to `dtype`."""
    return make_call(_astype, (x,), {"dtype": str(DataType(dtype))})


def _expanded_shape(shape: Any, axis: Any) -> tuple:
    """`shape` with a 1 at each of `axis` (an int or several: positions in the result)."""
    out_ndim = len(shape) + (1 if isinstance(axis, int) else len(axis))
    axes = normalize_axes(axis, out_ndim, "relax.expand_dims")
    rest = iter(shape)
    return tuple(1 if k in axes else next(rest) for k in range(out_ndim))


def _infer_expand_dims(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    axis = call.attrs["axis"]
    added = 1 if isinstance(axis, int) else len(axis)
    if x.shape is None:
        return TensorStructInfo(None, x.dtype, -1 if x.ndim == -1 else x.ndim + added)
    return TensorStructInfo(_expanded_shape(tuple(x.shape), axis), x.dtype)


def _te_expand_dims(x, axis):
    if isinstance(axis, int):
        return topi.expand_dims(x, axis)
    return topi.reshape(x, _expanded_shape(tuple(x.shape), axis))


def _np_expand_dims(x, axis):
    return np.reshape(x, _expanded_shape(x.shape, axis))


_expand_dims = register_op(
    "relax.expand_dims",
    _infer_expand_dims,
    _te_expand_dims,
    _np_expand_dims,
    OpPattern.INJECTIVE,
)


def expand_dims(x: Expr, axis: Any) -> Call:
    """Insert size-1 dims: `axis` is an int, or a list of positions in the result (TVM's
    `expand_dims(x, [0, 2])`: the result has a 1 at dims 0 and 2)."""
    if isinstance(axis, list | tuple):
        if len(axis) == 1:
            (axis,) = axis
        else:
            return make_call(_expand_dims, (x,), {"axis": tuple(int(a) for a in axis)})
    return make_call(_expand_dims, (x,), {"axis": int(axis)})


# ----------------------------------------------------------------------------- layout_transform


def _index_map(text: str) -> IndexMap:
    return IndexMap.from_text(text, index_dtype="int64")


def _unfilled_dims(imap: IndexMap, shape: tuple) -> list[str]:
    """'dim k (d) by f' for each initial index that the map splits by a factor not dividing it."""
    extents = dict(zip(imap.initial_indices, shape))
    found: list[str] = []

    def visit(e: Any) -> None:
        if isinstance(e, FloorDiv | FloorMod) and isinstance(e.a, tir.Var) and e.a in extents:
            d, f = const_int(extents[e.a]), const_int(e.b)
            k = imap.initial_indices.index(e.a)
            note = f"dim {k} ({fmt_dim(extents[e.a])}) by {fmt_dim(e.b)}"
            if (d is None or f is None or d % f) and note not in found:
                found.append(note)

    for e in imap.final_indices:
        post_order_visit(e, visit)
    return found


def _layout_shape(call: Call, x: TensorStructInfo, imap: IndexMap) -> tuple:
    """The image shape of x under the map; a map that pads needs `pad_value`."""
    shape = tuple(x.shape)
    try:
        out = tuple(I.dim(d) for d in imap.map_shape(shape))
    except ScheduleError as err:
        raise ShapeError(f"relax.layout_transform of x {fmt_shape(shape)}: {err}") from err
    if prove_equal(I.dim(prod(shape)), I.dim(prod(out))):
        return out
    unfilled = ", ".join(_unfilled_dims(imap, shape)) or "some dims"
    if any(const_int(d) is None for d in shape + out):
        raise ShapeError(
            f"relax.layout_transform: cannot prove that {imap} fills its image {fmt_shape(out)} "
            f"for x of shape {fmt_shape(shape)} (it splits {unfilled}); split only dims whose "
            "extent the block provably divides"
        )
    if call.attrs["pad_value"] is None:
        raise ShapeError(
            f"relax.layout_transform: {imap} pads x of shape {fmt_shape(shape)} to "
            f"{fmt_shape(out)}: it splits {unfilled}, which does not divide; pass pad_value "
            "(or pick a block size that divides the dim)"
        )
    return out


def _infer_layout_transform(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    imap = _index_map(call.attrs["index_map"])
    if x.ndim not in (-1, imap.ndim):
        raise ShapeError(
            f"relax.layout_transform: index_map {imap} takes {imap.ndim} indices, but x has shape "
            f"{fmt_shape(x.shape)} (rank {x.ndim}); write the map with one parameter per dim"
        )
    if x.shape is None:
        return TensorStructInfo(None, x.dtype, len(imap))
    return TensorStructInfo(_layout_shape(call, x, imap), x.dtype)


def _te_layout_transform(x, index_map, pad_value, axis_separators, input_axis_separators):
    imap = _index_map(index_map)
    shape = imap.map_shape(list(x.shape))
    inverse, pad = imap.non_surjective_inverse(list(x.shape))
    padded = not (isinstance(pad, tir.IntImm) and not pad.value)
    if any(isinstance(d, tir.IntImm) and d.value == 0 for d in x.shape):
        padded = False  # an empty tensor: no element to read, none to pad
    predicate = IndexMap(inverse.initial_indices, [pad])

    def body(*idx: Any):
        value = x[tuple(inverse.map_indices(list(idx)))]
        if not padded:
            return value
        # TVM leaves padding undefined without a pad_value; zeros are one such value
        fill = make_const(x.dtype, 0 if pad_value is None else pad_value)
        return tir_op.if_then_else(predicate.map_indices(list(idx))[0], fill, value)

    return te.compute(index_dims(shape, x.shape), body, name="T_layout_trans", tag="injective")


def _np_layout_transform(x, index_map, pad_value, axis_separators, input_axis_separators):
    return ref.index_map_transform(x, _index_map(index_map), pad_value)


_layout_transform = register_op(
    "relax.layout_transform",
    _infer_layout_transform,
    _te_layout_transform,
    _np_layout_transform,
    OpPattern.INJECTIVE,
)


def layout_transform(
    x: Expr,
    index_map: Any,
    pad_value: float | None = None,
    axis_separators: Any = None,
    input_axis_separators: Any = None,
) -> Call:
    """x rearranged so element `idx` lands at `index_map(idx)` (TVM's relax signature).

    `index_map` is an IndexMap, a lambda or a lambda's text; `topi.layout.layout_index_map("NCHW", "NCHW16c")`
    builds the one between two layout strings. The map is kept in the call's attrs as its
    lambda text (`call.attrs["index_map"]`; `IndexMap.from_text` reads it back), so equal
    maps give structurally equal calls."""
    for what, seps in (
        ("axis_separators", axis_separators),
        ("input_axis_separators", input_axis_separators),
    ):
        if seps:
            raise ShapeError(
                f"relax.layout_transform: {what}={list(seps)} is not supported (buffers are "
                "flat on the CPU targets); leave it None"
            )
    if isinstance(index_map, str):  # the attrs' own text form (as printed in TVMScript)
        index_map = _index_map(index_map)
    elif not isinstance(index_map, IndexMap):
        sinfo = x.struct_info if isinstance(x, Expr) else None
        ndim = sinfo.ndim if isinstance(sinfo, TensorStructInfo) and sinfo.ndim != -1 else None
        index_map = IndexMap.from_func(index_map, ndim, index_dtype="int64")
    attrs = {
        "index_map": index_map.as_lambda_text(),
        "pad_value": None if pad_value is None else float(pad_value),
        "axis_separators": None,
        "input_axis_separators": None,
    }
    return make_call(_layout_transform, (x,), attrs)


def layout_transform_index_map(call: Call) -> IndexMap:
    """The IndexMap of a `relax.layout_transform` call (read back from its attrs)."""
    return _index_map(call.attrs["index_map"])


# ----------------------------------------------------------------------------- squeeze / broadcast_to


def _squeeze_axes(call: Call, x: TensorStructInfo) -> list[int]:
    axis = call.attrs["axis"]
    if axis is None:
        return [n for n, d in enumerate(x.shape) if const_int(d) == 1]
    axes = [normalize_axis(a, x.ndim, "relax.squeeze") for a in axis]
    for a in axes:
        if const_int(x.shape[a]) != 1:
            symbolic = const_int(x.shape[a]) is None
            raise ShapeError(
                f"relax.squeeze: dim {a} of x {fmt_shape(x.shape)} is {fmt_dim(x.shape[a])}, "
                f"not 1; only size-1 dims can be squeezed"
                + (" (match_cast x to a shape with 1 there if it is)" if symbolic else "")
            )
    return axes


def _infer_squeeze(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    axis = call.attrs["axis"]
    if x.ndim == -1:
        return x
    if x.shape is None:
        if axis is None:
            return TensorStructInfo(None, x.dtype, -1)
        norm = [normalize_axis(a, x.ndim, "relax.squeeze") for a in axis]
        if len(set(norm)) != len(norm):
            raise ShapeError(
                f"relax.squeeze: axis {list(axis)} names the same axis twice; give each axis once"
            )
        return TensorStructInfo(None, x.dtype, x.ndim - len(norm))
    axes = _squeeze_axes(call, x)
    return TensorStructInfo(tuple(d for n, d in enumerate(x.shape) if n not in axes), x.dtype)


_squeeze = register_op(
    "relax.squeeze",
    _infer_squeeze,
    topi.squeeze,
    np.squeeze,
    OpPattern.INJECTIVE,
)


def squeeze(x: Expr, axis: Any = None) -> Call:
    """Drop size-1 dims: those in `axis`, or all static ones when None."""
    axes = (
        None
        if axis is None
        else ((int(axis),) if isinstance(axis, int) else tuple(int(a) for a in axis))
    )
    return make_call(_squeeze, (x,), {"axis": axes})


def _infer_broadcast_to(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "x")
    target = I.shape_arg(call, 1, "shape")
    if target is None:
        target_ndim = call.args[1].struct_info.ndim
        if -1 not in (x.ndim, target_ndim) and x.ndim > target_ndim:
            raise ShapeError(
                f"relax.broadcast_to: x has rank {x.ndim}, more than the target's {target_ndim}"
            )
        return TensorStructInfo(None, x.dtype, target_ndim)
    if x.shape is None:
        if x.ndim > len(target):
            raise ShapeError(
                f"relax.broadcast_to: x has rank {x.ndim}, more than the target shape "
                f"{fmt_shape(target)}"
            )
        return TensorStructInfo(target, x.dtype)
    offset = len(target) - len(x.shape)
    if offset < 0:
        raise ShapeError(
            f"relax.broadcast_to: x has shape {fmt_shape(x.shape)} (rank {len(x.shape)}), more "
            f"dims than the target shape {fmt_shape(target)}"
        )
    for n, d in enumerate(x.shape):
        if const_int(d) != 1 and not prove_equal(d, target[offset + n]):
            raise ShapeError(
                f"relax.broadcast_to: cannot broadcast x of shape {fmt_shape(x.shape)} to "
                f"{fmt_shape(target)}: dim {n} of x ({fmt_dim(d)}) must be 1 or equal dim "
                f"{offset + n} of the target ({fmt_dim(target[offset + n])})"
            )
    return TensorStructInfo(target, x.dtype)


_broadcast_to = register_op(
    "relax.broadcast_to",
    _infer_broadcast_to,
    topi.broadcast_to,
    lambda x, shape: np.broadcast_to(x, tuple(int(s) for s in shape)).copy(),
    OpPattern.BROADCAST,
)


def broadcast_to(x: Expr, shape: Any) -> Call:
    """`numpy.broadcast_to`: size-1 and missing leading dims of x repeated to `shape`."""
    if not isinstance(shape, Expr):
        shape = ShapeExpr(tuple(shape))
    return make_call(_broadcast_to, (x, shape))


# ----------------------------------------------------------------------------- tile / repeat / flip


def _infer_tile(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    reps = call.attrs["repeats"]
    if x.shape is None:
        return TensorStructInfo(None, x.dtype, -1 if x.ndim == -1 else max(x.ndim, len(reps)))
    nd = max(len(x.shape), len(reps))
    shape = (1,) * (nd - len(x.shape)) + tuple(x.shape)
    reps = (1,) * (nd - len(reps)) + tuple(reps)
    return TensorStructInfo(
        tuple(I.dim_arith(lambda d, r=r: d * r, d) for d, r in zip(shape, reps)), x.dtype
    )


_tile = register_op(
    "relax.tile",
    _infer_tile,
    lambda data, repeats: topi.tile(data, repeats),
    lambda data, repeats: np.tile(data, repeats),
    OpPattern.INJECTIVE,
)


def tile(data: Expr, repeats: Any) -> Call:
    """`numpy.tile(data, repeats)`: repeats[n] copies along dim n (leading 1s added)."""
    reps = (int(repeats),) if isinstance(repeats, int) else tuple(int(r) for r in repeats)
    if any(r < 0 for r in reps):
        raise ShapeError(f"relax.tile: repeats {list(reps)} must be non-negative")
    return make_call(_tile, (data,), {"repeats": reps})


def _infer_repeat(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    repeats, axis = call.attrs["repeats"], call.attrs["axis"]
    if axis is None:
        if x.shape is None:
            return TensorStructInfo(None, x.dtype, 1)
        return TensorStructInfo(
            (I.dim_arith(lambda d: d * repeats, I.dim(prod(x.shape))),), x.dtype
        )
    if x.ndim == -1:
        return x
    axis = normalize_axis(axis, x.ndim, "relax.repeat")
    if x.shape is None:
        return x
    return TensorStructInfo(
        tuple(
            I.dim_arith(lambda v: v * repeats, d) if n == axis else d for n, d in enumerate(x.shape)
        ),
        x.dtype,
    )


def _te_repeat(data, repeats, axis):
    if axis is None:
        return topi.repeat(topi.flatten(data), repeats, 0)
    return topi.repeat(data, repeats, axis)


_repeat = register_op(
    "relax.repeat",
    _infer_repeat,
    _te_repeat,
    lambda data, repeats, axis: np.repeat(data, repeats, axis),
    OpPattern.INJECTIVE,
)


def repeat(data: Expr, repeats: int, axis: int | None = None) -> Call:
    """`numpy.repeat`: each element `repeats` times along `axis` (of the flattened data if None)."""
    if int(repeats) < 0:
        raise ShapeError(f"relax.repeat: repeats must be non-negative, got {repeats}")
    return make_call(
        _repeat, (data,), {"repeats": int(repeats), "axis": None if axis is None else int(axis)}
    )


def _infer_flip(call: Call) -> StructInfo:
    x = I.tensor_arg(call, 0, "data")
    if x.ndim != -1:
        normalize_axis(call.attrs["axis"], x.ndim, "relax.flip")
    return x


_flip = register_op(
    "relax.flip",
    _infer_flip,
    topi.flip,
    lambda data, axis: np.flip(data, axis).copy(),
    OpPattern.INJECTIVE,
)


def flip(data: Expr, axis: int) -> Call:
    """The elements of `data` in reverse order along `axis`."""
    return make_call(_flip, (data,), {"axis": int(axis)})
