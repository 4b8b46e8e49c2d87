"""Gradient rule of `relax.ccl.allreduce` with op_type "sum" or "avg" (of a tensor or a Tuple).

Every worker's output is the same linear map of every worker's input: y = sum_r x_r (or its
mean). Worker r's input reaches every worker's output with weight 1 (1/n), so its adjoint is
the sum (mean) over the workers of their output adjoints: the all-reduce of the incoming
gradient, with the same op_type. The sum is self-adjoint. This is what synchronized BatchNorm
needs (minitvm/training/collectives.py): the batch statistics are all-reduced in the
forward pass, and the gradients of the two per-channel sums in the backward pass.

prod, min and max have no rule (their adjoints need the other workers' values).
"""

from __future__ import annotations

from ...error import MiniTVMError
from ..expr import TupleGetItem
from .ccl import allreduce
from .grad import _install

_LINEAR = ("sum", "avg")


def _allreduce(var, call, g, bb):
    """Grad of allreduce(x): allreduce(g) with the same op_type (sum and avg are linear)."""
    op_type = call.attrs["op_type"]
    if op_type not in _LINEAR:
        raise MiniTVMError(
            f"relax.Gradient: relax.ccl.allreduce with op_type {op_type!r} (bound to "
            f"'{var.name_hint}') has no gradient rule; only {_LINEAR} are differentiable"
        )
    grad = allreduce(g, op_type, call.attrs["in_group"])
    fields = getattr(call.args[0].struct_info, "fields", None)
    if fields is None:
        return [grad]
    grad = bb.emit(grad)  # a Tuple argument gets one gradient per field
    return [[TupleGetItem(grad, k) for k in range(len(fields))]]


# on the op's row only, not in GRAD_RULES (whose rules each have a single-process torch case):
# tests/test_dp_torch_trainer.py checks it against one process running the global batch
_install({"relax.ccl.allreduce": _allreduce})

__all__: list[str] = []
