"""Layers and the small models the CLI trains: each layer class is a row of two tables, its
parameters (`_PARAMS`) and the relax ops of its forward pass (`_EMIT`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..error import TVMError
from ..relax import op as R
from ..relax.transform.gradient import Emitter

NUM_CLASSES = 10  # the default head width (digits, MNIST); every builder takes num_classes


class TrainError(TVMError, ValueError):
    """A training option (model, data, optimizer, hyper-parameter, checkpoint) is invalid."""


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


def param_names(layers: Sequence[Layer]) -> list[str]:
    """Checkpoint names of the parameters, in order: `0.w`, `0.b`, `2.w`, ... (layer index)."""
    return [f"{i}.{name}" for i, layer in enumerate(layers) for name, _ in _param_shapes(layer)]


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


def forward(em: Emitter, layers: Sequence[Layer], x: Any, params: Sequence[Any]) -> Any:
    """Emit the forward pass of `layers` on `x` with `params` (flat, in `param_names` order)."""
    h, k = x, 0
    for layer in layers:
        n = len(_param_shapes(layer))
        h = _EMIT[type(layer)](em, layer, h, params[k : k + n])
        k += n
    return h


_forward = forward  # the name the CLI library used


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


def _logreg(shape: tuple[int, ...], num_classes: int) -> tuple[Layer, ...]:
    return (Dense(_features(shape), num_classes),)


def _mlp(shape: tuple[int, ...], num_classes: int) -> tuple[Layer, ...]:
    n = _features(shape)
    hidden = (128, 64) if n <= 64 else (256, 100)  # 8x8 digits: a smaller net suffices
    return (
        Dense(n, hidden[0]), Relu(), Dense(hidden[0], hidden[1]), Relu(),
        Dense(hidden[1], num_classes),
    )  # fmt: skip


def _cnn(shape: tuple[int, ...], num_classes: int) -> tuple[Layer, ...]:
    c, h, w = shape
    c1, c2 = (8, 16)
    flat = c2 * (h // 4) * (w // 4)
    return (
        Conv2d(c, c1), Relu(), MaxPool2d(2),
        Conv2d(c1, c2), Relu(), MaxPool2d(2),
        Flatten(), Dense(flat, num_classes),
    )  # fmt: skip


# model name -> (builder from the input shape and class count, whether it takes images (C, H, W))
MODELS: dict[str, tuple[Callable[[tuple[int, ...], int], tuple[Layer, ...]], bool]] = {
    "logreg": (_logreg, False),
    "mlp": (_mlp, False),
    "cnn": (_cnn, True),
}


def build_model(
    name: str, image_shape: tuple[int, int, int], num_classes: int = NUM_CLASSES
) -> tuple[Layer, ...]:
    """The layers of model `name` for images of `image_shape` (C, H, W) and `num_classes` outputs."""
    if name not in MODELS:
        raise TrainError(f"unknown model {name!r}; choose one of {', '.join(MODELS)}")
    if not isinstance(num_classes, int) or num_classes < 2:
        raise TrainError(
            f"model {name!r}: num_classes must be an integer >= 2, got {num_classes!r}"
        )
    builder, takes_images = MODELS[name]
    shape = tuple(image_shape) if takes_images else (_features(image_shape),)
    return builder(shape, num_classes)


def describe_model(layers: Sequence[Layer]) -> str:
    """A one-line summary: `784-256-100-10 relu` or the conv stack."""
    if all(isinstance(l, Dense | Relu) for l in layers):
        dense = [l for l in layers if isinstance(l, Dense)]
        sizes = "-".join(str(d) for d in [dense[0].n_in] + [d.n_out for d in dense])
        return sizes + (" relu" if any(isinstance(l, Relu) for l in layers) else "")
    names = {Conv2d: "conv{0.kernel}x{0.kernel}({0.c_in}->{0.c_out})", Relu: "relu",
             MaxPool2d: "maxpool{0.size}", Flatten: "flatten", Dense: "linear({0.n_in}->{0.n_out})"}  # fmt: skip
    return " -> ".join(names[type(l)].format(l) for l in layers)
