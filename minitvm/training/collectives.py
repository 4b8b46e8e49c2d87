"""What a data-parallel TorchTrainer program all-reduces (`relax.ccl.allreduce`), inside the
one compiled step: the gradients before the update, and synchronized BatchNorm's statistics.

`average_gradients` all-reduces the Tuple of the loss and every gradient with op_type "avg",
between backward and the optimizer update; the runtime (distributed.py) copies them into one
flat buffer per dtype, runs one collective on it and copies the results out (a compiled
concat of ~60 tensors is a chain of selects per element: ResNet-18 spent 0.8 s in it).

`sync_batch_norm_converter(world_size)` converts a train-mode BatchNorm
(`aten._native_batch_norm_legit_functional`) into reductions, all-reduces and elementwise ops
whose gradient rules exist, so that each shard normalises with the GLOBAL batch's statistics.
The variance is two-pass, as one process computes it (not E[x^2] - E[x]^2, which cancels in
float32 when |mean| >> std):

    mean = allreduce(sum(x)) / n                  n = the global count per channel
    var  = allreduce(sum((x - mean)^2)) / n       (biased: normalisation)
    y    = (x - mean) * rsqrt(var + eps) * gamma + beta
    running_mean' = (1 - m) running_mean + m mean
    running_var'  = (1 - m) running_var + m var * n / (n - 1)     (torch's unbiased update)

The backward pass all-reduces the gradients of the two per-channel sums (allreduce's rule:
relax/op/grad_ccl.py), so every rank's gradient is its share of the global batch's. This is a
rewrite of the imported graph, not a rule of `relax.nn.batch_norm`: its decomposition is
differentiated by the ordinary rules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import relax
from ..error import OpAttributeUnImplemented
from ..relax.op import ccl
from ..relax.transform.gradient import Emitter

_BN = "_native_batch_norm_legit_functional.default"


def average_gradients(em: Emitter, loss: relax.Expr, grads: list) -> tuple[relax.Expr, list]:
    """(loss, grads) averaged over the processes by one all-reduce of the Tuple of them all
    (the runtime moves it in one flat buffer per dtype)."""
    values = [loss, *grads]
    total = em.emit(ccl.allreduce(values, "avg"), "allreduced")
    out = [em.emit(relax.TupleGetItem(total, k)) for k in range(len(values))]
    return out[0], out[1:]


def sync_batch_norm_converter(world_size: int) -> dict[str, Callable]:
    """The importer's converter of a train-mode BatchNorm whose statistics are the global
    batch's: each of `world_size` processes holds an equal shard."""
    from ..relax.frontend.torch import _nn

    def convert(node: Any, importer: Any) -> Any:
        args = importer.retrieve_args(node)
        x, weight, bias, running_mean, running_var, training, momentum, eps = args
        if not training:  # inference: outputs 1 and 2 (saved statistics) are not computed
            if any(u.args[1:2] in ((1,), (2,)) for u in node.users):
                raise OpAttributeUnImplemented(
                    f"{node.name}: an eval-mode batch norm's saved statistics are read; they "
                    "are not computed"
                )
            out = _nn._batch_norm(importer, x, weight, bias, running_mean, running_var, eps)
            return (out, running_mean, running_var, running_mean, running_var)
        if not isinstance(momentum, int | float):
            raise OpAttributeUnImplemented(
                f"{node.name}: a BatchNorm with momentum=None is not supported; give it a float"
            )
        n = _nn._batch_count(x, _BN.split(".")[0]) * world_size
        weight, bias = _nn._bn_params(importer, x, weight, bias)
        return _sync_batch_norm(
            importer, x, weight, bias, running_mean, running_var, float(momentum), float(eps), n
        )

    return {_BN: convert}


def _sync_batch_norm(t, x, gamma, beta, rm, rv, m: float, eps: float, n: int) -> tuple:
    R, emit = relax.op, t.emit
    dtype = str(x.struct_info.dtype)
    ndim = len(x.struct_info.shape)
    axes = [0, *range(2, ndim)]
    per_channel = (1, -1) + (1,) * (ndim - 2)

    def scalar(v: float) -> relax.Expr:
        return t.const(v, dtype)

    def global_mean(v: relax.Expr) -> relax.Expr:
        local = emit(R.sum(v, axes, keepdims=True))
        return emit(R.multiply(emit(ccl.allreduce(local, "sum")), scalar(1.0 / n)))

    mean = global_mean(x)
    centered = emit(R.subtract(x, mean))
    var = global_mean(emit(R.multiply(centered, centered)))
    rstd = emit(R.rsqrt(emit(R.add(var, scalar(eps)))))
    scale = emit(R.multiply(rstd, emit(R.reshape(gamma, per_channel))))
    y = emit(R.add(emit(R.multiply(centered, scale)), emit(R.reshape(beta, per_channel))))
    mean_c, var_c = emit(R.reshape(mean, (-1,))), emit(R.reshape(var, (-1,)))
    new_mean = emit(R.add(emit(R.multiply(rm, scalar(1 - m))), emit(R.multiply(mean_c, scalar(m)))))
    unbiased = scalar(m * n / (n - 1))
    new_var = emit(R.add(emit(R.multiply(rv, scalar(1 - m))), emit(R.multiply(var_c, unbiased))))
    saved_invstd = emit(R.reshape(rstd, (-1,)))  # torch's outputs 1 and 2; unread in training
    return (y, mean_c, saved_invstd, new_mean, new_var)


__all__ = ["average_gradients", "sync_batch_norm_converter"]
