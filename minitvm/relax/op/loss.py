"""Loss ops: `relax.nn.nll_loss`, its backward op `relax.grad.nll_loss_backward`, and
`relax.nn.cross_entropy_with_logits`; each one op-table row (shape rule, TE, numpy reference).

nll_loss follows `torch.nn.functional.nll_loss` (and TVM): predictions (N, C, d1, ...) or (C,),
integer targets (N, d1, ...) or (), optional per-class weights (C,); a target equal to
`ignore_index` contributes nothing (and no weight to the mean's denominator); any other target
outside [0, C) is an error of the compiled code (the index check), never a wrong loss.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te
from ...error import ShapeError
from ...tir import op as tir_op
from ...tir.expr import cast as tir_cast
from ...tir.expr import make_const
from ...topi.utils import fmt_shape, prove_equal
from ...topi.utils import prod as dims_prod
from ..expr import Call, Expr
from ..struct_info import StructInfo, TensorStructInfo
from . import _infer as I
from ._table import OpPattern, make_call, register_op

REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(name: str, reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise ShapeError(f"{name}: reduction {reduction!r} is not one of {', '.join(REDUCTIONS)}")


def _class_layout(pshape: Any) -> tuple[int, tuple]:
    """(number of classes C, the targets' shape) of predictions of shape (C,) or (N, C, ...)."""
    if len(pshape) == 1:
        return pshape[0], ()
    return pshape[1], (pshape[0], *pshape[2:])


def _infer_nll(call: Call) -> StructInfo:
    name = "relax.nn.nll_loss"
    pred = I.tensor_arg(call, 0, "predictions")
    tgt = I.tensor_arg(call, 1, "targets")
    I.require_float(call, pred, "predictions")
    if tgt.dtype is not None and not tgt.dtype.is_integer:
        raise ShapeError(
            f"{name}: targets must be an integer tensor of class indices, got {tgt.dtype}"
        )
    _check_reduction(name, call.attrs["reduction"])
    if pred.ndim == 0:
        raise ShapeError(f"{name}: predictions is a scalar; it needs shape (C,) or (N, C, ...)")
    if pred.shape is not None and tgt.shape is not None:
        classes, want = _class_layout(pred.shape)
        if len(want) != len(tgt.shape) or not all(
            prove_equal(a, b) for a, b in zip(want, tgt.shape)
        ):
            raise ShapeError(
                f"{name}: targets have shape {fmt_shape(tgt.shape)}, predictions of shape "
                f"{fmt_shape(pred.shape)} need targets of shape {fmt_shape(want)}"
            )
        if len(call.args) > 2:
            w = I.tensor_arg(call, 2, "weights")
            if w.shape is not None and (len(w.shape) != 1 or not prove_equal(w.shape[0], classes)):
                raise ShapeError(
                    f"{name}: weights have shape {fmt_shape(w.shape)}, expected ({classes},) "
                    "(one weight per class)"
                )
    if call.attrs["reduction"] != "none":
        return TensorStructInfo((), pred.dtype)
    return TensorStructInfo(tgt.shape, pred.dtype, tgt.ndim)


def _pick(pred: te.Tensor, targets: te.Tensor, idx: tuple, ignore_index: int) -> tuple:
    """(is counted, class position) of target `idx`; ignored targets read class 0, an index
    outside [0, C) is sent outside the data (the compiled index check turns it into an error)."""
    classes = pred.shape[0] if len(pred.shape) == 1 else pred.shape[1]
    raw = tir_cast(classes.dtype, targets[idx] if idx else targets[()])
    counted = raw != make_const(classes.dtype, ignore_index)
    outside = -dims_prod(pred.shape)
    valid = tir_op.all(raw >= 0, raw < classes)
    pos = tir_op.if_then_else(counted, tir_op.if_then_else(valid, raw, outside), 0)
    return counted, pos


def _pred_at(pred: te.Tensor, idx: tuple, pos: Any) -> Any:
    return pred[(pos,)] if len(pred.shape) == 1 else pred[(idx[0], pos, *idx[1:])]


def _te_nll_loss(pred, targets, weights=None, reduction="mean", ignore_index=-100):
    zero = make_const(pred.dtype, 0)

    def weight(pos: Any) -> Any:
        return weights[pos] if weights is not None else make_const(pred.dtype, 1)

    def per_item(*idx: Any) -> tuple:
        counted, pos = _pick(pred, targets, tuple(idx), ignore_index)
        w = tir_op.if_then_else(counted, weight(pos), zero)
        return w, w * -_pred_at(pred, tuple(idx), pos)

    tshape = tuple(targets.shape)
    losses = te.compute(tshape, lambda *i: per_item(*i)[1], name="nll_loss_items")
    if reduction == "none":
        return losses
    wts = te.compute(tshape, lambda *i: per_item(*i)[0], name="nll_loss_weights")
    raxes = [te.reduce_axis((0, d), f"r{k}") for k, d in enumerate(tshape)]
    total = te.compute((), lambda: te.sum(losses[tuple(raxes)], axis=raxes), name="nll_loss_sum")
    if reduction == "sum":
        return total
    raxes2 = [te.reduce_axis((0, d), f"q{k}") for k, d in enumerate(tshape)]
    wsum = te.compute((), lambda: te.sum(wts[tuple(raxes2)], axis=raxes2), name="nll_loss_wsum")
    return te.compute((), lambda: total[()] / wsum[()], name="nll_loss_mean")


def _np_pick(pred: np.ndarray, targets: np.ndarray, weights: Any, ignore_index: int):
    """(per-item weight, per-item picked prediction, class index) as float64 arrays."""
    classes = pred.shape[0] if pred.ndim == 1 else pred.shape[1]
    t = np.asarray(targets).astype(np.int64)
    counted = t != ignore_index
    if np.any((t[counted] < 0) | (t[counted] >= classes)):
        raise ShapeError(
            f"relax.nn.nll_loss: a target is outside [0, {classes}) (and not ignore_index "
            f"{ignore_index}); targets are class indices"
        )
    pos = np.where(counted, t, 0)
    w = np.ones(classes) if weights is None else np.asarray(weights, np.float64)
    p = pred.astype(np.float64)
    picked = p[pos] if pred.ndim == 1 else np.take_along_axis(p, np.expand_dims(pos, 1), 1)[:, 0]
    return np.where(counted, w[pos], 0.0), picked, pos


def _np_nll_loss(pred, targets, weights=None, reduction="mean", ignore_index=-100):
    w, picked, _ = _np_pick(pred, targets, weights, ignore_index)
    losses = -w * picked
    out = {"none": losses, "sum": losses.sum(), "mean": losses.sum() / w.sum()}[reduction]
    return np.asarray(out, dtype=pred.dtype)


_nll_loss = register_op(
    "relax.nn.nll_loss", _infer_nll, _te_nll_loss, _np_nll_loss, OpPattern.OPAQUE
)


def nll_loss(
    predictions: Expr,
    targets: Expr,
    weights: Expr | None = None,
    reduction: str = "mean",
    ignore_index: int = -100,
) -> Call:
    """Negative log-likelihood: -weights[t] * predictions[n, t] per target t, then reduced
    ("mean": divided by the summed weights of the counted targets, "sum", "none")."""
    _check_reduction("relax.nn.nll_loss", reduction)
    args = (predictions, targets) if weights is None else (predictions, targets, weights)
    return make_call(_nll_loss, args, {"reduction": reduction, "ignore_index": int(ignore_index)})


# ----------------------------------------------------------------------------- backward


def _infer_nll_backward(call: Call) -> StructInfo:
    pred = I.tensor_arg(call, 1, "predictions")
    return TensorStructInfo(pred.shape, pred.dtype, pred.ndim)


def _te_nll_backward(g, pred, targets, weights=None, reduction="mean", ignore_index=-100):
    zero = make_const(pred.dtype, 0)
    one = make_const(pred.dtype, 1)
    tshape = tuple(targets.shape)

    def item(idx: tuple) -> tuple:
        counted, pos = _pick(pred, targets, idx, ignore_index)
        w = weights[pos] if weights is not None else one
        return counted, pos, tir_op.if_then_else(counted, w, zero)

    scale = None
    if reduction == "mean":
        wts = te.compute(tshape, lambda *i: item(tuple(i))[2], name="nll_grad_weights")
        raxes = [te.reduce_axis((0, d), f"r{k}") for k, d in enumerate(tshape)]
        wsum = te.compute((), lambda: te.sum(wts[tuple(raxes)], axis=raxes), name="nll_grad_wsum")
        scale = te.compute((), lambda: g[()] / wsum[()], name="nll_grad_scale")

    def body(*idx: Any) -> Any:
        tidx = (idx[0], *idx[2:]) if len(pred.shape) > 1 else ()
        cls = idx[1] if len(pred.shape) > 1 else idx[0]
        counted, pos, w = item(tidx)
        gi = {"none": lambda: g[tidx], "sum": lambda: g[()], "mean": lambda: scale[()]}[reduction]()
        return tir_op.if_then_else(tir_op.all(counted, pos == cls), -w * gi, zero)

    return te.compute(tuple(pred.shape), body, name="T_nll_loss_backward")


def _np_nll_backward(g, pred, targets, weights=None, reduction="mean", ignore_index=-100):
    w, _, pos = _np_pick(pred, targets, weights, ignore_index)
    gi = np.asarray(g, np.float64)
    if reduction == "mean":
        gi = gi / w.sum()
    per_item = -w * gi  # broadcast: g is a scalar unless reduction is "none"
    out = np.zeros(pred.shape, np.float64)
    if pred.ndim == 1:
        out[pos] = per_item
    else:
        np.put_along_axis(out, np.expand_dims(pos, 1), np.expand_dims(per_item, 1), 1)
    return out.astype(pred.dtype)


_nll_loss_backward = register_op(
    "relax.grad.nll_loss_backward",
    _infer_nll_backward,
    _te_nll_backward,
    _np_nll_backward,
    OpPattern.OPAQUE,
)


def nll_loss_backward(
    output_grad: Expr,
    predictions: Expr,
    targets: Expr,
    weights: Expr | None = None,
    reduction: str = "mean",
    ignore_index: int = -100,
) -> Call:
    """The gradient of nll_loss with respect to predictions, given the loss's `output_grad`."""
    args = (output_grad, predictions, targets) + (() if weights is None else (weights,))
    attrs = {"reduction": reduction, "ignore_index": int(ignore_index)}
    return make_call(_nll_loss_backward, args, attrs)


# ----------------------------------------------------------------------------- cross entropy


def _infer_ce(call: Call) -> StructInfo:
    pred = I.tensor_arg(call, 0, "predictions")
    labels = I.tensor_arg(call, 1, "labels")
    dtype = I.same_dtype(call, [("predictions", pred), ("labels", labels)])
    both = pred.shape is not None and labels.shape is not None
    if both and (
        len(pred.shape) != len(labels.shape)
        or not all(prove_equal(a, b) for a, b in zip(pred.shape, labels.shape))
    ):
        raise ShapeError(
            f"relax.nn.cross_entropy_with_logits: predictions {fmt_shape(pred.shape)} and "
            f"labels {fmt_shape(labels.shape)} must have the same shape"
        )
    if pred.ndim not in (-1, 1, 2):
        raise ShapeError(
            "relax.nn.cross_entropy_with_logits: predictions must be (C,) or (N, C), "
            f"got rank {pred.ndim}"
        )
    return TensorStructInfo((), dtype)


def _te_ce(pred, labels):
    raxes = [te.reduce_axis((0, d), f"r{k}") for k, d in enumerate(pred.shape)]
    total = te.compute(
        (), lambda: te.sum(pred[tuple(raxes)] * labels[tuple(raxes)], axis=raxes), name="ce_sum"
    )
    n = pred.shape[0] if len(pred.shape) == 2 else 1
    return te.compute((), lambda: -total[()] / tir_cast(pred.dtype, n), name="T_cross_entropy")


def _np_ce(pred, labels):
    n = pred.shape[0] if pred.ndim == 2 else 1
    total = -(pred.astype(np.float64) * labels).sum() / n
    return np.asarray(total, dtype=pred.dtype)


_cross_entropy = register_op(
    "relax.nn.cross_entropy_with_logits", _infer_ce, _te_ce, _np_ce, OpPattern.OPAQUE
)


def cross_entropy_with_logits(predictions: Expr, labels: Expr) -> Call:
    """-sum(predictions * labels) / N for (N, C) inputs (no division for (C,)): cross entropy
    of log-probabilities `predictions` against (soft) labels."""
    return make_call(_cross_entropy, (predictions, labels))


__all__ = ["cross_entropy_with_logits", "nll_loss", "nll_loss_backward"]
