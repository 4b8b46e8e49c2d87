"""2-D pooling: max / average over windows, and adaptive pooling, in any layout whose H and W
are unblocked axes (NCHW, NHWC, NCHW{c}c): the window runs over H and W, every other axis is
carried through."""

from __future__ import annotations

from typing import Any

from ... import te
from ...error import TEError
from ...tir import op as tir_op
from ...tir.expr import cast as tir_cast
from ...tir.expr import make_const
from ..layout import as_layout, index_dims
from ..utils import const_int, get_const_tuple, simplify
from .conv import conv_out_dim, padding4, pair, window_index
from .pad import pad


def hw_axes(layout: str, what: str) -> tuple[int, int]:
    """Positions of H and W in `layout`; they must be present and unblocked."""
    lay = as_layout(layout)
    h, w = lay.index_of("H"), lay.index_of("W")
    if h < 0 or w < 0 or lay.block("H") or lay.block("W"):
        raise TEError(
            f"{what}: layout {layout!r} needs unblocked H and W axes (e.g. NCHW, NHWC, NCHW16c)"
        )
    return h, w


def _with_hw(idx: tuple, ha: int, wa: int, y: Any, x: Any) -> tuple:
    """`idx` with its H and W entries replaced."""
    out = list(idx)
    out[ha], out[wa] = y, x
    return tuple(out)


def pool2d(
    data: te.Tensor,
    kernel: Any,
    stride: Any = 1,
    dilation: Any = 1,
    padding: Any = 0,
    pool_type: str = "max",
    ceil_mode: bool = False,
    count_include_pad: bool = False,
    layout: str = "NCHW",
) -> te.Tensor:
    """Max or average pooling over H, W; average excludes padding unless `count_include_pad`."""
    ha, wa = hw_axes(layout, "topi.nn.pool2d")
    if pool_type not in ("max", "avg"):
        raise TEError(f"topi.nn.pool2d: pool_type must be 'max' or 'avg', got {pool_type!r}")
    kh, kw = pair(kernel, "pool2d pool_size")
    sh, sw = pair(stride, "pool2d strides")
    dh, dw = pair(dilation, "pool2d dilation")
    pt, pl, pb, pr = padding4(padding, "pool2d")
    h, w = data.shape[ha], data.shape[wa]
    oh = conv_out_dim(h, kh, pt, pb, sh, dh, ceil_mode)
    ow = conv_out_dim(w, kw, pl, pr, sw, dw, ceil_mode)
    out_shape = _with_hw(tuple(data.shape), ha, wa, oh, ow)
    # ceil mode: pad the bottom/right so every window stays inside the padded input
    eb = _ceil_extra(h, oh, kh, pt, pb, sh, dh) if ceil_mode else 0
    er = _ceil_extra(w, ow, kw, pl, pr, sw, dw) if ceil_mode else 0
    init = tir_op.min_value(data.dtype) if pool_type == "max" else make_const(data.dtype, 0)
    value = init.value if hasattr(init, "value") else 0.0
    zeros = (0,) * len(data.shape)
    lo, hi = _with_hw(zeros, ha, wa, pt, pl), _with_hw(zeros, ha, wa, pb + eb, pr + er)
    padded = data if lo == hi == zeros else pad(data, lo, hi, pad_value=value, name="pad_temp")
    ry = te.reduce_axis((0, kh), "ry")
    rx = te.reduce_axis((0, kw), "rx")

    def window(idx: tuple):
        y, x = window_index(idx[ha], ry, sh, dh), window_index(idx[wa], rx, sw, dw)
        return padded[_with_hw(idx, ha, wa, y, x)]

    if pool_type == "max":
        return te.compute(
            out_shape,
            lambda *idx: te.max(window(idx), axis=[ry, rx]),
            name="pool_max",
            tag="pool_max",
        )
    total = te.compute(
        out_shape,
        lambda *idx: te.sum(window(idx), axis=[ry, rx]),
        name="pool_sum",
        tag="pool_sum",
    )

    def count(y: Any, x: Any):
        if count_include_pad:
            y0, x0 = y * sh - pt, x * sw - pl
            # taps inside the padded input, as TVM and ONNX count them (with dilation, a
            # window's taps, not its extent)
            hy = _valid_taps(y0 + pt, kh, dh, h + pt + pb)
            hx = _valid_taps(x0 + pl, kw, dw, w + pl + pr)
        else:
            y0, x0 = y * sh - pt, x * sw - pl
            hy = _valid_taps(y0, kh, dh, h)
            hx = _valid_taps(x0, kw, dw, w)
        return tir_op.max(hy * hx, 1)

    def avg(*idx: Any):
        return total[idx] / tir_cast(data.dtype, count(idx[ha], idx[wa]))

    return te.compute(out_shape, avg, name="pool_avg", tag="elemwise")


def _ceil_extra(size: Any, out: Any, k: int, lo: int, hi: int, s: int, d: int) -> Any:
    """Extra high-side padding so that the last ceil-mode window fits."""
    size, out = (v if const_int(v) is None else const_int(v) for v in (size, out))
    need = (out - 1) * s + d * (k - 1) + 1 - (size + lo + hi)
    return max(need, 0) if isinstance(need, int) else simplify(tir_op.max(need, 0))


