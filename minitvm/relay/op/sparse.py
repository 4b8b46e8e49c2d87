"""`relay.nn.sparse_dense`: dense x sparse-weight products (CSR or BSR), a front end onto
`relax.nn.sparse_dense` (relax/op/nn/sparse.py, whose TE is `topi.nn.sparse_dense`).

`sparse_dense(x, (w_data, w_indices, w_indptr))` = x @ W.T; `sparse_lhs=True` gives W @ x.T.
When the sparse arrays are constants (the weights of a model) the relax call records the most
blocks one row holds, which bounds the kernel's reduction.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...error import ShapeError
from ...relax import expr as rx
from ...relax.op.nn import sparse as _relax_sparse
from ..expr import Expr
from ._registry import call, register
from .tensor import static_shape

_NAMES = _relax_sparse._NAMES


def _max_row_nnz(indptr: Any) -> int | None:
    """The most blocks in one row, when indptr is a constant."""
    if not isinstance(indptr, rx.Constant):
        return None
    counts = np.diff(indptr.data.numpy().astype(np.int64))
    return int(counts.max()) if counts.size else 0


def _sparse_dense(emit, args, attrs):
    x, data, indices, indptr = args
    for value, name in zip(args, _NAMES):
        static_shape(value, "nn.sparse_dense", name)
    return _relax_sparse.sparse_dense(
        x, data, indices, indptr, bool(attrs.sparse_lhs), _max_row_nnz(indptr)
    )


register("nn.sparse_dense", _sparse_dense)


def sparse_dense(dense_mat: Expr, sparse_mat: Any, sparse_lhs: bool = False) -> Expr:
    """dense_mat @ W.T for W = sparse_mat (data, indices, indptr) in CSR or BSR form;
    W @ dense_mat.T when sparse_lhs=True (TVM's argument order either way).

    >>> # y = relay.nn.sparse_dense(x, (w_data, w_indices, w_indptr))
    """
    if hasattr(sparse_mat, "indptr"):
        sparse_mat = (sparse_mat.data, sparse_mat.indices, sparse_mat.indptr)
    if not isinstance(sparse_mat, list | tuple) or len(sparse_mat) != 3:
        raise ShapeError(
            "relay.nn.sparse_dense: sparse_mat must be (data, indices, indptr), got "
            f"{type(sparse_mat).__name__}"
        )
    return call("nn.sparse_dense", (dense_mat, *sparse_mat), {"sparse_lhs": bool(sparse_lhs)})
