"""resize2d / resize3d: nearest-neighbour, (bi/tri)linear and (bi/tri)cubic resampling of the
spatial dims (NCHW/NHWC, NCDHW/NDHWC)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ... import te
from ...error import TEError
from ...ir.dtype import DataType
from ...tir import op as tir_op
from ...tir.expr import PrimExpr, make_const
from ...tir.expr import cast as tir_cast


def _zero(x: PrimExpr) -> PrimExpr:
    return make_const(x.dtype, 0)


# mode -> input coordinate of output position x, given (x, in size, out size) as floats;
# each is the formula of the ONNX Resize spec of the same name
COORDINATE_MODES: dict[str, Callable[[Any, Any, Any], Any]] = {
    "half_pixel": lambda x, i, o: (x + 0.5) * (i / o) - 0.5,
    "pytorch_half_pixel": lambda x, i, o: tir_op.Select_(
        o > 1, (x + 0.5) * (i / o) - 0.5, _zero(x)
    ),
    "align_corners": lambda x, i, o: tir_op.Select_(o > 1, x * ((i - 1) / (o - 1)), _zero(x)),
    "asymmetric": lambda x, i, o: x * (i / o),
    "tf_half_pixel_for_nn": lambda x, i, o: (x + 0.5) * (i / o),
}

# rounding of a nearest-neighbour coordinate ("round" ties go up, as "round_prefer_ceil")
ROUNDING_METHODS: dict[str, Callable[[Any], Any]] = {
    "round": lambda v: tir_op.floor(v + 0.5),
    "round_prefer_ceil": lambda v: tir_op.floor(v + 0.5),
    "round_prefer_floor": lambda v: tir_op.ceil(v - 0.5),
    "floor": tir_op.floor,
    "ceil": tir_op.ceil,
}

METHODS = ("nearest_neighbor", "linear", "cubic")


def _clamp(i: PrimExpr, size: PrimExpr) -> PrimExpr:
    return tir_op.max(tir_op.min(i, size - 1), make_const(i.dtype, 0))


def _keys_cubic(d: PrimExpr, a: float, dtype: str) -> PrimExpr:
    """Keys' cubic convolution kernel at signed distance d (0 beyond 2)."""
    t = tir_op.abs(d)

    def c(v: float) -> PrimExpr:
        return make_const(dtype, v)

    near = ((c(a + 2) * t - c(a + 3)) * t * t) + c(1)
    far = ((c(a) * t - c(5 * a)) * t + c(8 * a)) * t - c(4 * a)
    return tir_op.Select_(t <= c(1), near, tir_op.Select_(t < c(2), far, c(0)))


# layout -> its spatial dims, outermost first
_SPATIAL = {"NCHW": "HW", "NHWC": "HW", "NCDHW": "DHW", "NDHWC": "DHW"}


def _check(op: str, layout: str, ndim: int, method: str, mode: str, rounding: str) -> None:
    layouts = tuple(lay for lay, dims in _SPATIAL.items() if len(dims) == ndim)
    if layout not in layouts:
        names = ", ".join(repr(lay) for lay in layouts)
        raise TEError(f"topi.image.{op}: layout {layout!r} is not one of {names}")
    if method not in METHODS or mode not in COORDINATE_MODES:
        raise TEError(
            f"topi.image.{op}: method {method!r} / coordinate_transformation_mode "
            f"{mode!r} unsupported; methods {METHODS}, modes {tuple(COORDINATE_MODES)}"
        )
    if method == "nearest_neighbor" and rounding not in ROUNDING_METHODS:
        raise TEError(
            f"topi.image.{op}: rounding_method {rounding!r} is not one of {tuple(ROUNDING_METHODS)}"
        )