def _valid_taps(start: Any, k: int, d: int, size: Any) -> Any:
    """How many taps start, start+d, ..., start+(k-1)d fall inside [0, size)."""
    if d == 1:
        return tir_op.max(tir_op.min(start + k, size) - tir_op.max(start, 0), 0)
    first = tir_op.max((0 - start + d - 1) // d, 0)  # first tap index >= 0
    last = tir_op.min((size - 1 - start) // d, k - 1)  # last tap index < size
    return tir_op.max(last - first + 1, 0)


def adaptive_pool2d(
    data: te.Tensor, output_size: Any, pool_type: str = "avg", layout: str = "NCHW"
) -> te.Tensor:
    """Window i covers [floor(i*H/OH), ceil((i+1)*H/OH)) (static H, W)."""
    ha, wa = hw_axes(layout, "topi.nn.adaptive_pool2d")
    hs, ws = get_const_tuple(
        (data.shape[ha], data.shape[wa]), "topi.nn.adaptive_pool2d (input H, W)"
    )
    oh, ow = (hs, ws) if output_size is None else pair(output_size, "adaptive_pool2d output_size")
    oh, ow = (hs if oh is None else int(oh)), (ws if ow is None else int(ow))
    out_shape = index_dims(_with_hw(tuple(data.shape), ha, wa, oh, ow), data.shape)

    def span(size: int, out: int) -> int:
        return max(-(-(i + 1) * size // out) - (i * size // out) for i in range(out))

    kh, kw = span(hs, oh), span(ws, ow)
    ry = te.reduce_axis((0, kh), "ry")
    rx = te.reduce_axis((0, kw), "rx")

    def bounds(i: Any, size: int, out: int) -> tuple[Any, Any]:
        return (i * size) // out, ((i + 1) * size + out - 1) // out

    reducer = te.sum if pool_type == "avg" else te.max

    def body(*idx: Any):
        y0, y1 = bounds(idx[ha], hs, oh)
        x0, x1 = bounds(idx[wa], ws, ow)
        if kh * kw == 1 or (hs % oh == 0 and ws % ow == 0):
            inside = None  # every window is full: no bounds test in the loop
        else:
            inside = tir_op.all(y0 + ry < y1, x0 + rx < x1)
        return reducer(data[_with_hw(idx, ha, wa, y0 + ry, x0 + rx)], axis=[ry, rx], where=inside)

    red = te.compute(out_shape, body, name="adaptive_pool_red", tag="adaptive_pool")
    if pool_type == "max":
        return red

    def avg(*idx: Any):
        y0, y1 = bounds(idx[ha], hs, oh)
        x0, x1 = bounds(idx[wa], ws, ow)
        return red[idx] / tir_cast(data.dtype, (y1 - y0) * (x1 - x0))

    return te.compute(out_shape, avg, name="adaptive_pool_avg", tag="elemwise")


def global_pool(data: te.Tensor, pool_type: str = "avg", layout: str = "NCHW") -> te.Tensor:
    """Pool over all of H and W (TVM's topi.nn.global_pool)."""
    return adaptive_pool2d(data, (1, 1), pool_type, layout)


def adaptive_pool(
    data: te.Tensor, output_size: Any, pool_type: str = "avg", layout: str = "NCHW"
) -> te.Tensor:
    """TVM's name of `adaptive_pool2d`."""
    return adaptive_pool2d(data, output_size, pool_type, layout)


def _as_height1(data: te.Tensor) -> te.Tensor:
    n, c, w = data.shape
    return te.compute(
        (n, c, 1, w), lambda b, ch, _, x: data[b, ch, x], name="data_hw", tag="injective"
    )


def _drop_height(out: te.Tensor, name: str) -> te.Tensor:
    n, c, _, w = out.shape
    return te.compute((n, c, w), lambda b, ch, x: out[b, ch, 0, x], name=name, tag="injective")


def pool1d(
    data: te.Tensor,
    kernel: int,
    stride: int = 1,
    dilation: int = 1,
    padding: tuple[int, int] = (0, 0),
    pool_type: str = "max",
    ceil_mode: bool = False,
    count_include_pad: bool = False,
) -> te.Tensor:
    """Max or average pooling over W of NCW data: pool2d over a height-1 image."""
    out = pool2d(
        _as_height1(data), (1, kernel), (1, stride), (1, dilation), (0, padding[0], 0, padding[1]),
        pool_type, ceil_mode, count_include_pad,
    )  # fmt: skip
    return _drop_height(out, f"T_{pool_type}_pool1d")


def adaptive_pool1d(data: te.Tensor, output_size: int | None, pool_type: str = "avg") -> te.Tensor:
    """Adaptive pooling over W of NCW data (static W)."""
    size = None if output_size is None else (1, output_size)
    out = adaptive_pool2d(_as_height1(data), size, pool_type)
    return _drop_height(out, f"T_adaptive_{pool_type}_pool1d")
