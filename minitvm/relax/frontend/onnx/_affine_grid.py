"""AffineGrid: the sampling grid theta maps the output's normalized coordinates to.

Each output point is theta @ (x, y[, z], 1) with x, y, z the point's coordinates in [-1, 1]
along W, H (and D): -1 + step / 2 + i * step with step = 2 / n, or with align_corners
-1 + i * step with step = 2 / (n - 1), in float64 as ONNX's reference computes them. The size
may be known at import or only at run time (then the output has symbolic dims).
"""

from __future__ import annotations

import numpy as np

from ....error import OpAttributeInvalid, OpAttributeUnImplemented
from ... import op as R
from ...expr import Expr
from ._helpers import _dtype, shape_of
from ._runtime_axes import element
from ._runtime_index import _along, iota


def _affine_grid(ctx, inputs, attrs):
    theta = ctx.expr(inputs[0])
    dims = shape_of(theta)
    if len(dims) != 3 or tuple(dims[1:]) not in ((2, 3), (3, 4)):
        raise OpAttributeInvalid(
            f"input theta has shape {list(dims)}; AffineGrid takes (N, 2, 3) for 2-d grids or "
            "(N, 3, 4) for 3-d ones"
        )
    if _dtype(theta) not in ("float16", "float32", "float64"):
        raise OpAttributeUnImplemented(f"AffineGrid of {_dtype(theta)} theta (only float types)")
    nd = int(dims[1])
    align = bool(int(attrs.get("align_corners", 0)))
    coords = _coordinates(ctx, inputs[1], nd, dims[0], align)  # per spatial axis, D/H/W order
    wide = ctx.emit(R.astype(theta, "float64"))
    rank = nd + 2  # (N, [D,] H, W, nd)
    out = None
    # homogeneous coordinates (x, y[, z], 1): x runs along the last spatial axis
    for k, (axis, values, n) in enumerate(reversed(coords)):
        term = ctx.emit(R.multiply(_column(ctx, wide, k, rank), _along(values, axis, rank, n)))
        out = term if out is None else ctx.emit(R.add(out, term))
    out = ctx.emit(R.add(out, _column(ctx, wide, nd, rank)))
    return ctx.emit(R.astype(out, _dtype(theta)))


def _column(ctx, theta: Expr, k: int, rank: int) -> Expr:
    """theta[:, :, k] shaped (N, 1, ..., 1, nd) to broadcast over the grid's points."""
    n, rows = shape_of(theta)[:2]
    col = ctx.emit(R.strided_slice(theta, [2], [k], [k + 1]))
    return ctx.emit(R.reshape(col, (n,) + (1,) * (rank - 2) + (rows,)))


def _coordinates(ctx, size, nd: int, batch, align: bool) -> list:
    """[(output axis, float64 coordinates, length)] for each spatial axis of `size`."""
    known = ctx.known_or_none(size)
    if isinstance(known, np.ndarray):
        values = [int(v) for v in known.reshape(-1)]
        if len(values) != nd + 2 or min(values) < 1:
            raise OpAttributeInvalid(
                f"input size {values} must hold {nd + 2} positive dims (N, C, "
                f"{'D, ' if nd == 3 else ''}H, W) for a theta of {nd} rows"
            )
        if isinstance(batch, int) and values[0] != batch:
            raise OpAttributeInvalid(f"input size {values} has N {values[0]}; theta's is {batch}")
        return [(1 + a, ctx.expr(_points(n, align)), n) for a, n in enumerate(values[2:])]
    given = ctx.expr(size)
    length = shape_of(given)
    if len(length) != 1 or length[0] != nd + 2:
        raise OpAttributeInvalid(
            f"input size has shape {list(length)}; it must be ({nd + 2},) for a theta of {nd} rows"
        )
    shape = ctx.emit(R.astype(given, "int64"))
    sym = list(ctx.runtime_shape(shape, "size", [batch] + [None] * (nd + 1)).struct_info.values)
    out = []
    for a in range(nd):
        i = ctx.emit(R.astype(iota(ctx, shape, sym, 2 + a), "float64"))
        out.append(
            (1 + a, _points_at_run_time(ctx, i, element(ctx, shape, 2 + a), align), sym[2 + a])
        )
    return out


def _points(n: int, align: bool) -> np.ndarray:
    """The coordinates along an axis of n points, as ONNX's reference computes them."""
    if align:
        step = 2.0 / (n - 1) if n > 1 else 0.0
        return -1.0 + np.arange(n) * step
    step = 2.0 / n
    return (-1.0 + step / 2) + np.arange(n) * step


def _points_at_run_time(ctx, i: Expr, n: Expr, align: bool) -> Expr:
    """`_points` for a length known at run time (i: 0 .. n-1 as float64)."""
    n = ctx.emit(R.astype(n, "float64"))
    two, one = ctx.expr(np.float64(2.0)), ctx.expr(np.float64(1.0))
    if align:  # one point: -1 (its step would be 2 / 0)
        wide = ctx.emit(R.maximum(R.subtract(n, one), one))
        step = ctx.emit(R.divide(two, wide))
        return ctx.emit(R.add(ctx.expr(np.float64(-1.0)), R.multiply(i, step)))
    step = ctx.emit(R.divide(two, n))
    start = ctx.emit(R.add(ctx.expr(np.float64(-1.0)), R.divide(step, two)))
    return ctx.emit(R.add(start, R.multiply(i, step)))


AFFINE_GRID_CONVERTERS = {"AffineGrid": _affine_grid}
