"""GridSample (opset 16/20/22): sampling X at the grid's normalized coordinates.

Built from relax ops: each spatial dim's coordinate is unnormalized, rounded (nearest) or moved
inside the border (border / reflection padding), split into taps with weights (1 nearest,
2 linear, 4 cubic with Keys' a = -0.75), and every combination of taps is gathered from X laid
out as rows of channels ([N * prod(spatial), C]); taps outside X read 0 with zeros padding.
The rules follow ONNX's reference implementation step for step.
"""

from __future__ import annotations

import itertools

import numpy as np

from ....error import OpAttributeInvalid, OpAttributeUnImplemented
from ....tir.expr import PrimExpr
from ... import op as R
from ...expr import Expr
from ._helpers import _dtype, _ndim, _unsupported, shape_of

_CUBIC_A = -0.75


class _Ops:
    """Terse float32 arithmetic on relax expressions for the formulas below."""

    def __init__(self, ctx):
        self.ctx = ctx

    def c(self, value: float) -> Expr:
        return self.ctx.expr(np.asarray(value, "float32"))

    def __getattr__(self, name: str):
        op = getattr(R, name)
        return lambda *args: self.ctx.emit(op(*args))


def _reflect(f: _Ops, x: Expr, lo: float, hi: float) -> Expr:
    """Fold x back into [lo, hi] by reflecting at the borders as often as needed."""
    rng = f.c(hi - lo)
    below, above = f.less(x, f.c(lo)), f.greater(x, f.c(hi))
    dx = f.where(below, f.subtract(f.c(lo), x), f.subtract(x, f.c(hi)))
    n = f.floor(f.divide(dx, rng))
    r = f.subtract(dx, f.multiply(n, rng))
    even = f.equal(f.floor_mod(n, f.c(2.0)), f.c(0.0))
    from_lo = f.where(even, f.add(f.c(lo), r), f.subtract(f.c(hi), r))
    from_hi = f.where(even, f.subtract(f.c(hi), r), f.add(f.c(lo), r))
    return f.where(below, from_lo, f.where(above, from_hi, x))


def _reflect_int(i: int, lo: float, hi: float) -> int:
    """The reference's reflection of one integer tap index, truncated (numpy, at import)."""
    rng, x = hi - lo, float(i)
    if rng <= 0:
        return 0
    if x < lo or x > hi:
        dx = lo - x if x < lo else x - hi
        n = int(dx / rng)
        r = dx - n * rng
        x = (lo + r if n % 2 == 0 else hi - r) if i < lo else (hi - r if n % 2 == 0 else lo + r)
    return min(max(int(x), 0), int(hi + 0.5))


def _cubic_weights(f: _Ops, t: Expr) -> list:
    a = _CUBIC_A

    def outer(s: Expr) -> Expr:  # ((a s - 5a) s + 8a) s - 4a, for s in [1, 2]
        inner = f.add(f.multiply(f.subtract(f.multiply(f.c(a), s), f.c(5 * a)), s), f.c(8 * a))
        return f.subtract(f.multiply(inner, s), f.c(4 * a))

    def near(s: Expr) -> Expr:  # ((a + 2) s - (a + 3)) s^2 + 1, for s in [0, 1]
        lead = f.subtract(f.multiply(f.c(a + 2), s), f.c(a + 3))
        return f.add(f.multiply(f.multiply(lead, s), s), f.c(1.0))

    one_minus = f.subtract(f.c(1.0), t)
    return [
        outer(f.add(t, f.c(1.0))),
        near(t),
        near(one_minus),
        outer(f.add(one_minus, f.c(1.0))),
    ]


