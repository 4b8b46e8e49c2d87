"""STFT whose frame_length is known only at run time.

The frame count, frame length and bin count are then symbolic dims: the frames are gathered
with run-time indices and the DFT's twiddles cos/sin(2 pi (n k mod L) / L) are computed in
float64 from run-time iotas (the reduction mod L keeps the angles exact for long frames).
"""

from __future__ import annotations

import math

import numpy as np

from ....error import OpAttributeUnImplemented
from ... import op as R
from ...expr import Expr
from ._helpers import _dtype, shape_of
from ._runtime_axes import _i64, poisoned
from ._runtime_index import _scalar, iota


def stft_at_run_time(ctx, x: Expr, frame_step, frame_length, onesided: bool) -> Expr:
    """(batch, frames, bins, 2) of a signal (batch, length, 1|2) with no window; the VM
    refuses a frame_length outside [1, length] or a frame_step below 1."""
    batch, signal, parts = shape_of(x)
    if not isinstance(signal, int):
        raise OpAttributeUnImplemented(
            f"STFT over a symbolic signal length ({signal}) with frame_length computed at run "
            "time; fix the length in shape_dict"
        )
    step = _i64(ctx, _scalar(ctx, frame_step, "frame_step"))
    size = _i64(ctx, _scalar(ctx, frame_length, "frame_length"))
    one = ctx.expr(np.int64(1))
    ok = ctx.emit(
        R.logical_and(
            R.logical_and(
                R.greater_equal(size, one), R.less_equal(size, ctx.expr(np.int64(signal)))
            ),
            R.greater_equal(step, one),
        )
    )
    frames = ctx.emit(
        R.add(
            R.floor_divide(R.subtract(ctx.expr(np.int64(signal)), size), R.maximum(step, one)), one
        )
    )
    bins = ctx.emit(R.add(R.floor_divide(size, ctx.expr(np.int64(2))), one)) if onesided else size
    shape = ctx.emit(R.concat([ctx.emit(R.reshape(v, (1,))) for v in (frames, size, bins)], 0))
    shape = poisoned(ctx, shape, ok)
    dims = list(ctx.runtime_shape(shape, "frame_length").struct_info.values)
    f, n, k = (iota(ctx, shape, dims, axis) for axis in range(3))
    starts = ctx.emit(R.reshape(R.multiply(f, step), (dims[0], 1)))
    index = ctx.emit(R.add(starts, R.reshape(n, (1, dims[1]))))
    framed = ctx.emit(R.astype(R.take(x, index, axis=1), "float64"))  # (batch, F, L, parts)
    turns = ctx.emit(
        R.floor_mod(R.multiply(R.reshape(n, (dims[1], 1)), R.reshape(k, (1, dims[2]))), size)
    )
    scale = ctx.emit(R.divide(ctx.expr(np.float64(2 * math.pi)), R.astype(size, "float64")))
    angle = ctx.emit(R.multiply(R.astype(turns, "float64"), scale))
    cos, sin = ctx.emit(R.cos(angle)), ctx.emit(R.sin(angle))
    real = _part(ctx, framed, 0, batch, dims)
    re = ctx.emit(R.matmul(real, cos))
    im = ctx.emit(R.negative(R.matmul(real, sin)))
    if parts == 2:
        imag = _part(ctx, framed, 1, batch, dims)
        re = ctx.emit(R.add(re, R.matmul(imag, sin)))
        im = ctx.emit(R.add(im, R.matmul(imag, cos)))
    y = ctx.emit(R.concat([ctx.emit(R.expand_dims(v, -1)) for v in (re, im)], -1))
    return ctx.emit(R.astype(y, _dtype(x)))


def _part(ctx, framed: Expr, p: int, batch, dims: list) -> Expr:
    """Part p (real 0, imaginary 1) of the frames, (batch, F, L)."""
    piece = ctx.emit(R.strided_slice(framed, [3], [p], [p + 1]))
    return ctx.emit(R.reshape(piece, (batch, dims[0], dims[1])))


# ----------------------------------------------------------------------------- MelWeightMatrix


