"""Sparse x dense products: `sparse_dense(x, w_data, w_indices, w_indptr)` = x @ W.T with W in
CSR (w_data 1-D) or BSR (w_data (blocks, bs_r, bs_c)) form.

Row j of W holds the blocks indptr[j // bs_r] .. indptr[j // bs_r + 1]; each block b covers
the columns indices[b] * bs_c .. + bs_c. The reduction over a row's blocks has a length that
depends on the data, so it runs over a constant bound (`max_row_nnz`, or every block) and skips
the blocks past the row's end (`where=`): the loop stays affine for the scheduler.
"""

from __future__ import annotations

from ... import te
from ...error import TEError
from ...tir.expr import cast as tir_cast
from ..utils import const_int, fmt_shape


def _block_shape(sparse_data: te.Tensor) -> tuple[int, int]:
    """(bs_r, bs_c): (1, 1) for CSR data (nnz,), the block shape for BSR data (nnzb, r, c)."""
    if len(sparse_data.shape) == 1:
        return 1, 1
    if len(sparse_data.shape) == 3:
        bs_r, bs_c = (const_int(d) for d in sparse_data.shape[1:])
        if bs_r is not None and bs_c is not None:
            return bs_r, bs_c
    raise TEError(
        f"topi.nn.sparse_dense: sparse_data must be (nnz,) for CSR or (blocks, bs_r, bs_c) with "
        f"constant block sizes for BSR, got shape {fmt_shape(sparse_data.shape)}"
    )


def sparse_dense(
    dense_data: te.Tensor,
    sparse_data: te.Tensor,
    sparse_indices: te.Tensor,
    sparse_indptr: te.Tensor,
    sparse_lhs: bool = False,
    max_row_nnz: int | None = None,
) -> te.Tensor:
    """dense_data (M, K) @ W.T -> (M, N) for W (N, K) sparse; with sparse_lhs=True,
    W @ dense_data.T -> (N, M). `max_row_nnz` (the most blocks in one row, when the sparse
    arrays are known) shortens the reduction; results do not depend on it as long as it holds.

    >>> # out = topi.nn.sparse_dense(x, w_data, w_indices, w_indptr)
    """
    bs_r, bs_c = _block_shape(sparse_data)
    if len(dense_data.shape) != 2:
        raise TEError(
            f"topi.nn.sparse_dense: dense_data must be 2-D, got {fmt_shape(dense_data.shape)}"
        )
    for name, t in (("sparse_indices", sparse_indices), ("sparse_indptr", sparse_indptr)):
        if len(t.shape) != 1 or not t.dtype.startswith("int"):
            raise TEError(
                f"topi.nn.sparse_dense: {name} must be a 1-D integer array, got "
                f"{fmt_shape(t.shape)} {t.dtype}"
            )
    m, k = dense_data.shape
    n = (sparse_indptr.shape[0] - 1) * bs_r
    nnzb = sparse_data.shape[0]
    if const_int(k) is not None and const_int(k) % bs_c:
        raise TEError(f"topi.nn.sparse_dense: K={k} is not a multiple of the block width {bs_c}")
    # at least 1: an all-zero W still has a (skipped) reduction step
    bound = max(int(max_row_nnz), 1) if max_row_nnz is not None else nnzb
    kb = te.reduce_axis((0, bound), "kb")
    kc = te.reduce_axis((0, bs_c), "kc")
    dtype = dense_data.dtype

    def row_sum(i, j):
        row = j // bs_r if bs_r > 1 else j
        start = tir_cast("int32", sparse_indptr[row])
        end = tir_cast("int32", sparse_indptr[row + 1])
        block = start + kb
        csr = len(sparse_data.shape) == 1
        weight = sparse_data[block] if csr else sparse_data[block, j % bs_r, kc]
        column = tir_cast("int32", sparse_indices[block]) * bs_c + kc
        return te.sum(
            tir_cast(dtype, weight) * dense_data[i, column], axis=[kb, kc], where=kb < end - start
        )

    if sparse_lhs:
        return te.compute(
            (n, m), lambda j, i: row_sum(i, j), name="T_sparse_dense", tag="sparse_dense"
        )
    return te.compute((m, n), row_sum, name="T_sparse_dense", tag="sparse_dense")
