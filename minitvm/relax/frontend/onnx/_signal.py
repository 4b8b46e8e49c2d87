"""ONNX's signal ops (DFT, STFT, MelWeightMatrix) as matmuls with matrices built at import.

A DFT is linear in the real and imaginary parts of its input, so for lengths known at import
each transform is two constant matrices per output part: the transform numpy computes applied
to the identity (and to i times it). A length (or an STFT frame step) known only at run time
would give an output of a shape known only at run time, and is refused; an STFT's frame step
and frame length may be known only at run time (`_signal_runtime`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ....error import FrontendError, OpAttributeInvalid, OpAttributeUnImplemented
from ... import op as R
from ...struct_info import TensorStructInfo
from ._helpers import _dtype, _ndim, _scalar, check_import_entries, shape_of
from ._runtime_axes import axis_hits, checked_reshape, dims_tensor, poisoned


def _transform(length: int, inverse: bool, onesided: bool) -> Callable:
    """The transform along the last axis of a complex array, as numpy computes it (its `n`
    pads or truncates the input to `length`)."""
    if inverse and onesided:
        return lambda z: np.fft.irfft(z, n=length, axis=-1)
    if inverse:
        return lambda z: np.fft.ifft(z, n=length, axis=-1)
    if onesided:
        return lambda z: np.fft.fft(z, n=length, axis=-1)[..., : length // 2 + 1]
    return lambda z: np.fft.fft(z, n=length, axis=-1)


def _parts(ctx, x) -> list:
    """The real (and imaginary, for a trailing dim of 2) parts of x, without that dim."""
    dims = shape_of(x)
    last = len(dims) - 1
    return [
        ctx.emit(R.reshape(R.strided_slice(x, [last], [i], [i + 1]), dims[:-1]))
        for i in range(dims[-1])
    ]


def dft_along(ctx, x, axis: int, length: int | None, inverse: bool, onesided: bool):
    """The DFT of x (..., 1 or 2) along `axis`, the result (..., 1 or 2) as ONNX's DFT gives."""
    dims = shape_of(x)
    n_in = dims[axis]
    if not isinstance(n_in, int):
        raise OpAttributeUnImplemented(
            f"the signal's dim {axis} is symbolic ({n_in}); the DFT matrix needs it at import "
            "(fix the dims in shape_dict)"
        )
    if length is None:
        length = 2 * (n_in - 1) if inverse and onesided else n_in
    if length < 1:
        raise OpAttributeInvalid(f"dft_length {length} must be positive")
    check_import_entries(n_in * length, f"the DFT matrix ({n_in} x {length})")
    transform = _transform(length, inverse, onesided)
    eye = np.eye(n_in)
    # output part p from input part q: row n of `maps[q]` is the transform of e_n (times i)
    maps = [transform(eye.astype(complex)), transform(1j * eye)]
    real_out = inverse and onesided
    dtype = _dtype(x)
    wide = "float32" if dtype == "float16" else dtype  # sums of many terms (as MatMul does)
    parts = [p if wide == dtype else ctx.emit(R.astype(p, wide)) for p in _parts(ctx, x)]
    rank = len(dims) - 1
    perm = [i for i in range(rank) if i != axis] + [axis]
    back = [perm.index(i) for i in range(rank)]
    parts = [ctx.emit(R.permute_dims(p, perm)) for p in parts]
    outs = []
    for component in (np.real, np.imag)[: 1 if real_out else 2]:
        terms = [
            ctx.emit(R.matmul(p, ctx.expr(component(m).astype(wide)))) for p, m in zip(parts, maps)
        ]
        total = terms[0] if len(terms) == 1 else ctx.emit(R.add(terms[0], terms[1]))
        outs.append(ctx.emit(R.expand_dims(R.permute_dims(total, back), -1)))
    y = outs[0] if len(outs) == 1 else ctx.emit(R.concat(outs, -1))
    return y if wide == dtype else ctx.emit(R.astype(y, dtype))


