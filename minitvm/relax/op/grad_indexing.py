"""Gradient rules of the sorting and scatter ops (relax/op/sorting.py, scatter.py).

A sort or top-k picks elements: the cotangent of each picked value goes back to the position
it came from (a scatter-add by the sort's indices). gather_nd's cotangent is a scatter_nd add.
A scatter with "update" or "add" passes the cotangent through to data (zero where "update"
overwrote it) and gathers it for updates at the indices; the other reductions have no rule.
argsort and one_hot have no gradient by nature.

dynamic_strided_slice picks elements at positions known at run time: the same slice of a tensor
of flat positions (0, 1, 2, ...) says where each element of the cotangent goes back to (a
scatter into zeros; the positions are distinct). The slice's extents are named with a
match_cast so the scatter's kernel can take the cotangent.
"""

from __future__ import annotations

import math

from ...error import MiniTVMError
from ...tir.expr import Var as DimVar
from ...topi.utils import const_int
from ..expr import Tuple, TupleGetItem
from ..struct_info import TensorStructInfo
from . import create, dynamic, indexing, manipulate, scatter, sorting
from .grad import (
    GRAD_RULES,
    NOT_DIFFERENTIABLE,
    _install,
    _reasons,
    shape_of,
    zeros_like,
)


def _fields(var, g, bb) -> list:
    if isinstance(g, Tuple):
        return list(g.fields)
    return [bb.emit(TupleGetItem(g, i)) for i in range(len(var.struct_info.fields))]


def _sort(var, call, g, bb):
    x = call.args[0]
    a = call.attrs
    order = bb.emit(sorting.argsort(x, a["axis"], a["descending"], "int64"))
    return [scatter.scatter_elements(zeros_like(x), order, g, a["axis"], "add")]


def _topk(var, call, g, bb):
    x = call.args[0]
    a = call.attrs
    if a["ret_type"] == "indices":
        return [None]
    if a["ret_type"] == "both":
        g_values = _fields(var, g, bb)[0]
        indices = bb.emit(TupleGetItem(var, 1))
    else:
        g_values = g
        indices = bb.emit(sorting.topk(x, a["k"], a["axis"], "indices", a["largest"], "int64"))
    return [scatter.scatter_elements(zeros_like(x), indices, g_values, a["axis"], "add")]


def _require_update_or_add(call) -> str:
    reduction = call.attrs["reduction"]
    if reduction not in ("update", "add"):
        raise MiniTVMError(
            f"relax.Gradient: {call.op.name} with reduction={reduction!r} has no gradient rule "
            "(only 'update' and 'add' have one); differentiate a graph without it"
        )
    return reduction


def _scatter_elements(var, call, g, bb):
    _data, indices, updates = call.args
    axis = call.attrs["axis"]
    reduction = _require_update_or_add(call)
    d_updates = indexing.gather_elements(g, indices, axis)
    if reduction == "add":
        return [g, None, d_updates]
    # overwritten positions do not depend on data
    return [scatter.scatter_elements(g, indices, zeros_like(updates), axis), None, d_updates]


def _scatter_nd(var, call, g, bb):
    _data, indices, updates = call.args
    reduction = _require_update_or_add(call)
    d_updates = scatter.gather_nd(g, indices)
    if reduction == "add":
        return [g, None, d_updates]
    return [scatter.scatter_nd(g, indices, zeros_like(updates)), None, d_updates]


def _gather_nd(var, call, g, bb):
    data, indices = call.args
    if call.attrs["batch_dims"]:
        raise MiniTVMError(
            "relax.Gradient: relax.gather_nd with batch_dims > 0 has no gradient rule; "
            "reshape to batch_dims=0 (indices that include the batch positions) to train"
        )
    return [scatter.scatter_nd(zeros_like(data), indices, g, "add"), None]


def _dynamic_strided_slice(var, call, g, bb):
    x, begin, end, strides = call.args
    dims = [const_int(d) for d in shape_of(x, "the input of relax.dynamic_strided_slice")]
    if any(d is None for d in dims) or not hasattr(bb, "match_cast"):
        raise MiniTVMError(
            f"relax.Gradient: relax.dynamic_strided_slice of a tensor of shape {x.struct_info} "
            "has no gradient rule here: x's shape must be static, and the rule is applied by "
            "relax.transform.Gradient (it names the slice's run-time extents with a match_cast)"
        )
    dtype = str(x.struct_info.dtype)
    numel = math.prod(dims)
    flat_positions = bb.emit(manipulate.reshape(indexing.arange(0, numel, 1, "int64"), dims))
    picked = bb.emit(dynamic.dynamic_strided_slice(flat_positions, begin, end, strides))
    g_shape = g.struct_info.shape
    if g_shape is not None:  # the forward graph named the slice's dims already
        extents, g_named = list(g_shape), g
    else:
        extents = [DimVar(f"slice_dim{k}", "int64") for k in range(len(dims))]
        g_named = bb.match_cast(g, TensorStructInfo(extents, dtype), "slice_adjoint")
    picked_named = bb.match_cast(picked, TensorStructInfo(extents, "int64"), "slice_positions")
    flat = scatter.scatter_elements(
        create.zeros((numel,), dtype),
        bb.emit(manipulate.flatten(picked_named)),
        bb.emit(manipulate.flatten(g_named)),
        0,
        "add",
    )
    return [manipulate.reshape(bb.emit(flat), dims), None, None, None]


GRAD_RULES.update(
    {
        "relax.dynamic_strided_slice": _dynamic_strided_slice,
        "relax.sort": _sort,
        "relax.topk": _topk,
        "relax.scatter_elements": _scatter_elements,
        "relax.scatter_nd": _scatter_nd,
        "relax.gather_nd": _gather_nd,
    }
)
_install()

NOT_DIFFERENTIABLE.update(
    _reasons(
        {
            "argsort": "integer indices result",
            "one_hot": "creation op from integer indices (on/off values are scalars)",
        }
    )
)

__all__: list[str] = []
