"""Index computations of the classic ops: gather (ONNX GatherElements / torch.gather), arange
and sparse_reshape (TensorFlow's, on COO indices)."""

from __future__ import annotations

import math
from typing import Any

from .. import te
from ..error import TEError
from ..tir import op as tir_op
from ..tir.expr import PrimExpr, make_const
from ..tir.expr import cast as tir_cast
from .utils import get_const_tuple, normalize_axis, prod


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


def arange_length(start: float, stop: float, step: float) -> int:
    """The number of elements of arange(start, stop, step) (numpy's rule)."""
    if step == 0:
        raise TEError("arange: step must not be 0")
    return max(math.ceil((stop - start) / step), 0)


def arange(start: float, stop: float, step: float = 1, dtype: str = "float32") -> te.Tensor:
    """[start, start + step, ...) below `stop` (above it for a negative step), as numpy."""
    n = arange_length(start, stop, step)
    kind = "float64" if "float" in dtype else "int64"

    def body(i: Any) -> PrimExpr:
        value = make_const(kind, start) + tir_cast(kind, i) * make_const(kind, step)
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
