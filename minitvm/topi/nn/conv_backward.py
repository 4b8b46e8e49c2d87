"""The two gradients of an NCHW/OIHW conv2d (groups 1), written so the CPU schedule's register
tile takes them: d(data) as a blocked forward conv, d(weight) as a matmul over (N, OH, OW).

d(data) is the conv of the output gradient, zero-inserted between rows/columns by the stride
and offset by `dilation * (k - 1) - pad`, with the weight flipped in space and its O and I axes
swapped; written as `conv2d_NCHWc` (stride 1, the forward dilation) it gets the forward conv's
register tile. d(weight)[o, c, i, j] = sum over (n, y, x) of g[n, o, y, x] times the input tap
x[n, c, y*s + i*d - pad, ...]; computed as acc[i, j, o, c] with the input copied once into a
padded NHWC stage it is a matmul (rows o, vector columns c, contiguous in both operands).
A strided conv's d(data) with constant shapes takes the per-phase rows form of
conv_backward_rows instead (no zero-inserted gradient: a stride of 2 wastes 3/4 of it).
Channels with no vector block (a symbolic count) keep the direct one-block-per-output forms."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ... import te
from ...ir.dtype import DataType
from ...tir import op as tir_op
from ...tir.expr import make_const
from ..utils import const_int
from .conv import conv2d_NCHWc
from .conv_backward_rows import ROWS_FORM_WIDTH, conv2d_backward_data_phases

# float32 lanes of one AVX-512 register: the channel block of the blocked forms, as the
# default schedule's VECTOR_LANES and AlterOpLayout's choice for forward convs
CHANNEL_LANES = 16


def channel_block(channels: Any) -> int | None:
    """All of `channels` when they fit one vector, else the largest power of two from
    CHANNEL_LANES down to 4 dividing them, else 1 (correct, unvectorized); None when symbolic."""
    c = const_int(channels)
    if c is None:
        return None
    if c <= CHANNEL_LANES:
        return c
    return next((b for b in (16, 8, 4) if b <= CHANNEL_LANES and c % b == 0), 1)


def _source(pos: Any, lo: int, stride: int, size: Any) -> tuple[Any, Any]:
    """(valid, index) of the output-gradient row that lands at `pos` of the zero-inserted,
    offset gradient: `pos - lo` must be a multiple of the stride inside [0, size * stride)."""
    num = pos - lo
    if stride == 1:
        return tir_op.all(num >= 0, num < size), num
    return (
        tir_op.all(
            num >= 0, tir_op.floormod(num, stride) == 0, tir_op.floordiv(num, stride) < size
        ),
        tir_op.floordiv(num, stride),
    )


def conv2d_backward_data(
    g: te.Tensor, weight: te.Tensor, data_shape: Any, strides: Any, padding: Any, dilation: Any
) -> te.Tensor:
    """d(conv2d)/d(data) of output gradient `g` (N, O, OH, OW) and `weight` (O, C, KH, KW):
    (N, C, H, W) for `data_shape`; padding is (top, left, bottom, right)."""
    n, c, h, w = data_shape
    o, _, kh, kw = weight.shape
    ob, cb = channel_block(o), channel_block(c)
    if ob is None or cb is None or const_int(kh) is None or const_int(kw) is None:
        return _backward_data_direct(g, weight, data_shape, strides, padding, dilation)
    kh, kw = const_int(kh), const_int(kw)
    (sh, sw), (dh, dw), (pt, pl, _, _) = strides, dilation, padding
    oh, ow = g.shape[2], g.shape[3]
    lo_y, lo_x = dh * (kh - 1) - pt, dw * (kw - 1) - pl
    zero = make_const(g.dtype, 0)

    def spread(b, oo, u, v, oi):
        vy, iy = _source(u, lo_y, sh, oh)
        vx, ix = _source(v, lo_x, sw, ow)
        return tir_op.if_then_else(tir_op.all(vy, vx), g[b, oo * ob + oi, iy, ix], zero)

    # a stage of its own (the conv's "data_pad"): its border and stride tests run once per
    # element, not in the conv's inner loop
    spread_shape = (n, const_int(o) // ob, h + dh * (kh - 1), w + dw * (kw - 1), ob)
    static = [const_int(d) for d in (h, w, oh, ow)]
    if None not in static and const_int(n) is not None and (sh, sw) != (1, 1):
        return conv2d_backward_data_phases(g, weight, data_shape, strides, padding, dilation, cb)
    if None not in static and static[1] < ROWS_FORM_WIDTH:
        taps = [
            _live_taps(*args)
            for args in zip(static[:2], static[2:], (kh, kw), (sh, sw), (dh, dw), (lo_y, lo_x))
        ]
        (y0, ty), (x0, tx) = taps
        # the whole of O in one block: the rows form reads g's channels as its reduction;
        # the spread starts at the first live tap's row and column
        g_spread = te.compute(
            (n, static[0] + dh * (ty - 1), static[1] + dw * (tx - 1), o),
            lambda b, u, v, ch: spread(b, 0, u + y0 * dh, v + x0 * dw, ch),
            name="data_pad",
        )
        return _backward_data_rows(g_spread, weight, data_shape, dilation, taps)
    g_spread = te.compute(spread_shape, spread, name="data_pad")
    # the weight of the transposed conv: OIHW{ob}i{cb}o with its O the data's C
    flipped = te.compute(
        (const_int(c) // cb, const_int(o) // ob, kh, kw, ob, cb),
        lambda co, oo, i, j, oi, ci: weight[oo * ob + oi, co * cb + ci, kh - 1 - i, kw - 1 - j],
        name="weight_flip",
    )
    out = conv2d_NCHWc(
        g_spread, flipped, (1, 1), (0, 0, 0, 0), (dh, dw), f"NCHW{ob}c", f"NCHW{cb}c"
    )
    return te.compute(
        (n, c, h, w),
        lambda b, ch, y, x: out[b, ch // cb, y, x, ch % cb],
        name="T_conv2d_grad_data",
    )


def _live_taps(size: int, out: int, k: int, s: int, d: int, lo: int) -> tuple[int, int]:
    """(first, count) of the flipped kernel's taps along one axis that read some output
    gradient for some input position; the others read only the spread's zeros (a 3x3 kernel
    over a 1x1 image: one tap of three)."""
    live = [i for i in range(k) if any(0 <= y + i * d - lo <= (out - 1) * s for y in range(size))]
    return (live[0], live[-1] - live[0] + 1) if live else (0, 1)


def _backward_data_rows(g_spread, weight, data_shape, dilation, taps):
    """d(data) as one matmul over rows (n, y, x) of the batch: the spread gradient g_spread
    (N, H + dh*(KH-1), W + dw*(KW-1), O) times the flipped weight (KH, KW, O, C), so the
    register tile holds output pixels of several images (the deep layers' 1x1..4x4 images
    give a blocked conv a tile one to four pixels tall)."""
    n, c, h, w = data_shape
    o, _, kh, kw = (const_int(d) for d in weight.shape)
    dh, dw = dilation
    h, w = const_int(h), const_int(w)
    (y0, ty), (x0, tx) = taps
    flipped = te.compute(
        (ty, tx, o, const_int(c)),
        lambda i, j, oc, ch: weight[oc, ch, kh - 1 - y0 - i, kw - 1 - x0 - j],
        name="weight_flip",
    )
    ri = te.reduce_axis((0, ty), "ri")
    rj = te.reduce_axis((0, tx), "rj")
    ro = te.reduce_axis((0, o), "ro")

    def row(r, ch):
        b, y, x = r // (h * w), r // w % h, r % w
        tap = g_spread[b, y + ri * dh, x + rj * dw, ro]
        return te.sum(tap * flipped[ri, rj, ro, ch], axis=[ri, rj, ro])

    out = te.compute((n * h * w, c), row, name="conv2d_grad_data_rows")
    return te.compute(
        (n, c, h, w),
        lambda b, ch, y, x: out[(b * h + y) * w + x, ch],
        name="T_conv2d_grad_data",
    )


def conv2d_backward_weight(
    g: te.Tensor, data: te.Tensor, weight_shape: Any, strides: Any, padding: Any, dilation: Any
) -> te.Tensor:
    """d(conv2d)/d(weight) of output gradient `g` (N, O, OH, OW) and `data` (N, C, H, W):
    (O, C, KH, KW) for `weight_shape`; padding is (top, left, bottom, right)."""
    o, c, kh, kw = weight_shape
    if any(const_int(d) is None for d in (o, c, kh, kw)):
        return _backward_weight_direct(g, data, weight_shape, strides, padding, dilation)
    if const_int(c) < CHANNEL_LANES <= const_int(o) and const_int(o) % CHANNEL_LANES == 0:
        return _backward_weight_few_channels(g, data, weight_shape, strides, padding, dilation)
    n, _, h, w = data.shape
    oh, ow = g.shape[2], g.shape[3]
    (sh, sw), (dh, dw), (pt, pl, _, _) = strides, dilation, padding
    # only the rows and columns some tap reads (a stride can leave the bottom/right unread)
    hp, wp = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
    zero = make_const(data.dtype, 0)
    padded = _padded_reader(data, pt, pl)
    data_nhwc = te.compute(
        (n, hp, wp, c), lambda b, yy, xx, ch: padded(b, ch, yy, xx), name="data_pad"
    )
    chunk = _batch_chunk(n, (hp, wp, c), (o, c, kh, kw), DataType(data.dtype).bytes)
    if chunk is None:
        chunk, parts = n, 1
    else:
        parts = const_int(n) // chunk
    rn = te.reduce_axis((0, chunk), "rn")
    ry = te.reduce_axis((0, oh), "ry")
    rx = te.reduce_axis((0, ow), "rx")
    (y0, ty), (x0, tx) = (
        _weight_taps(*args)
        for args in zip((h, w), (oh, ow), (kh, kw), (sh, sw), (dh, dw), (pt, pl))
    )

    def partial(part, i, j, oc, ch):
        b = rn if parts == 1 else part * chunk + rn
        tap = data_nhwc[b, ry * sh + (i + y0) * dh, rx * sw + (j + x0) * dw, ch]
        return te.sum(g[b, oc, ry, rx] * tap, axis=[rn, ry, rx])

    acc = te.compute((parts, ty, tx, o, c), partial, name="conv2d_grad_weight_part")
    rp = te.reduce_axis((0, parts), "rp")
    if (ty, tx) == (const_int(kh), const_int(kw)):
        if parts == 1:
            value = lambda oc, ch, i, j: acc[0, i, j, oc, ch]
        else:
            value = lambda oc, ch, i, j: te.sum(acc[rp, i, j, oc, ch], axis=[rp])
        return te.compute((o, c, kh, kw), value, name="T_conv2d_grad_weight")
    if parts > 1:
        acc = te.compute(
            (1, ty, tx, o, c),
            lambda _, i, j, oc, ch: te.sum(acc[rp, i, j, oc, ch], axis=[rp]),
            name="conv2d_grad_weight_sum",
        )

    def live(oc, ch, i, j):
        # taps that read only padding for every output (3x3 over a 1x1 image) are 0
        inside = tir_op.all(i >= y0, i < y0 + ty, j >= x0, j < x0 + tx)
        ii = tir_op.min(tir_op.max(i - y0, 0), ty - 1)
        jj = tir_op.min(tir_op.max(j - x0, 0), tx - 1)
        return tir_op.if_then_else(inside, acc[0, ii, jj, oc, ch], zero)

    return te.compute((o, c, kh, kw), live, name="T_conv2d_grad_weight")


def _backward_weight_few_channels(g, data, weight_shape, strides, padding, dilation):
    """d(weight) of a conv with fewer input channels than a vector (an RGB stem): the matmul
    acc[c, i, j, o] with the output channels o as its vector columns, g copied once to NHWC
    (its producers, a batch norm's backward, computed there once instead of in the tile)."""
    o, c, kh, kw = weight_shape
    n = data.shape[0]
    oh, ow = g.shape[2], g.shape[3]
    (sh, sw), (dh, dw), (pt, pl, _, _) = strides, dilation, padding
    hp, wp = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
    data_pad = te.compute((n, c, hp, wp), _padded_reader(data, pt, pl), name="data_pad")
    g_nhwc = te.compute((n, oh, ow, o), lambda b, y, x, oc: g[b, oc, y, x], name="grad_nhwc")
    rn = te.reduce_axis((0, n), "rn")
    ry = te.reduce_axis((0, oh), "ry")
    rx = te.reduce_axis((0, ow), "rx")
    acc = te.compute(
        (c, kh, kw, o),
        lambda ch, i, j, oc: te.sum(
            data_pad[rn, ch, ry * sh + i * dh, rx * sw + j * dw] * g_nhwc[rn, ry, rx, oc],
            axis=[rn, ry, rx],
        ),
        name="conv2d_grad_weight_cijo",
    )
    return te.compute(
        (o, c, kh, kw), lambda oc, ch, i, j: acc[ch, i, j, oc], name="T_conv2d_grad_weight"
    )


def _weight_taps(size, out, k, s, d, lo) -> tuple[int, int]:
    """(first, count) of the kernel taps along one axis that read the input (not only its
    padding) for some output position; all of them when a size is symbolic."""
    size, out, k = const_int(size), const_int(out), const_int(k)
    if size is None or out is None:
        return 0, k
    live = [i for i in range(k) if any(0 <= y * s + i * d - lo < size for y in range(out))]
    return (live[0], live[-1] - live[0] + 1) if live else (0, 1)


# the input bytes one batch chunk of the weight gradient reads: its taps stay in L2 (1 MB a
# core on Zen 4) while every row tile of output channels passes over them
CHUNK_BYTES = 1 << 20


def _padded_reader(data: te.Tensor, pt: Any, pl: Any) -> Callable:
    """(b, ch, yy, xx) -> data[b, ch, yy - pt, xx - pl], 0 outside the image."""
    h, w = data.shape[2], data.shape[3]
    zero = make_const(data.dtype, 0)

    def read(b: Any, ch: Any, yy: Any, xx: Any) -> Any:
        y, x = yy - pt, xx - pl
        ok = tir_op.all(y >= 0, y < h, x >= 0, x < w)
        return tir_op.if_then_else(ok, data[b, ch, y, x], zero)

    return read


def _batch_chunk(n: Any, image: tuple, weight: tuple, itemsize: int) -> int | None:
    """The images one partial sum of the weight gradient covers: the most dividing `n` whose
    padded input (`image`: rows, columns, channels) fits CHUNK_BYTES, at least one, while the
    partial sums (a weight each) take no more memory than the input; None for a symbolic size
    or a single chunk (deep layers: a weight larger than its input)."""
    dims = [const_int(d) for d in (n, *image, *weight)]
    if any(d is None for d in dims):
        return None
    batch, image_size, weight_size = dims[0], math.prod(dims[1:4]), math.prod(dims[4:])
    fits = max(1, CHUNK_BYTES // max(1, image_size * itemsize))
    least = -(-weight_size // max(1, image_size))  # parts <= input / weight
    if least >= batch:
        return None
    chunk = next(d for d in range(min(fits, batch), 0, -1) if batch % d == 0)
    if chunk < least:  # fewer, larger chunks when the weight is large
        chunk = next(d for d in range(least, batch + 1) if batch % d == 0)
    return None if chunk == batch else chunk


def _window_out(pos: Any, tap: Any, s: int, d: int, lo: int, size_out: Any) -> tuple[Any, Any]:
    """(valid, output index) of the window whose tap `tap` reads input `pos`."""
    return _source(pos, tap * d - lo, s, size_out)


def _backward_data_direct(g, weight, data_shape, strides, padding, dilation):
    """d(data) one output element at a time, the taps tested in the loop (symbolic channels)."""
    n, c, h, w = data_shape
    o, _, kh, kw = weight.shape
    oh, ow = g.shape[2], g.shape[3]
    (sh, sw), (dh, dw), (pt, pl, _, _) = strides, dilation, padding
    ro = te.reduce_axis((0, o), "ro")
    ri = te.reduce_axis((0, kh), "ri")
    rj = te.reduce_axis((0, kw), "rj")
    zero = make_const(g.dtype, 0)

    def body(b, ch, y, x):
        vy, iy = _window_out(y, ri, sh, dh, pt, oh)
        vx, ix = _window_out(x, rj, sw, dw, pl, ow)
        value = tir_op.if_then_else(
            tir_op.all(vy, vx), g[b, ro, iy, ix] * weight[ro, ch, ri, rj], zero
        )
        return te.sum(value, axis=[ro, ri, rj])

    return te.compute((n, c, h, w), body, name="T_conv2d_grad_data")


def _backward_weight_direct(g, data, weight_shape, strides, padding, dilation):
    """d(weight) one output element at a time, the taps tested in the loop (symbolic shapes)."""
    o, c, kh, kw = weight_shape
    n, _, h, w = data.shape
    oh, ow = g.shape[2], g.shape[3]
    (sh, sw), (dh, dw), (pt, pl, _, _) = strides, dilation, padding
    rn = te.reduce_axis((0, n), "rn")
    ry = te.reduce_axis((0, oh), "ry")
    rx = te.reduce_axis((0, ow), "rx")
    zero = make_const(g.dtype, 0)

    def body(oc, ch, i, j):
        py, px = ry * sh + i * dh - pt, rx * sw + j * dw - pl
        ok = tir_op.all(py >= 0, py < h, px >= 0, px < w)
        value = tir_op.if_then_else(ok, g[rn, oc, ry, rx] * data[rn, ch, py, px], zero)
        return te.sum(value, axis=[rn, ry, rx])

    return te.compute((o, c, kh, kw), body, name="T_conv2d_grad_weight")


__all__ = ["CHANNEL_LANES", "channel_block", "conv2d_backward_data", "conv2d_backward_weight"]
