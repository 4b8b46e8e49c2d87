"""Train a PyTorch `nn.Module` with ONE compiled minitvm program per step.

`TorchTrainer(model, (x, y), loss, optimizer)` exports `loss(model(x), y)` with `torch.export`
(parameters as inputs, a symbolic batch dim when torch allows one), imports it with
`relax.frontend.torch.from_exported_program`, differentiates it with the op table's gradient
rules (`relax.transform.gradient.backprop`) and appends the optimizer update, so
`train_step(x, y, rng_key, *params, *optimizer states, *buffers) -> (loss, *params',
*optimizer states', *buffers')` is one relax function compiled by `relax.build`;
`eval_forward` builds the model alone on first use.

The model trains in the mode it is in. A train-mode BatchNorm normalises by the batch's
statistics and updates its running statistics, which the program takes and returns so they
carry from step to step (torch_export.py); dropout multiplies by a seeded random mask (a new
one each step; `seed=` makes runs reproducible). `eval_forward` / `predict` run the model in
eval mode: running statistics, no dropout.

>>> t = TorchTrainer(model, (x, y), torch.nn.CrossEntropyLoss(), ("adam", {"lr": 1e-3}))
>>> loss = t.step(x, y); model.load_state_dict(t.state_dict(as_torch=True))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import relax
from ..ir.module import IRModule
from ..relax.op.grad import zeros_like
from ..relax.training import SGD, Adam, MomentumSGD, Optimizer
from ..relax.transform.gradient import Emitter, backprop
from ..runtime import cpu
from ..runtime import ndarray as nd
from .collectives import average_gradients
from .layers import TrainError
from .program import _inline
from .torch_export import (
    ModelOnly,
    WithLoss,
    _export,
    _import,
    add_helpers,
    buffers_kept,
    eval_mode,
    has_train_mode_batch_norm,
    strip,
)

# optimizer name -> (class, accepted torch-style keyword arguments)
_OPTIMIZER_KWARGS: dict[str, tuple[str, ...]] = {
    "sgd": ("lr", "momentum", "dampening", "weight_decay", "nesterov"),
    "momentum": ("lr", "momentum", "dampening", "weight_decay", "nesterov"),
    "adam": ("lr", "betas", "eps", "weight_decay"),
}


def make_optimizer(spec: Any) -> Optimizer:
    """A relax.training optimizer from `("adam", {"lr": 1e-3, ...})`, a torch.optim optimizer
    (its first param group's hyper-parameters) or an `Optimizer` object (returned as is)."""
    if isinstance(spec, Optimizer):
        return spec
    if _is_torch_optimizer(spec):
        return _from_torch_optimizer(spec)
    if not (isinstance(spec, tuple | list) and len(spec) in (1, 2) and isinstance(spec[0], str)):
        raise TrainError(
            f"TorchTrainer: optimizer {spec!r} is not understood; pass (name, kwargs) with name in "
            f"{sorted(_OPTIMIZER_KWARGS)}, e.g. ('adam', {{'lr': 1e-3}}), or a "
            "relax.training.optimizer object"
        )
    name, kwargs = spec[0].lower(), dict(spec[1]) if len(spec) == 2 else {}
    if name not in _OPTIMIZER_KWARGS:
        raise TrainError(
            f"TorchTrainer: unknown optimizer {spec[0]!r}; choose one of {sorted(_OPTIMIZER_KWARGS)}"
        )
    unknown = sorted(set(kwargs) - set(_OPTIMIZER_KWARGS[name]))
    if unknown:
        raise TrainError(
            f"TorchTrainer: optimizer {name!r} has no option(s) {unknown}; it takes "
            f"{list(_OPTIMIZER_KWARGS[name])}"
        )
    lr = float(kwargs.pop("lr", 1e-3 if name == "adam" else 0.01))
    if not lr > 0:
        raise TrainError(f"TorchTrainer: the learning rate must be positive, got {lr}")
    if name == "adam":
        return Adam(lr, **kwargs)
    momentum = float(kwargs.pop("momentum", 0.9 if name == "momentum" else 0.0))
    if momentum == 0.0:
        if kwargs.get("nesterov"):
            raise TrainError("TorchTrainer: nesterov=True needs momentum > 0 (as in torch)")
        return SGD(lr, weight_decay=float(kwargs.get("weight_decay", 0.0)))
    return MomentumSGD(lr, momentum, **kwargs)


def _is_torch_optimizer(spec: Any) -> bool:
    return any(c.__module__.startswith("torch.optim") for c in type(spec).__mro__[:-1])


def _from_torch_optimizer(opt: Any) -> Optimizer:
    kind = type(opt).__name__.lower()
    if kind not in ("sgd", "adam") or len(opt.param_groups) != 1:
        raise TrainError(
            f"TorchTrainer: torch optimizer {type(opt).__name__} with {len(opt.param_groups)} "
            "param group(s) is not supported; use torch.optim.SGD or Adam with one group, or "
            "pass ('sgd' | 'adam', kwargs)"
        )
    group = opt.param_groups[0]
    for flag in ("amsgrad", "maximize"):
        if group.get(flag):
            raise TrainError(
                f"TorchTrainer: torch.optim.{type(opt).__name__}({flag}=True) is not supported"
            )
    keys = _OPTIMIZER_KWARGS[kind]
    return make_optimizer((kind, {k: group[k] for k in keys if k in group}))


# ----------------------------------------------------------------------------- the trainer


class TorchTrainer:
    """Train `model` on minitvm: one compiled program per step (forward, loss, backward,
    update). `example` is an example batch `(x, y)`; `loss` an nn.Module loss, `F.cross_entropy`
    or any callable `(outputs, targets) -> scalar` torch.export can trace; `optimizer` a
    `(name, kwargs)` pair, a torch.optim SGD/Adam, or a relax.training optimizer; `seed` the
    seed of the dropout masks (step k of a run uses the key (seed, k)).

    Parameters with `requires_grad=False` are passed but not updated. A weight tied under
    several names (GPT-2's lm_head and wte) is one parameter, named by its first name in
    `named_parameters()`; `state_dict()` gives it under every name. Buffers are states of the
    program: a train-mode BatchNorm's running statistics are updated at every step. The batch
    dim is symbolic when torch.export allows and no BatchNorm is in training mode
    (`symbolic_batch`); otherwise every batch must have the example's size. Momentum dampening
    follows TVM (applied from the first step; torch skips it once).

    `world_size=N` (> 1) builds the step of one of N data-parallel processes, to be run under
    `DataParallel(trainer)` (distributed.py) with its shard of each global batch as `x, y` (the
    example is a shard, too): the loss and the gradients are averaged over the processes inside
    the program, before the update, and train-mode BatchNorms normalise with the global batch's
    statistics (collectives.py)."""

    def __init__(
        self,
        model: Any,
        example: Sequence[Any],
        loss: Callable,
        optimizer: Any = ("sgd", {"lr": 0.01}),
        *,
        target: str = "llvm",
        dynamic_batch: bool = True,
        seed: int = 0,
        world_size: int = 1,
    ) -> None:
        import torch
        from torch import nn

        if not isinstance(model, nn.Module):
            raise TrainError(f"TorchTrainer: model must be a torch.nn.Module, got {type(model)}")
        if not callable(loss):
            raise TrainError(f"TorchTrainer: loss must be callable, got {type(loss).__name__}")
        if not (isinstance(example, tuple | list) and len(example) == 2):
            raise TrainError("TorchTrainer: example must be one batch (x, y)")
        x, y = (_as_tensor(a, n) for a, n in zip(example, ("x", "y")))
        self.model = model
        with torch.no_grad(), buffers_kept(model):
            out = loss(model(x), y)
        if not isinstance(out, torch.Tensor) or out.numel() != 1 or not out.is_floating_point():
            raise TrainError(
                f"TorchTrainer: loss(model(x), y) must be a float scalar, got "
                f"{getattr(out, 'shape', type(out).__name__)}; use reduction='mean' or 'sum'"
            )
        self.seed, self.steps_done = _check_seed(seed), 0
        self.world_size = _check_world_size(world_size)
        self.buffer_names = [k for k, _ in model.named_buffers()]
        bufs = tuple(b.detach().clone() for _, b in model.named_buffers())
        key = torch.zeros(2, dtype=torch.int64)
        dynamic = dynamic_batch and not has_train_mode_batch_norm(model)
        wrapped = WithLoss.make(model, loss, self.buffer_names)
        ep, self.symbolic_batch = _export(wrapped, (x, y, key, *bufs), 2, dynamic)
        loss_fn, names, self._helpers, padded = _import(ep, "model with its loss", world_size)
        # tied weights (GPT-2's lm_head and wte) are one parameter under several names: each
        # is trained once, under its first name in named_parameters()
        self._aliases = _parameter_aliases(model)
        self.names = [self._aliases.get(strip(n), strip(n)) for n in names]
        named = dict(model.named_parameters())
        # torch.export may list a tied weight where its second name is first read
        self._model_order = [n for n in named if n in set(self.names)]
        if any(n not in named for n in self.names):
            raise TrainError(
                "TorchTrainer: the loss has parameters of its own "
                f"({[n for n in self.names if n not in named]}); only the model's are trained"
            )
        self.trainable = [named[n].requires_grad for n in self.names]
        first_param = 3 + len(self.buffer_names)  # main(x, y, rng_key, *buffers, *params)
        self._padding_rows = {k - first_param: rows for k, rows in padded.items()}
        _refuse_shared_padded_weights(loss_fn, padded, self.names, first_param)
        self._params = [nd.array(named[n].detach().cpu().numpy()) for n in self.names]
        self._buffers = [nd.array(b.numpy()) for b in bufs]
        shapes = [tuple(p.shape) for p, t in zip(self._params, self.trainable) if t]
        if not shapes:
            raise TrainError("TorchTrainer: the model has no parameter with requires_grad=True")
        self.optimizer = make_optimizer(optimizer).init(shapes)
        self._states = [nd.array(s) for s in self.optimizer.state_init()]
        self.target, self._example_x = target, x
        self.module = self._build_module(loss_fn)
        self.executable = relax.build(self.module, target)
        self.vm = relax.VirtualMachine(self.executable, cpu(0))
        self._forward: Any = None  # eval_forward's program, built on first use
        self._x_dtype, self._y_dtype = (str(a.dtype).replace("torch.", "") for a in (x, y))

    def _build_module(self, loss_fn: relax.Function) -> Any:
        """`train_step(x, y, rng_key, *params, *optimizer states, *buffers) -> (loss, *params',
        *optimizer states', *buffers')`."""
        n_in, n_buf = 3, len(self._buffers)
        inputs = [relax.Var(p.name_hint, p.struct_info) for p in loss_fn.params[:n_in]]
        bufs = [
            relax.Var(f"b{k}", p.struct_info)
            for k, p in enumerate(loss_fn.params[n_in : n_in + n_buf])
        ]
        params = [
            relax.Var(f"p{k}", p.struct_info) for k, p in enumerate(loss_fn.params[n_in + n_buf :])
        ]
        states = [
            relax.Var(f"state{k}", relax.TensorStructInfo(s.shape, str(s.dtype)))
            for k, s in enumerate(self._states)
        ]
        bb = relax.BlockBuilder()
        add_helpers(bb, self._helpers)
        with bb.function("train_step", [*inputs, *params, *states, *bufs]):
            with bb.dataflow():
                em = Emitter(bb)
                outs = _inline(em, _as_tuple_fn(loss_fn), [*inputs, *bufs, *params])
                loss, new_bufs = outs[0], outs[1:]
                if not isinstance(loss, relax.Var):
                    loss = em.emit(loss, "loss")
                wrt = [p for p, t in zip(params, self.trainable) if t]
                grads = backprop(em, loss, wrt)
                grads = [g if g is not None else em.emit(zeros_like(p)) for g, p in zip(grads, wrt)]
                grads = self._mask_padding_rows(em, grads)
                if self.world_size > 1:
                    loss, grads = average_gradients(em, loss, grads)
                update = self.optimizer.get_flat_function()
                updated = _inline(em, update, [*wrt, *grads, *states])
                new = iter(updated[: len(wrt)])
                new_params = [next(new) if t else p for p, t in zip(params, self.trainable)]
                result = relax.Tuple((loss, *new_params, *updated[len(wrt) :], *new_bufs))
                out = bb.emit_output(result)
            bb.emit_func_output(out)
        return bb.get()

    def _mask_padding_rows(self, em: Emitter, grads: list) -> list:
        """Zero the gradient of each embedding's padding_idx row (torch's lookup sends it none;
        the optimizer's weight decay still applies, as in torch)."""
        trained = [k for k, t in enumerate(self.trainable) if t]
        out = []
        for k, g in zip(trained, grads):
            if k in self._padding_rows:
                shape = [int(d) for d in g.struct_info.shape]
                mask = np.ones((shape[0], *[1] * (len(shape) - 1)), g.struct_info.dtype)
                mask[self._padding_rows[k]] = 0
                g = em.emit(relax.op.multiply(g, relax.const(mask)), f"{self.names[k]}_grad")
            out.append(g)
        return out

    def _build_forward(self) -> Any:
        """`forward(x, *buffers, *params)`: the model alone in eval mode (running statistics,
        no dropout), exported, imported and built once."""
        import torch

        bufs = tuple(torch.from_numpy(b.numpy()) for b in self._buffers)
        with eval_mode(self.model):
            ep, _ = _export(
                ModelOnly.make(self.model, self.buffer_names),
                (self._example_x, *bufs),
                1,
                self.symbolic_batch,
            )
            fwd, names, helpers, _ = _import(ep, "model")
        if [self._aliases.get(strip(n), strip(n)) for n in names] != self.names:
            raise TrainError(
                "TorchTrainer.eval_forward: the model alone has parameters "
                f"{[strip(n) for n in names]}, the model with its loss {self.names}"
            )
        attrs = {k: v for k, v in (fwd.attrs or {}).items() if k != "params"}
        fwd = relax.Function(fwd.params, fwd.body, fwd.ret_struct_info, attrs)
        vm = relax.VirtualMachine(
            relax.build(IRModule({"main": fwd, **helpers}), self.target), cpu(0)
        )
        return vm["main"]

    # ------------------------------------------------------------------ running
    def _arg(self, a: Any, name: str, dtype: str) -> np.ndarray:
        arr = _to_numpy(a, name)
        if str(arr.dtype) != dtype:
            if np.issubdtype(arr.dtype, np.floating) != np.issubdtype(np.dtype(dtype), np.floating):
                raise TrainError(
                    f"TorchTrainer: {name} has dtype {arr.dtype}, the example had {dtype}"
                )
            arr = arr.astype(dtype)
        return np.ascontiguousarray(arr)

    def rng_key(self) -> np.ndarray:
        """The (seed, step) key the next step's dropout masks are drawn from."""
        return np.array([self.seed, self.steps_done], dtype="int64")

    def step(self, x: Any, y: Any) -> float:
        """One optimizer step on the batch (x, y); returns the loss before the update (with
        world_size > 1: this process's shard, and the global batch's loss)."""
        if self.world_size > 1:
            _check_group(self.world_size)
        out = self.vm["train_step"](
            self._arg(x, "x", self._x_dtype),
            self._arg(y, "y", self._y_dtype),
            self.rng_key(),
            *self._params,
            *self._states,
            *self._buffers,
        )
        n, k = len(self._params), len(self._states)
        self._params = list(out[1 : 1 + n])
        self._states = list(out[1 + n : 1 + n + k])
        self._buffers = list(out[1 + n + k :])
        self.steps_done += 1
        return float(out[0].numpy())

    def eval_forward(self, x: Any) -> np.ndarray:
        """The model's output for `x` in eval mode (running statistics, no dropout) with the
        current parameters and buffers."""
        if self._forward is None:
            self._forward = self._build_forward()
        out = self._forward(self._arg(x, "x", self._x_dtype), *self._buffers, *self._params)
        return out.numpy() if hasattr(out, "numpy") else np.asarray(out[0].numpy())

    predict = eval_forward

    # ------------------------------------------------------------------ state
    def parameters(self, as_torch: bool = False) -> list:
        """The current parameters, in `model.named_parameters()` order (numpy or torch)."""
        by_name = dict(zip(self.names, self._params))
        arrays = [by_name[n].numpy() for n in self._model_order]
        return [_torch(a) for a in arrays] if as_torch else arrays

    def buffers(self, as_torch: bool = False) -> dict[str, Any]:
        """The current buffers (running statistics, ...) by the model's names."""
        out = {k: b.numpy() for k, b in zip(self.buffer_names, self._buffers)}
        return {k: _torch(v) for k, v in out.items()} if as_torch else out

    def state_dict(self, as_torch: bool = False) -> dict[str, Any]:
        """Parameters and buffers by the model's names: `model.load_state_dict(t.state_dict(True))`
        copies the trained weights and running statistics back into the torch model."""
        out: dict[str, Any] = {n: p.numpy() for n, p in zip(self.names, self._params)}
        out.update({alias: out[name] for alias, name in self._aliases.items() if name in out})
        out.update(self.buffers())
        return {k: _torch(v) for k, v in out.items()} if as_torch else out

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Set the parameters and (those given of) the buffers: numpy arrays or torch tensors,
        same names, shapes and dtypes."""
        missing = [n for n in self.names if n not in state]
        unknown = sorted(set(state) - set(self.names) - set(self.buffer_names) - set(self._aliases))
        if missing or unknown:
            raise TrainError(
                f"TorchTrainer.load_state_dict: missing {missing}, unexpected {unknown}"
            )
        self._params = [_checked(state[n], n, old) for n, old in zip(self.names, self._params)]
        self._buffers = [
            _checked(state[n], n, old) if n in state else old
            for n, old in zip(self.buffer_names, self._buffers)
        ]


def _refuse_shared_padded_weights(
    func: relax.Function, padded: dict, names: list[str], first_param: int
) -> None:
    """A padding_idx embedding whose weight is also read elsewhere (tied to an output layer):
    masking the row's whole gradient would drop the other use's share."""
    for k in padded:
        var = func.params[k]
        uses = sum(
            1
            for block in func.body.blocks
            for b in block.bindings
            if isinstance(b.value, relax.Call) and any(a is var for a in b.value.args)
        )
        if uses > 1:
            raise TrainError(
                f"TorchTrainer: parameter {names[k - first_param]!r} is an embedding with "
                f"padding_idx that is also read by {uses - 1} other op(s) (tied weights); its "
                "padding row's gradient cannot be told apart: drop padding_idx or untie it"
            )


def _parameter_aliases(model: Any) -> dict[str, str]:
    """{other name: first name} of every parameter registered under several names."""
    first: dict[int, str] = {}
    aliases = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        if id(p) in first:
            aliases[name] = first[id(p)]
        else:
            first[id(p)] = name
    return aliases


def _checked(value: Any, name: str, old: Any) -> Any:
    arr = _to_numpy(value, name)
    if arr.shape != tuple(old.shape) or str(arr.dtype) != str(old.dtype):
        raise TrainError(
            f"TorchTrainer.load_state_dict: {name!r} is {arr.dtype}{list(arr.shape)}, "
            f"the model has {old.dtype}{list(old.shape)}"
        )
    return nd.array(np.ascontiguousarray(arr))


def _check_world_size(world_size: Any) -> int:
    if isinstance(world_size, bool) or not isinstance(world_size, int | np.integer):
        raise TrainError(f"TorchTrainer: world_size must be a positive int, got {world_size!r}")
    if world_size < 1:
        raise TrainError(f"TorchTrainer: world_size must be a positive int, got {world_size}")
    return int(world_size)


def _check_group(world_size: int) -> None:
    """A data-parallel step needs the process group of a DataParallel of its world size."""
    from .distributed import active

    dp = active()
    if dp is None or dp.world_size != world_size:
        seen = "no DataParallel" if dp is None else f"a DataParallel of {dp.world_size}"
        raise TrainError(
            f"TorchTrainer: this trainer was built with world_size={world_size}; its step "
            f"all-reduces over a process group of {world_size} processes, and this process has "
            f"{seen}; wrap it as DataParallel(trainer) in each of the {world_size} processes "
            "(or build it with world_size=1 to train in one process)"
        )


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise TrainError(f"TorchTrainer: seed must be a non-negative int, got {seed!r}")
    return int(seed)


def _as_tuple_fn(func: relax.Function) -> relax.Function:
    """The imported function with its result as a Tuple (what `_inline` unpacks)."""
    body = func.body
    if isinstance(body.body.struct_info, relax.TupleStructInfo):
        return func
    return relax.Function(
        func.params, relax.SeqExpr(body.blocks, relax.Tuple((body.body,))), None, func.attrs
    )


def _to_numpy(a: Any, name: str) -> np.ndarray:
    if hasattr(a, "detach"):
        return a.detach().cpu().numpy()
    if isinstance(a, np.ndarray):
        return a
    if hasattr(a, "numpy"):
        return a.numpy()
    raise TrainError(f"TorchTrainer: {name} must be a torch tensor or numpy array, got {type(a)}")


def _as_tensor(a: Any, name: str) -> Any:
    import torch

    return a if isinstance(a, torch.Tensor) else torch.from_numpy(_to_numpy(a, name))


def _torch(a: np.ndarray) -> Any:
    import torch

    return torch.from_numpy(np.array(a))


__all__ = ["TorchTrainer", "make_optimizer"]
