"""Converters written as TE computes (emitted with emit_te): the ops whose output dims are
symbolic but no input holds them (arange(seq), expand to (batch, 1, d)), and gather."""

from __future__ import annotations

from typing import Any

from ....error import OpAttributeInvalid, OpAttributeUnImplemented
from ....tir.expr import PrimExpr
from ._base import _axis, _dtype, _ndim, shape_of


def symbolic_arange(t, start: Any, end: Any, step: Any, dtype: str) -> Any:
    """arange with a symbolic bound (positions 0..seq): integer start/step, step > 0."""
    from .... import te, tir

    for name, v in (("start", start), ("end", end), ("step", step)):
        if not isinstance(v, int | PrimExpr) or isinstance(v, bool):
            raise OpAttributeUnImplemented(
                f"arange with symbolic bounds needs integer bounds; {name} is {v!r}"
            )
    if not isinstance(step, int) or step <= 0:
        raise OpAttributeUnImplemented(f"arange with symbolic bounds needs a step > 0, got {step}")
    length = tir.max(tir.floordiv(end - start + (step - 1), step), 0)

    def compute():
        return te.compute((length,), lambda i: (start + i * step).astype(dtype), name="arange")

    return t.bb.emit_te(compute, primfunc_name_hint="arange")


def broadcast_new_dims(t, x, target: tuple) -> Any:
    """x broadcast to `target`, some of whose symbolic dims no input holds."""
    from .... import te

    shape = shape_of(x)
    lead = len(target) - len(shape)

    def compute(a):
        def value(*idx):
            return a[tuple(0 if shape[k] == 1 else idx[k + lead] for k in range(len(shape)))]

        return te.compute(target, value, name="expand")

    return t.bb.emit_te(compute, x, primfunc_name_hint="expand")


def gather(t, input, dim, index, *, sparse_grad=False):
    """torch.gather: out[..., i, ...] = input[..., index[..., i, ...], ...] along `dim`."""
    from .... import te, tir

    ndim = _ndim(input)
    if _ndim(index) != ndim:
        raise OpAttributeInvalid(
            f"gather: index has rank {_ndim(index)}, input has rank {ndim}; they must be equal"
        )
    if _dtype(index) not in ("int64", "int32"):
        raise OpAttributeInvalid(f"gather: index must be an integer tensor, got {_dtype(index)}")
    axis = _axis(dim, ndim)
    length = shape_of(input)[axis]

    def compute(a, idx):
        def value(*i):
            j = idx[i].astype("int64")
            j = tir.if_then_else(j < 0, j + length, j)  # torch reads -1 as the last element
            return a[tuple(j if k == axis else i[k] for k in range(ndim))]

        return te.compute(idx.shape, value, name="gather")

    return t.bb.emit_te(compute, input, index, primfunc_name_hint="gather")


def symbolic_slice(t, x, axis: int, start: Any, end: Any, step: int) -> Any:
    """x[start:end:step] along `axis` with symbolic bounds (torch.export has checked them)."""
    from .... import te, tir

    if not isinstance(step, int) or step <= 0:
        raise OpAttributeUnImplemented(f"slice with symbolic bounds needs a step > 0, got {step}")
    shape = list(shape_of(x))
    shape[axis] = tir.max(tir.floordiv(end - start + (step - 1), step), 0)

    def compute(a):
        def value(*i):
            return a[tuple(start + i[k] * step if k == axis else i[k] for k in range(len(i)))]

        return te.compute(tuple(shape), value, name="slice")

    return t.bb.emit_te(compute, x, primfunc_name_hint="slice")


def infer_minus_one(shape: tuple, dims: list) -> list:
    """dims with a -1 resolved by cancelling the factors the other dims share with `shape`
    ((s0, s1, 32) viewed as (s0, s1, -1, 8) gives 4, not s0*s1*32 // (s0*s1*8)); unchanged
    when a factor does not cancel (relax.reshape then reports it)."""
    if sum(1 for d in dims if isinstance(d, int) and d == -1) != 1:
        return dims
    have_const, have_vars = _factors(shape)
    want_const, want_vars = _factors([d for d in dims if not (isinstance(d, int) and d == -1)])
    for v in want_vars:
        match = next((i for i, h in enumerate(have_vars) if h.same_as(v)), None)
        if match is None:
            return dims
        have_vars.pop(match)
    if want_const == 0 or have_const % want_const:
        return dims
    rest: Any = have_const // want_const
    for v in have_vars:
        rest = v if isinstance(rest, int) and rest == 1 else rest * v
    return [rest if isinstance(d, int) and d == -1 else d for d in dims]


def _factors(dims) -> tuple[int, list]:
    """(product of the int dims, the symbolic dims as a list): dims that are products of
    vars count as their factors; anything else is kept whole."""
    from ....tir.expr import Mul

    const, parts, stack = 1, [], list(dims)
    while stack:
        d = stack.pop()
        if isinstance(d, int):
            const *= d
        elif isinstance(d, Mul):
            stack.extend((d.a, d.b))
        elif hasattr(d, "value") and isinstance(d.value, int):
            const *= d.value
        else:
            parts.append(d)
    return const, parts
