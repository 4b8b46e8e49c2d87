"""Scatter and n-d gather: topi.scatter_elements, topi.scatter_nd (ONNX's index layouts),
topi.gather_nd and topi.one_hot.

A scatter copies `data` and then applies the updates one after another in row-major order of
`indices`, so with "update" and repeated indices the last update wins (as ONNX Runtime and
torch on CPU). A negative index counts from the end of its axis; an index outside [-dim, dim)
stops the kernel with an error naming the op (an AssertStmt), never a write elsewhere.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from .. import te
from ..error import TEError
from ..tir import ir_builder
from ..tir import op as tir_op
from ..tir.expr import PrimExpr, make_const
from ..tir.expr import cast as tir_cast
from ..tir.stmt import AssertStmt, Evaluate
from .utils import const_int, normalize_axis, prod, simplify

REDUCTIONS = ("update", "add", "mul", "mean", "min", "max")

# (old value, update) -> new value; "mean" sums here and divides by the count at the end
_COMBINE: dict[str, Callable[[PrimExpr, PrimExpr], PrimExpr]] = {
    "update": lambda old, new: new,
    "add": lambda old, new: old + new,
    "mean": lambda old, new: old + new,
    "mul": lambda old, new: old * new,
    "min": lambda old, new: tir_op.min(old, new),
    "max": lambda old, new: tir_op.max(old, new),
}


def _check_reduction(reduction: str, op: str) -> None:
    if reduction not in REDUCTIONS:
        raise TEError(f"topi.{op}: reduction {reduction!r} is not one of {list(REDUCTIONS)}")


def _assert(ib: Any, cond: PrimExpr, message: str) -> None:
    """Stop with `message` unless `cond` (the assert alone in an if, so that it prints as
    TVMScript and parses back with the same body); a condition that folds to true is left out."""
    folded = const_int(simplify(cond))
    if folded is not None and folded != 0:
        return
    with ib.if_scope(~cond):
        ib.emit(AssertStmt(cond, message, Evaluate(make_const("int32", 0))))


@contextlib.contextmanager
def _loops(ib: Any, shape: Any, prefix: str):
    """Nested serial loops over `shape`; yields the tuple of loop variables."""
    with contextlib.ExitStack() as stack:
        yield tuple(
            stack.enter_context(
                ib.for_range(0, tir_cast("int64", d), name=f"{prefix}{k}", dtype="int64")
            )
            for k, d in enumerate(shape)
        )


def _same_dims(ib: Any, got: Any, want: Any, op: str, what: str) -> None:
    """updates is read where the loops over `want` go: check its dims match (symbolic ones
    at run time)."""
    for d, (a, b) in enumerate(zip(got, want)):
        same = tir_cast("int64", a) == tir_cast("int64", b)
        _assert(ib, same, f"{op}: updates differs from {what} on axis {d}")


def _wrapped(ib: Any, raw: PrimExpr, dim: PrimExpr, message: str) -> PrimExpr:
    """`raw` (negative counts from the end) as a position in [0, dim), checked at run time."""
    raw = tir_cast("int64", raw)
    dim = tir_cast("int64", dim)
    pos = ib.let("pos", tir_op.Select_(raw < 0, raw + dim, raw))
    _assert(ib, tir_op.all(pos >= 0, pos < dim), message)
    return pos


def _copy_then_scatter(
    data: te.Tensor,
    inputs: list,
    reduction: str,
    name: str,
    scatter: Callable[[Any, Any, Callable], None],
) -> te.Tensor:
    """The shared frame: out = copy of data (count = 1 for "mean"), `scatter(ib, bufs, apply)`
    applies each update through `apply(target_index, value)`, then "mean" divides."""
    mean = reduction == "mean"
    combine = _COMBINE[reduction]
    shapes = [tuple(data.shape)] + ([tuple(data.shape)] if mean else [])
    dtypes = [data.dtype] + (["int64"] if mean else [])

    def body(ins: list, outs: list) -> Any:
        ib = ir_builder.create()
        src, out = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        count = ib.buffer_ptr(outs[1]) if mean else None
        with _loops(ib, data.shape, "i") as i:
            out[i] = src[i]
            if mean:
                count[i] = make_const("int64", 1)

        def apply(target: tuple, value: PrimExpr) -> None:
            out[target] = combine(out[target], value)
            if mean:
                count[target] = count[target] + 1

        scatter(ib, ins, apply)
        if mean:
            with _loops(ib, data.shape, "i") as i:
                total, n = out[i], tir_cast(data.dtype, count[i])
                out[i] = total / n if total.dtype.is_float else tir_op.floordiv(total, n)
        return ib.get()

    outs = te.extern(shapes if mean else shapes[0], [data] + inputs, body, name=name,
                     dtype=dtypes if mean else dtypes[0])  # fmt: skip
    return outs[0] if mean else outs


def scatter_elements(
    data: te.Tensor,
    indices: te.Tensor,
    updates: te.Tensor,
    axis: int = 0,
    reduction: str = "update",
) -> te.Tensor:
    """out = data, then out[.., indices[j], ..] (position j with dim `axis` replaced) is
    combined with updates[j] for every j: "update" (the last wins), "add", "mul", "min", "max",
    or "mean" (of data and every update that lands there)."""
    nd = len(data.shape)
    axis = normalize_axis(axis, nd, "topi.scatter_elements")
    _check_reduction(reduction, "scatter_elements")
    if len(indices.shape) != nd or len(updates.shape) != nd:
        raise TEError(
            f"topi.scatter_elements: data, indices and updates must have the same rank, got "
            f"{nd}, {len(indices.shape)} and {len(updates.shape)}"
        )
    dim = data.shape[axis]
    message = f"scatter_elements: an index is outside [-dim, dim) of data's axis {axis}"

    def scatter(ib: Any, ins: list, apply: Callable) -> None:
        idx, upd = ib.buffer_ptr(ins[1]), ib.buffer_ptr(ins[2])
        # indices may be smaller than data on the other axes, never larger
        for d in range(nd):
            if d != axis:
                fits = tir_cast("int64", indices.shape[d]) <= tir_cast("int64", data.shape[d])
                _assert(ib, fits, f"scatter_elements: indices is longer than data on axis {d}")
        _same_dims(ib, updates.shape, indices.shape, "scatter_elements", "indices")
        with _loops(ib, indices.shape, "j") as j:
            pos = _wrapped(ib, idx[j], dim, message)
            apply(j[:axis] + (pos,) + j[axis + 1 :], upd[j])

    return _copy_then_scatter(data, [indices, updates], reduction, "T_scatter_elements", scatter)


def scatter_nd(
    data: te.Tensor, indices: te.Tensor, updates: te.Tensor, reduction: str = "update"
) -> te.Tensor:
    """ONNX's ScatterND: indices (.., m) address the first m axes of data; updates has shape
    indices.shape[:-1] + data.shape[m:]. out = data, then each slice is combined in."""
    _check_reduction(reduction, "scatter_nd")
    m = indices.shape[-1] if indices.shape else None
    m = int(m) if m is not None and hasattr(m, "value") else m
    if not isinstance(m, int) or m > len(data.shape):
        raise TEError(
            f"topi.scatter_nd: the last dim of indices ({m}) must be a constant at most data's "
            f"rank {len(data.shape)}"
        )
    lead = tuple(indices.shape[:-1])
    rest = tuple(data.shape[m:])
    if len(updates.shape) != len(lead) + len(rest):
        raise TEError(
            f"topi.scatter_nd: updates has rank {len(updates.shape)}, expected "
            f"{len(lead) + len(rest)} (indices.shape[:-1] + data.shape[{m}:])"
        )

    def scatter(ib: Any, ins: list, apply: Callable) -> None:
        idx, upd = ib.buffer_ptr(ins[1]), ib.buffer_ptr(ins[2])
        _same_dims(ib, updates.shape, lead + rest, "scatter_nd",
                   f"indices.shape[:-1] + data.shape[{m}:]")  # fmt: skip
        with _loops(ib, lead, "j") as j:
            pos = tuple(
                _wrapped(ib, idx[j + (k,)], data.shape[k],
                         f"scatter_nd: an index is outside [-dim, dim) of data's axis {k}")
                for k in range(m)
            )  # fmt: skip
            with _loops(ib, rest, "t") as t:
                apply(pos + t, upd[j + t])

    return _copy_then_scatter(data, [indices, updates], reduction, "T_scatter_nd", scatter)


def gather_nd(data: te.Tensor, indices: te.Tensor, batch_dims: int = 0) -> te.Tensor:
    """ONNX's GatherND: out[b.., j.., t..] = data[b.., indices[b.., j.., :], t..] with the first
    `batch_dims` axes shared. Negative indices count from the end; one outside the axis is
    sent outside the data, so the compiled code's index check reports it."""
    m = indices.shape[-1] if indices.shape else None
    m = int(m) if m is not None and hasattr(m, "value") else m
    b = int(batch_dims)
    if not isinstance(m, int) or b < 0 or b + m > len(data.shape):
        raise TEError(
            f"topi.gather_nd: batch_dims ({b}) + the last dim of indices ({m}) must be a "
            f"constant at most data's rank {len(data.shape)}"
        )
    out_shape = tuple(indices.shape[:-1]) + tuple(data.shape[b + m :])
    lead = len(indices.shape) - 1
    outside = tir_cast("int64", -prod(data.shape))

    def body(*i: Any) -> PrimExpr:
        j, t = i[:lead], i[lead:]
        # indices' batch dims must not outrun data's (symbolic dims are only known at run time)
        ok = [j[k] < tir_cast(j[k].dtype, data.shape[k]) for k in range(b)]
        pos = []
        for k in range(m):
            raw = tir_cast("int64", indices[j + (k,)])
            dim = tir_cast("int64", data.shape[b + k])
            p = tir_op.Select_(raw < 0, raw + dim, raw)
            ok += [p >= 0, p < dim]
            pos.append(p)
        # when anything is out of range the batch indices become 0 and the positions -size:
        # the flat index is negative, whatever the other terms add
        if not ok:  # no index is read from `indices`: nothing can be out of range
            return data[tuple(t)]
        valid = tir_op.all(*ok)
        batch = [tir_op.if_then_else(valid, j[k], tir_cast(j[k].dtype, 0)) for k in range(b)]
        pos = [tir_op.if_then_else(valid, p, outside) for p in pos]
        return data[tuple(batch) + tuple(pos) + tuple(t)]

    return te.compute(out_shape, body, name="T_gather_nd", tag="injective")


