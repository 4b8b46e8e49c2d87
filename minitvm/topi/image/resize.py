"""resize2d: nearest-neighbour, bilinear and bicubic resampling of the H and W dims (NCHW or
NHWC)."""

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
    if layout not in ("NCHW", "NHWC"):
        raise TEError(f"topi.image.resize2d: layout {layout!r} is not one of 'NCHW', 'NHWC'")
    if method not in METHODS or coordinate_transformation_mode not in COORDINATE_MODES:
        raise TEError(
            f"topi.image.resize2d: method {method!r} / coordinate_transformation_mode "
            f"{coordinate_transformation_mode!r} unsupported; methods {METHODS}, modes "
            f"{tuple(COORDINATE_MODES)}"
        )
    if method == "nearest_neighbor" and rounding_method not in ROUNDING_METHODS:
        raise TEError(
            f"topi.image.resize2d: rounding_method {rounding_method!r} is not one of "
            f"{tuple(ROUNDING_METHODS)}"
        )
    ha, wa = layout.index("H"), layout.index("W")
    out_dtype = out_dtype or data.dtype
    fdtype = data.dtype if DataType(data.dtype).is_float else "float32"
    coord = COORDINATE_MODES[coordinate_transformation_mode]
    in_h, in_w = data.shape[ha], data.shape[wa]
    out_shape = list(data.shape)
    out_shape[ha], out_shape[wa] = size

    def fl(v: Any) -> PrimExpr:
        return tir_cast(fdtype, v)

    def source(x: Any, i: Any, o: Any) -> PrimExpr:
        return coord(fl(x), fl(i), fl(o))

    def read(idx: tuple, y: PrimExpr, x: PrimExpr) -> PrimExpr:
        src = list(idx)
        src[ha], src[wa] = y, x
        return data[tuple(src)]

    def nearest(*idx: Any) -> PrimExpr:
        rnd = ROUNDING_METHODS[rounding_method]
        y = _clamp(tir_cast("int64", rnd(source(idx[ha], in_h, size[0]))), in_h)
        x = _clamp(tir_cast("int64", rnd(source(idx[wa], in_w, size[1]))), in_w)
        return tir_cast(out_dtype, read(idx, y, x))

    def bilinear(*idx: Any) -> PrimExpr:
        sy, sx = source(idx[ha], in_h, size[0]), source(idx[wa], in_w, size[1])
        fy, fx = tir_op.floor(sy), tir_op.floor(sx)
        wy, wx = sy - fy, sx - fx
        y0, x0 = tir_cast("int64", fy), tir_cast("int64", fx)
        ys = (_clamp(y0, in_h), _clamp(y0 + 1, in_h))
        xs = (_clamp(x0, in_w), _clamp(x0 + 1, in_w))
        one = make_const(fdtype, 1)

        def row(y: PrimExpr) -> PrimExpr:
            return fl(read(idx, y, xs[0])) * (one - wx) + fl(read(idx, y, xs[1])) * wx

        return tir_cast(out_dtype, row(ys[0]) * (one - wy) + row(ys[1]) * wy)

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

    def bicubic(*idx: Any) -> PrimExpr:
        sy, sx = source(idx[ha], in_h, size[0]), source(idx[wa], in_w, size[1])
        fy, fx = tir_op.floor(sy), tir_op.floor(sx)
        y0, x0 = tir_cast("int64", fy), tir_cast("int64", fx)
        wys, wxs = cubic_weights(sy - fy, y0, in_h), cubic_weights(sx - fx, x0, in_w)
        total = None
        for ky, wy in enumerate(wys):
            yk = _clamp(y0 + (ky - 1), in_h)
            row = None
            for kx, wx in enumerate(wxs):
                term = fl(read(idx, yk, _clamp(x0 + (kx - 1), in_w))) * wx
                row = term if row is None else row + term
            total = row * wy if total is None else total + row * wy
        return tir_cast(out_dtype, total)

    body = {"nearest_neighbor": nearest, "linear": bilinear, "cubic": bicubic}[method]
    return te.compute(tuple(out_shape), body, name="T_resize2d", tag="injective")
