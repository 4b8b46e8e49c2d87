"""`bsr_dense.convert(func, params, blocksize, sparsity_threshold)`: every `nn.dense` whose
weight is known and at least `sparsity_threshold` zeros becomes `nn.sparse_dense` over the
weight's BSR arrays (data, indices, indptr), computed with numpy.

The BSR arrays are embedded as constants, so the kernel knows the longest row and bounds its
loop by it; they are also returned in params under TVM's names (`<weight>.data`, `.indices`,
`.indptr`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...error import ArgumentError
from ...runtime import ndarray as _nd
from ..expr import Call, Function, Op, const
from ..expr_functor import ExprMutator
from ..op.sparse import sparse_dense
from ..op.tensor import reshape
from ..type_infer import infer_type
from ._weights import as_function, weight_value


def to_bsr(w: np.ndarray, blocksize: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(data (blocks, bs_r, bs_c), indices, indptr) of the 2-D `w`: the blocks with a nonzero,
    row by row, as scipy.sparse.bsr_matrix stores them."""
    bs_r, bs_c = blocksize
    n, k = w.shape
    blocks = w.reshape(n // bs_r, bs_r, k // bs_c, bs_c).transpose(0, 2, 1, 3)
    nonzero = np.any(blocks != 0, axis=(2, 3))
    rows, cols = np.nonzero(nonzero)  # row-major: blocks of row 0 first, columns ascending
    indptr = np.concatenate([[0], np.cumsum(nonzero.sum(axis=1))]).astype("int32")
    return np.ascontiguousarray(blocks[rows, cols]), cols.astype("int32"), indptr


class _DenseToSparse(ExprMutator):
    def __init__(self, params: dict, blocksize: tuple[int, int], threshold: float):
        super().__init__()
        self.params, self.blocksize, self.threshold = params, blocksize, threshold
        self.new_params: dict[str, Any] = {}

    def visit_call(self, call: Call) -> Any:
        new = super().visit_call(call)
        if not (isinstance(call.op, Op) and call.op.name == "nn.dense"):
            return new
        w = weight_value(call.args[1], self.params)
        if w is None or not self._eligible(call, w):
            return new
        data, indices, indptr = to_bsr(w, self.blocksize)
        if len(data) == 0:  # all zeros: one zero block keeps the arrays non-empty
            data = np.zeros((1, *self.blocksize), w.dtype)
            indices = np.zeros(1, "int32")
            indptr = np.asarray([0] + [1] * (len(indptr) - 1), "int32")
        name = getattr(call.args[1], "name_hint", f"sparse_weight{len(self.new_params) // 3}")
        for suffix, array in ((".data", data), (".indices", indices), (".indptr", indptr)):
            self.new_params[name + suffix] = _nd.array(array)
        x = new.args[0]
        shape = [int(d) for d in call.args[0].checked_type.shape]
        flat = reshape(x, (-1, shape[-1])) if len(shape) != 2 else x
        out = sparse_dense(flat, (const(data), const(indices), const(indptr)))
        return reshape(out, (*shape[:-1], w.shape[0])) if len(shape) != 2 else out

    def _eligible(self, call: Call, w: np.ndarray) -> bool:
        bs_r, bs_c = self.blocksize
        if w.ndim != 2 or w.shape[0] % bs_r or w.shape[1] % bs_c:
            return False
        if call.attrs.out_dtype and call.attrs.out_dtype != str(w.dtype):
            return False
        ty = call.args[0].checked_type
        if str(ty.dtype) != str(w.dtype) or not all(isinstance(d, int) for d in ty.shape):
            return False
        return 1.0 - np.count_nonzero(w) / max(w.size, 1) >= self.threshold


def convert(
    func: Any, params: dict, blocksize: tuple[int, int], sparsity_threshold: float = 0.85
) -> tuple[Function, dict]:
    """(new function, params): dense layers with weights at least `sparsity_threshold` zeros
    become BSR sparse_dense with `blocksize` (bs_r, bs_c) blocks; the numbers do not change."""
    func = as_function(func)
    blocksize = tuple(int(b) for b in blocksize)
    if len(blocksize) != 2 or min(blocksize) < 1:
        raise ArgumentError(
            f"bsr_dense.convert: blocksize must be (bs_r, bs_c), both >= 1, got {blocksize}"
        )
    typed = infer_type(func)
    mutator = _DenseToSparse(dict(params), blocksize, float(sparsity_threshold))
    new_func = mutator.visit(typed)
    return new_func, {**params, **mutator.new_params}
