"""Data movement: reshape, transpose, concatenate, split, strided_slice, take, trilu."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import te
from ..error import ShapeError, TEError
from ..ir.dtype import DataType
from ..tir import op as tir_op
from ..tir.expr import PrimExpr, as_expr
from ..tir.expr import cast as tir_cast
from .utils import (
    const_int,
    fmt_shape,
    normalize_axis,
    prove_equal,
    ravel_index,
    simplify,
    unravel_index,
)
from .utils import (
    prod as dims_prod,
)


def _cancel_common_dims(num: list, den: list) -> tuple[list, list]:
    """Drop the dims `num` and `den` share (the same symbolic var, or equal constants), so that
    (1, n, 64) into (1, n, 4, -1) gives 64 // 4 = 16 for the -1, not (n * 64) // (n * 4), which
    the simplifier cannot cancel."""
    from ..ir.structural import structural_equal

    num, rest = list(num), []
    for d in den:
        for i, m in enumerate(num):
            cd, cm = const_int(d), const_int(m)
            if (cd is not None and cd == cm) or (
                cd is None and cm is None and structural_equal(d, m)
            ):
                del num[i]
                break
        else:
            rest.append(d)
    return num, rest


def _provably_differ(a: Any, b: Any) -> bool:
    """True when two element counts can never be equal."""
    ca, cb = const_int(a), const_int(b)
    if ca is not None and cb is not None:
        return ca != cb
    from ..arith import Analyzer

    return bool(Analyzer().can_prove(as_expr(simplify(a)) != as_expr(simplify(b))))


def infer_reshape(shape: Sequence[Any], newshape: Sequence[Any], what: str) -> tuple:
    """Resolve one -1 in `newshape` and check the element counts agree (when provable)."""
    newshape = [
        as_expr(d, like=DataType("int64")) if not isinstance(d, PrimExpr) else d for d in newshape
    ]
    holes = [n for n, d in enumerate(newshape) if const_int(d) == -1]
    if len(holes) > 1:
        raise ShapeError(f"{what}: new shape {fmt_shape(newshape)} has more than one -1")
    total = dims_prod(shape)
    if holes:
        known = dims_prod([d for n, d in enumerate(newshape) if n != holes[0]])
        if const_int(known) == 0:
            raise ShapeError(
                f"{what}: cannot infer -1 in {fmt_shape(newshape)}: other dims multiply to 0"
            )
        if (
            const_int(total) is not None
            and const_int(known) is not None
            and const_int(total) % const_int(known)
        ):
            raise ShapeError(
                f"{what}: cannot reshape {fmt_shape(shape)} ({const_int(total)} elements) into "
                f"{fmt_shape(newshape)}: {const_int(total)} is not divisible by {const_int(known)}"
            )
        num, den = _cancel_common_dims(
            list(shape), [d for n, d in enumerate(newshape) if n != holes[0]]
        )
        newshape[holes[0]] = simplify(dims_prod(num) // dims_prod(den)) if den else dims_prod(num)
    out = tuple(simplify(d) for d in newshape)
    new_total = dims_prod(out)
    # As in TVM, spelled-out symbolic dims are rejected only when the counts provably differ:
    # (10, 5) into (i, 5, 5) is legal and holds for i = 2, which the caller guarantees at run
    # time. A -1 that minitvm inferred must make the counts provably equal.
    if _provably_differ(total, new_total) or (
        holes and not prove_equal(simplify(total), simplify(new_total))
    ):
        raise ShapeError(
            f"{what}: cannot reshape {fmt_shape(shape)} into {fmt_shape(out)}: element counts "
            f"differ ({simplify(total)} vs {simplify(new_total)})"
        )
    return out


def reshape(data: te.Tensor, newshape: Sequence[Any]) -> te.Tensor:
    """Same elements in row-major order, new shape (one dim may be -1)."""
    out_shape = infer_reshape(data.shape, newshape, "topi.reshape")
    total, new_total = simplify(dims_prod(data.shape)), simplify(dims_prod(out_shape))
    # counts that agree only at run time (n into (i, 5)): a call where they do not must not
    # read past the data, so each read is guarded and gives NaN (0 for ints) instead
    same = None if prove_equal(total, new_total) else (total == new_total)

    def body(*idx: Any) -> PrimExpr:
        value = data[tuple(unravel_index(ravel_index(idx, out_shape), data.shape))]
        if same is None:
            return value
        bad = float("nan") if DataType(data.dtype).is_float else 0
        return tir_op.if_then_else(same, value, tir_cast(data.dtype, bad))

    return te.compute(out_shape, body, name="T_reshape", tag="injective")


def flatten(data: te.Tensor) -> te.Tensor:
    """All elements as a 1-D tensor."""
    return reshape(data, (dims_prod(data.shape),))


def transpose(data: te.Tensor, axes: Sequence[int] | None = None) -> te.Tensor:
    """Permute dims: output dim n is input dim axes[n] (reversed when axes is None)."""
    nd = len(data.shape)
    axes = (
        tuple(reversed(range(nd)))
        if axes is None
        else tuple(normalize_axis(a, nd, "topi.transpose") for a in axes)
    )
    if sorted(axes) != list(range(nd)):
        raise ShapeError(
            f"topi.transpose: axes {list(axes)} are not a permutation of {list(range(nd))}"
        )
    out_shape = tuple(data.shape[a] for a in axes)

    def body(*idx: Any) -> PrimExpr:
        index = [None] * nd
        for n, a in enumerate(axes):
            index[a] = idx[n]
        return data[tuple(index)]

    return te.compute(out_shape, body, name="T_transpose", tag="injective")


def concatenate(tensors: Sequence[te.Tensor], axis: int = 0) -> te.Tensor:
    """Join tensors along `axis`; other dims must agree."""
    tensors = list(tensors)
    if not tensors:
        raise TEError("topi.concatenate: needs at least one tensor")
    nd = len(tensors[0].shape)
    axis = normalize_axis(axis, nd, "topi.concatenate")
    offsets, total = [], 0
    for t in tensors:
        offsets.append(total)
        d = t.shape[axis]
        total = d if isinstance(total, int) and total == 0 else simplify(total + d)
    out_shape = tuple(total if n == axis else tensors[0].shape[n] for n in range(nd))

    def body(*idx: Any) -> PrimExpr:
        i = idx[axis]
        value = tensors[-1][tuple(idx[:axis]) + (i - offsets[-1],) + tuple(idx[axis + 1 :])]
        for t, off in reversed(list(zip(tensors[:-1], offsets[:-1]))):
            shifted = i if const_int(off) == 0 else i - off
            load = t[tuple(idx[:axis]) + (shifted,) + tuple(idx[axis + 1 :])]
            value = tir_op.if_then_else(i < off + t.shape[axis], load, value)
        return value

    return te.compute(out_shape, body, name="T_concat", tag="injective")


def split_sections(dim: Any, indices_or_sections: Any, what: str) -> list[tuple[Any, Any]]:
    """(begin, extent) of each piece for numpy-style `indices_or_sections`."""
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        size = const_int(dim)
        if n <= 0:
            raise ShapeError(f"{what}: number of sections must be positive, got {n}")
        if size is not None and size % n:
            raise ShapeError(f"{what}: dim of size {size} does not split into {n} equal sections")
        step = size // n if size is not None else simplify(dim // n)
        return [(step * k if size is not None else simplify(step * k), step) for k in range(n)]
    size = const_int(dim)
    starts = [0] + [int(i) for i in indices_or_sections]
    out = []
    for k, lo in enumerate(starts):
        last = k + 1 == len(starts)
        if size is not None:
            lo_c = min(lo, size)
            hi_c = size if last else min(starts[k + 1], size)
            out.append((lo_c, max(hi_c - lo_c, 0)))
        else:
            hi = dim if last else as_expr(starts[k + 1], like=dim.dtype)
            out.append((lo, simplify(hi - lo)))
    return out


def split(data: te.Tensor, indices_or_sections: Any, axis: int = 0) -> list[te.Tensor]:
    """numpy.split: an int gives equal sections, a list gives split points."""
    nd = len(data.shape)
    axis = normalize_axis(axis, nd, "topi.split")
    pieces = split_sections(data.shape[axis], indices_or_sections, "topi.split")
    outs = []
    for n, (begin, ext) in enumerate(pieces):
        shape = tuple(ext if k == axis else d for k, d in enumerate(data.shape))

        def body(*idx: Any, begin: Any = begin) -> PrimExpr:
            i = idx[axis] if const_int(begin) == 0 else idx[axis] + begin
            return data[tuple(idx[:axis]) + (i,) + tuple(idx[axis + 1 :])]

        outs.append(te.compute(shape, body, name=f"T_split_{n}", tag="injective"))
    return outs


def slice_bounds(dim: Any, begin: int, end: int, stride: int) -> tuple[Any, Any]:
    """Clamped (start, extent) of a numpy slice over a dim (symbolic dims allowed)."""
    size = const_int(dim)
    if stride == 0:
        raise ShapeError("topi.strided_slice: stride 0 is not allowed")
    if size is not None:
        start, stop, step = slice(begin, end, stride).indices(size)
        return start, max(0, -(-(stop - start) // step)) if step > 0 else max(
            0, -(-(start - stop) // -step)
        )
    if stride < 0:
        raise ShapeError(
            f"topi.strided_slice: negative stride over the symbolic dim {dim} is not supported"
        )
    d = dim

    def clamp(v: int) -> Any:
        return tir_op.max(d + v, 0) if v < 0 else tir_op.min(as_expr(v, like=d.dtype), d)

    start, stop = clamp(begin), clamp(end)
    ext = (
        tir_op.max(stop - start, 0)
        if stride == 1
        else tir_op.max((stop - start + (stride - 1)) // stride, 0)
    )
    return simplify(start), simplify(ext)


def strided_slice(
    data: te.Tensor,
    begin: Sequence[int],
    end: Sequence[int],
    strides: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
) -> te.Tensor:
    """numpy-style slice `data[b0:e0:s0, ...]` over `axes` (all leading axes when None)."""
    nd = len(data.shape)
    axes = (
        list(range(len(begin)))
        if axes is None
        else [normalize_axis(a, nd, "topi.strided_slice") for a in axes]
    )
    strides = list(strides) if strides is not None else [1] * len(axes)
    if not len(begin) == len(end) == len(strides) == len(axes):
        raise ShapeError(
            f"topi.strided_slice: begin {list(begin)}, end {list(end)}, strides {strides} and axes "
            f"{axes} must have the same length"
        )
    starts, steps = [0] * nd, [1] * nd
    out_shape = list(data.shape)
    for a, b, e, s in zip(axes, begin, end, strides):
        starts[a], out_shape[a] = slice_bounds(data.shape[a], int(b), int(e), int(s))
        steps[a] = int(s)

    def body(*idx: Any) -> PrimExpr:
        index = []
        for i, st, sp in zip(idx, starts, steps):
            j = i if sp == 1 else i * sp
            index.append(j if const_int(st) == 0 else j + st)
        return data[tuple(index)]

    return te.compute(tuple(out_shape), body, name="T_strided_slice", tag="injective")


def take(
    data: te.Tensor, indices: te.Tensor, axis: int | None = None, mode: str = "clip"
) -> te.Tensor:
    """Gather along `axis` (the flattened data when None); out-of-range indices are clipped
    ("clip"), wrapped ("wrap"), or ("fast") an error from the compiled code's index check: an
    index outside [0, dim) is sent outside the data, never to a neighbouring row."""
    if axis is None:
        data, axis = flatten(data), 0
    nd = len(data.shape)
    axis = normalize_axis(axis, nd, "topi.take")
    ni = len(indices.shape)
    out_shape = tuple(data.shape[:axis]) + tuple(indices.shape) + tuple(data.shape[axis + 1 :])
    dim = data.shape[axis]

    def body(*idx: Any) -> PrimExpr:
        raw = tir_cast(dim.dtype, indices[tuple(idx[axis : axis + ni])])
        if mode == "wrap":
            pos = raw % dim
        elif mode == "fast":
            outside = -dims_prod(data.shape)  # (o * dim + outside) * inner + j < 0 for all o, j
            pos = tir_op.if_then_else(tir_op.all(raw >= 0, raw < dim), raw, outside)
        else:
            pos = tir_op.min(tir_op.max(raw, 0), dim - 1)
        return data[tuple(idx[:axis]) + (pos,) + tuple(idx[axis + ni :])]

    if mode not in ("clip", "wrap", "fast"):
        raise TEError(f"topi.take: mode {mode!r} is not one of 'clip', 'wrap', 'fast'")
    return te.compute(out_shape, body, name="T_take", tag="injective")


def expand_dims(data: te.Tensor, axis: int, num_newaxis: int = 1) -> te.Tensor:
    """Insert `num_newaxis` size-1 dims at `axis`."""
    nd = len(data.shape)
    axis = normalize_axis(axis, nd + 1, "topi.expand_dims")
    out_shape = tuple(data.shape[:axis]) + (1,) * num_newaxis + tuple(data.shape[axis:])
    return te.compute(
        out_shape,
        lambda *idx: data[tuple(idx[:axis]) + tuple(idx[axis + num_newaxis :])],
        name="T_expand_dims",
        tag="injective",
    )


def squeeze(data: te.Tensor, axis: Sequence[int] | int | None = None) -> te.Tensor:
    """Drop size-1 dims: those in `axis` (each must be 1), or every constant 1 when None."""
    nd = len(data.shape)
    if axis is None:
        axes = [n for n, d in enumerate(data.shape) if const_int(d) == 1]
    else:
        axes = [
            normalize_axis(a, nd, "topi.squeeze")
            for a in ([axis] if isinstance(axis, int) else axis)
        ]
    for a in axes:
        if const_int(data.shape[a]) != 1:
            raise TEError(
                f"topi.squeeze: dim {a} of {data.name} {fmt_shape(data.shape)} is "
                f"{data.shape[a]}, not 1; only size-1 dims can be squeezed"
            )
    kept = [n for n in range(nd) if n not in axes]

    def body(*idx: Any) -> PrimExpr:
        it = iter(idx)
        return data[tuple(0 if n in axes else next(it) for n in range(nd))]

    return te.compute(tuple(data.shape[n] for n in kept), body, name="T_squeeze", tag="injective")


def tile(data: te.Tensor, reps: Sequence[int]) -> te.Tensor:
    """`numpy.tile(data, reps)`: the tensor repeated reps[n] times along dim n."""
    reps = list(reps)
    nd = max(len(data.shape), len(reps))
    reps = [1] * (nd - len(reps)) + reps
    shape = [1] * (nd - len(data.shape)) + list(data.shape)
    offset = nd - len(data.shape)
    out_shape = tuple(d if r == 1 else simplify(d * r) for d, r in zip(shape, reps))

    def body(*idx: Any) -> PrimExpr:
        src = [i if r == 1 else tir_op.floormod(i, d) for i, d, r in zip(idx, shape, reps)]
        return data[tuple(src[offset:])]

    return te.compute(out_shape, body, name="T_tile", tag="injective")


def repeat(data: te.Tensor, repeats: int, axis: int) -> te.Tensor:
    """`numpy.repeat(data, repeats, axis)`: each element repeated `repeats` times along axis."""
    axis = normalize_axis(axis, len(data.shape), "topi.repeat")
    out_shape = tuple(simplify(d * repeats) if n == axis else d for n, d in enumerate(data.shape))

    def body(*idx: Any) -> PrimExpr:
        src = list(idx)
        src[axis] = tir_op.floordiv(idx[axis], repeats)
        return data[tuple(src)]

    return te.compute(out_shape, body, name="T_repeat", tag="injective")


def flip(data: te.Tensor, axis: int = 0) -> te.Tensor:
    """The elements in reverse order along `axis`."""
    axis = normalize_axis(axis, len(data.shape), "topi.flip")

    def body(*idx: Any) -> PrimExpr:
        src = list(idx)
        src[axis] = data.shape[axis] - 1 - idx[axis]
        return data[tuple(src)]

    return te.compute(data.shape, body, name="T_flip", tag="injective")


def trilu(data: te.Tensor, k: Any, upper: bool) -> te.Tensor:
    """The upper (`upper`) or lower triangle of the last two dims, from diagonal `k` on (k > 0:
    above the main diagonal); the other elements are zero. numpy's triu / tril."""
    if len(data.shape) < 2:
        raise TEError(
            f"topi.trilu: data has shape {fmt_shape(data.shape)}; it needs at least two dims"
        )
    zero = tir_op.const(0, data.dtype)

    def body(*idx: Any) -> PrimExpr:
        row, col = idx[-2], idx[-1]
        offset = k
        if isinstance(k, PrimExpr) and k.dtype != row.dtype:
            offset = tir_cast(str(row.dtype), k)
        keep = col - row >= offset if upper else col - row <= offset
        return tir_op.if_then_else(keep, data[idx], zero)

    return te.compute(data.shape, body, name="T_trilu", tag="elemwise")


