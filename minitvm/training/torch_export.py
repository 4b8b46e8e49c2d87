"""A torch `nn.Module` as relax functions for training: export, import, buffers as states.

torch.export compiles a module's buffers (BatchNorm's running_mean, running_var,
num_batches_tracked) in as constants, and a train-mode module updates them in place. To
carry them between steps, the module is exported through `torch.func.functional_call` with
its buffers as inputs and their new values as outputs: the imported function reads them as
parameters and returns the updated running statistics (torch's unbiased-variance update,
the BatchNorm's momentum), which the trainer feeds into the next step.

Dropout in training mode reads an extra int64 input `rng_key = (seed, step)`: each dropout
site becomes `x * relax.op.random.dropout_mask(rng_key, shape, p, stream=site)`, a mask the
backward pass reuses, new at every step and the same for the same seed.

Converters of its own, for training: scaled_dot_product_attention as matmul-softmax-matmul
(ops with gradient rules; attention dropout is refused), linear as one 2-d matmul over the
flattened leading dims (a 2-d weight gradient instead of a batched one summed), embedding with
its padding_idx rows recorded so that the trainer gives them no gradient, as torch does.

`torch_backbone(model, x)` gives TVM's SetupTrainer its input: a module whose `backbone(x,
*params, *states)` returns `(prediction, *new_states)`, with `param_num` and `state_num`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .. import relax
from ..error import MiniTVMError
from ..ir.module import IRModule
from ..relax.transform.gradient import Emitter
from .layers import TrainError
from .program import _inline

KEY = "rng_key"  # the name of the (seed, step) input of a program with dropout
# aten ops drawing random numbers that have no compiled form (dropout has one)
_RANDOM_OPS = ("bernoulli", "rand", "randn", "rand_like", "randn_like", "randint", "normal")


def _refuse_random_ops(ep: Any) -> None:
    for node in ep.graph.nodes:
        name = getattr(node.target, "__name__", "").split(".")[0]
        if node.op == "call_function" and name in _RANDOM_OPS:
            raise TrainError(
                f"TorchTrainer: the model calls {name} (node {node.name!r}); minitvm compiles "
                "random masks for dropout only; remove it or draw the values outside the model"
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


def _attention_converter(node: Any, importer: Any) -> Any:
    """aten.scaled_dot_product_attention -> matmul, softmax, matmul: ops with gradient rules
    (relax.nn.attention has none), and the backward pass reuses the saved probabilities."""
    from ..relax.frontend.torch._nn import attention_probs

    names = ("attn_mask", "dropout_p", "is_causal")
    args = importer.retrieve_args(node)
    kwargs = importer.retrieve(dict(node.kwargs))
    q, k, v = args[:3]
    opts = dict(zip(names, args[3:]))
    opts.update({n: kwargs[n] for n in names if n in kwargs})
    if float(opts.get("dropout_p") or 0.0) > 0.0:
        raise TrainError(
            f"TorchTrainer: attention node {node.name!r} has dropout_p={opts['dropout_p']}; "
            "attention dropout is not supported: set the attention dropout probability to 0 "
            "(e.g. nn.TransformerEncoderLayer(dropout=0.0), attention_probs_dropout_prob=0.0)"
        )
    if kwargs.get("enable_gqa"):
        raise TrainError(
            f"TorchTrainer: attention node {node.name!r} has enable_gqa=True, which is not "
            "supported; repeat the key/value heads in the model instead"
        )
    probs = attention_probs(
        importer, q, k, opts.get("attn_mask"), bool(opts.get("is_causal")), kwargs.get("scale")
    )
    return importer.emit(relax.op.matmul(probs, v))


def _linear_converter(node: Any, importer: Any) -> Any:
    """aten.linear on (..., K) inputs as ONE 2-d matmul over the flattened leading dims. The
    importer's batched `x @ w.T` is the same forward, but the gradient of its 2-d weight is a
    batched outer product (one (K, M) matrix per leading index) summed afterwards; this way it
    is one (K, N) @ (N, M) matmul."""
    from ..relax.frontend.torch._base import shape_of

    x, w, b = (importer.retrieve_args(node) + [None])[:3]
    lead = tuple(shape_of(x))[:-1]
    if len(lead) > 1:
        x = importer.emit(relax.op.reshape(x, (-1, shape_of(x)[-1])))
    w_t = importer.emit(relax.op.permute_dims(w, None))
    y = importer.emit(relax.op.matmul(x, w_t, out_dtype=str(x.struct_info.dtype)))
    if b is not None:
        y = importer.emit(relax.op.add(y, b))
    if len(lead) > 1:
        y = importer.emit(relax.op.reshape(y, (*lead, shape_of(w)[0])))
    return y


def _embedding_converter(padded: dict) -> Callable:
    """aten.embedding as the importer's take; a `padding_idx` row is recorded in `padded`
    (weight Var -> rows): torch gives that row no gradient from the lookup, and the trainer
    masks it out of the weight's gradient (torch_trainer.py)."""
    from ..relax.frontend.torch._nn import _embedding

    def convert(node: Any, importer: Any) -> Any:
        args = importer.retrieve_args(node)
        weight, indices = args[:2]
        opts = [-1, False]  # padding_idx, scale_grad_by_freq: torch's defaults
        opts[: len(args) - 2] = args[2:4]
        padding_idx, scale_grad_by_freq = opts
        if scale_grad_by_freq:
            raise TrainError(
                f"TorchTrainer: embedding node {node.name!r} has scale_grad_by_freq=True, whose "
                "gradient is not supported; use nn.Embedding(scale_grad_by_freq=False)"
            )
        if int(padding_idx) >= 0:
            padded.setdefault(weight, set()).add(int(padding_idx))
        return _embedding(importer, weight, indices)

    return convert


