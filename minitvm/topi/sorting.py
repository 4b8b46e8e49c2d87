"""Stable sorting along an axis: topi.argsort, topi.sort and topi.topk.

The kernel is a bottom-up merge sort of index arrays, one row (all elements along the axis for
one position of the other axes) at a time, written as a `te.extern` loop nest: O(n log n)
comparisons and O(size) scratch, for static and symbolic lengths alike. A merge takes from the
right run only when its element is strictly before the left one, so equal elements keep their
order (ONNX TopK and torch.sort(stable=True) require it). NaN sorts as the largest value, as in
numpy and torch: last when ascending, first when descending.
"""

from __future__ import annotations

import contextlib
from typing import Any

from .. import te
from ..error import TEError
from ..tir import ir_builder
from ..tir import op as tir_op
from ..tir.expr import PrimExpr, make_const
from ..tir.expr import cast as tir_cast
from ..tir.stmt import AssertStmt, Evaluate
from .utils import const_int, normalize_axis, simplify

_MAX_PASSES = 62  # widths 1, 2, 4, ... 2**61 cover any int64 length


def _before(a: PrimExpr, b: PrimExpr, descending: bool) -> PrimExpr:
    """True when `a` must come strictly before `b` (NaN is the largest value)."""
    if not a.dtype.is_float:
        return a > b if descending else a < b
    a_nan, b_nan = tir_op.isnan(a), tir_op.isnan(b)
    if descending:
        return tir_op.any(a > b, tir_op.all(a_nan, ~b_nan))
    return tir_op.any(a < b, tir_op.all(b_nan, ~a_nan))


def _merge_sort_body(ins: list, outs: list, axis: int, descending: bool, need: Any) -> Any:
    """The loop nest: outs[0] gets, per row, the positions of the row's elements in order;
    `need` (topk's k) is checked against the row length first."""
    data = ins[0]
    order, scratch, state = outs
    n = tir_cast("int64", data.shape[axis])
    ib = ir_builder.create()
    x, idx, tmp, st = (ib.buffer_ptr(b) for b in (data, order, scratch, state))
    idx_dtype = order.dtype
    one = make_const("int64", 1)
    short = None if need is None else simplify(tir_cast("int64", need) > n)
    if short is not None and const_int(short) != 0:  # a symbolic axis shorter than k
        with ib.if_scope(short):
            message = f"topk: k={need} is larger than the length of data's axis {axis}"
            ib.emit(AssertStmt(~short, message, Evaluate(make_const("int32", 0))))
    # one loop per other axis (the real buffers, indexed in full, keep buffer analysis exact)
    rest = []
    with contextlib.ExitStack() as loops:
        for d, extent in enumerate(data.shape):
            if d != axis:
                rest.append(loops.enter_context(
                    ib.for_range(0, tir_cast("int64", extent), name=f"i{d}", dtype="int64")
                ))  # fmt: skip

        def at(k: PrimExpr) -> tuple:  # the index of element k of this row
            return tuple(rest[:axis]) + (k,) + tuple(rest[axis:])

        with ib.for_range(0, n, name="k", dtype="int64") as k:
            idx[at(k)] = tir_cast(idx_dtype, k)
        st[2] = one  # the width of the sorted runs
        with ib.for_range(0, _MAX_PASSES, name="p", dtype="int64"):
            w = st[2]
            with ib.if_scope(w < n):
                with ib.for_range(0, n, name="k", dtype="int64") as k:
                    lo = k - tir_op.floormod(k, w * 2)
                    mid = tir_op.min(lo + w, n)
                    hi = tir_op.min(lo + w * 2, n)
                    with ib.if_scope(k == lo):  # a new pair of runs: [lo, mid) and [mid, hi)
                        st[0] = lo
                        st[1] = mid
                    i, j = st[0], st[1]
                    take_right = i >= mid
                    with ib.if_scope(take_right):
                        tmp[at(k)] = idx[at(j)]
                        st[1] = j + 1
                    with ib.else_scope():
                        left = j >= hi
                        with ib.if_scope(left):
                            tmp[at(k)] = idx[at(i)]
                            st[0] = i + 1
                        with ib.else_scope():
                            vi = x[at(tir_cast("int64", idx[at(i)]))]
                            vj = x[at(tir_cast("int64", idx[at(j)]))]
                            with ib.if_scope(_before(vj, vi, descending)):
                                tmp[at(k)] = idx[at(j)]
                                st[1] = j + 1
                            with ib.else_scope():
                                tmp[at(k)] = idx[at(i)]
                                st[0] = i + 1
                with ib.for_range(0, n, name="k", dtype="int64") as k:
                    idx[at(k)] = tmp[at(k)]
                st[2] = w * 2
    return ib.get()