def running_reduce(
    data: te.Tensor,
    axis: int | None,
    dtype: str | None,
    exclusive: bool,
    reducer: Any,
    identity: int,
    name: str,
) -> te.Tensor:
    """Reduce each prefix along `axis` with `reducer`, whose identity is `identity` (flattened
    when axis is None); `exclusive` leaves out each element. topi.cumsum and topi.cumprod."""
    if axis is None:
        data, axis = flatten(data), 0
    axis = normalize_axis(axis, len(data.shape), f"topi.{name}")
    dtype = dtype or data.dtype
    k = te.reduce_axis((0, data.shape[axis]), "k")

    def body(*idx: Any) -> PrimExpr:
        src = list(idx)
        src[axis] = k
        taken = k < idx[axis] if exclusive else k <= idx[axis]
        value = tir_cast(dtype, data[tuple(src)])
        # a masked reduction over the whole axis: quadratic in its length, fine for the short
        # sequences importers meet (position ids, masks)
        return reducer(tir_op.if_then_else(taken, value, tir_op.const(identity, dtype)), axis=k)

    return te.compute(data.shape, body, name=f"T_{name}", tag="reduce")


def cumsum(
    data: te.Tensor, axis: int | None = None, dtype: str | None = None, exclusive: bool = False
) -> te.Tensor:
    """Running sum along `axis` (flattened when None); `exclusive` leaves out each element."""
    return running_reduce(data, axis, dtype, exclusive, te.sum, 0, "cumsum")
