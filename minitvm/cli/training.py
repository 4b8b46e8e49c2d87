"""Train small classifiers with compiled graph programs: the library behind `python -m minitvm train`.

A model is a tuple of layers (`Dense`, `Relu`, `Conv2d`, `MaxPool2d`, `Flatten`). `TrainingProgram`
compiles ONE relax function `train_step` holding the forward pass, the softmax cross-entropy, the
backward pass (`relax.transform.gradient.backprop`, i.e. the op table's gradient rules) and the
optimizer update, plus a `predict` function; both run on the relax VM.

>>> data = load_dataset("digits"); layers = build_model("mlp", data.image_shape)
>>> result = train(layers, data, TrainConfig(epochs=20, batch_size=32, lr=0.1))
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from .. import relax
from ..error import MiniTVMError, TVMError
from ..relax import op as R
from ..relax.training import SGD, Adam, MomentumSGD, Optimizer
from ..relax.transform.gradient import Emitter, backprop
from ..runtime import cpu
from ..testing import datasets

__all__ = [
    "DEFAULTS",
    "MODELS",
    "OPTIMIZERS",
    "Conv2d",
    "Dataset",
    "Dense",
    "EpochStats",
    "Flatten",
    "MaxPool2d",
    "ProgressBar",
    "Relu",
    "TrainConfig",
    "TrainError",
    "TrainResult",
    "TrainingProgram",
    "build_model",
    "default_config",
    "describe_model",
    "evaluate",
    "init_params",
    "load_dataset",
    "plot_curves",
    "train",
]

NUM_CLASSES = 10


class TrainError(TVMError, ValueError):
    """A training option (model, data, optimizer, hyper-parameter) is invalid."""


# ----------------------------------------------------------------------------- layers
@dataclass(frozen=True)
class Dense:
    """x @ w + b, w of shape (n_in, n_out); He init before a ReLU, Glorot otherwise."""

    n_in: int
    n_out: int


@dataclass(frozen=True)
class Relu:
    pass


@dataclass(frozen=True)
class Conv2d:
    """3x3 (by default) 'same' convolution, NCHW / OIHW, plus a per-channel bias."""

    c_in: int
    c_out: int
    kernel: int = 3


@dataclass(frozen=True)
class MaxPool2d:
    size: int = 2


@dataclass(frozen=True)
class Flatten:
    pass


Layer = Dense | Relu | Conv2d | MaxPool2d | Flatten


# layer class -> its parameters (name, shape); layers not listed have none
_PARAMS: dict[type, Callable[[Any], list[tuple[str, tuple[int, ...]]]]] = {
    Dense: lambda d: [("w", (d.n_in, d.n_out)), ("b", (d.n_out,))],
    Conv2d: lambda c: [("w", (c.c_out, c.c_in, c.kernel, c.kernel)), ("b", (1, c.c_out, 1, 1))],
}


def _param_shapes(layer: Layer) -> list[tuple[str, tuple[int, ...]]]:
    rule = _PARAMS.get(type(layer))
    return rule(layer) if rule is not None else []


def _emit_dense(em: Emitter, layer: Dense, x: Any, params: Sequence[Any]) -> Any:
    return em.emit(R.add(R.matmul(x, params[0]), params[1]), "dense")


def _emit_conv(em: Emitter, layer: Conv2d, x: Any, params: Sequence[Any]) -> Any:
    conv = R.nn.conv2d(x, params[0], padding=layer.kernel // 2)
    return em.emit(R.add(conv, params[1]), "conv")


def _emit_pool(em: Emitter, layer: MaxPool2d, x: Any, params: Sequence[Any]) -> Any:
    return em.emit(R.nn.max_pool2d(x, layer.size, layer.size), "pool")


def _emit_flatten(em: Emitter, layer: Flatten, x: Any, params: Sequence[Any]) -> Any:
    shape = x.struct_info.shape
    return em.emit(R.reshape(x, (shape[0], -1)), "flat")


# layer class -> emitter of its forward computation
_EMIT: dict[type, Callable[..., Any]] = {
    Dense: _emit_dense,
    Relu: lambda em, layer, x, params: em.emit(R.nn.relu(x), "relu"),
    Conv2d: _emit_conv,
    MaxPool2d: _emit_pool,
    Flatten: _emit_flatten,
}


def init_params(layers: Sequence[Layer], seed: int = 0) -> list[np.ndarray]:
    """Seeded weights: He-normal for layers followed by a ReLU, Glorot-normal otherwise; zero biases."""
    rng = np.random.default_rng(seed)
    out = []
    for i, layer in enumerate(layers):
        then_relu = i + 1 < len(layers) and isinstance(layers[i + 1], Relu)
        for name, shape in _param_shapes(layer):
            if name == "b":
                out.append(np.zeros(shape, np.float32))
                continue
            fan_in = int(np.prod(shape[1:])) if len(shape) == 4 else shape[0]
            fan_out = shape[0] * int(np.prod(shape[2:])) if len(shape) == 4 else shape[1]
            std = math.sqrt(2.0 / fan_in) if then_relu else math.sqrt(2.0 / (fan_in + fan_out))
            out.append((rng.standard_normal(shape) * std).astype(np.float32))
    return out


# ----------------------------------------------------------------------------- models
def _features(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape))


def _logreg(shape: tuple[int, ...]) -> tuple[Layer, ...]:
    return (Dense(_features(shape), NUM_CLASSES),)


def _mlp(shape: tuple[int, ...]) -> tuple[Layer, ...]:
    n = _features(shape)
    hidden = (128, 64) if n <= 64 else (256, 100)  # 8x8 digits: a smaller net suffices
    return (Dense(n, hidden[0]), Relu(), Dense(hidden[0], hidden[1]), Relu(), Dense(hidden[1], 10))


def _cnn(shape: tuple[int, ...]) -> tuple[Layer, ...]:
    c, h, w = shape
    c1, c2 = (8, 16)
    flat = c2 * (h // 4) * (w // 4)
    return (
        Conv2d(c, c1), Relu(), MaxPool2d(2),
        Conv2d(c1, c2), Relu(), MaxPool2d(2),
        Flatten(), Dense(flat, NUM_CLASSES),
    )  # fmt: skip


# model name -> (builder from the input shape, whether it takes images (C, H, W) or flat rows)
MODELS: dict[str, tuple[Callable[[tuple[int, ...]], tuple[Layer, ...]], bool]] = {
    "logreg": (_logreg, False),
    "mlp": (_mlp, False),
    "cnn": (_cnn, True),
}


def build_model(name: str, image_shape: tuple[int, int, int]) -> tuple[Layer, ...]:
    """The layers of model `name` for images of `image_shape` (C, H, W)."""
    if name not in MODELS:
        raise TrainError(f"unknown model {name!r}; choose one of {', '.join(MODELS)}")
    builder, takes_images = MODELS[name]
    return builder(tuple(image_shape) if takes_images else (_features(image_shape),))


def describe_model(layers: Sequence[Layer]) -> str:
    """A one-line summary: `784-256-100-10 relu` or the conv stack."""
    if all(isinstance(l, Dense | Relu) for l in layers):
        dense = [l for l in layers if isinstance(l, Dense)]
        sizes = "-".join(str(d) for d in [dense[0].n_in] + [d.n_out for d in dense])
        return sizes + (" relu" if any(isinstance(l, Relu) for l in layers) else "")
    names = {Conv2d: "conv{0.kernel}x{0.kernel}({0.c_in}->{0.c_out})", Relu: "relu",
             MaxPool2d: "maxpool{0.size}", Flatten: "flatten", Dense: "linear({0.n_in}->{0.n_out})"}  # fmt: skip
    return " -> ".join(names[type(l)].format(l) for l in layers)


# ----------------------------------------------------------------------------- optimizers
# --optimizer name -> the graph-level optimizer (relax/training/optimizer.py) given the lr
OPTIMIZERS: dict[str, Callable[[float], Optimizer]] = {
    "sgd": SGD,
    "momentum": lambda lr: MomentumSGD(lr, momentum=0.9),
    "adam": Adam,
}


def _c(v: float) -> relax.Constant:
    return relax.const(np.float32(v))


def _subst(e: Any, vmap: dict) -> Any:
    if isinstance(e, relax.Var):
        return vmap.get(e, e)
    if isinstance(e, relax.Call):
        return relax.Call(e.op, tuple(_subst(a, vmap) for a in e.args), e.attrs, e.sinfo_args)
    if isinstance(e, relax.Tuple):
        return relax.Tuple(tuple(_subst(f, vmap) for f in e.fields))
    if isinstance(e, relax.TupleGetItem):
        return relax.TupleGetItem(_subst(e.tuple_value, vmap), e.index)
    return e


def _inline(em: Emitter, func: relax.Function, args: Sequence[Any]) -> list[Any]:
    """Emit the bindings of `func` (a function returning a tuple) with its params bound to args."""
    vmap: dict = dict(zip(func.params, args))
    for block in func.body.blocks:
        for binding in block.bindings:
            vmap[binding.var] = em.emit(_subst(binding.value, vmap), binding.var.name_hint)
    out = _subst(func.body.body, vmap)
    if isinstance(out, relax.Tuple):
        return list(out.fields)
    n = len(out.struct_info.fields)
    return [em.emit(relax.TupleGetItem(out, i)) for i in range(n)]


# ----------------------------------------------------------------------------- the program
def _tensor(name: str, shape: tuple[int, ...]) -> relax.Var:
    return relax.Var(name, relax.TensorStructInfo(tuple(shape), "float32"))


def _forward(em: Emitter, layers: Sequence[Layer], x: Any, params: Sequence[Any]) -> Any:
    h, k = x, 0
    for layer in layers:
        n = len(_param_shapes(layer))
        h = _EMIT[type(layer)](em, layer, h, params[k : k + n])
        k += n
    return h


class TrainingProgram:
    """`train_step(x, y_onehot, *params, *states) -> (loss, logits, *new_params, *new_states)`
    and `predict(x, *params) -> logits`, compiled together by `relax.build` for a fixed batch.

    The update is the optimizer's own relax function (relax.training), inlined into train_step
    so forward, backward and update are one graph program; the learning rate is a constant."""

    def __init__(
        self,
        layers: Sequence[Layer],
        input_shape: tuple[int, ...],
        batch_size: int,
        optimizer: str = "sgd",
        lr: float = 0.1,
        target: str = "llvm",
    ) -> None:
        if optimizer not in OPTIMIZERS:
            raise TrainError(
                f"unknown optimizer {optimizer!r}; choose one of {', '.join(OPTIMIZERS)}"
            )
        if batch_size <= 0:
            raise TrainError(f"batch size must be positive, got {batch_size}")
        self.layers = tuple(layers)
        self.input_shape = tuple(input_shape)
        self.batch_size = batch_size
        if not lr > 0:
            raise TrainError(f"the learning rate must be positive, got {lr}")
        self.param_shapes = [s for layer in self.layers for _, s in _param_shapes(layer)]
        self.optimizer = OPTIMIZERS[optimizer](lr).init(self.param_shapes)
        self.module = self._build_module()
        start = time.perf_counter()
        self.executable = relax.build(self.module, target)
        self.compile_seconds = time.perf_counter() - start
        self.vm = relax.VirtualMachine(self.executable, cpu(0))
        self._step = self.vm["train_step"]
        self._predict = self.vm["predict"]

    def _build_module(self) -> Any:
        b = self.batch_size
        x = _tensor("x", (b, *self.input_shape))
        y = _tensor("y", (b, NUM_CLASSES))
        params = [_tensor(f"p{i}", s) for i, s in enumerate(self.param_shapes)]
        states = [_tensor(f"state{k}", a.shape) for k, a in enumerate(self.initial_states())]
        update = self.optimizer.get_function()  # (*params, *grads, *states) -> (*params', *states')
        bb = relax.BlockBuilder()
        with bb.function("train_step", [x, y, *params, *states]):
            with bb.dataflow():
                em = Emitter(bb)
                logits = _forward(em, self.layers, x, params)
                logp = em.emit(R.nn.log_softmax(logits), "logp")
                # mean softmax cross-entropy: -sum(y * log_softmax(logits)) / batch
                loss = em.emit(R.divide(R.negative(R.sum(R.multiply(y, logp))), _c(b)), "loss")
                grads = backprop(em, loss, params)
                updated = _inline(em, update, [*params, *grads, *states])
                out = bb.emit_output(relax.Tuple((loss, logits, *updated)))
            bb.emit_func_output(out)
        with bb.function("predict", [x, *params]):
            with bb.dataflow():
                out = bb.emit_output(_forward(Emitter(bb), self.layers, x, params))
            bb.emit_func_output(out)
        return bb.get()

    def initial_states(self) -> list[np.ndarray]:
        """The optimizer's initial state (zeros; Adam: step count, first and second moments)."""
        return self.optimizer.state_init()

    def step(
        self, x: np.ndarray, y_onehot: np.ndarray, params: list, states: list
    ) -> tuple[float, np.ndarray, list, list]:
        """One update; returns (loss, logits, new params, new states)."""
        out = self._step(x, y_onehot, *params, *states)
        n = len(params)
        return float(out[0].numpy()), out[1].numpy(), list(out[2 : 2 + n]), list(out[2 + n :])

    def predict(self, x: np.ndarray, params: Sequence[Any]) -> np.ndarray:
        """Logits for any number of rows (the last partial batch is zero-padded)."""
        b, outs = self.batch_size, []
        for start in range(0, len(x), b):
            chunk = x[start : start + b]
            if len(chunk) < b:
                chunk = np.concatenate(
                    [chunk, np.zeros((b - len(chunk), *chunk.shape[1:]), chunk.dtype)]
                )
            outs.append(self._predict(chunk, *params).numpy()[: min(b, len(x) - start)])
        return np.concatenate(outs) if outs else np.zeros((0, NUM_CLASSES), np.float32)


