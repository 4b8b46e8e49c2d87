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

import dataclasses

from ...error import MiniTVMError
from ..expr import TupleGetItem
from ._table import OP_TABLE
from .ccl import allreduce
from .grad import NO_GRAD_RULE

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


def _install() -> None:
    """Put the rule in the op's table row (the row is frozen: replaced, not mutated)."""
    from ..expr import Op

    op = Op.get("relax.ccl.allreduce")
    op.op_def = dataclasses.replace(op.op_def, grad=_allreduce)
    OP_TABLE["relax.ccl.allreduce"] = op.op_def
    NO_GRAD_RULE.pop("relax.ccl.allreduce", None)


_install()

__all__: list[str] = []
