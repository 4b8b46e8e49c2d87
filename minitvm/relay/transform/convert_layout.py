"""ConvertLayout: run convolutions and pools in the layouts asked for.

`ConvertLayout({"nn.conv2d": ["NHWC", "HWIO"]})` rewrites each conv2d to take its data and
weight transposed into those layouts (kernel "default": HWIO for NHWC, OIHW for NCHW) and
transposes the result back, so the program's other ops see what they saw before. A
transpose of a transpose that undoes it is dropped (between back-to-back converted ops);
layouts are not propagated through elementwise ops.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...error import ArgumentError
from ..expr import Call, Expr, Function, Op
from ..expr_functor import ExprMutator
from ..op import tensor as T

_DEFAULT_KERNEL = {"NHWC": "HWIO", "NCHW": "OIHW"}
# op -> (attribute holding the data layout, attribute holding the kernel layout or None)
_LAYOUT_ATTRS = {
    "nn.conv2d": ("data_layout", "kernel_layout"),
    "nn.max_pool2d": ("layout", None),
    "nn.avg_pool2d": ("layout", None),
    "nn.global_avg_pool2d": ("layout", None),
    "nn.global_max_pool2d": ("layout", None),
}


def _perm(src: str, dst: str) -> tuple[int, ...]:
    if sorted(src) != sorted(dst):
        raise ArgumentError(f"ConvertLayout: cannot turn layout {src} into {dst}")
    return tuple(src.index(c) for c in dst)


def _transpose(e: Expr, axes: tuple[int, ...]) -> Expr:
    """`e` transposed by `axes`; a transpose undoing `e`'s own transpose cancels it."""
    if axes == tuple(range(len(axes))):
        return e
    if isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == "transpose":
        inner = e.attrs.axes
        if inner is not None and all(inner[axes[i]] == i for i in range(len(axes))):
            return e.args[0]
    return T.transpose(e, axes)


class _Converter(ExprMutator):
    def __init__(self, desired: Mapping[str, Sequence[str]]) -> None:
        super().__init__()
        self.desired = desired

    def visit_call(self, call: Call) -> Expr:
        new = super().visit_call(call)
        if not isinstance(new.op, Op) or new.op.name not in self.desired:
            return new
        data_key, kernel_key = _LAYOUT_ATTRS[new.op.name]
        want = list(self.desired[new.op.name])
        attrs = dict(new.attrs)
        src, dst = attrs[data_key], want[0]
        if src == dst:
            return new
        args = [_transpose(new.args[0], _perm(src, dst))]
        attrs[data_key] = dst
        if kernel_key is not None:
            kernel_dst = want[1] if len(want) > 1 and want[1] != "default" else _DEFAULT_KERNEL[dst]
            args.append(_transpose(new.args[1], _perm(attrs[kernel_key], kernel_dst)))
            attrs[kernel_key] = kernel_dst
        out_key = "out_layout"
        if attrs.get(out_key):
            attrs[out_key] = ""
        converted = Call(new.op, args + list(new.args[len(args) :]), attrs)
        return _transpose(converted, _perm(dst, src))


def convert_layout(func: Function, desired_layouts: Mapping[str, Sequence[str]]) -> Function:
    """`func` with the ops named in `desired_layouts` computed in those layouts."""
    unknown = sorted(set(desired_layouts) - set(_LAYOUT_ATTRS))
    if unknown:
        raise ArgumentError(
            f"ConvertLayout: no layout rule for {unknown}; supported: {sorted(_LAYOUT_ATTRS)}"
        )
    return _Converter(desired_layouts).visit(func)
