"""Gradient entries of collapse_sum_to / collapse_sum_like (collapse_sum.py), of the
collective ops (ccl.py), and of concat with axis=None.

A collapse sum is the transpose of a broadcast: each output element is a sum of input
elements, so every summed input element gets that output's cotangent (a broadcast back to the
input's shape). The shape argument, and the tensor whose shape collapse_sum_like reads, get none.
"""

from __future__ import annotations

from .grad import GRAD_RULES, NO_GRAD_RULE, _install, _reasons, broadcast_like


def _collapse_sum(var, call, g, bb):
    return [broadcast_like(g, call.args[0]), None]


_concat_on_axis = GRAD_RULES["relax.concat"]


def _concat(var, call, g, bb):
    """concat(axis=None) joins 1-d tensors: its gradient is that of the concat on axis 0."""
    if call.attrs["axis"] is None:
        call = call.replace(attrs=call.attrs.set("axis", 0))
    return _concat_on_axis(var, call, g, bb)


GRAD_RULES.update(
    {
        "relax.collapse_sum_to": _collapse_sum,
        "relax.collapse_sum_like": _collapse_sum,
        "relax.concat": _concat,
    }
)
_install()

NO_GRAD_RULE.update(
    _reasons(
        {
            "ccl.allgather ccl.broadcast_from_worker0 ccl.scatter_from_worker0": (
                "collective op: minitvm has no disco session to run it or its transpose"
            )
        }
    )
)

__all__: list[str] = []
