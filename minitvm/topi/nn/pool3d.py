"""3-D pooling (TVM's topi.nn.pool3d): max / average over D, H, W windows of NCDHW data."""

from __future__ import annotations

from typing import Any

from ... import te
from ...error import TEError
from ...tir import op as tir_op
from ...tir.expr import cast as tir_cast
from ...tir.expr import make_const
from .conv import conv_out_dim, window_index
from .pad import pad
from .pooling import _ceil_extra, _valid_taps


def triple(v: Any, what: str) -> tuple:
    """An int or 1 or 3 values -> 3 values (one per spatial axis D, H, W)."""
    vals = (v,) * 3 if isinstance(v, int) else tuple(v)
    vals = vals * 3 if len(vals) == 1 else vals
    if len(vals) != 3:
        raise TEError(f"{what}: expected an int or 3 values (D, H, W), got {list(vals)}")
    return vals


def padding6(padding: Any, what: str) -> tuple:
    """int | (pd, ph, pw) | (front, top, left, back, bottom, right) -> the 6-value form."""
    p = (padding,) if isinstance(padding, int) else tuple(padding)
    if len(p) == 1:
        return p * 6
    if len(p) == 3:
        return p + p
    if len(p) == 6:
        return p
    raise TEError(f"{what}: padding must be an int, 3 or 6 values, got {list(p)}")


def pool3d(
    data: te.Tensor,
    kernel: Any,
    stride: Any = 1,
    dilation: Any = 1,
    padding: Any = 0,
    pool_type: str = "max",
    ceil_mode: bool = False,
    count_include_pad: bool = False,
    layout: str = "NCDHW",
) -> te.Tensor:
    """Max or average pooling over D, H, W of NCDHW data; the average counts padding only when
    `count_include_pad` (then every tap inside the padded input counts, as in ONNX)."""
    if layout != "NCDHW":
        raise TEError(f"topi.nn.pool3d: layout {layout!r} is not supported; use NCDHW")
    if pool_type not in ("max", "avg"):
        raise TEError(f"topi.nn.pool3d: pool_type must be 'max' or 'avg', got {pool_type!r}")
    if len(data.shape) != 5:
        raise TEError(f"topi.nn.pool3d: data must have rank 5 (NCDHW), got {len(data.shape)}")
    ks, ss, ds = (triple(v, f"pool3d {w}") for v, w in ((kernel, "pool_size"), (stride, "strides"),
                                                           (dilation, "dilation")))  # fmt: skip
    pads = padding6(padding, "pool3d")
    lo, hi = pads[:3], pads[3:]
    sizes = tuple(data.shape[2:])
    outs = tuple(
        conv_out_dim(n, k, a, b, s, d, ceil_mode)
        for n, k, a, b, s, d in zip(sizes, ks, lo, hi, ss, ds)
    )
    # ceil mode: pad the far side so every window stays inside the padded input
    extra = tuple(
        _ceil_extra(n, o, k, a, b, s, d) if ceil_mode else 0
        for n, o, k, a, b, s, d in zip(sizes, outs, ks, lo, hi, ss, ds)
    )
    init = tir_op.min_value(data.dtype) if pool_type == "max" else make_const(data.dtype, 0)
    value = init.value if hasattr(init, "value") else 0.0
    far = tuple(b + e for b, e in zip(hi, extra))
    padded = data
    if not all(isinstance(v, int) and v == 0 for v in (*lo, *far)):
        padded = pad(data, (0, 0, *lo), (0, 0, *far), pad_value=value, name="pad_temp")
    red = [te.reduce_axis((0, k), f"r{a}") for k, a in zip(ks, "dhw")]
    out_shape = (*data.shape[:2], *outs)

    def window(n, c, *o):
        taps = (window_index(i, r, s, d) for i, r, s, d in zip(o, red, ss, ds))
        return padded[(n, c, *taps)]

    if pool_type == "max":
        return te.compute(
            out_shape,
            lambda *idx: te.max(window(*idx), axis=red),
            name="pool_max",
            tag="pool_max",
        )
    total = te.compute(
        out_shape, lambda *idx: te.sum(window(*idx), axis=red), name="pool_sum", tag="pool_sum"
    )

    def count(o: tuple) -> Any:
        n = 1
        for i, k, s, d, a, b, size in zip(o, ks, ss, ds, lo, hi, sizes):
            start = i * s - a
            if count_include_pad:  # taps inside the padded input (not the ceil-mode extra)
                n = n * _valid_taps(start + a, k, d, size + a + b)
            else:
                n = n * _valid_taps(start, k, d, size)
        return tir_op.max(n, 1)

    def avg(*idx: Any):
        return total[idx] / tir_cast(data.dtype, count(idx[2:]))

    return te.compute(out_shape, avg, name="pool_avg", tag="elemwise")
