"""Train a PyTorch `nn.Module` with ONE compiled minitvm program per step.

`TorchTrainer(model, (x, y), loss, optimizer)` exports `loss(model(x), y)` with `torch.export`
(parameters as inputs, a symbolic batch dim when torch allows one), imports it with
`relax.frontend.torch.from_exported_program`, differentiates it with the op table's gradient
rules (`relax.transform.gradient.backprop`) and appends the optimizer update, so
`train_step(x, y, *params, *states) -> (loss, *params', *states')` is one relax function
compiled by `relax.build`; `eval_forward` builds the model alone on first use.

Training-mode batch norm (batch statistics, running-stat updates) and dropout (a random mask)
are refused: the importer has no training-mode form of either, and using their eval semantics
while the module is in train mode would train a different model. Call `.eval()` on those
submodules to train with frozen statistics and no dropout. Buffers (e.g. frozen running stats)
are compiled in as constants.

>>> t = TorchTrainer(model, (x, y), torch.nn.CrossEntropyLoss(), ("adam", {"lr": 1e-3}))
>>> loss = t.step(x, y); model.load_state_dict(t.state_dict(as_torch=True))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import relax
from ..error import MiniTVMError
from ..ir.module import IRModule
from ..relax.op.grad import zeros_like
from ..relax.training import SGD, Adam, MomentumSGD, Optimizer
from ..relax.transform.gradient import Emitter, backprop
from ..runtime import cpu
from ..runtime import ndarray as nd
from .layers import TrainError
from .program import _inline

# optimizer name -> (class, accepted torch-style keyword arguments)
_OPTIMIZER_KWARGS: dict[str, tuple[str, ...]] = {
    "sgd": ("lr", "momentum", "dampening", "weight_decay", "nesterov"),
    "momentum": ("lr", "momentum", "dampening", "weight_decay", "nesterov"),
    "adam": ("lr", "betas", "eps", "weight_decay"),
}
# aten ops whose training-mode semantics minitvm has no compiled form of (name -> what to do)
_RANDOM_OPS = ("dropout", "native_dropout", "bernoulli", "rand", "randn", "rand_like", "randn_like")


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


# ----------------------------------------------------------------------------- export + import


def _refuse_train_mode_layers(model: Any) -> None:
    from torch import nn

    for name, sub in model.named_modules():
        what = None
        if isinstance(sub, nn.modules.batchnorm._BatchNorm) and sub.training:
            what = "batch norm in training mode (batch statistics, running-stat updates)"
        elif isinstance(sub, nn.modules.dropout._DropoutNd) and sub.training and sub.p > 0:
            what = f"dropout (p={sub.p}) in training mode (a random mask)"
        if what is not None:
            label = name or type(model).__name__
            raise TrainError(
                f"TorchTrainer: submodule {label!r} ({type(sub).__name__}) is {what}, which "
                f"minitvm cannot compile; call .eval() on it to train with "
                f"{'frozen running statistics' if 'batch' in what else 'no dropout'}, or remove it"
            )


def _refuse_random_ops(ep: Any) -> None:
    for node in ep.graph.nodes:
        name = getattr(node.target, "__name__", "").split(".")[0]
        if node.op == "call_function" and name in _RANDOM_OPS:
            train = node.args[2] if name == "dropout" and len(node.args) > 2 else True
            if train:
                raise TrainError(
                    f"TorchTrainer: the model calls {name} in training mode (node {node.name!r}); "
                    "minitvm has no compiled random mask; pass training=False (or remove it)"
                )


def _nll_loss_converter(node: Any, importer: Any) -> Any:
    """aten.nll_loss_forward -> relax.nn.nll_loss (it has a gradient rule; torch's own
    decomposition goes through gather, which the importer lacks)."""
    pred, target, weight, reduction, ignore_index = importer.retrieve_args(node)
    names = ("none", "mean", "sum")
    bb = importer.block_builder
    loss = bb.emit(
        relax.op.nn.nll_loss(pred, target, weight, names[int(reduction)], int(ignore_index))
    )
    # (output, total_weight): cross_entropy reads only the output; total_weight is not computed
    # and a graph that reads it is refused
    if any(u.args[1:2] == (1,) for u in node.users):
        raise TrainError(
            f"TorchTrainer: node {node.name!r} reads nll_loss_forward's total_weight, which "
            "is not supported; use F.cross_entropy / F.nll_loss"
        )
    return bb.emit(relax.Tuple((loss, loss)))


_CUSTOM = {"nll_loss_forward.default": _nll_loss_converter}


def _export(module: Any, args: tuple, dynamic: bool) -> tuple[Any, bool]:
    """torch.export with a symbolic dim 0 shared by every argument; static if torch refuses."""
    import torch

    if dynamic and all(a.ndim > 0 and a.shape[0] == args[0].shape[0] for a in args):
        batch = torch.export.Dim("batch")
        try:
            spec = tuple({0: batch} for _ in args)
            return torch.export.export(module, args, dynamic_shapes=spec), True
        except Exception:  # noqa: BLE001, S110 - torch specialised the batch (a literal size)
            pass  # export once more with static shapes: that error, if any, is the real one
    try:
        return torch.export.export(module, args), False
    except Exception as err:
        raise TrainError(
            f"TorchTrainer: torch.export failed on {type(module).__name__} "
            f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}); the model "
            "and the loss must be traceable by torch.export"
        ) from err


def _import(ep: Any, what: str) -> tuple[relax.Function, list[str]]:
    """`main(*inputs, *params)` and the parameter names (the state_dict keys, in order)."""
    from torch.export.graph_signature import InputKind

    from ..relax.frontend.torch import from_exported_program

    _refuse_random_ops(ep)
    try:
        mod = from_exported_program(
            ep, keep_params_as_input=True, unwrap_unit_return_tuple=True, custom_convert_map=_CUSTOM
        )
    except MiniTVMError as err:
        raise TrainError(f"TorchTrainer: importing the {what} failed: {err}") from err
    names = [s.target for s in ep.graph_signature.input_specs if s.kind == InputKind.PARAMETER]
    return mod["main"], names


class _WithLoss:
    """Factory of the nn.Module `loss(model(x), y)` that torch.export traces."""

    @staticmethod
    def make(model: Any, loss: Callable) -> Any:
        from torch import nn

        class ModelWithLoss(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model
                if isinstance(loss, nn.Module):
                    self.loss = loss
                else:
                    self.loss_fn = loss

            def forward(self, x: Any, y: Any) -> Any:
                fn = self.loss if isinstance(loss, nn.Module) else self.loss_fn
                return fn(self.model(x), y)

        return ModelWithLoss()


class _ModelOnly:
    @staticmethod
    def make(model: Any) -> Any:
        from torch import nn

        class ModelOnly(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, x: Any) -> Any:
                return self.model(x)

        return ModelOnly()


def _strip(name: str) -> str:
    return name.removeprefix("model.")


# ----------------------------------------------------------------------------- the trainer


class TorchTrainer:
    """Train `model` on minitvm: one compiled program per step (forward, loss, backward,
    update). `example` is an example batch `(x, y)`; `loss` an nn.Module loss, `F.cross_entropy`
    or any callable `(outputs, targets) -> scalar` torch.export can trace; `optimizer` a
    `(name, kwargs)` pair, a torch.optim SGD/Adam, or a relax.training optimizer.

    Parameters with `requires_grad=False` are passed but not updated. The batch dim is symbolic
    when torch.export allows (`symbolic_batch`); otherwise every batch must have the example's
    size. Momentum dampening follows TVM (applied from the first step; torch skips it once)."""

    def __init__(
        self,
        model: Any,
        example: Sequence[Any],
        loss: Callable,
        optimizer: Any = ("sgd", {"lr": 0.01}),
        *,
        target: str = "llvm",
        dynamic_batch: bool = True,
    ) -> None:
        import torch
        from torch import nn

        if not isinstance(model, nn.Module):
            raise TrainError(f"TorchTrainer: model must be a torch.nn.Module, got {type(model)}")
        if not callable(loss):
            raise TrainError(f"TorchTrainer: loss must be callable, got {type(loss).__name__}")
        if not (isinstance(example, tuple | list) and len(example) == 2):
            raise TrainError("TorchTrainer: example must be one batch (x, y)")
        _refuse_train_mode_layers(model)
        x, y = (_as_tensor(a, n) for a, n in zip(example, ("x", "y")))
        self.model = model
        with torch.no_grad():
            out = loss(model(x), y)
        if not isinstance(out, torch.Tensor) or out.numel() != 1 or not out.is_floating_point():
            raise TrainError(
                f"TorchTrainer: loss(model(x), y) must be a float scalar, got "
                f"{getattr(out, 'shape', type(out).__name__)}; use reduction='mean' or 'sum'"
            )
        ep, self.symbolic_batch = _export(_WithLoss.make(model, loss), (x, y), dynamic_batch)
        loss_fn, names = _import(ep, "model with its loss")
        self.names = [_strip(n) for n in names]
        named = dict(model.named_parameters())
        if any(n not in named for n in self.names):
            raise TrainError(
                "TorchTrainer: the loss has parameters of its own "
                f"({[n for n in self.names if n not in named]}); only the model's are trained"
            )
        self.trainable = [named[n].requires_grad for n in self.names]
        self._params = [nd.array(named[n].detach().cpu().numpy()) for n in self.names]
        self._buffers = {k: v.detach().cpu().numpy() for k, v in model.named_buffers()}
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
        n_in = 2
        inputs = [relax.Var(p.name_hint, p.struct_info) for p in loss_fn.params[:n_in]]
        params = [relax.Var(f"p{k}", p.struct_info) for k, p in enumerate(loss_fn.params[n_in:])]
        states = [
            relax.Var(f"state{k}", relax.TensorStructInfo(s.shape, str(s.dtype)))
            for k, s in enumerate(self._states)
        ]
        bb = relax.BlockBuilder()
        with bb.function("train_step", [*inputs, *params, *states]):
            with bb.dataflow():
                em = Emitter(bb)
                outs = _inline(em, _as_tuple_fn(loss_fn), [*inputs, *params])
                loss = outs[0]
                if not isinstance(loss, relax.Var):
                    loss = em.emit(loss, "loss")
                wrt = [p for p, t in zip(params, self.trainable) if t]
                grads = backprop(em, loss, wrt)
                grads = [g if g is not None else em.emit(zeros_like(p)) for g, p in zip(grads, wrt)]
                update = self.optimizer.get_flat_function()
                updated = _inline(em, update, [*wrt, *grads, *states])
                new = iter(updated[: len(wrt)])
                new_params = [next(new) if t else p for p, t in zip(params, self.trainable)]
                result = relax.Tuple((loss, *new_params, *updated[len(wrt) :]))
                out = bb.emit_output(result)
            bb.emit_func_output(out)
        return bb.get()

    def _build_forward(self) -> Any:
        """`forward(x, *params)`: the model alone, exported, imported and built once."""
        ep, _ = _export(_ModelOnly.make(self.model), (self._example_x,), self.symbolic_batch)
        fwd, names = _import(ep, "model")
        if [_strip(n) for n in names] != self.names:
            raise TrainError(
                "TorchTrainer.eval_forward: the model alone has parameters "
                f"{[_strip(n) for n in names]}, the model with its loss {self.names}"
            )
        attrs = {k: v for k, v in (fwd.attrs or {}).items() if k != "params"}
        fwd = relax.Function(fwd.params, fwd.body, fwd.ret_struct_info, attrs)
        vm = relax.VirtualMachine(relax.build(IRModule({"main": fwd}), self.target), cpu(0))
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

    def step(self, x: Any, y: Any) -> float:
        """One optimizer step on the batch (x, y); returns the loss before the update."""
        out = self.vm["train_step"](
            self._arg(x, "x", self._x_dtype),
            self._arg(y, "y", self._y_dtype),
            *self._params,
            *self._states,
        )
        n = len(self._params)
        self._params = list(out[1 : 1 + n])
        self._states = list(out[1 + n :])
        return float(out[0].numpy())

    def eval_forward(self, x: Any) -> np.ndarray:
        """The model's output for `x` with the current parameters."""
        if self._forward is None:
            self._forward = self._build_forward()
        out = self._forward(self._arg(x, "x", self._x_dtype), *self._params)
        return out.numpy() if hasattr(out, "numpy") else np.asarray(out[0].numpy())

    # ------------------------------------------------------------------ state
    def parameters(self, as_torch: bool = False) -> list:
        """The current parameters, in `model.named_parameters()` order (numpy or torch)."""
        arrays = [p.numpy() for p in self._params]
        return [_torch(a) for a in arrays] if as_torch else arrays

    def state_dict(self, as_torch: bool = False) -> dict[str, Any]:
        """Parameters and buffers by the model's names: `model.load_state_dict(t.state_dict(True))`
        copies the trained weights back into the torch model."""
        out: dict[str, Any] = dict(zip(self.names, self.parameters()))
        out.update({k: v.copy() for k, v in self._buffers.items()})
        return {k: _torch(v) for k, v in out.items()} if as_torch else out

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Set the parameters (numpy arrays or torch tensors, same names, shapes and dtypes).
        Buffers are compiled in as constants, so a buffer must equal the compiled value."""
        missing = [n for n in self.names if n not in state]
        unknown = sorted(set(state) - set(self.names) - set(self._buffers))
        if missing or unknown:
            raise TrainError(
                f"TorchTrainer.load_state_dict: missing {missing}, unexpected {unknown}"
            )
        new = []
        for name, old in zip(self.names, self._params):
            arr = _to_numpy(state[name], name)
            if arr.shape != tuple(old.shape) or str(arr.dtype) != str(old.dtype):
                raise TrainError(
                    f"TorchTrainer.load_state_dict: {name!r} is {arr.dtype}{list(arr.shape)}, "
                    f"the model has {old.dtype}{list(old.shape)}"
                )
            new.append(nd.array(np.ascontiguousarray(arr)))
        for name, value in self._buffers.items():
            if name in state and not np.array_equal(_to_numpy(state[name], name), value):
                raise TrainError(
                    f"TorchTrainer.load_state_dict: buffer {name!r} differs from the compiled "
                    "one; buffers are constants of the program: build a new TorchTrainer"
                )
        self._params = new


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
