"""Training on the graph IR (TVM's `relax.training`): losses, optimizers, AppendLoss,
SetupTrainer, Trainer; checkpoints as .npz / .safetensors (checkpoint.py)."""

from . import checkpoint, loss, optimizer, trainer, utils
from .checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from .optimizer import SGD, Adam, InPlaceUpdate, MomentumSGD, Optimizer
from .setup_trainer import SetupTrainer
from .trainer import Trainer
from .utils import AppendLoss

__all__ = [
    "SGD",
    "Adam",
    "AppendLoss",
    "CheckpointError",
    "InPlaceUpdate",
    "MomentumSGD",
    "Optimizer",
    "SetupTrainer",
    "Trainer",
    "checkpoint",
    "load_checkpoint",
    "loss",
    "optimizer",
    "save_checkpoint",
    "trainer",
    "utils",
]
