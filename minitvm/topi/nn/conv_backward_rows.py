"""The rows form of a 2-D convolution: one matmul whose rows are the output pixels (n, y, x) of
the whole batch and whose columns are the output channels, reading an NHWC copy of the input
restricted to the kernel taps that reach inside the image.

A blocked conv's register tile is a row of output pixels of one image, so a deep layer's 1x1 to
4x4 images give it a tile one to four pixels wide and a weight re-read per image; the rows form's
tile spans the images of the batch, and a 3x3 kernel over a 1x1 image reads its one live tap, not
nine. It serves the forward blocked conv on narrow outputs and d(data) of strided convs, split
by input phase (y % stride, x % stride) into dense stride-1 products over the output gradient
instead of one conv over a zero-inserted gradient; conv_backward dispatches to it."""

from __future__ import annotations

import math

from ... import te
from ...tir import op as tir_op
from ...tir.expr import cast as tir_cast
from ...tir.expr import make_const
from ..utils import const_int

# narrower outputs than this (a blocked conv's register tile is a row of output pixels) take
# the rows form, whose tile spans the images of the batch
ROWS_FORM_WIDTH = 8

# the forward blocked conv's threshold: at 4x4 outputs its register tile already matches the
# rows form (single-thread CPU time of ResNet-18's 4x4 layers: 0.8-1.0x), at 1x1..2x2 it does
# not (1.5x at 2x2, 13x at 1x1)
FORWARD_ROWS_WIDTH = 4


def _typed(dims: tuple, like: te.Tensor) -> tuple:
    """`dims` as extents in the index dtype of `like`'s shape: a relax model's int64 shapes give
    int64 loop variables, which a consumer inlined into these stages indexes with (python ints
    would make int32 loops and mixed-width index arithmetic)."""
    dtype = getattr(like.shape[0], "dtype", "int32")
    return tuple(make_const(dtype, d) if isinstance(d, int) else d for d in dims)


def live_taps(size: int, out: int, k: int, s: int, d: int, lo: int) -> tuple[int, int]:
    """(first, count) of the taps along one axis that read inside [0, size) for some output
    position, where tap i of output y reads y*s + i*d - lo; (0, 1) when none does."""
    live = [i for i in range(k) if any(0 <= y * s + i * d - lo < size for y in range(out))]
    return (live[0], live[-1] - live[0] + 1) if live else (0, 1)