def _dropout_converters() -> dict[str, Callable]:
    """Converters of aten.dropout / native_dropout in training mode: the mask of each site is
    drawn from the program's rng_key with its own stream number."""
    from ..relax.frontend.torch._nn import _dropout

    sites: list[str] = []

    def convert(node: Any, importer: Any) -> Any:
        x, p, train = (importer.retrieve_args(node) + [True])[:3]
        key_node = next((n for n in node.graph.nodes if n.name == KEY), None)
        if train and p > 0 and key_node is None:
            raise TrainError(
                f"TorchTrainer: dropout node {node.name!r} runs in training mode, but the program "
                f"has no {KEY!r} input; export the model through TorchTrainer"
            )
        sites.append(node.name)
        key = importer.env[key_node] if key_node is not None else None
        out = _dropout(importer, x, float(p), bool(train), key=key, stream=len(sites) - 1)
        if node.target.__name__.startswith("dropout"):
            return out
        if any(u.args[1:2] == (1,) for u in node.users):  # native_dropout: (output, mask)
            raise TrainError(
                f"TorchTrainer: node {node.name!r} reads native_dropout's mask, which is not "
                "supported; use nn.Dropout / F.dropout"
            )
        # the mask output is never read (refused above): a stand-in of torch's dtype, removed
        # as dead code
        from ..relax.frontend.torch._base import shape_of

        return (out, importer.emit(relax.op.ones(shape_of(x), "bool")))

    return {"dropout.default": convert, "native_dropout.default": convert}


def _export(module: Any, args: tuple, batched: int, dynamic: bool) -> tuple[Any, bool]:
    """torch.export with a symbolic dim 0 shared by the first `batched` arguments; static if
    torch refuses."""
    import torch

    lead = args[:batched]
    if dynamic and all(a.ndim > 0 and a.shape[0] == lead[0].shape[0] for a in lead):
        batch = torch.export.Dim("batch")
        try:
            spec = tuple({0: batch} if k < batched else None for k in range(len(args)))
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


def _import(
    ep: Any, what: str, world_size: int = 1
) -> tuple[relax.Function, list[str], dict, dict]:
    """`main(*inputs, *params)`, the parameter names (the state_dict keys, in order) and the
    module's other functions by GlobalVar (kernels the importer emitted with emit_te, e.g.
    torch.gather's: main calls them, so every module main is copied into needs them too).
    Last, {position among main's parameters: padding rows} of each embedding weight that has
    a padding_idx. With `world_size` > 1, a train-mode BatchNorm normalises by the statistics
    of all processes' shards together (collectives.py)."""
    from torch.export.graph_signature import InputKind

    from ..relax.frontend.torch import from_exported_program

    _refuse_random_ops(ep)
    custom = {
        "nll_loss_forward.default": _nll_loss_converter,
        "scaled_dot_product_attention.default": _attention_converter,
        "linear.default": _linear_converter,
        "embedding.default": _embedding_converter(padded := {}),
        **_dropout_converters(),
    }
    if world_size > 1:
        from .collectives import sync_batch_norm_converter

        custom.update(sync_batch_norm_converter(world_size))
    try:
        mod = from_exported_program(
            ep, keep_params_as_input=True, unwrap_unit_return_tuple=True, custom_convert_map=custom
        )
    except MiniTVMError as err:
        raise TrainError(f"TorchTrainer: importing the {what} failed: {err}") from err
    names = [s.target for s in ep.graph_signature.input_specs if s.kind == InputKind.PARAMETER]
    helpers = {gv: f for gv, f in mod.functions_items() if gv.name_hint != "main"}
    main = mod["main"]
    position = {p: k for k, p in enumerate(main.params)}
    rows = {position[w]: sorted(r) for w, r in padded.items() if w in position}
    return main, names, helpers, rows


def add_helpers(bb: relax.BlockBuilder, helpers: dict) -> None:
    """Put the imported module's kernels into `bb`'s module under their own GlobalVars."""
    for gv, func in helpers.items():
        bb.update_func(gv, func)


