"""`relay.nn.nll_loss`: negative log-likelihood (a row onto relax.nn.nll_loss)."""

from __future__ import annotations

from ...error import OpNotImplemented
from ...relax import op as rop
from ..expr import Expr
from ._registry import call, register

_REDUCTIONS = ("mean", "sum", "none")

register(
    "nn.nll_loss",
    lambda emit, args, attrs: rop.nn.nll_loss(*args, attrs.reduction, attrs.ignore_index),
)


def nll_loss(
    predictions: Expr,
    targets: Expr,
    weights: Expr,
    reduction: str = "mean",
    ignore_index: int = -100,
) -> Expr:
    """-weights[t] * predictions[n, t, ...] for each target t (targets equal to ignore_index
    count 0), then "mean" (over the summed weights of counted targets), "sum" or "none"."""
    if reduction not in _REDUCTIONS:
        raise OpNotImplemented(
            f"nn.nll_loss: reduction {reduction!r}; use one of {list(_REDUCTIONS)}"
        )
    attrs = {"reduction": reduction, "ignore_index": int(ignore_index)}
    return call("nn.nll_loss", (predictions, targets, weights), attrs)