def one_hot(
    indices: te.Tensor, on_value: Any, off_value: Any, depth: Any, axis: int, dtype: str
) -> te.Tensor:
    """A new axis of length `depth` at `axis` (-1: last): `on_value` where its position equals
    the index, else `off_value`. A negative or too large index gives a row of `off_value`."""
    nd = len(indices.shape)
    axis = normalize_axis(axis, nd + 1, "topi.one_hot")
    shape = tuple(indices.shape[:axis]) + (depth,) + tuple(indices.shape[axis:])

    def scalar(v: Any) -> PrimExpr:
        if isinstance(v, te.Tensor):
            return tir_cast(dtype, v[()] if not v.shape else v[(0,) * len(v.shape)])
        return tir_cast(dtype, v) if isinstance(v, PrimExpr) else make_const(dtype, v)

    on, off = scalar(on_value), scalar(off_value)

    def body(*i: Any) -> PrimExpr:
        k = i[axis]
        idx = tir_cast("int64", indices[i[:axis] + i[axis + 1 :]])
        return tir_op.Select_(idx == tir_cast("int64", k), on, off)

    return te.compute(shape, body, name="T_one_hot", tag="injective")


__all__ = ["REDUCTIONS", "gather_nd", "one_hot", "scatter_elements", "scatter_nd"]
