"""Train small classifiers with compiled graph programs: the library behind `minitvm train`.

A model is a tuple of layers (`Dense`, `Relu`, `Conv2d`, `MaxPool2d`, `Flatten`), with any number
of classes. `TrainingProgram` compiles ONE relax function `train_step` holding the forward pass,
the softmax cross-entropy, the backward pass (`relax.transform.gradient.backprop`, i.e. the op
table's gradient rules) and the optimizer update, plus a `predict` function; both run on the
relax VM. `train(..., checkpoint=PATH, resume=PATH)` saves and resumes parameters and optimizer
state as `.npz` (or `.safetensors`), never pickle.

Modules: layers.py (layers, models), data.py (data sets), program.py (the compiled step),
loop.py (the loop, checkpoints, plots), torch_trainer.py (`TorchTrainer`: train a torch
nn.Module through torch.export, one compiled program per step). `minitvm.train` and `minitvm.cli.training` are this
module under its older names.

>>> data = load_dataset("digits"); layers = build_model("mlp", data.image_shape)
>>> result = train(layers, data, TrainConfig(epochs=20, batch_size=32, lr=0.1))
"""

from __future__ import annotations

from ..relax.training.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from .data import DATASETS, Dataset, load_dataset
from .layers import (
    MODELS,
    NUM_CLASSES,
    Conv2d,
    Dense,
    Flatten,
    Layer,
    MaxPool2d,
    Relu,
    TrainError,
    build_model,
    describe_model,
    forward,
    init_params,
    param_names,
)
from .loop import (
    CHECKPOINT_KIND,
    DEFAULTS,
    EpochStats,
    ProgressBar,
    TrainConfig,
    TrainResult,
    _import_pyplot,  # noqa: F401 (the CLI checks matplotlib before training)
    default_config,
    load_training_checkpoint,
    plot_curves,
    save_training_checkpoint,
    train,
)
from .program import OPTIMIZERS, TrainingProgram, evaluate
from .torch_export import torch_backbone
from .torch_trainer import TorchTrainer, make_optimizer

__all__ = [
    "CHECKPOINT_KIND",
    "DATASETS",
    "DEFAULTS",
    "MODELS",
    "NUM_CLASSES",
    "OPTIMIZERS",
    "CheckpointError",
    "Conv2d",
    "Dataset",
    "Dense",
    "EpochStats",
    "Flatten",
    "Layer",
    "MaxPool2d",
    "ProgressBar",
    "Relu",
    "TorchTrainer",
    "TrainConfig",
    "TrainError",
    "TrainResult",
    "TrainingProgram",
    "build_model",
    "default_config",
    "describe_model",
    "evaluate",
    "forward",
    "init_params",
    "load_checkpoint",
    "load_dataset",
    "load_training_checkpoint",
    "make_optimizer",
    "param_names",
    "plot_curves",
    "save_checkpoint",
    "save_training_checkpoint",
    "torch_backbone",
    "train",
]