def has_train_mode_batch_norm(model: Any) -> bool:
    """A BatchNorm in training mode: its running_var update needs the static batch size."""
    from torch import nn

    return any(
        isinstance(m, nn.modules.batchnorm._BatchNorm) and m.training for m in model.modules()
    )


@contextlib.contextmanager
def eval_mode(model: Any) -> Iterator[None]:
    """`model.eval()` inside the block; every submodule's own mode is restored after it."""
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield
    finally:
        for m, mode in modes:
            m.train(mode)


@contextlib.contextmanager
def buffers_kept(model: Any) -> Iterator[None]:
    """Run the model in the block (e.g. to check its loss) without changing its buffers or
    torch's random state."""
    import torch

    saved = {k: v.detach().clone() for k, v in model.named_buffers()}
    with torch.random.fork_rng(devices=[]):
        try:
            yield
        finally:
            with torch.no_grad():
                for k, v in model.named_buffers():
                    v.copy_(saved[k])


def _with_buffers(model: Any, names: list[str], x: Any, buffers: tuple) -> Any:
    import torch

    return torch.func.functional_call(model, dict(zip(names, buffers)), (x,), strict=False)


class WithLoss:
    """`forward(x, y, rng_key, *buffers) -> (loss(model(x), y), *new buffers)` for export."""

    @staticmethod
    def make(model: Any, loss: Callable, buffer_names: list[str]) -> Any:
        from torch import nn

        class ModelWithLoss(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model
                if isinstance(loss, nn.Module):
                    self.loss = loss
                else:
                    self.loss_fn = loss

            def forward(self, x: Any, y: Any, rng_key: Any, *buffers: Any) -> Any:
                fn = self.loss if isinstance(loss, nn.Module) else self.loss_fn
                out = fn(_with_buffers(self.model, buffer_names, x, buffers), y)
                return (out, *buffers)  # updated in place by a train-mode BatchNorm

        return ModelWithLoss()


class ModelOnly:
    """`forward(x, *buffers) -> model(x)` (exported in eval mode: running statistics)."""

    @staticmethod
    def make(model: Any, buffer_names: list[str]) -> Any:
        from torch import nn

        class ModelOnly(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, x: Any, *buffers: Any) -> Any:
                return _with_buffers(self.model, buffer_names, x, buffers)

        return ModelOnly()


def strip(name: str) -> str:
    return name.removeprefix("model.")


def torch_backbone(model: Any, example_x: Any) -> tuple[IRModule, list[np.ndarray], list]:
    """(module, params, states) for `relax.training.SetupTrainer`: `backbone(x, *params,
    *states) -> (model(x), *new states)` where the states are the model's buffers (a train-mode
    BatchNorm's running statistics and batch count), with the module attributes `param_num`
    and `state_num`; params and states are the model's current values, in order."""
    import torch

    names = [k for k, _ in model.named_buffers()]
    buffers = tuple(b.detach().clone() for _, b in model.named_buffers())

    class Backbone(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, x: Any, *bufs: Any) -> Any:
            return (_with_buffers(self.model, names, x, bufs), *bufs)

    x = torch.as_tensor(example_x)
    ep, _ = _export(Backbone(), (x, *buffers), 1, False)
    main, pnames, helpers, padded = _import(ep, "model")
    if padded:
        raise TrainError(
            "torch_backbone: the model has an embedding with padding_idx, whose row torch "
            "leaves without gradient; relax.Gradient would train it. Train it with TorchTrainer "
            "(which masks that row) or use nn.Embedding without padding_idx"
        )
    named = dict(model.named_parameters())
    values = [named[strip(n)].detach().cpu().numpy() for n in pnames]
    n_in, nbuf = 1, len(names)
    ins = list(main.params[:n_in])
    bufs = list(main.params[n_in : n_in + nbuf])
    params = list(main.params[n_in + nbuf :])
    new_vars = [relax.Var(v.name_hint, v.struct_info) for v in (*ins, *params, *bufs)]
    vmap = dict(zip([*ins, *params, *bufs], new_vars))
    bb = relax.BlockBuilder()
    add_helpers(bb, helpers)
    with bb.function("backbone", new_vars):
        with bb.dataflow():
            em = Emitter(bb)
            outs = _inline(em, main, [vmap[p] for p in main.params])
            outs = [o if isinstance(o, relax.Var) else em.emit(o) for o in outs]
            out = [bb.emit_output(o) if o not in new_vars else o for o in outs]
        bb.emit_func_output(relax.Tuple(tuple(out)))
    mod = bb.get().with_attr("param_num", len(params)).with_attr("state_num", nbuf)
    return mod, values, [b.numpy() for b in buffers]


__all__ = ["KEY", "ModelOnly", "WithLoss", "eval_mode", "torch_backbone"]
