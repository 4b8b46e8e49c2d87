"""Gradient checkpointing markers: `relax.op.grad.start_checkpoint(x)` / `end_checkpoint(y)`.

Both are the identity. They tell `relax.transform.Gradient` which activations not to keep: a
value computed from a start_checkpoint output (directly or through other such values), up to an
end_checkpoint, is recomputed in the backward pass from the checkpointed inputs instead of being
read from the forward pass (see relax/transform/gradient_checkpoint.py). A built function that
still holds them (not differentiated) passes the value through.
"""

from __future__ import annotations

from ..expr import Call, Expr
from ..struct_info import StructInfo
from ._table import OpPattern, make_call, register_op
from .shape_ops import BUILTIN_LOWERING


def _infer_identity(call: Call) -> StructInfo:
    return call.args[0].struct_info


def _identity(x):
    return x


def _pass_through(var, call, g, bb):
    """The markers' own gradient rule (the identity's), for graphs differentiated without the
    Gradient pass dropping them (minitvm.autodiff's `backprop`)."""
    return [g]


_start, _end = (
    register_op(name, _infer_identity, None, _identity, OpPattern.OPAQUE, _pass_through)
    for name in ("relax.grad.start_checkpoint", "relax.grad.end_checkpoint")
)


def start_checkpoint(x: Expr) -> Call:
    """Mark `x` as a checkpoint: kept from the forward pass; what is computed from it (up to an
    `end_checkpoint`) is recomputed in the backward pass (TVM's `relax.op.grad.start_checkpoint`).

    `y = R.grad.end_checkpoint(R.power(R.grad.start_checkpoint(x), c))`
    """
    return make_call(_start, (x,))


def end_checkpoint(x: Expr) -> Call:
    """End a checkpointed region at `x` (TVM's `relax.op.grad.end_checkpoint`)."""
    return make_call(_end, (x,))


def _lower_identity(call: Call) -> Expr:
    return call.args[0]


BUILTIN_LOWERING["relax.grad.start_checkpoint"] = _lower_identity
BUILTIN_LOWERING["relax.grad.end_checkpoint"] = _lower_identity

CHECKPOINT_OPS = ("relax.grad.start_checkpoint", "relax.grad.end_checkpoint")

__all__ = ["CHECKPOINT_OPS", "end_checkpoint", "start_checkpoint"]