def rows_matmul(
    src: te.Tensor,
    wt: te.Tensor,
    out_hw: tuple,
    strides: tuple = (1, 1),
    dilation: tuple = (1, 1),
    offset: tuple = (0, 0),
) -> te.Tensor:
    """(N*OH*OW, CO*cb): row (b, y, x) times column o is the sum over taps (i, j) and channels
    k of src[b, y*sh + oy + i*dh, x*sw + ox + j*dw, k] * wt[o // cb, i, j, k, o % cb]; src
    (N, rows, cols, K) and wt (CO, TY, TX, K, cb) hold only live taps, so the reduction has no
    bounds test. wt keeps the columns in blocks of a vector so that building it from an OIHW
    weight reads a few rows at a time (a plain (TY, TX, K, O) copy reads O rows per vector)."""
    n = src.shape[0]
    co, ty, tx, k, cb = wt.shape
    oh, ow = out_hw
    (sh, sw), (dh, dw), (oy, ox) = strides, dilation, offset
    ri = te.reduce_axis((0, ty), "ri")
    rj = te.reduce_axis((0, tx), "rj")
    rk = te.reduce_axis((0, k), "rk")

    def row(r, oc):
        b, y, x = r // (oh * ow), r // ow % oh, r % ow
        tap = src[b, y * sh + oy + ri * dh, x * sw + ox + rj * dw, rk]
        return te.sum(tap * wt[oc // cb, ri, rj, rk, oc % cb], axis=[ri, rj, rk])

    return te.compute((n * oh * ow, co * cb), row, name="conv2d_rows")


def conv2d_NCHWc_rows(
    data: te.Tensor,
    kernel: te.Tensor,
    strides: tuple,
    pads: tuple,
    dilation: tuple,
    out_hw: tuple,
    out_dtype: str,
) -> te.Tensor:
    """conv2d_NCHWc (data [N, C/c, H, W, c], kernel [O/o, C/c, KH, KW, c, o] → [N, O/o, OH, OW,
    o], groups 1, constant shapes) computed in the rows form."""
    n, icc, h, w, icb = (const_int(d) for d in data.shape)
    occ, _, kh, kw, _, ocb = (const_int(d) for d in kernel.shape)
    (sh, sw), (dh, dw), (pt, pl, _, _) = strides, dilation, pads
    oh, ow = out_hw
    (y0, ty), (x0, tx) = (
        live_taps(*args) for args in zip((h, w), (oh, ow), (kh, kw), (sh, sw), (dh, dw), (pt, pl))
    )
    zero = make_const(data.dtype, 0)

    def padded(b, u, v, ch):
        # stage row u is input row u + y0*dh - pt: the first live tap of output row 0
        y, x = u + y0 * dh - pt, v + x0 * dw - pl
        inside = tir_op.all(y >= 0, y < h, x >= 0, x < w)
        value = tir_cast(out_dtype, data[b, ch // icb, y, x, ch % icb])
        return tir_op.if_then_else(inside, value, tir_cast(out_dtype, zero))

    src = te.compute(
        _typed(
            (n, (oh - 1) * sh + (ty - 1) * dh + 1, (ow - 1) * sw + (tx - 1) * dw + 1, icc * icb),
            data,
        ),
        padded,
        name="data_pad",
    )
    wt = te.compute(
        _typed((occ, ty, tx, icc * icb, ocb), data),
        lambda oo, i, j, ch, oi: tir_cast(
            out_dtype, kernel[oo, ch // icb, i + y0, j + x0, ch % icb, oi]
        ),
        name="kernel_rows",
    )
    out = rows_matmul(src, wt, (oh, ow), (sh, sw), (dh, dw))
    return te.compute(
        _typed((n, occ, oh, ow, ocb), data),
        lambda b, oc, y, x, oi: out[(b * oh + y) * ow + x, oc * ocb + oi],
        name="conv2d_NCHWc",
        tag="conv2d_NCHWc",
    )


def _phase_taps(size: int, out: int, k: int, s: int, d: int, lo: int, r: int):
    """The taps of input phase r (positions q*s + r, q < count) along one axis of d(data):
    (count, e0, taps) where tap i of the forward conv reaches q*s + r from output q + e_i,
    taps lists the live ones from the smallest e (e0) up, a step of d/gcd(s, d) apart
    (inner dead ones kept: they read the source's zero border); None when none is live."""
    count = len(range(r, size, s))
    hit = [i for i in range(k) if (r + lo - i * d) % s == 0]
    live = [i for i in hit if any(0 <= q + (r + lo - i * d) // s < out for q in range(count))]
    if not count or not live:
        return None
    taps = [i for i in reversed(hit) if min(live) <= i <= max(live)]
    return count, (r + lo - taps[0] * d) // s, taps


def conv2d_backward_data_phases(
    g: te.Tensor,
    weight: te.Tensor,
    data_shape: tuple,
    strides: tuple,
    padding: tuple,
    dilation: tuple,
    cb: int,
) -> te.Tensor:
    """d(conv2d)/d(data) of a strided conv, constant shapes: the input positions of one phase
    (y % sh, x % sw) take a fixed subset of the taps, so each phase is a dense stride-1 rows
    matmul over the output gradient (no zero-inserted rows: a stride-2 3x3 kernel does 9 tap
    products per 2x2 pixels, not 36), and the phases are interleaved into (N, C, H, W)."""
    n, c, h, w = (const_int(v) for v in data_shape)
    o, _, kh, kw = (const_int(v) for v in weight.shape)
    oh, ow = (const_int(v) for v in g.shape[2:4])
    (sh, sw), (dh, dw), (pt, pl, _, _) = strides, dilation, padding
    ys = [_phase_taps(h, oh, kh, sh, dh, pt, r) for r in range(sh)]
    xs = [_phase_taps(w, ow, kw, sw, dw, pl, r) for r in range(sw)]
    zero = make_const(g.dtype, 0)
    live_y, live_x = [p for p in ys if p], [p for p in xs if p]
    if not live_y or not live_x:
        return te.compute(_typed((n, c, h, w), g), lambda *_: zero, name="T_conv2d_grad_data")

    def span(phases, step):
        lo = min(e0 for _, e0, _ in phases)
        hi = max(q - 1 + e0 + (len(t) - 1) * step for q, e0, t in phases)
        return lo, hi - lo + 1

    # successive taps of a phase: pick_* apart in the kernel, step_* apart in the gradient
    pick_y, pick_x = sh // math.gcd(sh, dh), sw // math.gcd(sw, dw)
    step_y, step_x = dh // math.gcd(sh, dh), dw // math.gcd(sw, dw)
    (lo_y, rows), (lo_x, cols) = span(live_y, step_y), span(live_x, step_x)

    def source(b, u, v, oc):
        y, x = u + lo_y, v + lo_x
        inside = tir_op.all(y >= 0, y < oh, x >= 0, x < ow)
        return tir_op.if_then_else(inside, g[b, oc, y, x], zero)

    src = te.compute(_typed((n, rows, cols, o), g), source, name="data_pad")
    parts = {}
    for ry, py in enumerate(ys):
        for rx, px in enumerate(xs):
            if py is None or px is None:
                continue
            (qy, ey, ty), (qx, ex, tx) = py, px
            wt = te.compute(
                _typed((c // cb, len(ty), len(tx), o, cb), g),
                lambda co, i, j, oc, ci, y0=ty[0], x0=tx[0]: weight[
                    oc, co * cb + ci, y0 - i * pick_y, x0 - j * pick_x
                ],
                name=f"weight_flip_{ry}_{rx}",
            )
            rows_r = rows_matmul(
                src, wt, (qy, qx), (1, 1), (step_y, step_x), (ey - lo_y, ex - lo_x)
            )
            parts[ry, rx] = (qy, qx, rows_r)

    def value(b, ch, y, x):
        out = zero
        for (ry, rx), (qy, qx, rows_r) in parts.items():
            here = tir_op.all(tir_op.floormod(y, sh) == ry, tir_op.floormod(x, sw) == rx)
            row = (b * qy + tir_op.floordiv(y, sh)) * qx + tir_op.floordiv(x, sw)
            out = tir_op.if_then_else(here, rows_r[row, ch], out)
        return out

    return te.compute(_typed((n, c, h, w), g), value, name="T_conv2d_grad_data")


__all__ = [
    "FORWARD_ROWS_WIDTH",
    "ROWS_FORM_WIDTH",
    "conv2d_NCHWc_rows",
    "conv2d_backward_data_phases",
    "live_taps",
    "rows_matmul",
]
