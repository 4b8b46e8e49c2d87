"""Matrix multiplication with numpy semantics (batched, broadcasting batch dims, 1-D operands)."""

from __future__ import annotations

from typing import Any

from .. import te
from ..error import TEError
from ..tir.expr import PrimExpr
from ..tir.expr import cast as tir_cast
from .broadcast import broadcast_index, broadcast_shape
from .utils import fmt_dim, fmt_shape, is_one, prove_equal


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


_ELLIPSIS_LABELS = "0123456789"  # stand-ins for the dims under "..." (never letters)


def parse_einsum(subscripts: str, ranks: list[int], what: str = "einsum") -> tuple[list[str], str]:
    """(one label string per operand, output labels) with "..." expanded into digit labels.

    Without "->" the output is numpy's: the ellipsis dims, then the labels used once, sorted."""
    spec = subscripts.replace(" ", "")
    lhs, arrow, rhs = spec.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise TEError(
            f"{what}: subscripts {subscripts!r} name {len(terms)} operands, but {len(ranks)} "
            "were given"
        )
    n_ell = 0
    inputs = []
    for term, rank in zip(terms, ranks):
        letters = term.replace("...", "")
        if not letters.isalpha() and letters:
            raise TEError(f"{what}: subscripts {subscripts!r}: labels must be letters")
        if "..." in term:
            k = rank - len(letters)
            if k < 0:
                raise TEError(
                    f"{what}: term {term!r} has more labels than its operand's rank {rank}"
                )
            n_ell = max(n_ell, k)
            term = term.replace("...", _ELLIPSIS_LABELS[10 - k :] if k else "")
        elif len(term) != rank:
            raise TEError(
                f"{what}: term {term!r} of subscripts {subscripts!r} has {len(term)} labels, but "
                f"its operand has rank {rank}"
            )
        inputs.append(term)
    ell = _ELLIPSIS_LABELS[10 - n_ell :] if n_ell else ""
    if arrow:
        if not rhs.replace("...", "").isalpha() and rhs.replace("...", ""):
            raise TEError(f"{what}: output {rhs!r} of {subscripts!r}: labels must be letters")
        out = rhs.replace("...", ell)
        used = set("".join(inputs))
        unknown = [c for c in out if c not in used]
        if unknown or len(set(out)) != len(out):
            raise TEError(
                f"{what}: output {rhs!r} of {subscripts!r} must name distinct input labels"
            )
    else:
        counts = {c: "".join(inputs).count(c) for c in set("".join(inputs)) if c.isalpha()}
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1))
    return inputs, out


def einsum_dims(inputs: list[str], shapes: list, what: str = "einsum") -> dict:
    """label -> its extent; a label's dims must agree (a 1 broadcasts)."""
    dims: dict = {}
    for term, shape in zip(inputs, shapes):
        for label, d in zip(term, shape):
            if label not in dims or is_one(dims[label]):
                dims[label] = d
            elif not is_one(d) and not prove_equal(dims[label], d):
                raise TEError(
                    f"{what}: label {label if label.isalpha() else '...'!r} has extent "
                    f"{fmt_dim(dims[label])} in one operand and {fmt_dim(d)} in another"
                )
    return dims


def einsum(subscripts: str, *operands: te.Tensor) -> te.Tensor:
    """`numpy.einsum(subscripts, *operands)`: products over shared labels, sums over those
    missing from the output; "..." broadcasts."""
    inputs, out = parse_einsum(subscripts, [len(t.shape) for t in operands], "topi.einsum")
    dims = einsum_dims(inputs, [t.shape for t in operands], "topi.einsum")
    reduced = sorted({c for term in inputs for c in term} - set(out))
    raxes = {c: te.reduce_axis((0, dims[c]), f"k_{c}") for c in reduced}

    def body(*idx: Any) -> PrimExpr:
        var = dict(zip(out, idx)) | raxes
        value = None
        for t, term in zip(operands, inputs):
            index = tuple(
                0 if is_one(d) and not is_one(dims[c]) else var[c] for c, d in zip(term, t.shape)
            )
            value = t[index] if value is None else value * t[index]
        return te.sum(value, axis=list(raxes.values())) if raxes else value

    return te.compute(tuple(dims[c] for c in out), body, name="T_einsum", tag="einsum")