def evaluate(
    program: TrainingProgram, params: Sequence[Any], x: np.ndarray, y: np.ndarray
) -> float:
    """Accuracy in [0, 1] of the model on (x, y)."""
    return float(np.mean(np.argmax(program.predict(x, params), axis=1) == y)) if len(x) else 0.0


# ----------------------------------------------------------------------------- data
@dataclass(frozen=True)
class Dataset:
    """Flat float32 rows in [0, 1] and int64 labels, plus the image shape (C, H, W) of a row."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    image_shape: tuple[int, int, int]
    val_name: str = "validation"


def _digits(arg: str | None, seed: int) -> Dataset:
    x, y = datasets.load_digits()
    x_tr, y_tr, x_val, y_val = datasets.train_val_split(x, y, 0.2, seed=seed)
    return Dataset("digits", x_tr, y_tr, x_val, y_val, (1, 8, 8))


def _mnist(arg: str | None, seed: int) -> Dataset:
    if not arg:
        raise TrainError(
            "--data mnist:PATH needs the folder with the four MNIST IDX files after the colon, "
            "e.g. --data mnist:~/data/mnist"
        )
    path = Path(arg).expanduser()
    if not path.exists():
        raise TrainError(f"--data mnist:{arg}: '{path}' does not exist; pass the folder holding "
                         "train-images-idx3-ubyte(.gz) and the other three MNIST files")  # fmt: skip
    x_tr, y_tr, x_te, y_te = datasets.load_mnist(path)
    return Dataset("mnist", x_tr, y_tr, x_te, y_te, (1, 28, 28), "test")


def _synthetic(arg: str | None, seed: int) -> Dataset:
    n = int(arg) if arg else 6000
    if n < 2:
        raise TrainError(f"--data synthetic:N needs N >= 2 training samples, got {arg}")
    x_tr, y_tr = datasets.synthetic_mnist(n, seed=seed)
    x_val, y_val = datasets.synthetic_mnist(max(n // 6, 1), seed=seed + 1)
    return Dataset("synthetic", x_tr, y_tr, x_val, y_val, (1, 28, 28))


# --data NAME[:ARG] -> loader(ARG, seed)
DATASETS: dict[str, Callable[[str | None, int], Dataset]] = {
    "digits": _digits,
    "mnist": _mnist,
    "synthetic": _synthetic,
}


def load_dataset(spec: str, seed: int = 0) -> Dataset:
    """`digits`, `mnist:PATH` (a folder of MNIST IDX files) or `synthetic[:N]`."""
    name, _, arg = spec.partition(":")
    if name not in DATASETS:
        raise TrainError(f"unknown data set {spec!r}; use digits, mnist:PATH or synthetic[:N]")
    if name == "digits" and arg:
        raise TrainError(f"--data digits takes no argument, got {spec!r}")
    try:
        return DATASETS[name](arg or None, seed)
    except ValueError as err:
        if isinstance(err, MiniTVMError):
            raise
        raise TrainError(f"--data {spec!r}: {err}") from err


# ----------------------------------------------------------------------------- progress
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


# ----------------------------------------------------------------------------- training
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

    @property
    def val_acc(self) -> float:
        return self.history[-1].val_acc if self.history else 0.0


def _as_input(x: np.ndarray, layers: Sequence[Layer], image_shape: tuple[int, ...]) -> np.ndarray:
    takes_images = any(isinstance(l, Conv2d) for l in layers)
    return x.reshape(len(x), *image_shape) if takes_images else x


def train(
    layers: Sequence[Layer],
    data: Dataset,
    config: TrainConfig,
    on_epoch: Callable[[EpochStats], None] | None = None,
    on_compiled: Callable[[TrainingProgram], None] | None = None,
    progress: Callable[[int, str], ProgressBar] | None = None,
) -> TrainResult:
    """Train `layers` on `data`; calls `on_compiled` once the program is built and `on_epoch`
    after each epoch. Each epoch drops the last partial batch (shapes are static)."""
    if config.epochs <= 0:
        raise TrainError(f"--epochs must be positive, got {config.epochs}")
    if config.lr <= 0:
        raise TrainError(f"--lr must be positive, got {config.lr}")
    n_train = len(data.x_train)
    if not 0 < config.batch_size <= n_train:
        raise TrainError(
            f"--batch-size must be between 1 and the {n_train} training samples, got {config.batch_size}"
        )
    x_train = _as_input(data.x_train, layers, data.image_shape)
    x_val = _as_input(data.x_val, layers, data.image_shape)
    program = TrainingProgram(
        layers, x_train.shape[1:], config.batch_size, config.optimizer, config.lr
    )
    if on_compiled is not None:
        on_compiled(program)
    params: list = init_params(layers, config.seed)
    states: list = program.initial_states()
    result = TrainResult(program, params)
    eye = np.eye(NUM_CLASSES, dtype=np.float32)
    t = 0
    for epoch in range(1, config.epochs + 1):
        start = time.perf_counter()
        steps = n_train // config.batch_size
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
        result.params = params
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
