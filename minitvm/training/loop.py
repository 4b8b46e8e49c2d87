"""The training loop behind `minitvm train`: configuration, epochs, progress, checkpoints, plots."""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from ..relax.training.checkpoint import (
    CheckpointError,
    check_arrays_match,
    check_path,
    load_checkpoint,
    save_checkpoint,
)
from ..runtime import nd
from ..testing import datasets
from .data import Dataset
from .layers import Conv2d, Layer, TrainError, describe_model, init_params
from .program import TrainingProgram, evaluate

CHECKPOINT_KIND = "minitvm-train-checkpoint"  # the `kind` field a checkpoint of `train` has


class ProgressBar:
    """tqdm when installed, else a small text bar; draws only on a terminal (stderr)."""

    def __init__(self, total: int, desc: str, stream: TextIO | None = None) -> None:
        self.total, self.desc, self.n = total, desc, 0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self._tqdm = None
        if self.enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self._tqdm = tqdm(total=total, desc=desc, file=self.stream, leave=False)

    def update(self, n: int = 1, **postfix: Any) -> None:
        self.n += n
        if not self.enabled:
            return
        if self._tqdm is not None:
            self._tqdm.update(n)
            if postfix:
                self._tqdm.set_postfix(postfix, refresh=False)
            return
        width = 30
        done = int(width * self.n / max(self.total, 1))
        extra = "  ".join(f"{k} {v}" for k, v in postfix.items())
        self.stream.write(f"\r{self.desc} [{'#' * done}{'.' * (width - done)}] "
                          f"{self.n}/{self.total} {extra}")  # fmt: skip
        self.stream.flush()

    def close(self) -> None:
        if not self.enabled:
            return
        if self._tqdm is not None:
            self._tqdm.close()
        else:
            self.stream.write("\r" + " " * 79 + "\r")
            self.stream.flush()


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 20
    batch_size: int = 32
    lr: float = 0.1
    optimizer: str = "sgd"
    seed: int = 0


# (model, data set) -> default (epochs, batch size, learning rate, optimizer); "*" matches any
# data set. The digits defaults reach >= 95% validation accuracy in a few seconds.
DEFAULTS: dict[tuple[str, str], tuple[int, int, float, str]] = {
    ("logreg", "digits"): (20, 32, 0.2, "sgd"),
    ("mlp", "digits"): (20, 32, 0.1, "sgd"),
    ("cnn", "digits"): (15, 32, 0.05, "momentum"),
    ("logreg", "*"): (5, 100, 0.5, "sgd"),
    ("mlp", "*"): (10, 100, 0.1, "sgd"),
    ("cnn", "*"): (5, 100, 0.02, "momentum"),
}


def default_config(model: str, data: str) -> TrainConfig:
    """The defaults of `python -m minitvm train` for a model and a data set name (no `:ARG`)."""
    epochs, batch, lr, optimizer = DEFAULTS.get((model, data)) or DEFAULTS[(model, "*")]
    return TrainConfig(epochs, batch, lr, optimizer)


@dataclass(frozen=True)
class EpochStats:
    epoch: int
    loss: float
    train_acc: float
    val_acc: float
    seconds: float

    def line(self, epochs: int, val_name: str = "validation") -> str:
        val = "val" if val_name == "validation" else val_name
        return (
            f"epoch {self.epoch:>{len(str(epochs))}}/{epochs}  loss {self.loss:.4f}  "
            f"train acc {100 * self.train_acc:6.2f}%  {val} acc {100 * self.val_acc:6.2f}%  "
            f"time {self.seconds:.2f} s"
        )


@dataclass
class TrainResult:
    program: TrainingProgram
    params: list
    history: list[EpochStats] = field(default_factory=list)
    states: list = field(default_factory=list)

    @property
    def val_acc(self) -> float:
        return self.history[-1].val_acc if self.history else 0.0


def _as_input(x: np.ndarray, layers: Sequence[Layer], image_shape: tuple[int, ...]) -> np.ndarray:
    takes_images = any(isinstance(l, Conv2d) for l in layers)
    return x.reshape(len(x), *image_shape) if takes_images else x


# ----------------------------------------------------------------------------- checkpoints
def _state_names(n: int) -> list[str]:
    return [f"optim.{k}" for k in range(n)]


