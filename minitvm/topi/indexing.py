"""Index computations of the classic ops: gather (ONNX GatherElements / torch.gather), arange
and sparse_reshape (TensorFlow's, on COO indices)."""

from __future__ import annotations

import math
from typing import Any

from .. import te
from ..error import TEError
from ..ir.dtype import DataType
from ..tir import op as tir_op
from ..tir.expr import FloatImm, IntImm, PrimExpr, as_expr, make_const
from ..tir.expr import cast as tir_cast
from .utils import get_const_tuple, normalize_axis, prod, simplify


def gather(data: te.Tensor, axis: int, indices: te.Tensor) -> te.Tensor:
    """out[i..] = data[i.. with dim `axis` replaced by indices[i..]]; negative indices count
    from the end. An index outside [-dim, dim) is sent outside the data, so the compiled
    code's index check reports it (never a read of a neighbouring row)."""
    nd = len(data.shape)
    axis = normalize_axis(axis, nd, "topi.gather")
    if len(indices.shape) != nd:
        raise TEError(
            f"topi.gather: indices has rank {len(indices.shape)}, data has rank {nd}; "
            "they must have the same rank"
        )
    dim = data.shape[axis]
    outside = tir_cast(dim.dtype, -prod(data.shape))

    def body(*idx: Any) -> PrimExpr:
        raw = tir_cast(dim.dtype, indices[idx])
        pos = tir_op.Select_(raw < 0, raw + dim, raw)
        pos = tir_op.if_then_else(tir_op.all(pos >= 0, pos < dim), pos, outside)
        return data[tuple(idx[:axis]) + (pos,) + tuple(idx[axis + 1 :])]

    return te.compute(tuple(indices.shape), body, name="T_gather", tag="injective")


def _bound_number(v: Any) -> float | int | None:
    """A constant arange bound as a Python number; None for a symbolic one."""
    if isinstance(v, IntImm | FloatImm):
        return v.value
    if isinstance(v, int | float) and not isinstance(v, bool):
        return v
    return None


def arange_length(start: Any, stop: Any, step: Any) -> Any:
    """The number of elements of arange(start, stop, step): numpy's rule (an int) for constant
    bounds; for a symbolic bound the int64 expression ceil((stop - start) / step), as TVM."""
    nums = [_bound_number(v) for v in (start, stop, step)]
    if nums[2] == 0:
        raise TEError("arange: step must not be 0")
    if None not in nums:
        return max(math.ceil((nums[1] - nums[0]) / nums[2]), 0)
    i64 = DataType("int64")
    start, stop, step = (as_expr(v, like=i64) for v in (start, stop, step))
    if all(DataType(v.dtype).is_int for v in (start, stop, step)):
        start, stop, step = (tir_cast(i64, v) for v in (start, stop, step))
        # ceil(a / b) = floor((a + b - 1) / b) for b > 0, floor((a + b + 1) / b) for b < 0
        bias = 1 if nums[2] is not None and nums[2] < 0 else -1
        return simplify(tir_op.floordiv(stop - start + step + bias, step))
    span = tir_cast("float32", stop - start) / tir_cast("float32", step)
    return tir_cast(i64, tir_op.ceil(span))


def arange(start: Any, stop: Any, step: Any = 1, dtype: str = "float32") -> te.Tensor:
    """[start, start + step, ...) below `stop` (above it for a negative step), as numpy; each
    bound a number or a PrimExpr (a symbolic length such as arange(0, seq_len))."""
    n = arange_length(start, stop, step)
    kind = "float64" if "float" in dtype else "int64"

    def bound(v: Any) -> PrimExpr:
        return make_const(kind, v) if _bound_number(v) is not None else tir_cast(kind, v)

    def body(i: Any) -> PrimExpr:
        value = bound(start) + tir_cast(kind, i) * bound(step)
        return tir_cast(dtype, value)

    return te.compute((n,), body, name="T_arange", tag="injective")


def sparse_reshape(
    sparse_indices: te.Tensor, prev_shape: te.Tensor, new_shape: te.Tensor
) -> list[te.Tensor]:
    """TensorFlow's sparse_reshape: COO indices (N, r) of a tensor of shape `prev_shape` (r,)
    re-addressed for `new_shape` (r2,), where one -1 takes what is left. Returns
    [new_indices (N, r2), the resolved new shape (r2,)]."""
    n, rank = get_const_tuple(sparse_indices.shape, "topi.sparse_reshape: sparse_indices")
    (new_rank,) = get_const_tuple(new_shape.shape, "topi.sparse_reshape: new_shape")
    dtype = sparse_indices.dtype
    total = make_const(dtype, 1)
    for k in range(rank):
        total = total * tir_cast(dtype, prev_shape[k])
    known = make_const(dtype, 1)
    for j in range(new_rank):
        d = tir_cast(dtype, new_shape[j])
        known = known * tir_op.Select_(d == -1, make_const(dtype, 1), d)

    def resolved(j: Any) -> PrimExpr:
        d = tir_cast(dtype, new_shape[j])
        return tir_op.Select_(d == -1, tir_op.floordiv(total, known), d)

    out_shape = te.compute((new_rank,), resolved, name="T_sparse_reshape_shape")

    def new_index(i: Any, j: Any) -> PrimExpr:
        flat = make_const(dtype, 0)
        for k in range(rank):
            stride = make_const(dtype, 1)
            for k2 in range(k + 1, rank):
                stride = stride * tir_cast(dtype, prev_shape[k2])
            flat = flat + sparse_indices[i, k] * stride
        # the digit of `flat` at position j of the resolved shape (j is a loop variable, so
        # the stride is the product of the dims after j, each selected when its index > j)
        stride = make_const(dtype, 1)
        for j2 in range(new_rank):
            stride = stride * tir_op.Select_(j < j2, resolved(j2), make_const(dtype, 1))
        return tir_op.floormod(tir_op.floordiv(flat, stride), resolved(j))

    new_indices = te.compute((n, new_rank), new_index, name="T_sparse_reshape_indices")
    return [new_indices, out_shape]


__all__ = ["arange", "gather", "sparse_reshape"]