def _dft(ctx, inputs, attrs):
    x = ctx.expr(inputs[0])
    rank = _ndim(x)
    if rank < 2 or shape_of(x)[-1] not in (1, 2):
        raise OpAttributeInvalid(
            f"input must end in a dim of 1 (real) or 2 (complex), got shape {shape_of(x)}"
        )
    inverse, onesided = bool(attrs.get("inverse", 0)), bool(attrs.get("onesided", 0))
    if onesided and not inverse and shape_of(x)[-1] == 2:
        raise OpAttributeInvalid("onesided=1 needs a real input (a trailing dim of 1)")
    length = None
    if len(inputs) > 1 and inputs[1] is not None:
        if ctx.known_or_none(inputs[1]) is None:
            raise OpAttributeUnImplemented(
                "input 'dft_length' is computed at run time; the output's length would be known "
                "only then. Make it a constant of the model"
            )
        length = int(_scalar(ctx, inputs[1], "dft_length"))
    if ctx.opset < 20:  # DFT-17: axis is an attribute (default 1)
        return dft_along(
            ctx, x, _signal_axis(int(attrs.get("axis", 1)), rank), length, inverse, onesided
        )
    axis = inputs[2] if len(inputs) > 2 and inputs[2] is not None else np.asarray(-2)
    if ctx.known_or_none(axis) is not None:
        return dft_along(
            ctx, x, _signal_axis(int(_scalar(ctx, axis, "axis")), rank), length, inverse, onesided
        )
    return _dft_runtime_axis(ctx, x, axis, length, inverse, onesided)


def _signal_axis(axis: int, rank: int) -> int:
    if not -rank <= axis < rank - 1 or axis == -1:
        raise OpAttributeInvalid(
            f"axis {axis} must name a signal dim: in [{-rank}, -2] or [0, {rank - 2}] for an "
            f"input of rank {rank} (the last dim holds the real/imaginary parts)"
        )
    return axis % rank


def _dft_runtime_axis(ctx, x, axis, length, inverse, onesided):
    """The DFT along an axis known only at run time: the DFT along every signal axis, the asked
    one picked; the VM refuses an axis out of range (or one no DFT can run along). Where the
    candidates' shapes differ (onesided, dft_length) each is zero-padded to a common shape and
    the picked one cut back to its own, so the output has dims known at run time."""
    rank = _ndim(x)
    hits, ok = axis_hits(ctx, ctx.emit(R.reshape(ctx.expr(axis), (1,))), rank)
    candidates = []
    for a in range(rank - 1):
        hit = ctx.emit(R.reshape(R.strided_slice(hits, [1], [a], [a + 1]), ()))
        try:
            candidates.append((hit, dft_along(ctx, x, a, length, inverse, onesided)))
        except OpAttributeInvalid:  # e.g. an irfft along a dim of 1: that axis is refused
            ok = ctx.emit(R.logical_and(ok, R.logical_not(hit)))
    last = ctx.emit(R.reshape(R.strided_slice(hits, [1], [rank - 1], [rank]), ()))
    ok = ctx.emit(R.logical_and(ok, R.logical_not(last)))  # the parts dim is no signal axis
    if not candidates:
        raise OpAttributeInvalid(f"no axis of the input {shape_of(x)} can be transformed")
    shapes = [shape_of(c) for _, c in candidates]
    if not all(isinstance(d, int) for s in shapes for d in s):
        raise OpAttributeUnImplemented("input 'axis' is computed at run time on symbolic dims")
    common = tuple(max(s[i] for s in shapes) for i in range(rank))
    y, picked = None, ctx.expr(np.zeros(rank, "int64"))
    for (hit, c), dims in zip(candidates, shapes):
        if dims != common:
            widths = [w for d, full in zip(dims, common) for w in (0, full - d)]
            c = ctx.emit(R.nn.pad(c, widths))
        y = c if y is None else ctx.emit(R.where(hit, c, y))
        here = ctx.expr(np.asarray(dims, "int64"))
        picked = ctx.emit(R.where(hit, here, picked))
    if len(set(map(tuple, shapes))) == 1:
        return checked_reshape(ctx, y, poisoned(ctx, dims_tensor(ctx, y), ok), "axis", common)
    expect = [d if all(s[i] == d for s in shapes) else None for i, d in enumerate(common)]
    return cut_at_run_time(ctx, y, picked, ok, "axis", expect)


