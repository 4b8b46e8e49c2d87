"""Matrix multiplication with numpy semantics (batched, broadcasting batch dims, 1-D operands)."""

from __future__ import annotations

from typing import Any

from .. import te
from ..error import TEError
from ..tir.expr import PrimExpr
from ..tir.expr import cast as tir_cast
from .broadcast import broadcast_index, broadcast_shape
from .utils import fmt_shape, prove_equal


def matmul(
    a: te.Tensor,
    b: te.Tensor,
    transpose_a: bool = False,
    transpose_b: bool = False,
    out_dtype: str | None = None,
) -> te.Tensor:
    """`a @ b` as numpy.matmul; `transpose_a/b` swap the last two dims of a 2-D+ operand."""
    out_dtype = out_dtype or a.dtype
    a1, b1 = len(a.shape) == 1, len(b.shape) == 1
    a_m, a_k = (None, a.shape[0]) if a1 else (a.shape[-2], a.shape[-1])
    if transpose_a and not a1:
        a_m, a_k = a_k, a_m
    b_k, b_n = (b.shape[0], None) if b1 else (b.shape[-2], b.shape[-1])
    if transpose_b and not b1:
        b_k, b_n = b_n, b_k
    if not prove_equal(a_k, b_k):
        raise TEError(
            f"topi.matmul: inner dims differ: a has shape {fmt_shape(a.shape)}, b has shape "
            f"{fmt_shape(b.shape)} ({a_k} vs {b_k})"
        )
    a_batch = () if a1 else tuple(a.shape[:-2])
    b_batch = () if b1 else tuple(b.shape[:-2])
    batch = broadcast_shape(a_batch, b_batch, "topi.matmul (batch dims)")
    out_shape = batch + (() if a1 else (a_m,)) + (() if b1 else (b_n,))
    k = te.reduce_axis((0, a_k), "k")
    nb = len(batch)

    def body(*idx: Any) -> PrimExpr:
        bidx, rest = idx[:nb], list(idx[nb:])
        i = None if a1 else rest.pop(0)
        j = None if b1 else rest.pop(0)
        if a1:
            ai = (k,)
        else:
            ai = broadcast_index(_BatchView(a_batch), batch, bidx) + (
                (k, i) if transpose_a else (i, k)
            )
        if b1:
            bi = (k,)
        else:
            bi = broadcast_index(_BatchView(b_batch), batch, bidx) + (
                (j, k) if transpose_b else (k, j)
            )
        return te.sum(tir_cast(out_dtype, a[ai]) * tir_cast(out_dtype, b[bi]), axis=k)

    return te.compute(out_shape, body, name="T_matmul", tag="matmul")


class _BatchView:
    """Just the batch dims of an operand, for broadcast_index."""

    __slots__ = ("shape",)

    def __init__(self, shape: tuple):
        self.shape = shape


def batch_matmul(
    x: te.Tensor, y: te.Tensor, transpose_b: bool = True, out_dtype: str | None = None
) -> te.Tensor:
    """TVM's batch_matmul: (b, m, k) x (b, n, k) -> (b, m, n) when transpose_b."""
    if len(x.shape) != 3 or len(y.shape) != 3:
        raise TEError("topi.batch_matmul: both operands must be 3-D")
    return matmul(x, y, transpose_b=transpose_b, out_dtype=out_dtype)
