"""The compiled training step: forward, softmax cross-entropy, backward and the optimizer update
in ONE relax function (`train_step`), plus `predict`, built together by `relax.build`."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import relax
from ..relax import op as R
from ..relax.functor import substitute_vars
from ..relax.training import SGD, Adam, MomentumSGD, Optimizer
from ..relax.transform.gradient import Emitter, backprop
from ..runtime import cpu
from .layers import Layer, TrainError, _param_shapes, forward, param_names

# --optimizer name -> the graph-level optimizer (relax/training/optimizer.py) given the lr
OPTIMIZERS: dict[str, Callable[[float], Optimizer]] = {
    "sgd": SGD,
    "momentum": lambda lr: MomentumSGD(lr, momentum=0.9),
    "adam": Adam,
}


def _c(v: float) -> relax.Constant:
    return relax.const(np.float32(v))


def _inline(em: Emitter, func: relax.Function, args: Sequence[Any]) -> list[Any]:
    """Emit the bindings of `func` (a function returning a tuple) with its params bound to args."""
    vmap: dict = dict(zip(func.params, args))
    for block in func.body.blocks:
        for binding in block.bindings:
            vmap[binding.var] = em.emit(substitute_vars(binding.value, vmap), binding.var.name_hint)
    out = substitute_vars(func.body.body, vmap)
    if isinstance(out, relax.Tuple):
        return list(out.fields)
    n = len(out.struct_info.fields)
    return [em.emit(relax.TupleGetItem(out, i)) for i in range(n)]


def _tensor(name: str, shape: tuple[int, ...]) -> relax.Var:
    return relax.Var(name, relax.TensorStructInfo(tuple(shape), "float32"))


class TrainingProgram:
    """`train_step(x, y_onehot, *params, *states) -> (loss, logits, *new_params, *new_states)`
    and `predict(x, *params) -> logits`, compiled together by `relax.build` for a fixed batch.

    The update is the optimizer's own relax function (relax.training), inlined into train_step
    so forward, backward and update are one graph program; the learning rate is a constant.
    `num_classes` is the width of the model's output (any number of classes)."""

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
        self.optimizer_name = optimizer
        self.param_shapes = [s for layer in self.layers for _, s in _param_shapes(layer)]
        self.param_names = param_names(self.layers)
        self.optimizer = OPTIMIZERS[optimizer](lr).init(self.param_shapes)
        self.num_classes = 0  # set by _build_module from the forward pass's output
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
        params = [_tensor(f"p{i}", s) for i, s in enumerate(self.param_shapes)]
        states = [_tensor(f"state{k}", a.shape) for k, a in enumerate(self.initial_states())]
        bb = relax.BlockBuilder()
        with bb.function("predict", [x, *params]):
            with bb.dataflow():
                logits = forward(Emitter(bb), self.layers, x, params)
                out = bb.emit_output(logits)
            bb.emit_func_output(out)
        out_shape = [int(d) for d in logits.struct_info.shape]
        if len(out_shape) != 2:
            raise TrainError(
                f"the model's output has shape {tuple(out_shape)}; a classifier must end in "
                "(batch, classes), e.g. with Flatten() then Dense(n, classes)"
            )
        self.num_classes = out_shape[1]
        y = _tensor("y", (b, self.num_classes))
        update = (
            self.optimizer.get_flat_function()
        )  # (*params, *grads, *states) -> (*params', *states')
        with bb.function("train_step", [x, y, *params, *states]):
            with bb.dataflow():
                em = Emitter(bb)
                logits = forward(em, self.layers, x, params)
                logp = em.emit(R.nn.log_softmax(logits), "logp")
                # mean softmax cross-entropy: -sum(y * log_softmax(logits)) / batch
                loss = em.emit(R.divide(R.negative(R.sum(R.multiply(y, logp))), _c(b)), "loss")
                grads = backprop(em, loss, params)
                updated = _inline(em, update, [*params, *grads, *states])
                out = bb.emit_output(relax.Tuple((loss, logits, *updated)))
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
        return np.concatenate(outs) if outs else np.zeros((0, self.num_classes), np.float32)


def evaluate(
    program: TrainingProgram, params: Sequence[Any], x: np.ndarray, y: np.ndarray
) -> float:
    """Accuracy in [0, 1] of the model on (x, y)."""
    return float(np.mean(np.argmax(program.predict(x, params), axis=1) == y)) if len(x) else 0.0