def argsort(
    data: te.Tensor, axis: int = -1, is_ascend: bool = True, dtype: str = "float32"
) -> te.Tensor:
    """Positions that sort `data` along `axis` (stable; NaN largest): numpy's
    argsort(kind="stable"), descending when `is_ascend` is False. `dtype` is the result's."""
    return _argsort(data, axis, is_ascend, dtype, None)


def _argsort(data: te.Tensor, axis: int, is_ascend: bool, dtype: str, need: Any) -> te.Tensor:
    axis = normalize_axis(axis, len(data.shape), "topi.argsort")
    if not dtype.startswith(("int", "uint", "float")):
        raise TEError(f"topi.argsort: dtype {dtype!r} must be an integer or float dtype")
    # positions are computed in int64 (a float32 position is exact only below 2**24)
    idx_dtype = dtype if dtype in ("int32", "int64") else "int64"
    outs = te.extern(
        [tuple(data.shape), tuple(data.shape), (4,)],
        [data],
        lambda ins, outs: _merge_sort_body(ins, outs, axis, not is_ascend, need),
        name="T_argsort",
        dtype=[idx_dtype, idx_dtype, "int64"],
        tag="argsort",
    )
    order = outs[0]
    if idx_dtype == dtype:
        return order
    return te.compute(
        tuple(data.shape), lambda *i: tir_cast(dtype, order[i]), name="T_argsort_cast"
    )


def _take_along(data: te.Tensor, order: te.Tensor, axis: int, name: str) -> te.Tensor:
    """out[.., k, ..] = data[.., order[.., k, ..], ..] (order's positions are in range)."""

    def body(*i: Any) -> PrimExpr:
        pos = tir_cast("int64", order[i])
        return data[tuple(i[:axis]) + (pos,) + tuple(i[axis + 1 :])]

    return te.compute(tuple(order.shape), body, name=name)


def sort(data: te.Tensor, axis: int = -1, is_ascend: bool = True) -> te.Tensor:
    """`data` sorted along `axis` (stable; NaN largest, as numpy and torch)."""
    axis = normalize_axis(axis, len(data.shape), "topi.sort")
    order = argsort(data, axis, is_ascend, "int64")
    return _take_along(data, order, axis, "T_sort")


def topk(
    data: te.Tensor,
    k: Any = 1,
    axis: int = -1,
    ret_type: str = "both",
    is_ascend: bool = False,
    dtype: str = "int64",
) -> te.Tensor | list[te.Tensor]:
    """The `k` largest (smallest when `is_ascend`) elements along `axis` and their positions,
    in sorted order, ties by lower position first. `ret_type`: "both", "values" or "indices";
    k < 1 means the whole axis (as TVM)."""
    axis = normalize_axis(axis, len(data.shape), "topi.topk")
    if ret_type not in ("both", "values", "indices"):
        raise TEError(f"topi.topk: ret_type {ret_type!r} must be 'both', 'values' or 'indices'")
    n = data.shape[axis]
    if isinstance(k, int) and k < 1:
        k = n
    order = _argsort(data, axis, is_ascend, "int64", k)
    shape = list(data.shape)
    shape[axis] = k
    top = te.compute(tuple(shape), lambda *i: order[i], name="T_topk_order")
    values = _take_along(data, top, axis, "T_topk_values")
    indices = te.compute(tuple(shape), lambda *i: tir_cast(dtype, top[i]), name="T_topk_indices")
    return {"both": [values, indices], "values": values, "indices": indices}[ret_type]


__all__ = ["argsort", "sort", "topk"]