def _taps(f: _Ops, v: Expr, size: int, mode: str, padding: str, align: bool) -> list:
    """[(int64 index, float32 weight or None, bool valid or None)] along one spatial dim."""
    lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
    if mode == "nearest":
        v = f.round(v)  # half to even, as numpy.rint
    if padding == "border":
        v = f.where(
            f.logical_or(f.less(v, f.c(lo)), f.greater(v, f.c(hi))), f.clip(v, 0.0, size - 1.0), v
        )
    elif padding == "reflection":  # a one-element dim with aligned corners has no width
        v = _reflect(f, v, lo, hi) if hi > lo else f.multiply(v, f.c(0.0))
    if mode == "nearest":
        points = [(f.trunc(v), None)]
    else:
        base = f.floor(v)
        t = f.subtract(v, base)
        if mode == "linear":
            points = [(base, f.subtract(f.c(1.0), t)), (f.add(base, f.c(1.0)), t)]
        else:
            offsets = (-1.0, 0.0, 1.0, 2.0)
            points = [(f.add(base, f.c(o)), w) for o, w in zip(offsets, _cubic_weights(f, t))]
    taps = []
    for i, w in points:
        valid = None
        if padding == "zeros":
            valid = f.logical_and(f.greater_equal(i, f.c(0.0)), f.less_equal(i, f.c(size - 1.0)))
        elif padding == "reflection" and mode != "nearest":
            # taps lie at most 2 outside [lo, hi]: their reflections are a table of 3 + size + 3
            table = np.asarray([_reflect_int(j, lo, hi) for j in range(-3, size + 3)], "int64")
            shifted = f.astype(f.clip(f.add(i, f.c(3.0)), 0.0, size + 5.0), "int64")
            taps.append((f.take(f.ctx.expr(table), shifted, 0), w, None))
            continue
        taps.append((f.astype(f.clip(i, 0.0, size - 1.0), "int64"), w, valid))
    return taps


def _grid_sample(ctx, inputs, attrs):
    x, grid = ctx.expr(inputs[0]), ctx.expr(inputs[1])
    mode = attrs.get("mode", "linear" if ctx.opset >= 20 else "bilinear")
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    padding = attrs.get("padding_mode", "zeros")
    align = bool(attrs.get("align_corners", 0))
    if mode not in ("nearest", "linear", "cubic"):
        _unsupported("mode", mode, ["nearest", "linear", "cubic"])
    if padding not in ("zeros", "border", "reflection"):
        _unsupported("padding_mode", padding, ["zeros", "border", "reflection"])
    shape, k = shape_of(x), _ndim(x) - 2
    if any(isinstance(d, PrimExpr) for d in shape) or any(
        isinstance(d, PrimExpr) for d in shape_of(grid)
    ):
        raise OpAttributeUnImplemented("GridSample on symbolic dims; fix them in shape_dict")
    if k < 1 or shape_of(grid)[-1] != k or _ndim(grid) != k + 2:
        raise OpAttributeInvalid(f"grid of shape {shape_of(grid)} does not fit X of shape {shape}")
    if mode == "cubic" and k != 2:
        _unsupported("mode", "cubic", "linear or nearest for non-2-d input")
    n, c, spatial = shape[0], shape[1], shape[2:]
    out_spatial = shape_of(grid)[1:-1]
    f = _Ops(ctx)
    g = grid if _dtype(grid) == "float32" else f.astype(grid, "float32")
    per_dim = []
    for j, size in enumerate(spatial):  # the grid lists coordinates innermost dim first
        comp = f.squeeze(f.strided_slice(g, [k + 1], [k - 1 - j], [k - j]), [k + 1])
        if align:
            v = f.multiply(f.divide(f.add(comp, f.c(1.0)), f.c(2.0)), f.c(size - 1.0))
        else:
            v = f.divide(
                f.subtract(f.multiply(f.add(comp, f.c(1.0)), f.c(float(size))), f.c(1.0)), f.c(2.0)
            )
        per_dim.append(_taps(f, v, size, mode, padding, align))
    # rows of channels: [N * prod(spatial), C]; a tap's row is n * prod(spatial) + flat index
    rows = f.reshape(f.permute_dims(x, [0, *range(2, k + 2), 1]), (-1, c))
    batch = np.arange(n, dtype="int64").reshape([n] + [1] * len(out_spatial)) * int(
        np.prod(spatial)
    )
    strides = [int(np.prod(spatial[j + 1 :])) for j in range(k)]
    total = None
    for combo in itertools.product(*per_dim):
        index = ctx.expr(batch)
        weight, valid = None, None
        for (i, w, ok), stride in zip(combo, strides):
            index = f.add(index, f.multiply(i, ctx.expr(np.asarray(stride, "int64"))))
            if w is not None:
                weight = w if weight is None else f.multiply(weight, w)
            if ok is not None:
                valid = ok if valid is None else f.logical_and(valid, ok)
        value = f.take(rows, index, 0)  # [N, *out_spatial, C]
        if valid is not None:
            weight = (
                f.astype(valid, "float32")
                if weight is None
                else f.multiply(weight, f.astype(valid, "float32"))
            )
        if weight is not None:
            w = f.expand_dims(weight, len(out_spatial) + 1)
            value = f.multiply(value, w if _dtype(x) == "float32" else f.astype(w, _dtype(x)))
        total = value if total is None else f.add(total, value)
    return f.permute_dims(total, [0, len(out_spatial) + 1, *range(1, len(out_spatial) + 1)])
