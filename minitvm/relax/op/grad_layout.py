"""Gradient rules that keep gradients in the layout of the value they belong to (issue 25).

- `matmul(a, permute_dims(W))` (how `nn.Linear` imports, and attention's `q @ k^T`): the
  general rule returned `dWᵀ = aᵀ @ g` and the permute_dims rule transposed it back, so the
  optimizer read every weight gradient through a transpose. Here `dW = gᵀ @ a` is computed in
  W's own layout and handed to permute_dims as `permute_dims(dW)`, which the permute_dims rule
  below cancels; `da = g @ W` reads W directly instead of transposing it twice. dW keeps W's
  layout whatever W's shape: the CPU matmul schedule runs `Aᵀ @ B` as fast with an output
  taller than wide as with its transpose (1 thread, 1024 rows reduced, 1024 x 256 vs
  256 x 1024, also over 8 x 128 and a symbolic batch: 0.98-1.02x).
- `permute_dims(x, p)` whose incoming gradient is bound to `permute_dims(h, p)` (the same
  permutation): the gradient of x is h itself, with no kernel (the unused permute is dead code).
- `take(x, k, axis)` with a constant scalar index (unbinding a stacked q/k/v): the gradient is
  `g` on slice k and zero elsewhere, written as one elementwise `where` over a constant one-hot
  mask. It fuses with the sum of the slices' gradients, where `take_backward` zero-filled the
  whole tensor and scattered into it, once per slice.

A rule finds the value a variable is bound to in the emitter's recorded bindings; where it is
not an emitter (no bindings) or the pattern does not match, the general rule runs.
"""

from __future__ import annotations

import numpy as np

from ...topi.utils import const_int, normalize_axis
from ..expr import Call, Constant, Expr, Var, const
from . import elementwise as E
from . import linear_algebra, manipulate
from .grad import (
    GRAD_RULES,
    _install,
    _permute,
    _same_shape,
    _swap_last,
    _take,
    collapse_sum_to,
    shape_of,
)
from .grad_extra import _matmul_flat_weight


def _bound_value(bb, e: Expr) -> Expr | None:
    """The value `e` is bound to among the bindings `bb` (a gradient Emitter) recorded, or None."""
    if not isinstance(e, Var):
        return None
    value_of = getattr(bb, "value_of", None)
    return value_of(e) if value_of is not None else None


def _permutation_of(value: Expr | None) -> tuple[Expr, tuple[int, ...]] | None:
    """(source, normalised axes) when `value` is a permute_dims call, else None."""
    if not isinstance(value, Call) or getattr(value.op, "name", None) != "relax.permute_dims":
        return None
    src = value.args[0]
    n = getattr(src.struct_info, "ndim", -1)
    if n < 0:
        return None
    axes = value.attrs["axes"]
    if axes is None:
        return src, tuple(reversed(range(n)))
    return src, tuple(normalize_axis(a, n, "relax.permute_dims") for a in axes)


def _swapped_source(bb, b: Expr) -> Expr | None:
    """W when `b` is bound to `permute_dims(W)` swapping only its last two axes, else None."""
    perm = _permutation_of(_bound_value(bb, b))
    if perm is None:
        return None
    src, axes = perm
    n = len(axes)
    return src if n >= 2 and axes == (*range(n - 2), n - 1, n - 2) else None


def _weight_grad(a: Expr, g: Expr, sa: tuple, sb: tuple) -> Expr | None:
    """`dW = gᵀ @ a` in W's layout (`b = Wᵀ`), or None where b was broadcast over a batch."""
    if len(sb) == 2:  # one weight for every row of a: a single product over the flattened rows
        rows_a = a if len(sa) == 2 else manipulate.reshape(a, (-1, sb[0]))
        rows_g = g if len(sa) == 2 else manipulate.reshape(g, (-1, sb[1]))
        return linear_algebra.matmul(manipulate.permute_dims(rows_g, [1, 0]), rows_a)
    if len(sa) == len(sb) and _same_shape(sa[:-2], sb[:-2]):
        return linear_algebra.matmul(_swap_last(g), a)
    return None


def _matmul(var, call, g, bb):
    a, b = call.args
    w = _swapped_source(bb, b)
    sa, sb = shape_of(a), shape_of(b)
    if w is None or len(sa) < 2:
        return _matmul_flat_weight(var, call, g, bb)
    d_a = collapse_sum_to(linear_algebra.matmul(g, w), sa)  # W itself, not Wᵀ transposed
    d_w = _weight_grad(a, g, sa, sb)
    if d_w is None:
        return [d_a, _matmul_flat_weight(var, call, g, bb)[1]]
    return [d_a, _swap_last(d_w)]  # permute_dims(dW): the permute_dims rule cancels it


def _permute_layout(var, call, g, bb):
    perm = _permutation_of(_bound_value(bb, g))
    n = len(shape_of(call.args[0]))
    axes = call.attrs["axes"]
    mine = (
        tuple(reversed(range(n)))
        if axes is None
        else tuple(normalize_axis(a, n, "relax.permute_dims") for a in axes)
    )
    if perm is not None and perm[1] == mine:  # permute(permute(h, p), p^-1) -> h
        return [perm[0]]
    return _permute(var, call, g, bb)


def _take_layout(var, call, g, bb):
    x, idx = call.args
    axis = call.attrs["axis"]
    xs = shape_of(x)
    if axis is None or not isinstance(idx, Constant) or np.ndim(idx.data.numpy()) != 0:
        return _take(var, call, g, bb)
    axis = normalize_axis(axis, len(xs), "relax.take")
    n = const_int(xs[axis])
    if n is None:
        return _take(var, call, g, bb)
    k = int(idx.data.numpy())
    k = k % n if call.attrs["mode"] == "wrap" else min(max(k, 0), n - 1)
    mask = np.zeros([n if d == axis else 1 for d in range(len(xs))], dtype=bool)
    mask[(0,) * axis + (k,)] = True  # g on slice k, 0 elsewhere
    zero = const(0, str(g.struct_info.dtype))
    return [E.where(const(mask), manipulate.expand_dims(g, axis), zero), None]


GRAD_RULES.update(
    {
        "relax.matmul": _matmul,
        "relax.permute_dims": _permute_layout,
        "relax.take": _take_layout,
    }
)
_install()
