"""`relax.op.multinomial_from_uniform`: draw one token per row from a probability table given a
uniform sample (TVM's sampling op, used by LLM decoders).

Row i of the result is the first index j of distribution `prob[sample_indices[i]]` whose running
sum exceeds `uniform_sample[i]` (the last index when none does, so rounding of the running sum
near 1 never yields an out-of-range token). Indices are clipped into range, like `take`'s
default mode, so a bad `sample_indices` entry never reads outside `prob`.

Also gives the a3 ops their line in the gradient table (imported after relax/op/grad.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te, tir
from ...error import DTypeError, ShapeError
from ...ir.dtype import DataType
from ...topi.transform import cumsum as topi_cumsum
from ...topi.utils import fmt_shape, prove_equal
from ..expr import Call, Expr
from ..struct_info import StructInfo, TensorStructInfo
from . import _infer as I
from ._table import OP_TABLE, OpPattern, make_call, register_op
from .grad import NO_GRAD_RULE, NOT_DIFFERENTIABLE, _reasons


def _infer_multinomial(call: Call) -> StructInfo:
    prob = I.tensor_arg(call, 0, "prob")
    usample = I.tensor_arg(call, 1, "uniform_sample")
    indices = I.tensor_arg(call, 2, "sample_indices")
    dtype = call.attrs["dtype"]
    for pname, s, is_kind, what in (
        ("prob", prob, lambda d: d.is_float, "float"),
        ("uniform_sample", usample, lambda d: d.is_float, "float"),
        ("sample_indices", indices, lambda d: d.is_integer, "integer"),
    ):
        if s.dtype is not None and not is_kind(DataType(s.dtype)):
            raise DTypeError(
                f"relax.multinomial_from_uniform: {pname} has dtype {s.dtype}; it must be a "
                f"{what} tensor"
            )
    if -1 in (prob.ndim, usample.ndim, indices.ndim):
        return TensorStructInfo(None, dtype, 2)
    for pname, s in (("prob", prob), ("uniform_sample", usample), ("sample_indices", indices)):
        if s.ndim != 2:
            raise ShapeError(
                f"relax.multinomial_from_uniform: {pname} must be 2-D, got {I.fmt(s)}; prob is "
                "(batch, vocab), uniform_sample and sample_indices are (n, 1)"
            )
    if usample.shape is None:
        return TensorStructInfo(None, dtype, 2)
    for pname, s in (("uniform_sample", usample), ("sample_indices", indices)):
        if s.shape is not None and not prove_equal(s.shape[1], 1):
            raise ShapeError(
                f"relax.multinomial_from_uniform: {pname} has shape {fmt_shape(s.shape)}; it "
                "must be (n, 1)"
            )
    if indices.shape is not None and not prove_equal(indices.shape[0], usample.shape[0]):
        raise ShapeError(
            f"relax.multinomial_from_uniform: sample_indices {fmt_shape(indices.shape)} and "
            f"uniform_sample {fmt_shape(usample.shape)} must have the same number of rows"
        )
    return TensorStructInfo((usample.shape[0], 1), dtype)


def _te_multinomial(
    prob: te.Tensor, usample: te.Tensor, indices: te.Tensor, dtype: str
) -> te.Tensor:
    batch, vocab = prob.shape
    running = topi_cumsum(prob, axis=1)
    k = te.reduce_axis((0, vocab), "k")
    one, zero = tir.const(1, dtype), tir.const(0, dtype)

    def body(i: Any, _: Any) -> Any:
        row = tir.max(tir.min(tir.Cast("int64", indices[i, 0]), batch - 1), 0)
        u = tir.Cast(prob.dtype, usample[i, 0])
        passed = te.sum(tir.Select(running[row, k] <= u, one, zero), axis=k)
        return passed

    count = te.compute((usample.shape[0], 1), body, name="T_sample_count", tag="reduce")
    last = tir.Cast(dtype, vocab - 1)
    return te.compute(
        count.shape, lambda i, j: tir.min(count[i, j], last), name="T_multinomial", tag="injective"
    )


def _np_multinomial(
    prob: np.ndarray, usample: np.ndarray, indices: np.ndarray, dtype: str
) -> np.ndarray:
    rows = np.clip(indices[:, 0].astype(np.int64), 0, prob.shape[0] - 1)
    running = np.cumsum(prob, axis=1)[rows]
    u = usample[:, :1].astype(prob.dtype)
    count = (running <= u).sum(axis=1, keepdims=True)
    return np.minimum(count, prob.shape[1] - 1).astype(dtype)


_multinomial = register_op(
    "relax.multinomial_from_uniform",
    _infer_multinomial,
    _te_multinomial,
    _np_multinomial,
    OpPattern.OPAQUE,
)


def multinomial_from_uniform(
    prob: Expr, uniform_sample: Expr, sample_indices: Expr, dtype: str = "int64"
) -> Call:
    """Row i: the token drawn from `prob[sample_indices[i]]` by `uniform_sample[i]` in [0, 1)."""
    attrs = {"dtype": str(DataType(dtype))}
    return make_call(_multinomial, (prob, uniform_sample, sample_indices), attrs)


NOT_DIFFERENTIABLE.update(_reasons({"multinomial_from_uniform": "integer indices result"}))
for _name in ("relax.nn.prelu", "relax.nn.rms_norm"):  # nn_a3's ops, unless a rule exists
    if OP_TABLE[_name].grad is None:
        NO_GRAD_RULE[_name] = "no rule yet"

__all__ = ["multinomial_from_uniform"]
