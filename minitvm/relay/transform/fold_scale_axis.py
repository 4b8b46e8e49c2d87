"""FoldScaleAxis: a per-output-channel scale after a conv2d goes into the conv's weight.

`multiply(conv2d(x, w), s)`, where `s` is a constant that varies only along the conv output's
channel axis and the conv has no other user, becomes `conv2d(x, multiply(w, s'))` with `s'`
the same values laid along the weight's O axis; FoldConstant then computes the new weight
when `w` is a constant. (TVM's backward folding; scales before a conv are left alone.)
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ..expr import Call, Constant, Expr, Function, Op
from ..expr_functor import ExprMutator, post_order_visit
from ..op import tensor as T


def _use_counts(func: Function) -> Counter:
    uses: Counter = Counter()

    def count(e: Any) -> None:
        children = e.args if isinstance(e, Call) else getattr(e, "fields", ())
        for child in children:
            uses[child] += 1

    post_order_visit(func.body, count)
    uses[func.body] += 1
    return uses


def _channel_scale(scale: Constant, conv: Call) -> np.ndarray | None:
    """The scale as one value per output channel, or None if it varies along another axis."""
    s = scale.data.numpy()
    out_layout = conv.attrs.out_layout or conv.attrs.data_layout
    ndim, axis = len(out_layout), out_layout.index("C")
    if s.ndim > ndim or s.dtype != np.dtype(conv.checked_type.dtype):
        return None
    shape = (1,) * (ndim - s.ndim) + s.shape
    if any(d != 1 for i, d in enumerate(shape) if i != axis):
        return None
    channels = conv.checked_type.shape[axis]
    return np.broadcast_to(s.reshape(-1), (channels,))


class _Folder(ExprMutator):
    def __init__(self, uses: Counter) -> None:
        super().__init__()
        self.uses = uses

    def visit_call(self, call: Call) -> Expr:
        new = super().visit_call(call)
        if not (isinstance(call.op, Op) and call.op.name == "multiply"):
            return new
        for conv_pos in (0, 1):
            conv, scale = call.args[conv_pos], new.args[1 - conv_pos]
            if not (
                isinstance(conv, Call)
                and isinstance(conv.op, Op)
                and conv.op.name == "nn.conv2d"
                and isinstance(scale, Constant)
                and self.uses[conv] == 1
            ):
                continue
            per_channel = _channel_scale(scale, conv)
            if per_channel is None:
                continue
            kernel_layout = conv.attrs.kernel_layout
            shape = [1] * len(kernel_layout)
            shape[kernel_layout.index("O")] = per_channel.size
            weight_scale = Constant(np.ascontiguousarray(per_channel.reshape(shape)))
            new_conv = new.args[conv_pos]
            weight = T.multiply(new_conv.args[1], weight_scale)
            return Call(new_conv.op, [new_conv.args[0], weight], new_conv.attrs)
        return new


def fold_scale_axis(func: Function) -> Function:
    """`func` with per-channel scales after convs folded into their weights."""
    from ..type_infer import infer_type

    infer_type(func)
    return _Folder(_use_counts(func)).visit(func)