def save_training_checkpoint(
    path: str | os.PathLike,
    program: TrainingProgram,
    params: Sequence[Any],
    states: Sequence[Any],
    config: TrainConfig,
    history: Sequence[EpochStats],
) -> Path:
    """Parameters, optimizer state, configuration and history after `history[-1].epoch`."""
    arrays = dict(zip(program.param_names, params))
    arrays.update(zip(_state_names(len(states)), states))
    meta = {
        "kind": CHECKPOINT_KIND,
        "version": 1,
        "model": describe_model(program.layers),
        "num_classes": program.num_classes,
        "config": asdict(config),
        "epoch": history[-1].epoch if history else 0,
        "history": [asdict(s) for s in history],
    }
    return save_checkpoint(path, arrays, meta)


def _check_meta(path: Any, meta: dict, program: TrainingProgram, config: TrainConfig) -> int:
    if meta.get("kind") != CHECKPOINT_KIND or meta.get("version") != 1:
        raise CheckpointError(f"checkpoint '{path}' was not written by `minitvm train` (version 1)")
    if meta.get("model") != describe_model(program.layers):
        raise CheckpointError(
            f"checkpoint '{path}' holds model {meta.get('model')!r}, this run builds "
            f"{describe_model(program.layers)!r}; resume with the same --model and --data"
        )
    saved = meta.get("config")
    if not isinstance(saved, dict):
        raise CheckpointError(f"checkpoint '{path}': its metadata has no config")
    for key in ("batch_size", "lr", "optimizer", "seed"):
        if saved.get(key) != getattr(config, key):
            option = "--" + key.replace("_", "-")
            raise CheckpointError(
                f"checkpoint '{path}' was trained with {option} {saved.get(key)!r}, this run asks "
                f"for {getattr(config, key)!r}; resume with the options it was saved with"
            )
    epoch = meta.get("epoch")
    if not isinstance(epoch, int) or epoch < 0:
        raise CheckpointError(f"checkpoint '{path}': its epoch {epoch!r} is not a count")
    return epoch


def _history_of(path: Any, meta: dict) -> list[EpochStats]:
    try:
        return [EpochStats(**s) for s in meta.get("history", [])]
    except TypeError as err:
        raise CheckpointError(f"checkpoint '{path}': its history is malformed ({err})") from err


def load_training_checkpoint(
    path: str | os.PathLike,
    program: TrainingProgram,
    config: TrainConfig,
    loaded: tuple[dict, dict] | None = None,
) -> tuple[list, list, list[EpochStats]]:
    """(params, optimizer states, history) of a checkpoint, checked against `program`/`config`
    (`loaded`: the file's (arrays, meta) when already read)."""
    arrays, meta = loaded if loaded is not None else load_checkpoint(path)
    epoch = _check_meta(path, meta, program, config)
    states0 = program.initial_states()
    expected = {n: (s, "float32") for n, s in zip(program.param_names, program.param_shapes)}
    expected.update(zip(_state_names(len(states0)), states0))
    check_arrays_match(path, arrays, expected)
    history = _history_of(path, meta)
    if len(history) != epoch:
        raise CheckpointError(f"checkpoint '{path}': {len(history)} history rows for epoch {epoch}")
    params = [arrays[n] for n in program.param_names]
    states = [arrays[n] for n in _state_names(len(states0))]
    return params, states, history


def _check_program(program: TrainingProgram, layers: Sequence[Layer], config: TrainConfig) -> None:
    given = (program.layers, program.batch_size, program.optimizer_name, program.optimizer.lr)
    want = (tuple(layers), config.batch_size, config.optimizer, config.lr)
    if given != want:
        raise TrainError(
            "train(program=...): the program was compiled for other layers, batch size, "
            "optimizer or learning rate than this call asks for; build it with the same ones"
        )


# ----------------------------------------------------------------------------- the loop
def _check_config(config: TrainConfig, n_train: int) -> None:
    if config.epochs <= 0:
        raise TrainError(f"--epochs must be positive, got {config.epochs}")
    if config.lr <= 0:
        raise TrainError(f"--lr must be positive, got {config.lr}")
    if not 0 < config.batch_size <= n_train:
        raise TrainError(
            f"--batch-size must be between 1 and the {n_train} training samples, got {config.batch_size}"
        )


def _check_labels(data: Dataset, num_classes: int) -> None:
    for name, y in (("training", data.y_train), (data.val_name, data.y_val)):
        if len(y) and (int(np.min(y)) < 0 or int(np.max(y)) >= num_classes):
            raise TrainError(
                f"the {name} labels of {data.name} span [{int(np.min(y))}, {int(np.max(y))}], "
                f"but the model has {num_classes} outputs; build it with num_classes="
                f"{max(int(np.max(y)) + 1, 2)}"
            )