def _resize(
    data: te.Tensor,
    size: Sequence[Any],
    layout: str,
    method: str,
    mode: str,
    rounding_method: str,
    out_dtype: str | None,
    cubic_alpha: float,
    cubic_exclude: int,
    ndim: int,
) -> te.Tensor:
    """Resize the `ndim` spatial dims of `data` (the body of resize2d and resize3d).

    Linear and cubic interpolate the innermost spatial dim first, then each outer one in
    turn: out = sum_k inner(tap_k) * weight_k, a left-to-right sum."""
    op = f"resize{ndim}d"
    _check(op, layout, ndim, method, mode, rounding_method)
    axes = tuple(layout.index(d) for d in _SPATIAL[layout])
    size = tuple(size)
    if len(size) != ndim:
        raise TEError(f"topi.image.{op}: size {list(size)} must have {ndim} dims")
    out_dtype = out_dtype or data.dtype
    fdtype = data.dtype if DataType(data.dtype).is_float else "float32"
    coord = COORDINATE_MODES[mode]
    in_sizes = tuple(data.shape[a] for a in axes)
    out_shape = list(data.shape)
    for a, s in zip(axes, size):
        out_shape[a] = s

    def fl(v: Any) -> PrimExpr:
        return tir_cast(fdtype, v)

    def source(idx: tuple, k: int) -> PrimExpr:
        return coord(fl(idx[axes[k]]), fl(in_sizes[k]), fl(size[k]))

    def read(idx: tuple, pos: Sequence[PrimExpr]) -> PrimExpr:
        src = list(idx)
        for a, p in zip(axes, pos):
            src[a] = p
        return data[tuple(src)]

    def nearest(*idx: Any) -> PrimExpr:
        rnd = ROUNDING_METHODS[rounding_method]
        pos = [_clamp(tir_cast("int64", rnd(source(idx, k))), n) for k, n in enumerate(in_sizes)]
        return tir_cast(out_dtype, read(idx, pos))

    def linear_taps(idx: tuple, k: int) -> list:
        s = source(idx, k)
        f = tir_op.floor(s)
        w, i0, n = s - f, tir_cast("int64", f), in_sizes[k]
        return [(_clamp(i0, n), make_const(fdtype, 1) - w), (_clamp(i0 + 1, n), w)]

    def cubic_taps(idx: tuple, k: int) -> list:
        s = source(idx, k)
        f = tir_op.floor(s)
        i0, n = tir_cast("int64", f), in_sizes[k]
        ws = cubic_weights(s - f, i0, n)
        return [(_clamp(i0 + (t - 1), n), w) for t, w in enumerate(ws)]

    def cubic_weights(t: PrimExpr, pos: PrimExpr, n: Any) -> list:
        """Weights of taps pos-1 .. pos+2 at fraction t, zeroed outside [0, n) if excluded."""
        ws = [_keys_cubic(t + make_const(fdtype, 1 - k), cubic_alpha, fdtype) for k in range(4)]
        if not cubic_exclude:
            return ws
        zero = make_const(fdtype, 0)
        ws = [
            tir_op.Select_(tir_op.all(pos + (k - 1) >= 0, pos + (k - 1) < n), w, zero)
            for k, w in enumerate(ws)
        ]
        total = ws[0] + ws[1] + ws[2] + ws[3]
        return [w / total for w in ws]

    def interpolate(idx: tuple, taps: list, pos: tuple) -> PrimExpr:
        """Sum over the taps of spatial dim len(pos) and those inside it."""
        total = None
        for i, w in taps[len(pos)]:
            inner = pos + (i,)
            v = fl(read(idx, inner)) if len(inner) == ndim else interpolate(idx, taps, inner)
            total = v * w if total is None else total + v * w
        return total

    def separable(make_taps: Callable) -> Callable:
        def body(*idx: Any) -> PrimExpr:
            taps = [make_taps(idx, k) for k in range(ndim)]
            return tir_cast(out_dtype, interpolate(idx, taps, ()))

        return body

    bodies = {
        "nearest_neighbor": nearest,
        "linear": separable(linear_taps),
        "cubic": separable(cubic_taps),
    }
    return te.compute(tuple(out_shape), bodies[method], name=f"T_{op}", tag="injective")


def resize2d(
    data: te.Tensor,
    size: Sequence[Any],
    layout: str = "NCHW",
    method: str = "linear",
    coordinate_transformation_mode: str = "half_pixel",
    rounding_method: str = "round",
    out_dtype: str | None = None,
    cubic_alpha: float = -0.5,
    cubic_exclude: int = 0,
) -> te.Tensor:
    """`data` resampled to H, W = `size`; coordinates in the data's float type (float32 for
    float32 data, as torch and ONNX Runtime compute them), indices clamped to the input.
    "cubic" weighs 4 x 4 taps by Keys' kernel with `cubic_alpha`; `cubic_exclude` gives taps
    outside the input weight 0 and renormalises the rest."""
    return _resize(data, size, layout, method, coordinate_transformation_mode, rounding_method,
                   out_dtype, cubic_alpha, cubic_exclude, 2)  # fmt: skip


def resize3d(
    data: te.Tensor,
    size: Sequence[Any],
    layout: str = "NCDHW",
    method: str = "linear",
    coordinate_transformation_mode: str = "half_pixel",
    rounding_method: str = "round",
    out_dtype: str | None = None,
    cubic_alpha: float = -0.5,
    cubic_exclude: int = 0,
) -> te.Tensor:
    """`data` resampled to D, H, W = `size` (NCDHW or NDHWC): resize2d with one more dim
    (trilinear: 2 x 2 x 2 taps, tricubic: 4 x 4 x 4)."""
    return _resize(data, size, layout, method, coordinate_transformation_mode, rounding_method,
                   out_dtype, cubic_alpha, cubic_exclude, 3)  # fmt: skip
