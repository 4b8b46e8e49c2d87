"""FlattenAtrousConv: `batch_to_space_nd(conv2d(space_to_batch_nd(x)))`, TensorFlow's form of
a dilated convolution, becomes one conv2d with dilation = block_shape.

With block b, paddings (p0, p1) and crops (c0, c1) per spatial dim, output m of the pattern
reads x[m - (p0 - c0) + t*b] for kernel tap t, which is a conv with dilation b and padding
(p0 - c0, p1 - c1). The rewrite is made only where that holds exactly: an NHWC conv2d of
stride 1, dilation 1 and no padding of its own, s2b and b2s over H, W with the same blocks,
zero pad value, and crops no larger than the paddings.
"""

from __future__ import annotations

from typing import Any

from ..expr import Call, Expr, Function, Op
from ..expr_functor import ExprMutator
from ..op.nn import conv2d


def _is_call(expr: Any, name: str) -> bool:
    return isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == name


def _dilated_padding(s2b: Call, conv: Call, b2s: Call) -> tuple | None:
    """The (top, left, bottom, right) padding of the equivalent dilated conv, or None."""
    ca, sa, ba = conv.attrs, s2b.attrs, b2s.attrs
    if ca.data_layout != "NHWC" or tuple(ca.strides) != (1, 1) or tuple(ca.dilation) != (1, 1):
        return None
    if any(ca.padding) or sa.pad_value != 0 or len(sa.block_shape) != 2:
        return None
    if tuple(sa.block_shape) != tuple(ba.block_shape):
        return None
    before = [p[0] - c[0] for p, c in zip(sa.paddings, ba.crops)]
    after = [p[1] - c[1] for p, c in zip(sa.paddings, ba.crops)]
    if min(before + after) < 0:
        return None
    return (before[0], before[1], after[0], after[1])


class _Flattener(ExprMutator):
    def visit_call(self, call: Call) -> Expr:
        new = super().visit_call(call)
        if not _is_call(new, "nn.batch_to_space_nd") or not _is_call(new.args[0], "nn.conv2d"):
            return new
        conv = new.args[0]
        s2b = conv.args[0]
        if not _is_call(s2b, "nn.space_to_batch_nd"):
            return new
        padding = _dilated_padding(s2b, conv, new)
        if padding is None:
            return new
        a = conv.attrs
        return conv2d(
            s2b.args[0], conv.args[1], a.strides, padding, tuple(new.attrs.block_shape),
            a.groups, a.channels, a.kernel_size, a.data_layout, a.kernel_layout,
            a.out_layout, a.out_dtype,
        )  # fmt: skip


def flatten_atrous_conv(func: Function) -> Function:
    """`func` with each space_to_batch_nd -> conv2d -> batch_to_space_nd chain one conv2d."""
    return _Flattener().visit(func)
