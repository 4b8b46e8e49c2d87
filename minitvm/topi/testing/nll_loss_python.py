"""numpy reference of nll_loss (PyTorch's NLLLoss with class weights)."""

from __future__ import annotations

import numpy as np


def nll_loss(
    predictions: np.ndarray,
    targets: np.ndarray,
    weights: np.ndarray,
    reduction: str = "mean",
    ignore_index: int = -100,
) -> np.ndarray:
    """-weights[t] * predictions[n, t, ...] per target t (0 where t == ignore_index), then
    "mean" (divided by the weights of the counted targets), "sum" or "none"."""
    counted = targets != ignore_index
    t = np.where(counted, targets, 0)
    picked = np.take_along_axis(predictions, np.expand_dims(t, 1), axis=1).squeeze(1)
    w = np.where(counted, weights[t], 0).astype(predictions.dtype)
    losses = -picked * w
    if reduction == "none":
        return losses
    if reduction == "sum":
        return np.sum(losses)
    return np.sum(losses) / np.sum(w)
