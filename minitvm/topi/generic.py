"""`topi.generic`: TVM's target-independent default schedules. Each takes the output tensors
(one or a list) and returns a plain `te.create_schedule` of them: correct on every target, not
tuned (use `topi.cuda`, dlight or meta-schedule for speed)."""

from __future__ import annotations

from typing import Any

from .. import te
from ..error import TEError


def _default_schedule(outs: Any, what: str) -> Any:
    outs = [outs] if isinstance(outs, te.Tensor) else list(outs)
    if not outs or not all(isinstance(t, te.Tensor) for t in outs):
        raise TEError(f"topi.generic.{what}: expected a te.Tensor or a list of them, got {outs!r}")
    return te.create_schedule([t.op for t in outs])


# TVM's names for the generic schedules; every one is the default schedule above.
_NAMES = (
    "schedule_adaptive_pool",
    "schedule_batch_matmul",
    "schedule_broadcast",
    "schedule_conv1d_ncw",
    "schedule_conv2d_hwcn",
    "schedule_conv2d_nchw",
    "schedule_conv2d_nhwc",
    "schedule_conv2d_transpose_nchw",
    "schedule_dense",
    "schedule_depthwise_conv2d_nchw",
    "schedule_depthwise_conv2d_nhwc",
    "schedule_elemwise",
    "schedule_extern",
    "schedule_injective",
    "schedule_lrn",
    "schedule_pool",
    "schedule_reduce",
    "schedule_softmax",
)


def _make(name: str) -> Any:
    def schedule(outs: Any, *args: Any) -> Any:
        return _default_schedule(outs, name)

    schedule.__name__ = schedule.__qualname__ = name
    schedule.__doc__ = f"TVM's generic `{name}`: the default schedule of the outputs."
    return schedule


globals().update({name: _make(name) for name in _NAMES})

__all__ = list(_NAMES)