def mel_weight_matrix_at_run_time(ctx, inputs: list, dtype: str) -> Expr:
    """The (dft_length // 2 + 1, num_mel_bins) triangular filter bank of inputs known only at
    run time, element by element: column m rises from bin b[m] to b[m + 1] and falls to b[m + 2]
    (b as ONNX's reference computes it, in float64); the VM refuses inputs out of range."""
    names = ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz")
    mels, length, rate, low_in, high_in = (_scalar(ctx, v, n) for v, n in zip(inputs, names))
    mels, length, rate = (_i64(ctx, v) for v in (mels, length, rate))
    low, high = (ctx.emit(R.astype(v, "float64")) for v in (low_in, high_in))
    one, two = ctx.expr(np.int64(1)), ctx.expr(np.int64(2))
    ok = ctx.emit(
        R.logical_and(
            R.logical_and(R.greater_equal(mels, one), R.greater_equal(length, one)),
            R.logical_and(
                R.greater_equal(rate, one),
                R.logical_and(R.greater_equal(low, ctx.expr(np.float64(0))), R.less(low, high)),
            ),
        )
    )
    bins = ctx.emit(R.add(R.floor_divide(length, two), one))
    edges = ctx.emit(R.add(mels, two))
    shape = ctx.emit(R.concat([ctx.emit(R.reshape(v, (1,))) for v in (bins, mels, edges)], 0))
    shape = poisoned(ctx, shape, ok)
    dims = list(ctx.runtime_shape(shape, "num_mel_bins").struct_info.values)
    j, m, e = (ctx.emit(R.astype(iota(ctx, shape, dims, a), "float64")) for a in range(3))

    def f64(v: float) -> Expr:
        return ctx.expr(np.float64(v))

    ln10 = f64(math.log(10))
    low_mel, high_mel = (_edge_mel(ctx, v, ln10) for v in (low_in, high_in))
    step = ctx.emit(R.divide(R.subtract(high_mel, low_mel), R.astype(edges, "float64")))
    mel = ctx.emit(R.add(R.multiply(e, step), low_mel))
    hz = ctx.emit(R.multiply(f64(700), _expm1(ctx, R.multiply(R.divide(mel, f64(2595)), ln10))))
    scaled = ctx.emit(R.multiply(R.astype(R.add(length, one), "float64"), hz))
    b = _floor_divide(ctx, scaled, ctx.emit(R.astype(rate, "float64")))  # (M + 2,)
    m_int = ctx.emit(R.astype(m, "int64"))
    left, center, right = (
        ctx.emit(R.reshape(R.take(b, R.add(m_int, ctx.expr(np.int64(k))), axis=0), (1, dims[1])))
        for k in range(3)
    )
    j = ctx.emit(R.reshape(j, (dims[0], 1)))
    zero = f64(0)
    rise = ctx.emit(R.divide(R.subtract(j, left), R.maximum(R.subtract(center, left), f64(1))))
    rising = ctx.emit(
        R.where(
            R.equal(center, left),
            R.where(R.equal(j, center), f64(1), zero),
            R.where(R.logical_and(R.greater_equal(j, left), R.less_equal(j, center)), rise, zero),
        )
    )
    fall = ctx.emit(R.divide(R.subtract(right, j), R.maximum(R.subtract(right, center), f64(1))))
    falling = R.logical_and(
        R.greater(right, center), R.logical_and(R.greater_equal(j, center), R.less(j, right))
    )
    out = ctx.emit(R.where(falling, fall, rising))
    return ctx.emit(R.astype(out, dtype))


def _edge_mel(ctx, hertz: Expr, ln10: Expr) -> Expr:
    """2595 log1p(hz / 700) / ln 10 with the reference's roundings: the quotient, log1p and
    product in the input's float type, the division by ln 10 in float64."""
    dtype = _dtype(hertz)
    ratio = ctx.emit(R.divide(hertz, ctx.expr(np.asarray(700, dtype))))
    log = ctx.emit(R.astype(_log1p(ctx, R.astype(ratio, "float64")), dtype))
    mel = ctx.emit(R.multiply(ctx.expr(np.asarray(2595, dtype)), log))
    return ctx.emit(R.divide(R.astype(mel, "float64"), ln10))


def _floor_divide(ctx, a: Expr, b: Expr) -> Expr:
    """numpy's float floor_divide for a >= 0, b > 0: floor(a / b), less one where the quotient
    rounded up to an integer the exact one is below."""
    q = ctx.emit(R.floor(R.divide(a, b)))
    over = ctx.emit(R.greater(R.multiply(q, b), a))
    return ctx.emit(R.where(over, R.subtract(q, ctx.expr(np.float64(1))), q))


def _log1p(ctx, x) -> Expr:
    """log(1 + x) accurate for small x (Kahan's form; relax has no log1p)."""
    x = ctx.emit(x)
    u = ctx.emit(R.add(ctx.expr(np.float64(1)), x))
    d = ctx.emit(R.subtract(u, ctx.expr(np.float64(1))))
    safe = ctx.emit(R.where(R.equal(d, ctx.expr(np.float64(0))), ctx.expr(np.float64(1)), d))
    return ctx.emit(
        R.where(R.equal(d, ctx.expr(np.float64(0))), x, R.divide(R.multiply(R.log(u), x), safe))
    )


def _expm1(ctx, y) -> Expr:
    """exp(y) - 1 accurate for small y (Kahan's form; relax has no expm1)."""
    y = ctx.emit(y)
    u = ctx.emit(R.exp(y))
    one = ctx.expr(np.float64(1))
    d = ctx.emit(R.subtract(u, one))
    log_u = ctx.emit(
        R.log(R.where(R.equal(d, ctx.expr(np.float64(0))), ctx.expr(np.float64(2)), u))
    )
    return ctx.emit(
        R.where(R.equal(d, ctx.expr(np.float64(0))), y, R.divide(R.multiply(d, y), log_u))
    )
