"""`tvm.contrib.cblas`: matrix products by the BLAS that numpy links, called from compiled code.

`cblas.matmul(A, B)` is a `te.extern` whose body calls the packed function
`"tvm.contrib.cblas.matmul"`, registered here: it runs `np.matmul` straight into the output's
memory (the arrays it gets are views of the compiled function's buffers).
"""

from __future__ import annotations

import numpy as np

from .. import te, tir
from ..error import ShapeError
from ..runtime.registry import get_global_func, register_func


def _product(a, b, c, transa, transb, batched: bool) -> None:
    x, y, out = a._data, b._data, c._data
    if transa:
        x = np.swapaxes(x, -1, -2)
    if transb:
        y = np.swapaxes(y, -1, -2)
    rank = 3 if batched else 2
    if x.ndim != rank or y.ndim != rank or x.shape[-1] != y.shape[-2]:
        raise ShapeError(
            f"cblas.{'batch_matmul' if batched else 'matmul'}: shapes {a.shape} and {b.shape} "
            f"(transa={bool(transa)}, transb={bool(transb)}) do not multiply"
        )
    np.matmul(x, y, out=out)


def _matmul(a, b, c, transa=0, transb=0) -> None:
    _product(a, b, c, transa, transb, batched=False)


def _batch_matmul(a, b, c, transa=0, transb=0) -> None:
    _product(a, b, c, transa, transb, batched=True)


for _name, _fn in (("matmul", _matmul), ("batch_matmul", _batch_matmul),
                   ("batch_matmul_iterative", _batch_matmul)):  # fmt: skip
    if get_global_func(f"tvm.contrib.cblas.{_name}", allow_missing=True) is None:
        register_func(f"tvm.contrib.cblas.{_name}", _fn)


def matmul(lhs: te.Tensor, rhs: te.Tensor, transa: bool = False, transb: bool = False,
           **kwargs) -> te.Tensor:  # fmt: skip
    """`lhs @ rhs` (each optionally transposed) computed by BLAS: a te.extern stage."""
    n = lhs.shape[1] if transa else lhs.shape[0]
    m = rhs.shape[0] if transb else rhs.shape[1]
    return te.extern(
        (n, m),
        [lhs, rhs],
        lambda ins, outs: tir.call_packed(
            "tvm.contrib.cblas.matmul", ins[0], ins[1], outs[0], transa, transb
        ),
        name=kwargs.pop("name", "C"),
        **kwargs,
    )


def batch_matmul(lhs: te.Tensor, rhs: te.Tensor, transa: bool = False, transb: bool = False,
                 iterative: bool = False, **kwargs) -> te.Tensor:  # fmt: skip
    """Batched `lhs @ rhs` (3-D tensors) computed by BLAS: a te.extern stage."""
    b = lhs.shape[0]
    n = lhs.shape[2] if transa else lhs.shape[1]
    m = rhs.shape[1] if transb else rhs.shape[2]
    name = "tvm.contrib.cblas.batch_matmul" + ("_iterative" if iterative else "")
    return te.extern(
        (b, n, m),
        [lhs, rhs],
        lambda ins, outs: tir.call_packed(name, ins[0], ins[1], outs[0], transa, transb),
        name=kwargs.pop("name", "C"),
        **kwargs,
    )
