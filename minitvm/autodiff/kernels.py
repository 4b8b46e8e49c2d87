"""The kernel builders of the dlsys autodiff assignment, each compiled with a fast CPU schedule.

Every `make_*` builds one TE computation, schedules it and returns the compiled function `f`,
called destination-passing style with NDArrays, outputs last: `f(in..., out)`. The signatures
are the assignment's (`tgt`, `tgt_host`, `func_name`, `dtype="float32"`), so code written for
`tvm_op.py` runs unchanged:

>>> f = make_elemwise_add((500, 200), "llvm", "llvm", "elem_add"); f(a, b, c)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from .. import te
from ..driver import build
from ..error import ShapeError
from ..ir.dtype import DataType
from ..te.tensor import Tensor
from ..tir.expr import Call, cast
from ..tir.names import REINTERPRET
from ..tir.op import Op

__all__ = [
    "make_broadcast_to",
    "make_conv2d",
    "make_elemwise_add",
    "make_elemwise_add_by_const",
    "make_elemwise_mul",
    "make_elemwise_mul_by_const",
    "make_matrix_mul",
    "make_matrix_softmax",
    "make_matrix_softmax_cross_entropy",
    "make_reduce_sum_axis_zero",
    "make_relu",
    "make_relu_gradient",
    "make_sgd_update",
]

# float32 lanes of one AVX-512 register; vector loops run in multiples of this.
_LANES = 16
# Below this many elements of work, waking the thread pool costs more than it saves.
_PARALLEL_MIN = 1 << 18
# Output elements one task of reduce_sum_axis_zero accumulates (64 KiB of float32).
_REDUCE_BLOCK = 1 << 14


# ---------------------------------------------------------------------- schedule helpers
def _prod(shape: Sequence[int]) -> int:
    return math.prod(int(d) for d in shape)


def _vector_factor(extent: int, widest: int = 4 * _LANES) -> int:
    """An inner vector length dividing `extent` (so no tail guard sits in the vector loop).

    Prefers the widest multiple of _LANES up to `widest`, then the widest multiple of 8, then
    the widest divisor of at least 8; a small extent is vectorized whole. LLVM splits a
    non-power-of-two vector into register-sized pieces, so e.g. 40 lanes cost 2.5 registers.
    """
    if extent <= widest:
        return max(extent, 1)
    divisors = [d for d in range(widest, 7, -1) if extent % d == 0]
    for step in (_LANES, 8, 1):
        best = next((d for d in divisors if d % step == 0), None)
        if best is not None:
            return best
    return _LANES


def _schedule_flat(s: Any, out: Tensor) -> None:
    """Elementwise stage: fuse all axes, vectorize an inner 16k-lane loop, parallel outer chunks."""
    st = s[out]
    fused = st.fuse(*st.op.axis)
    n = _prod(out.shape)
    lanes = _vector_factor(n)
    outer, inner = st.split(fused, factor=lanes)
    st.vectorize(inner)
    _parallel_if_big(st, outer, n, n // lanes)


def _parallel_if_big(st: Any, axis: Any, work: int, extent: int = 2) -> None:
    """Parallelize `axis` (of `extent` iterations) when the stage does enough work to pay."""
    if work >= _PARALLEL_MIN and extent > 1:
        st.parallel(axis)


def _build(s: Any, args: list, tgt: Any, tgt_host: Any, func_name: str) -> Any:
    return build(s, args, tgt, target_host=tgt_host, name=func_name)


def _elemwise(
    shape: Sequence[int],
    n_inputs: int,
    fcompute: Callable[..., Any],
    tgt: Any,
    tgt_host: Any,
    func_name: str,
    dtype: str,
) -> Any:
    """Build `out[idx] = fcompute(in_0[idx], in_1[idx], ...)` over `shape`."""
    shape = tuple(int(d) for d in shape)
    names = "ABCDEFGH"[:n_inputs]
    ins = [te.placeholder(shape, dtype=dtype, name=nm) for nm in names]
    out = te.compute(shape, lambda *idx: fcompute(*(t(*idx) for t in ins)), name="out")
    s = te.create_schedule(out.op)
    _schedule_flat(s, out)
    return _build(s, [*ins, out], tgt, tgt_host, func_name)


def _const(value: Any, dtype: str) -> Any:
    return te.const(float(value), dtype)


# ---------------------------------------------------------------------- elementwise kernels
def make_elemwise_add(
    shape: Sequence[int], tgt: Any, tgt_host: Any, func_name: str, dtype: str = "float32"
) -> Any:
    """f(A, B, out): out = A + B."""
    return _elemwise(shape, 2, lambda a, b: a + b, tgt, tgt_host, func_name, dtype)


def make_elemwise_mul(
    shape: Sequence[int], tgt: Any, tgt_host: Any, func_name: str, dtype: str = "float32"
) -> Any:
    """f(A, B, out): out = A * B."""
    return _elemwise(shape, 2, lambda a, b: a * b, tgt, tgt_host, func_name, dtype)


def make_elemwise_add_by_const(
    shape: Sequence[int],
    const_k: float,
    tgt: Any,
    tgt_host: Any,
    func_name: str,
    dtype: str = "float32",
) -> Any:
    """f(A, out): out = A + const_k."""
    k = _const(const_k, dtype)
    return _elemwise(shape, 1, lambda a: a + k, tgt, tgt_host, func_name, dtype)


def make_elemwise_mul_by_const(
    shape: Sequence[int],
    const_k: float,
    tgt: Any,
    tgt_host: Any,
    func_name: str,
    dtype: str = "float32",
) -> Any:
    """f(A, out): out = A * const_k."""
    k = _const(const_k, dtype)
    return _elemwise(shape, 1, lambda a: a * k, tgt, tgt_host, func_name, dtype)


def make_relu(
    shape: Sequence[int], tgt: Any, tgt_host: Any, func_name: str, dtype: str = "float32"
) -> Any:
    """f(A, out): out = max(A, 0)."""
    zero = _const(0, dtype)
    return _elemwise(shape, 1, lambda a: te.max(a, zero), tgt, tgt_host, func_name, dtype)


def make_relu_gradient(
    shape: Sequence[int], tgt: Any, tgt_host: Any, func_name: str, dtype: str = "float32"
) -> Any:
    """f(X, grad, out): out = grad where X > 0, else 0."""
    zero = _const(0, dtype)
    return _elemwise(
        shape, 2, lambda x, g: te.select(x > zero, g, zero), tgt, tgt_host, func_name, dtype
    )


def make_sgd_update(
    shape: Sequence[int],
    learning_rate: float,
    tgt: Any,
    tgt_host: Any,
    func_name: str,
    dtype: str = "float32",
) -> Any:
    """f(param, grad, out): out = param - learning_rate * grad; `out` may be `param` itself."""
    lr = _const(learning_rate, dtype)
    return _elemwise(shape, 2, lambda p, g: p - lr * g, tgt, tgt_host, func_name, dtype)


# ---------------------------------------------------------------------- matrix multiply
def _matmul_dims(shapeA, transposeA, shapeB, transposeB) -> tuple[int, int, int]:
    if len(shapeA) != 2 or len(shapeB) != 2:
        raise ShapeError(
            f"make_matrix_mul: A and B must be 2-D, got shapes {tuple(shapeA)} and {tuple(shapeB)}"
        )
    n, ka = (shapeA[1], shapeA[0]) if transposeA else (shapeA[0], shapeA[1])
    kb, m = (shapeB[1], shapeB[0]) if transposeB else (shapeB[0], shapeB[1])
    if ka != kb:
        raise ShapeError(
            f"make_matrix_mul: A{' (transposed)' if transposeA else ''} has shape "
            f"{tuple(shapeA)} and B{' (transposed)' if transposeB else ''} has shape "
            f"{tuple(shapeB)}: the reduction lengths {ka} and {kb} differ; check the shapes "
            "and the transpose flags"
        )
    return int(n), int(ka), int(m)


# Register tile of the matmul micro-kernel: _MM_ROWS rows x _MM_COLS columns of C are
# accumulated in vector registers (4 x 4 zmm) over the whole reduction.
_MM_ROWS = 4
_MM_COLS = 4 * _LANES
# With at least this many column blocks, loop over them outermost (B panel stays in cache).
_MM_PANEL_BLOCKS = 4


def _round_up(x: int, multiple: int) -> int:
    return -(-x // multiple) * multiple


def make_matrix_mul(
    shapeA: Sequence[int],
    transposeA: bool,
    shapeB: Sequence[int],
    transposeB: bool,
    tgt: Any,
    tgt_host: Any,
    func_name: str,
    dtype: str = "float32",
) -> Any:
    """f(A, B, out): out = op(A) @ op(B), op transposing when the flag is set.

    One matmul compute; the flags only pick index tuples: A's in the matmul, B's in a layout
    stage that packs B into contiguous (k, 64)-column panels, zero-padded to whole register
    tiles, so the vector loop always reads contiguous, in-bounds memory. When n or m is not a
    multiple of the register tile, C is computed padded and copied out.
    """
    n, k, m = _matmul_dims(shapeA, transposeA, shapeB, transposeB)
    A = te.placeholder(tuple(shapeA), dtype=dtype, name="A")
    B = te.placeholder(tuple(shapeB), dtype=dtype, name="B")
    cols = min(_MM_COLS, _round_up(m, _LANES))
    n_pad, m_pad = _round_up(n, _MM_ROWS), _round_up(m, cols)

    b_index = (lambda kk, j: (j, kk)) if transposeB else (lambda kk, j: (kk, j))
    zero = _const(0, dtype)

    def packed(jb: Any, kk: Any, jj: Any) -> Any:
        j = jb * cols + jj
        if m_pad == m:
            return B[b_index(kk, j)]
        return te.select(j < m, B[b_index(kk, te.min(j, m - 1))], zero)

    # Layout stage: B as (column block, k, column in block), so the k x cols panel a tile
    # reads is one contiguous slab (no cache-set conflicts from a power-of-two row stride).
    B_packed = te.compute((m_pad // cols, k, cols), packed, name="B_packed")
    # Rows past n (padding) re-read row n-1: in bounds, and their results are dropped.
    a_row = (lambda i: te.min(i, n - 1)) if n_pad != n else (lambda i: i)
    a_index = (lambda i, kk: (kk, a_row(i))) if transposeA else (lambda i, kk: (a_row(i), kk))
    r = te.reduce_axis((0, k), name="k")
    C_pad = te.compute(
        (n_pad, m_pad),
        lambda i, j: te.sum(A[a_index(i, r)] * B_packed[j // cols, r, j % cols], axis=r),
        name="C",
    )
    padded = (n_pad, m_pad) != (n, m)
    C = te.compute((n, m), lambda i, j: C_pad[i, j], name="C_out") if padded else C_pad

    s = te.create_schedule(C.op)
    _schedule_packed(s, B_packed, transposeB)
    _schedule_matmul(s, C_pad, n_pad, k, m_pad, cols)
    if padded:
        _schedule_rows(s, C)
    return _build(s, [A, B, C], tgt, tgt_host, func_name)


def _schedule_packed(s: Any, packed: Tensor, transposed: bool) -> None:
    """Copy B into its panels. A transposed B is read along its rows (k innermost) with
    scalar code: a vector loop over jj there would be a 64-lane gather, slow to compile."""
    st = s[packed]
    jb, kk, jj = st.op.axis
    if transposed:
        st.reorder(jb, jj, kk)
        outer = jb
        extent = int(packed.shape[0])
    else:
        outer = st.fuse(jb, kk)
        st.vectorize(jj)
        extent = int(packed.shape[0]) * int(packed.shape[1])
    _parallel_if_big(st, outer, _prod(packed.shape), extent)


def _schedule_rows(s: Any, out: Tensor) -> None:
    """A 2-D copy-like stage: parallel rows, vectorized columns."""
    st = s[out]
    rows, cols = (int(d) for d in out.shape)
    i, j = st.op.axis
    _, ji = st.split(j, factor=_vector_factor(cols))
    st.vectorize(ji)
    _parallel_if_big(st, i, rows * cols, rows)


def _schedule_matmul(s: Any, C: Tensor, n: int, k: int, m: int, cols: int) -> None:
    """Register-tiled: each (row block, column block) tile accumulates in a local buffer that
    LLVM keeps in registers (rows and vector groups unrolled), over the whole k loop.

    The column block is the outer loop when there are several, so its k x cols panel of B
    stays in cache while every row block streams past it.
    """
    CC = s.cache_write(C, "local")
    st = s[C]
    i, j = st.op.axis
    io, ii = st.split(i, factor=_MM_ROWS)
    jo, ji = st.split(j, factor=cols)
    col_blocks, row_blocks = m // cols, n // _MM_ROWS
    panel_outer = col_blocks >= _MM_PANEL_BLOCKS
    outer, inner = (jo, io) if panel_outer else (io, jo)
    st.reorder(outer, inner, ii, ji)
    st.vectorize(ji)
    outer_extent = col_blocks if panel_outer else row_blocks
    _parallel_if_big(st, outer, n * m * k // 8, outer_extent)

    s[CC].compute_at(st, inner)
    ci, cj = s[CC].op.axis
    (ck,) = s[CC].op.reduce_axis
    cjo, cji = s[CC].split(cj, factor=min(_LANES, cols))
    s[CC].reorder(ck, ci, cjo, cji)
    s[CC].unroll(ci)
    s[CC].unroll(cjo)
    s[CC].vectorize(cji)


# ---------------------------------------------------------------------- conv2d
def make_conv2d(
    shapeX: Sequence[int],
    shapeF: Sequence[int],
    tgt: Any,
    tgt_host: Any,
    func_name: str,
    dtype: str = "float32",
) -> Any:
    """f(X, F, Y): Y = conv2d(X (N,C,H,W), F (M,C,R,S)), stride 1, no padding."""
    if len(shapeX) != 4 or len(shapeF) != 4 or shapeX[1] != shapeF[1]:
        raise ShapeError(
            f"make_conv2d: expected X (N, C, H, W) and F (M, C, R, S) with the same C, got "
            f"{tuple(shapeX)} and {tuple(shapeF)}"
        )
    N, C, H, W = (int(d) for d in shapeX)
    M, _, R, S = (int(d) for d in shapeF)
    if R > H or S > W:
        raise ShapeError(
            f"make_conv2d: filter {R}x{S} is larger than the {H}x{W} image; without padding "
            "the output would be empty"
        )
    X = te.placeholder((N, C, H, W), dtype=dtype, name="X")
    F = te.placeholder((M, C, R, S), dtype=dtype, name="F")
    rc = te.reduce_axis((0, C), name="rc")
    rr = te.reduce_axis((0, R), name="rr")
    rs = te.reduce_axis((0, S), name="rs")
    Y = te.compute(
        (N, M, H - R + 1, W - S + 1),
        lambda n, mm, h, w: te.sum(X[n, rc, h + rr, w + rs] * F[mm, rc, rr, rs], axis=[rc, rr, rs]),
        name="Y",
    )
    s = te.create_schedule(Y.op)
    st = s[Y]
    n, mm, h, w = st.op.axis
    st.reorder(n, mm, h, rc, rr, rs, w)
    st.vectorize(w)
    _parallel_if_big(st, n, _prod(Y.shape) * C * R * S // 8, N)
    return _build(s, [X, F, Y], tgt, tgt_host, func_name)


# ---------------------------------------------------------------------- softmax family
_LOG2E = 1.4426950408889634
_LN2_HI = 0.693145751953125  # ln 2 split so n * _LN2_HI is exact in float32
_LN2_LO = 1.428606765330187e-06


def _fast_exp(x: Any) -> Any:
    """exp for float32 in plain arithmetic, so it vectorizes (llvm.exp becomes a libm call
    per lane): exp(x) = 2^n * exp(r), r = x - n ln2 in [-ln2/2, ln2/2], exp(r) by its
    degree-7 Taylor polynomial (truncation error < 1e-8), 2^n built in the exponent bits.
    Inputs are clamped to [-87, 88] (results below 2^-126 flush to the smallest normal).
    """
    x = te.max(te.min(x, _const(88.0, "float32")), _const(-87.0, "float32"))
    n = te.floor(x * _const(_LOG2E, "float32") + _const(0.5, "float32"))
    r = x - n * _const(_LN2_HI, "float32") - n * _const(_LN2_LO, "float32")
    poly = _const(1.0 / 5040.0, "float32")
    for k in range(6, -1, -1):
        poly = poly * r + _const(1.0 / math.factorial(k), "float32")
    bits = (cast("int32", n) + 127) * (1 << 23)
    return poly * Call(DataType("float32"), Op.get(REINTERPRET), (bits,))


def _exp_for(dtype: str) -> Callable[[Any], Any]:
    return _fast_exp if DataType(dtype) == DataType("float32") else te.exp


def _check_matrix(shape: Sequence[int], what: str) -> tuple[int, int]:
    if len(shape) != 2:
        raise ShapeError(f"{what}: expected a 2-D (rows, classes) shape, got {tuple(shape)}")
    return int(shape[0]), int(shape[1])


def _row_lanes(cols: int) -> int:
    """Lanes of a row reduction: the widest divisor of `cols` in [8, 16], or 1 (scalar)."""
    if cols <= _LANES:
        return cols
    return next((d for d in range(_LANES, 7, -1) if cols % d == 0), 1)


class _RowReducer:
    """Row reductions as two stages: `lanes` strided partial results (a spatial, vectorized
    axis) then a short scalar pass; a hand-written rfactor, since a reduce axis cannot be
    vectorized. Records every stage so the schedule can place them in the row loop."""

    def __init__(self, rows: int, cols: int) -> None:
        self.rows, self.cols, self.lanes = rows, cols, _row_lanes(cols)
        self.partials: list[Tensor] = []
        self.finals: list[Tensor] = []

    def __call__(self, reducer: Any, value: Callable[[Any, Any], Any], name: str) -> Tensor:
        lanes = self.lanes
        g = te.reduce_axis((0, self.cols // lanes), name="g")
        part = te.compute(
            (self.rows, lanes),
            lambda i, lane: reducer(value(i, g * lanes + lane), axis=g),
            name=name + "_part",
        )
        lane = te.reduce_axis((0, lanes), name="lane")
        final = te.compute((self.rows,), lambda i: reducer(part[i, lane], axis=lane), name=name)
        self.partials.append(part)
        self.finals.append(final)
        return final

    def schedule(self, s: Any, consumer: Tensor, row_axis: Any) -> None:
        for part, final in zip(self.partials, self.finals):
            s[part].compute_at(s[consumer], row_axis)
            if final.op is not consumer.op:
                s[final].compute_at(s[consumer], row_axis)
            lane = s[part].op.axis[1]
            (g,) = s[part].op.reduce_axis
            s[part].reorder(g, lane)
            s[part].vectorize(lane)


def make_matrix_softmax(
    shape: Sequence[int], tgt: Any, tgt_host: Any, func_name: str, dtype: str = "float32"
) -> Any:
    """f(X, out): out = softmax(X) along axis 1 (max subtracted first, so exp never overflows)."""
    rows, cols = _check_matrix(shape, "make_matrix_softmax")
    exp = _exp_for(dtype)
    X = te.placeholder((rows, cols), dtype=dtype, name="X")
    reduce_row = _RowReducer(rows, cols)
    row_max = reduce_row(te.max, lambda i, j: X[i, j], "row_max")
    e = te.compute((rows, cols), lambda i, j: exp(X[i, j] - row_max[i]), name="exp")
    exp_sum = reduce_row(te.sum, lambda i, j: e[i, j], "exp_sum")
    out = te.compute((rows, cols), lambda i, j: e[i, j] / exp_sum[i], name="softmax")

    s = te.create_schedule(out.op)
    i = s[out].op.axis[0]
    reduce_row.schedule(s, out, i)
    s[e].compute_at(s[out], i)
    for t in (e, out):
        _, jo_ji = s[t].split(s[t].op.axis[1], factor=_vector_factor(cols))
        s[t].vectorize(jo_ji)
    _parallel_if_big(s[out], i, rows * cols, rows)
    return _build(s, [X, out], tgt, tgt_host, func_name)


def make_matrix_softmax_cross_entropy(
    shape: Sequence[int], tgt: Any, tgt_host: Any, func_name: str, dtype: str = "float32"
) -> Any:
    """f(logits, labels, out): out (1,) = mean over rows of -sum(labels * log_softmax(logits)).

    Computed as sum_j y * (max + log(sum exp(x - max)) - x), so no softmax value is ever
    rounded to 0 and then logged.
    """
    rows, cols = _check_matrix(shape, "make_matrix_softmax_cross_entropy")
    exp = _exp_for(dtype)
    X = te.placeholder((rows, cols), dtype=dtype, name="logits")
    Y = te.placeholder((rows, cols), dtype=dtype, name="labels")
    reduce_row = _RowReducer(rows, cols)
    row_max = reduce_row(te.max, lambda i, j: X[i, j], "row_max")
    exp_sum = reduce_row(te.sum, lambda i, j: exp(X[i, j] - row_max[i]), "exp_sum")
    log_norm = te.compute((rows,), lambda i: row_max[i] + te.log(exp_sum[i]), name="log_norm")
    row_loss = reduce_row(te.sum, lambda i, j: Y[i, j] * (log_norm[i] - X[i, j]), "row_loss")
    r = te.reduce_axis((0, rows), name="r")
    inv_rows = _const(1.0 / rows, dtype)
    out = te.compute((1,), lambda _: te.sum(row_loss[r] * inv_rows, axis=r), name="loss")

    # Every per-row stage runs inside row_loss's (parallel) row loop.
    s = te.create_schedule(out.op)
    (i,) = s[row_loss].op.axis
    reduce_row.schedule(s, row_loss, i)
    s[log_norm].compute_at(s[row_loss], i)
    _parallel_if_big(s[row_loss], i, rows * cols, rows)
    return _build(s, [X, Y, out], tgt, tgt_host, func_name)


# ---------------------------------------------------------------------- reductions, broadcast
def make_reduce_sum_axis_zero(
    shape: Sequence[int], tgt: Any, tgt_host: Any, func_name: str, dtype: str = "float32"
) -> Any:
    """f(X, out): out = X.sum(axis=0), out.shape == shape[1:]."""
    shape = tuple(int(d) for d in shape)
    if len(shape) < 2:
        raise ShapeError(
            f"make_reduce_sum_axis_zero: need at least 2 dimensions, got {shape}; "
            "a 1-D sum has nothing left to keep"
        )
    X = te.placeholder(shape, dtype=dtype, name="X")
    r = te.reduce_axis((0, shape[0]), name="r")
    out = te.compute(shape[1:], lambda *idx: te.sum(X[(r, *idx)], axis=r), name="out")
    s = te.create_schedule(out.op)
    st = s[out]
    # Each task owns a block of output rows (at most _REDUCE_BLOCK elements, so it stays in
    # cache) and adds X's matching contiguous slab into it for every r, as numpy does.
    kept = list(st.op.axis)
    if len(kept) == 1:
        # (Two nested splits of one loop hide its injectivity from parallel(); split once.)
        chunk = _vector_factor(shape[1], widest=16 * _LANES)
        ko, ki = st.split(kept[0], factor=chunk)
        st.reorder(ko, r, ki)
        st.vectorize(ki)
        _parallel_if_big(st, ko, _prod(shape), shape[1] // chunk)
    else:
        row = _prod(shape[2:])
        fits = [d for d in range(1, shape[1] + 1) if shape[1] % d == 0 and d * row <= _REDUCE_BLOCK]
        ko, ki = st.split(kept[0], factor=max(fits))
        last_o, last_i = st.split(kept[-1], factor=_vector_factor(shape[-1]))
        st.reorder(ko, r, ki, *kept[1:-1], last_o, last_i)
        st.vectorize(last_i)
        _parallel_if_big(st, ko, _prod(shape), shape[1] // max(fits))
    return _build(s, [X, out], tgt, tgt_host, func_name)


def _broadcast_index(in_shape: tuple, out_shape: tuple) -> Callable[..., tuple]:
    """Numpy broadcasting: align trailing dims; a size-1 input dim reads index 0."""
    lead = len(out_shape) - len(in_shape)
    return lambda *idx: tuple(
        0 if d == 1 and out_shape[lead + a] != 1 else idx[lead + a] for a, d in enumerate(in_shape)
    )


def make_broadcast_to(
    shape: Sequence[int],
    to_shape: Sequence[int],
    tgt: Any,
    tgt_host: Any,
    func_name: str,
    dtype: str = "float32",
) -> Any:
    """f(X, out): out = numpy.broadcast_to(X, to_shape)."""
    shape = tuple(int(d) for d in shape)
    to_shape = tuple(int(d) for d in to_shape)
    lead = len(to_shape) - len(shape)
    if lead < 0 or any(d not in (1, to_shape[lead + a]) for a, d in enumerate(shape)):
        raise ShapeError(
            f"make_broadcast_to: cannot broadcast {shape} to {to_shape}; each trailing "
            "dimension must match or be 1"
        )
    X = te.placeholder(shape, dtype=dtype, name="X")
    index = _broadcast_index(shape, to_shape)
    out = te.compute(to_shape, lambda *idx: X[index(*idx)], name="out")
    s = te.create_schedule(out.op)
    # Only the trailing axes X shares with out are fused (X reads them contiguously); fusing
    # across a broadcast axis would need a div/mod per element to find X's element.
    st = s[out]
    axes = list(st.op.axis)
    shared = 0
    while (
        shared < min(len(shape), len(to_shape) - 1) and shape[-1 - shared] == to_shape[-1 - shared]
    ):
        shared += 1
    inner_axes = axes[len(axes) - max(shared, 1) :]
    inner = st.fuse(*inner_axes)
    _, li = st.split(inner, factor=_vector_factor(_prod(to_shape[len(axes) - len(inner_axes) :])))
    st.vectorize(li)
    if len(axes) > len(inner_axes):
        _parallel_if_big(st, axes[0], _prod(to_shape), to_shape[0])
    return _build(s, [X, out], tgt, tgt_host, func_name)
