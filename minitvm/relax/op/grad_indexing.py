"""Gradient rules of the sorting and scatter ops (relax/op/sorting.py, scatter.py).

A sort or top-k picks elements: the cotangent of each picked value goes back to the position
it came from (a scatter-add by the sort's indices). gather_nd's cotangent is a scatter_nd add.
A scatter with "update" or "add" passes the cotangent through to data (zero where "update"
overwrote it) and gathers it for updates at the indices; the other reductions have no rule.
argsort and one_hot have no gradient by nature.
"""

from __future__ import annotations

from ...error import MiniTVMError
from ..expr import Tuple, TupleGetItem
from . import indexing, scatter, sorting
from .grad import GRAD_RULES, NOT_DIFFERENTIABLE, _install, _reasons, zeros_like


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


GRAD_RULES.update(
    {
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
