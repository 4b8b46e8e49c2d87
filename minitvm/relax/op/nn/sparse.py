"""`relax.nn.sparse_dense`: dense x sparse-weight products (CSR or BSR) whose TE is
`topi.nn.sparse_dense` (relay.nn.sparse_dense is a front end onto this row).

`sparse_dense(x, data, indices, indptr)` = x @ W.T; `sparse_lhs=True` gives W @ x.T.
`max_row_nnz` (the most blocks one row holds, known when the arrays are constants) bounds the
kernel's reduction; without it the reduction runs over every block.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....error import ShapeError
from ....topi.nn.sparse import sparse_dense as topi_sparse_dense
from ...expr import Call, Expr
from ...struct_info import StructInfo, TensorStructInfo
from .. import _infer as I
from .._table import OpPattern, make_call, register_op

_NAMES = ("dense_data", "sparse_data", "sparse_indices", "sparse_indptr")


def _shapes(call_: Any) -> list[tuple[int, ...]]:
    sinfos = [I.tensor_arg(call_, i, name) for i, name in enumerate(_NAMES)]
    shapes = [s.static_shape() for s in sinfos]
    if any(s is None for s in shapes):
        raise ShapeError(
            f"relax.nn.sparse_dense: every argument needs a static shape, got {sinfos}"
        )
    return shapes


def _infer_sparse_dense(call_: Any) -> StructInfo:
    x, data, indices, indptr = _shapes(call_)
    if len(x) != 2 or len(data) not in (1, 3) or len(indices) != 1 or len(indptr) != 1:
        raise ShapeError(
            f"relax.nn.sparse_dense: expected dense_data (M, K), sparse_data (nnz,) or "
            f"(blocks, bs_r, bs_c), indices (nnz,), indptr (rows + 1,); got {x}, {data}, "
            f"{indices}, {indptr}"
        )
    if data[0] != indices[0]:
        raise ShapeError(
            f"relax.nn.sparse_dense: sparse_data has {data[0]} entries, sparse_indices {indices[0]}"
        )
    bs_r = data[1] if len(data) == 3 else 1
    n = (indptr[0] - 1) * bs_r
    out = (n, x[0]) if call_.attrs.get("sparse_lhs") else (x[0], n)
    return TensorStructInfo(out, I.tensor_arg(call_, 0, "dense_data").dtype)


def _te_sparse_dense(x, data, indices, indptr, sparse_lhs=False, max_row_nnz=None):
    return topi_sparse_dense(x, data, indices, indptr, sparse_lhs, max_row_nnz)


def _np_sparse_dense(x, data, indices, indptr, sparse_lhs=False, max_row_nnz=None):
    """The reference: rebuild W densely, then x @ W.T (or W @ x.T)."""
    blocks = data.reshape(len(data), 1, 1) if data.ndim == 1 else data
    _, bs_r, bs_c = blocks.shape
    rows = len(indptr) - 1
    w = np.zeros((rows, bs_r, x.shape[1] // bs_c, bs_c), dtype=x.dtype)
    for r in range(rows):
        for b in range(indptr[r], indptr[r + 1]):
            w[r, :, indices[b], :] = blocks[b]
    w = w.reshape(rows * bs_r, x.shape[1])
    return (w @ x.T) if sparse_lhs else (x @ w.T)


_sparse_dense_op = register_op(
    "relax.nn.sparse_dense",
    _infer_sparse_dense,
    _te_sparse_dense,
    _np_sparse_dense,
    OpPattern.OPAQUE,
)


def sparse_dense(
    dense_data: Expr,
    sparse_data: Expr,
    sparse_indices: Expr,
    sparse_indptr: Expr,
    sparse_lhs: bool = False,
    max_row_nnz: int | None = None,
) -> Call:
    """x @ W.T for W = (sparse_data, sparse_indices, sparse_indptr) in CSR or BSR form."""
    attrs = {"sparse_lhs": bool(sparse_lhs), "max_row_nnz": max_row_nnz}
    return make_call(
        _sparse_dense_op, (dense_data, sparse_data, sparse_indices, sparse_indptr), attrs
    )
