"""Training on the graph IR: optimizers as relax functions with in-place parameter updates."""

from .optimizer import SGD, Adam, InPlaceUpdate, MomentumSGD, Optimizer

__all__ = ["SGD", "Adam", "InPlaceUpdate", "MomentumSGD", "Optimizer"]
