"""TVM's token-sampling ops of `nn.op`: draw from a distribution with a given uniform sample, and
the top-p / top-k (nucleus) variants that work on probabilities sorted in descending order.

All three share one rule. For a non-decreasing running sum `c` of a row and a threshold `t`,
the chosen position is the number of entries with `c[j] <= t`, capped at the last position: the
first j whose running sum passes t. The top-p/top-k cut keeps position j while
`c[j] < top_p and j + 1 < top_k`; those positions form a prefix, and the cut sits at its length.
The TE kernels below compute these counts with a reduction (no data-dependent loops).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .... import te, tir
from ....error import DTypeError, ShapeError
from ... import op as _op
from .core import Tensor, wrap_nested
from .op import cumsum, sum, tensor_expr_op


def _check_tensors(what: str, **tensors: Any) -> None:
    for name, t in tensors.items():
        if not isinstance(t, Tensor) or t.ndim != 2:
            got = getattr(t, "shape", type(t).__name__)
            raise ShapeError(f"nn.op.{what}: {name} must be a 2-D nn.Tensor, got {got}")


def _default_indices(what: str, batch: Any, usample: Tensor, indices: Tensor | None) -> Tensor:
    """sample_indices, or row i samples distribution i when they are not given."""
    if indices is not None:
        _check_tensors(what, sample_indices=indices)
        if list(indices.shape) != list(usample.shape):
            raise ShapeError(
                f"nn.op.{what}: sample_indices {indices.shape} must have uniform_sample's shape "
                f"{usample.shape}"
            )
        return indices
    n = usample.shape[0]
    if not isinstance(n, int) or not isinstance(batch, int) or n != batch:
        raise ShapeError(
            f"nn.op.{what}: without sample_indices there must be one uniform sample per "
            f"distribution: {n} samples for {batch} distributions; pass sample_indices"
        )
    return Tensor.from_const(np.arange(n, dtype="int64").reshape(n, 1))


def multinomial_from_uniform(
    prob: Tensor,
    uniform_sample: Tensor,
    sample_indices: Tensor | None = None,
    dtype: str = "int64",
    name: str = "multinomial_from_uniform",
) -> Tensor:
    """(n, 1) token ids: row i drawn from `prob[sample_indices[i]]` by `uniform_sample[i]`."""
    what = "multinomial_from_uniform"
    _check_tensors(what, prob=prob, uniform_sample=uniform_sample)
    indices = _default_indices(what, prob.shape[0], uniform_sample, sample_indices)
    call = _op.multinomial_from_uniform(prob._expr, uniform_sample._expr, indices._expr, dtype)
    return wrap_nested(call, name)


def _keep_count(running: Any, top_p: Any, top_k: Any, row: Any, vocab: Any) -> Any:
    """How many leading positions of `row` the top-p/top-k cut keeps (a TE reduction)."""
    j = te.reduce_axis((0, vocab), "j")
    keep = tir.all(running[row, j] < top_p[row, 0], tir.Cast(top_k.dtype, j + 1) < top_k[row, 0])
    one, zero = tir.const(1, "int64"), tir.const(0, "int64")
    return te.sum(tir.Select(keep, one, zero), axis=j)


def _cut_value(values: Any, running: Any, top_p: Any, top_k: Any, name: str) -> Any:
    """(batch, 1): `values[b, cut]`, the entry at the cut position of each row."""
    batch, vocab = running.shape
    count = te.compute(
        (batch, 1), lambda b, _: _keep_count(running, top_p, top_k, b, vocab), name=f"{name}_n"
    )
    last = tir.Cast("int64", vocab - 1)
    return te.compute((batch, 1), lambda b, _: values[b, tir.min(count[b, 0], last)], name=name)


def _check_dtypes(what: str, same: dict[str, Tensor], top_k: Tensor) -> None:
    dtypes = {n: t.dtype for n, t in same.items()}
    if len(set(dtypes.values())) != 1:
        raise DTypeError(f"nn.op.{what}: {dtypes} must share one float dtype")
    if not str(top_k.dtype).startswith(("int", "uint")):
        raise DTypeError(f"nn.op.{what}: top_k has dtype {top_k.dtype}; it must be an integer")


def sample_top_p_top_k_from_sorted_prob(
    sorted_prob: Tensor,
    sorted_index: Tensor,
    top_p: Tensor,
    top_k: Tensor,
    uniform_sample: Tensor,
    sample_indices: Tensor | None = None,
) -> Tensor:
    """(n, 1) token ids drawn by nucleus sampling: row i keeps the first positions of its sorted
    distribution (running sum below top_p, fewer than top_k of them), renormalises them and
    returns `sorted_index` at the position `uniform_sample[i]` falls in."""
    what = "sample_top_p_top_k_from_sorted_prob"
    _check_tensors(
        what, sorted_prob=sorted_prob, sorted_index=sorted_index, top_p=top_p, top_k=top_k
    )
    _check_tensors(what, uniform_sample=uniform_sample)
    same = {"sorted_prob": sorted_prob, "top_p": top_p, "uniform_sample": uniform_sample}
    _check_dtypes(what, same, top_k)
    indices = _default_indices(what, sorted_prob.shape[0], uniform_sample, sample_indices)
    running = cumsum(sorted_prob, axis=1)

    def renorm(running: Any, top_p: Any, top_k: Any) -> Any:
        return _cut_value(running, running, top_p, top_k, "get_renorm_prob")

    total = tensor_expr_op(renorm, "get_renorm_prob", [running, top_p, top_k])

    def pick(running: Any, index: Any, total: Any, usample: Any, rows: Any) -> Any:
        batch, vocab = running.shape
        k = te.reduce_axis((0, vocab), "k")

        def count(i: Any, _: Any) -> Any:
            row = tir.max(tir.min(tir.Cast("int64", rows[i, 0]), batch - 1), 0)
            passed = running[row, k] / total[row, 0] <= usample[i, 0]
            return te.sum(tir.Select(passed, tir.const(1, "int64"), tir.const(0, "int64")), k)

        n = te.compute((usample.shape[0], 1), count, name="sample_count")
        last = tir.Cast("int64", vocab - 1)

        def body(i: Any, _: Any) -> Any:
            row = tir.max(tir.min(tir.Cast("int64", rows[i, 0]), batch - 1), 0)
            return index[row, tir.min(n[i, 0], last)]

        return te.compute((usample.shape[0], 1), body, name="get_index_from_sorted")

    args = [running, sorted_index, total, uniform_sample, indices]
    return tensor_expr_op(pick, "get_index_from_sorted", args)


def renormalize_top_p_top_k_prob(
    prob: Tensor, sorted_prob: Tensor, top_p: Tensor, top_k: Tensor
) -> Tensor:
    """`prob` with the entries below the top-p/top-k cut set to 0, each row rescaled to sum 1.
    The cut is the sorted probability at the cut position, so ties with it are kept."""
    what = "renormalize_top_p_top_k_prob"
    _check_tensors(what, prob=prob, sorted_prob=sorted_prob, top_p=top_p, top_k=top_k)
    _check_dtypes(what, {"prob": prob, "sorted_prob": sorted_prob, "top_p": top_p}, top_k)
    if list(prob.shape) != list(sorted_prob.shape):
        raise ShapeError(
            f"nn.op.{what}: prob {prob.shape} and sorted_prob {sorted_prob.shape} must have the "
            "same shape"
        )
    running = cumsum(sorted_prob, axis=1)

    def cutoff(sorted_prob: Any, running: Any, top_p: Any, top_k: Any) -> Any:
        return _cut_value(sorted_prob, running, top_p, top_k, "get_renorm_cutoff")

    cut = tensor_expr_op(cutoff, "get_renorm_cutoff", [sorted_prob, running, top_p, top_k])

    def keep(prob: Any, cut: Any) -> Any:
        zero = tir.const(0, prob.dtype)

        def body(i: Any, j: Any) -> Any:
            return tir.Select(prob[i, j] >= cut[i, 0], prob[i, j], zero)

        return te.compute(prob.shape, body, name="filter_with_top_p_top_k")

    kept = tensor_expr_op(keep, "filter_with_top_p_top_k", [prob, cut])
    return kept / sum(kept, axis=1, keepdims=True)


__all__ = [
    "multinomial_from_uniform",
    "renormalize_top_p_top_k_prob",
    "sample_top_p_top_k_from_sorted_prob",
]