def train(
    layers: Sequence[Layer],
    data: Dataset,
    config: TrainConfig,
    on_epoch: Callable[[EpochStats], None] | None = None,
    on_compiled: Callable[[TrainingProgram], None] | None = None,
    progress: Callable[[int, str], ProgressBar] | None = None,
    checkpoint: str | os.PathLike | None = None,
    resume: str | os.PathLike | None = None,
    program: TrainingProgram | None = None,
) -> TrainResult:
    """Train `layers` on `data`; calls `on_compiled` once the program is built and `on_epoch`
    after each epoch. Each epoch drops the last partial batch (shapes are static).

    `checkpoint`: write parameters + optimizer state there after every epoch (.npz/.safetensors).
    `resume`: continue from such a file (same model and options) up to `config.epochs`; the
    batches of each epoch depend only on the seed and the epoch, so the losses are the ones an
    uninterrupted run gets, bit for bit. `program`: a TrainingProgram already compiled for these
    layers and options (saves compiling again)."""
    n_train = len(data.x_train)
    _check_config(config, n_train)
    if checkpoint is not None:
        check_path(checkpoint)  # a bad path fails now, not after the first epoch
    loaded = load_checkpoint(resume) if resume is not None else None  # read before compiling
    x_train = _as_input(data.x_train, layers, data.image_shape)
    x_val = _as_input(data.x_val, layers, data.image_shape)
    if program is None:
        program = TrainingProgram(
            layers, x_train.shape[1:], config.batch_size, config.optimizer, config.lr
        )
    _check_program(program, layers, config)
    _check_labels(data, program.num_classes)
    if on_compiled is not None:
        on_compiled(program)
    params: list = init_params(layers, config.seed)
    states: list = program.initial_states()
    history: list[EpochStats] = []
    if resume is not None:
        params, states, history = load_training_checkpoint(resume, program, config, loaded)
    params = [nd.array(p) for p in params]
    states = [nd.array(s) for s in states]
    result = TrainResult(program, params, list(history), states)
    eye = np.eye(program.num_classes, dtype=np.float32)
    steps = n_train // config.batch_size
    t = len(history) * steps
    for epoch in range(len(history) + 1, config.epochs + 1):
        start = time.perf_counter()
        bar = (progress or ProgressBar)(steps, f"epoch {epoch}/{config.epochs}")
        loss_sum, correct, seen = 0.0, 0, 0
        batches = datasets.iterate_minibatches(
            x_train,
            data.y_train,
            config.batch_size,
            seed=config.seed * 1000 + epoch,
            drop_last=True,
        )
        for xb, yb in batches:
            t += 1
            loss, logits, params, states = program.step(xb, eye[yb], params, states)
            if not math.isfinite(loss):
                bar.close()
                raise TrainError(
                    f"the loss became {loss} at epoch {epoch}, step {t}; lower --lr "
                    f"(now {config.lr}) or try --optimizer adam"
                )
            loss_sum += loss
            correct += int(np.sum(np.argmax(logits, axis=1) == yb))
            seen += len(yb)
            bar.update(1, loss=f"{loss:.4f}")
        bar.close()
        stats = EpochStats(
            epoch, loss_sum / steps, correct / seen, evaluate(program, params, x_val, data.y_val),
            time.perf_counter() - start,
        )  # fmt: skip
        result.history.append(stats)
        result.params, result.states = params, states
        if checkpoint is not None:
            save_training_checkpoint(checkpoint, program, params, states, config, result.history)
        if on_epoch is not None:
            on_epoch(stats)
    return result


# ----------------------------------------------------------------------------- plotting
def _import_pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as err:
        raise TrainError(
            "--plot needs matplotlib, which is not installed; `pip install matplotlib`, "
            "or leave out --plot"
        ) from err
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_curves(history: Iterable[EpochStats], path: str | Path, title: str = "") -> Path:
    """Write loss and accuracy curves (per epoch) to an image file; needs matplotlib."""
    plt = _import_pyplot()
    history = list(history)
    epochs = [s.epoch for s in history]
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(9, 3.5))
    ax_loss.plot(epochs, [s.loss for s in history], marker="o")
    ax_loss.set(xlabel="epoch", ylabel="training loss", title="loss")
    ax_acc.plot(epochs, [100 * s.train_acc for s in history], marker="o", label="train")
    ax_acc.plot(epochs, [100 * s.val_acc for s in history], marker="o", label="validation")
    ax_acc.set(xlabel="epoch", ylabel="accuracy (%)", title="accuracy")
    ax_acc.legend()
    for ax in (ax_loss, ax_acc):
        ax.xaxis.get_major_locator().set_params(integer=True)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path