# ----------------------------------------------------------------------------- STFT


def _stft(ctx, inputs, attrs):
    """Frames of the signal (batch, length, 1|2) taken every frame_step, weighted by the
    window, each transformed: (batch, frames, bins, 2). A frame_step known only at run time
    gives a frame count known only then: every frame a step of 1 would take is transformed
    and the output cut to the count."""
    x = ctx.expr(inputs[0])
    dims = shape_of(x)
    if len(dims) != 3 or dims[-1] not in (1, 2):
        raise OpAttributeInvalid(f"signal must be (batch, length, 1 or 2), got shape {dims}")
    frame_length = inputs[3] if len(inputs) > 3 else None
    window = inputs[2] if len(inputs) > 2 else None
    window = None if window is None else ctx.expr(window)
    onesided = bool(attrs.get("onesided", 1))
    if frame_length is not None and ctx.known_or_none(frame_length) is None:
        if window is not None:  # the window's length is the frame length, known at import
            raise OpAttributeUnImplemented(
                "input 'frame_length' is computed at run time next to a window; leave it out "
                "(the window's length is the frame length)"
            )
        if onesided and dims[-1] == 2:
            raise OpAttributeInvalid("onesided=1 needs a real signal (a trailing dim of 1)")
        from ._signal_runtime import stft_at_run_time

        return stft_at_run_time(ctx, x, inputs[1], frame_length, onesided)
    if frame_length is not None:
        size = int(_scalar(ctx, frame_length, "frame_length"))
    elif window is not None:
        size = shape_of(window)[0]
    else:
        size = dims[1]
    signal = dims[1]
    if not all(isinstance(d, int) for d in (size, signal)):
        raise OpAttributeUnImplemented("the signal and window lengths must be known at import")
    if not 1 <= size <= signal:
        raise OpAttributeInvalid(f"frame_length {size} must be in [1, {signal}] (the signal)")
    if window is not None and shape_of(window) != (size,):
        raise OpAttributeInvalid(f"window {shape_of(window)} must be ({size},) (frame_length)")
    if onesided and dims[-1] == 2:
        raise OpAttributeInvalid("onesided=1 needs a real signal (a trailing dim of 1)")
    known_step = ctx.known_or_none(inputs[1])
    if known_step is not None:
        step = int(_scalar(ctx, inputs[1], "frame_step"))
        if step < 1:
            raise OpAttributeInvalid(f"frame_step {step} must be positive")
        starts = ctx.expr(np.arange((signal - size) // step + 1, dtype="int64")[:, None] * step)
    else:
        step = ctx.emit(R.reshape(R.astype(ctx.expr(inputs[1]), "int64"), (1, 1)))
        starts = ctx.expr(np.arange(signal - size + 1, dtype="int64")[:, None])
        starts = ctx.emit(R.minimum(R.multiply(starts, step), ctx.expr(np.int64(signal - size))))
    index = ctx.emit(R.add(starts, ctx.expr(np.arange(size, dtype="int64")[None, :])))
    framed = ctx.emit(R.take(x, index, axis=1))  # (batch, frames, size, parts)
    if window is not None:
        weights = ctx.emit(R.reshape(R.astype(window, _dtype(x)), (1, 1, size, 1)))
        framed = ctx.emit(R.multiply(framed, weights))
    y = dft_along(ctx, framed, 2, size, False, onesided)
    if known_step is not None:
        return y
    step = ctx.emit(R.reshape(step, (1,)))
    count = ctx.emit(
        R.add(
            R.floor_divide(ctx.expr(np.asarray([signal - size], "int64")), step),
            ctx.expr(np.ones(1, "int64")),
        )
    )
    ok = ctx.emit(R.reshape(R.greater_equal(step, ctx.expr(np.ones(1, "int64"))), ()))
    ydims = shape_of(y)
    pick = np.asarray([0, 1, 0, 0], "int64")
    end = ctx.emit(
        R.add(
            R.multiply(dims_tensor(ctx, y), ctx.expr(1 - pick)), R.multiply(count, ctx.expr(pick))
        )
    )
    return cut_at_run_time(ctx, y, end, ok, "frame_step", [ydims[0], None, *ydims[2:]])


def cut_at_run_time(ctx, y, end, ok, what: str, expect: list):
    """y[:end[0], :end[1], ...] with `end` known at run time; the VM refuses it where `ok` is
    false. Dims of `expect` that are not None are known (and checked) at import."""
    rank = len(expect)
    zeros, ones = np.zeros(rank, "int64"), np.ones(rank, "int64")
    cut = ctx.emit(R.dynamic_strided_slice(y, ctx.expr(zeros), end, ctx.expr(ones)))
    shape = ctx.runtime_shape(poisoned(ctx, end, ok), what, expect)
    return ctx.bb.match_cast(cut, TensorStructInfo(shape.struct_info.values, _dtype(y)))


# ----------------------------------------------------------------------------- MelWeightMatrix


def _mel_weight_matrix(ctx, inputs, attrs):
    """The (bins, mel bins) triangular filter bank: a constant when every input is known at
    import (known inputs are folded before this runs, except parameters kept as inputs), else
    computed at run time with symbolic dims (`_signal_runtime`)."""
    names = ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz")
    try:
        values = [np.asarray(ctx.known(v, n)).reshape(-1)[0] for v, n in zip(inputs, names)]
    except FrontendError:  # an input is computed at run time
        from ._signal_runtime import mel_weight_matrix_at_run_time

        return mel_weight_matrix_at_run_time(ctx, list(inputs), _output_dtype(attrs))
    mels, length, rate = (int(v) for v in values[:3])
    low, high = float(values[3]), float(values[4])
    if mels < 1 or length < 1 or rate < 1 or not 0 <= low < high:
        raise OpAttributeInvalid(
            f"need num_mel_bins, dft_length, sample_rate >= 1 and 0 <= lower_edge_hertz < "
            f"upper_edge_hertz; got {mels}, {length}, {rate}, {low}, {high}"
        )

    check_import_entries((length // 2 + 1) * mels, f"the mel filter bank ({length} x {mels})")

    def to_mel(hz: float) -> float:
        return 2595.0 * np.log10(1.0 + hz / 700.0)

    edges = np.linspace(to_mel(low), to_mel(high), mels + 2, endpoint=False)
    hz = 700.0 * (10.0 ** (edges / 2595.0) - 1.0)
    bins = np.floor((length + 1) * hz / rate).astype(int)
    out = np.zeros((length // 2 + 1, mels))
    for m in range(mels):
        left, center, right = bins[m : m + 3]
        if center == left:
            out[center, m] = 1.0
        else:
            out[left : center + 1, m] = (np.arange(left, center + 1) - left) / (center - left)
        if right > center:
            out[center:right, m] = (right - np.arange(center, right)) / (right - center)
    return ctx.expr(out.astype(_output_dtype(attrs)))


def _output_dtype(attrs) -> str:
    from .onnx_frontend import onnx_dtype

    return onnx_dtype(int(attrs.get("output_datatype", 1)))


SIGNAL_CONVERTERS = {"DFT": _dft, "STFT": _stft, "MelWeightMatrix": _mel_weight_matrix}
