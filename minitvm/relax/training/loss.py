"""Loss functions as relax functions (TVM's `relax.training.loss`): `L1Loss`, `MSELoss`,
`CrossEntropyLoss`, `CategoricalCrossEntropyLoss`.

A loss object is called with the struct infos (or Vars) of its arguments and returns a relax
Function named after the loss (`"mse_loss"`, ...) whose result is the reduced loss:

    loss = MSELoss(reduction="sum")(pred_sinfo, target_sinfo)
    mod = AppendLoss("backbone", loss)(mod)

`reduction` is "mean" (of every element, as torch's elementwise losses), "sum" or "none".
CrossEntropyLoss is log_softmax + nll_loss on class indices (torch's cross_entropy, with
`weights` and `ignore_index`); CategoricalCrossEntropyLoss takes one-hot integer targets and
reduces -log_softmax * targets elementwise (with `ignore_index >= 0`: the arg-max class goes
through nll_loss).
"""

from __future__ import annotations

from typing import Any

from ...error import DTypeError, TVMError
from .. import op as R
from ..block_builder import BlockBuilder
from ..expr import Function, Var
from ..struct_info import StructInfo, TensorStructInfo

REDUCTIONS = ("mean", "sum", "none")


class LossError(TVMError, ValueError):
    """A loss configured or called wrongly (reduction, argument kinds)."""


def _param(value: Any, name: str) -> Var:
    """A fresh Var for a loss argument given as a StructInfo (named `name`) or a Var (its name)."""
    if isinstance(value, StructInfo):
        return Var(name, value)
    if isinstance(value, Var):
        return Var(value.name_hint, value.struct_info)
    raise LossError(
        f"loss argument {name!r} must be a relax Var or a StructInfo, got {type(value).__name__}"
    )


class Loss:
    """Base class: a name, how many backbone outputs the loss reads, and the reduction."""

    def __init__(self, loss_name: str, num_backbone_outputs: int, reduction: str = "mean") -> None:
        if reduction not in REDUCTIONS:
            raise LossError(
                f"{loss_name}: reduction {reduction!r} is not one of {', '.join(REDUCTIONS)}"
            )
        self._loss_name = loss_name
        self._num_backbone_outputs = num_backbone_outputs
        self._reduction = reduction

    @property
    def num_backbone_outputs(self) -> int:
        """How many of the backbone's outputs are the loss's predictions (see AppendLoss)."""
        return self._num_backbone_outputs

    def _with_reduction(self, bb: BlockBuilder, expr: Var) -> Any:
        if self._reduction == "sum":
            return R.sum(expr)
        if self._reduction == "mean":
            return R.mean(expr)
        return expr

    def _function(self, params: list[Var], body: Any) -> Function:
        """Build `self._loss_name(*params)`; `body(bb)` emits the bindings and returns the loss."""
        bb = BlockBuilder()
        with bb.function(self._loss_name, params):
            with bb.dataflow():
                out = bb.emit_output(body(bb))
            bb.emit_func_output(out)
        return bb.get()[self._loss_name]


class _DifferenceLoss(Loss):
    """A loss computed elementwise from `predictions - targets` (`_of_difference`), reduced."""

    def __call__(self, predictions: Any, targets: Any) -> Function:
        p, t = _param(predictions, "predictions"), _param(targets, "targets")

        def body(bb: BlockBuilder) -> Any:
            diff = bb.emit(R.subtract(p, t))
            return self._with_reduction(bb, bb.emit(self._of_difference(diff)))

        return self._function([p, t], body)

    def _of_difference(self, diff: Var) -> Any:
        raise NotImplementedError


class L1Loss(_DifferenceLoss):
    """|predictions - targets|, reduced."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__("l1_loss", 1, reduction)

    def _of_difference(self, diff: Var) -> Any:
        return R.abs(diff)


class MSELoss(_DifferenceLoss):
    """(predictions - targets)^2, reduced."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__("mse_loss", 1, reduction)

    def _of_difference(self, diff: Var) -> Any:
        return R.multiply(diff, diff)


class CrossEntropyLoss(Loss):
    """nll_loss(log_softmax(predictions), targets, weights): targets are class indices."""

    def __init__(self, reduction: str = "mean", ignore_index: int = -100) -> None:
        super().__init__("cross_entropy_loss", 1, reduction)
        self.ignore_index = int(ignore_index)

    def __call__(self, predictions: Any, targets: Any, weights: Any = None) -> Function:
        p, t = _param(predictions, "predictions"), _param(targets, "targets")
        w = _param(weights, "weights") if weights is not None else None

        def body(bb: BlockBuilder) -> Any:
            logp = bb.emit(R.nn.log_softmax(p))
            return R.nn.nll_loss(logp, t, w, self._reduction, self.ignore_index)

        return self._function([p, t] + ([w] if w is not None else []), body)


class CategoricalCrossEntropyLoss(Loss):
    """Cross entropy against one-hot integer targets (N, C): reduce(-log_softmax(p) * targets
    [* weights]) elementwise; with ignore_index >= 0, nll_loss of the arg-max class."""

    def __init__(self, reduction: str = "mean", ignore_index: int = -100) -> None:
        super().__init__("categorical_cross_entropy_loss", 1, reduction)
        self.ignore_index = int(ignore_index)

    def __call__(self, predictions: Any, targets: Any, weights: Any = None) -> Function:
        sinfo = (
            targets if isinstance(targets, StructInfo) else getattr(targets, "struct_info", None)
        )
        dtype = getattr(sinfo, "dtype", None)
        if not isinstance(sinfo, TensorStructInfo) or dtype is None or not dtype.is_integer:
            raise DTypeError(
                f"{self._loss_name}: targets must be one-hot int/uint tensors, got {sinfo}"
            )
        p, t = _param(predictions, "predictions"), _param(targets, "targets")
        w = _param(weights, "weights") if weights is not None else None

        def body(bb: BlockBuilder) -> Any:
            logp = bb.emit(R.nn.log_softmax(p))
            if self.ignore_index >= 0:
                labels = bb.emit(R.argmax(t, axis=1))
                labels = bb.emit(R.reshape(labels, (t.struct_info.shape[0],)))
                return R.nn.nll_loss(logp, labels, w, self._reduction, self.ignore_index)
            neg = bb.emit(R.negative(logp))
            per = bb.emit(R.multiply(neg, bb.emit(R.astype(t, "float32"))))
            if w is not None:
                per = bb.emit(R.multiply(per, w))
            return self._with_reduction(bb, per)

        return self._function([p, t] + ([w] if w is not None else []), body)


__all__ = [
    "CategoricalCrossEntropyLoss",
    "CrossEntropyLoss",
    "L1Loss",
    "Loss",
    "LossError",
    "MSELoss",
]
