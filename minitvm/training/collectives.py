"""What a data-parallel TorchTrainer program all-reduces (`relax.ccl.allreduce`), inside the
one compiled step: the gradients before the update, and synchronized BatchNorm's statistics.

`average_gradients` all-reduces the Tuple of the loss and every gradient with op_type "avg",
between backward and the optimizer update; the runtime (distributed.py) copies them into one
flat buffer per dtype, runs one collective on it and copies the results out (a compiled
concat of ~60 tensors is a chain of selects per element: ResNet-18 spent 0.8 s in it).

`sync_batch_norm_converter(world_size)` converts a train-mode BatchNorm
(`aten._native_batch_norm_legit_functional`) into reductions, ONE all-reduce and elementwise
ops whose gradient rules exist, so that each shard normalises with the GLOBAL batch's
statistics. Each shard computes its own two-pass statistics, and one all-reduce of a packed
float64 Tuple combines them (Chan et al.'s parallel variance; n_r values per shard, W shards):

    m_r  = sum(x) / n_r,   M2_r = sum((x - m_r)^2)            this shard, float32
    (S1, S2, S3) = allreduce((m_r, m_r^2, M2_r), "sum")        float64: one collective
    mean = S1 / W,         var  = (S3 + n_r (S2 - S1 mean)) / (n_r W)
    y    = ((x - m_r) + (m_r - mean)) * rsqrt(var + eps) * gamma + beta
    running_mean' = (1 - m) running_mean + m mean
    running_var'  = (1 - m) running_var + m var * n / (n - 1)     (torch's unbiased update)

Nothing large cancels in float32 (x - m_r is of the order of std); the between-shard term
S2 - S1 mean does cancel (|mean|^2 against the spread of the shard means), which float64
absorbs: its error is ~1e-16 (|mean| / std)^2 of the variance (float32's E[x^2] - E[x]^2
would be ~6e-8 (|mean| / std)^2).

The backward pass is the gradient of that one all-reduce (relax/op/grad_ccl.py): one
all-reduce of the Tuple of the three adjoints, so every rank's gradient is its share of the
global batch's: one collective per BatchNorm forward and one backward. This is a rewrite of
the imported graph, not a rule of `relax.nn.batch_norm`: its decomposition is differentiated
by the ordinary rules.
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
        n_local = _nn._batch_count(x, _BN.split(".")[0])
        weight, bias = _nn._bn_params(importer, x, weight, bias)
        stats = (float(momentum), float(eps), n_local, world_size)
        return _sync_batch_norm(importer, x, weight, bias, running_mean, running_var, *stats)

    return {_BN: convert}


def _sync_batch_norm(
    t, x, gamma, beta, rm, rv, m: float, eps: float, n_local: int, shards: int
) -> tuple:
    R, emit = relax.op, t.emit
    dtype = str(x.struct_info.dtype)
    ndim = len(x.struct_info.shape)
    axes = [0, *range(2, ndim)]
    per_channel = (1, -1) + (1,) * (ndim - 2)
    n = n_local * shards  # the global count per channel

    def scalar(v: float) -> relax.Expr:
        return t.const(v, dtype)

    # this shard's two-pass statistics (float32: x - m_local is small, nothing cancels)
    m_local = emit(R.multiply(emit(R.sum(x, axes, keepdims=True)), scalar(1.0 / n_local)))
    centered = emit(R.subtract(x, m_local))
    m2_local = emit(R.sum(emit(R.multiply(centered, centered)), axes, keepdims=True))
    mean, var, shift = _combine_shards(t, m_local, m2_local, shards, n_local)
    rstd = emit(R.rsqrt(emit(R.add(var, scalar(eps)))))
    scale = emit(R.multiply(rstd, emit(R.reshape(gamma, per_channel))))
    # y = (x - mean) * scale + beta, with x - mean = centered + (m_local - mean)
    bias = emit(R.add(emit(R.multiply(shift, scale)), emit(R.reshape(beta, per_channel))))
    y = emit(R.add(emit(R.multiply(centered, scale)), bias))
    mean_c, var_c = emit(R.reshape(mean, (-1,))), emit(R.reshape(var, (-1,)))
    new_mean = emit(R.add(emit(R.multiply(rm, scalar(1 - m))), emit(R.multiply(mean_c, scalar(m)))))
    unbiased = scalar(m * n / (n - 1))
    new_var = emit(R.add(emit(R.multiply(rv, scalar(1 - m))), emit(R.multiply(var_c, unbiased))))
    saved_invstd = emit(R.reshape(rstd, (-1,)))  # torch's outputs 1 and 2; unread in training
    return (y, mean_c, saved_invstd, new_mean, new_var)


def _combine_shards(t, m_local, m2_local, shards: int, n_local: int) -> tuple:
    """(global mean, global biased variance, m_local - mean), from every shard's (mean, M2) by
    one all-reduce of (m_r, m_r^2, M2_r) in float64 (Chan et al.'s parallel variance):

        mean = sum m_r / W,   M2 = sum M2_r + n_r (sum m_r^2 - W mean^2)

    The subtraction in the between-shard term cancels |mean|^2; float64 keeps it exact enough
    (module docstring). Every field is float64, so the runtime moves them in one buffer."""
    R, emit = relax.op, t.emit
    dtype = str(m_local.struct_info.dtype)
    wide = "float64"
    m64 = emit(R.astype(m_local, wide))
    packed = [m64, emit(R.multiply(m64, m64)), emit(R.astype(m2_local, wide))]
    total = emit(ccl.allreduce(packed, "sum"))
    s1, s2, s3 = (emit(relax.TupleGetItem(total, k)) for k in range(3))
    mean64 = emit(R.multiply(s1, t.const(1.0 / shards, wide)))
    between = emit(R.subtract(s2, emit(R.multiply(s1, mean64))))
    m2 = emit(R.add(s3, emit(R.multiply(between, t.const(float(n_local), wide)))))
    var = emit(R.astype(emit(R.multiply(m2, t.const(1.0 / (n_local * shards), wide))), dtype))
    shift = emit(R.astype(emit(R.subtract(m64, mean64)), dtype))
    return emit(R.astype(mean64, dtype)), var, shift


__all__ = ["average_gradients", "sync_batch_norm_converter"]
