"""PerStoreFeature: a fixed-length vector per buffer store of a candidate's loop-level TIR
(blocks lowered to loops), plus one whole-program row; the cost model learns from them.

A store row says how much work runs around it (iterations, float/int ops, loads), how it
runs (parallel extent, vector lanes, unrolled steps, the innermost loop's kind and extent),
how it walks memory (contiguous, broadcast or strided accesses along the innermost loop),
and how many bytes it moves into each cache level: the footprint of its accesses under the
deepest loop whose footprint fits the level, times the iterations outside that loop.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import tir
from ...tir.function import PrimFunc
from ...tir.functor import post_order_visit
from ...tir.schedule.common import const_int
from ...tir.transform.convert_blocks_to_loops import convert_blocks_to_loops
from ...tir.transform.lower_init_block import lower_init_block
from .feature_extractor import FeatureExtractor

CACHE_BYTES = (32 * 1024, 1024 * 1024, 32 * 1024 * 1024)  # L1, L2, L3 of a server core

STORE_FEATURES = (
    "log_iterations",
    "float_ops",
    "int_ops",
    "loads",
    "log_flops",
    "log_parallel",
    "log_vector_lanes",
    "log_unrolled",
    "depth",
    "is_reduction",
    "log_inner_extent",
    "inner_serial",
    "inner_parallel",
    "inner_vectorized",
    "inner_unrolled",
    "store_contiguous",
    "store_broadcast",
    "loads_contiguous",
    "loads_broadcast",
    "loads_strided",
    "log_bytes_l1",
    "log_bytes_l2",
    "log_bytes_l3",
    "log_bytes_dram",
    "intensity_l1",
    "intensity_l2",
    "log_store_bytes",
    "vector_aligned",
)
PROGRAM_FEATURES = (
    "log_total_flops",
    "stores",
    "parallel_loops",
    "vectorized_loops",
    "unrolled_loops",
    "log_alloc_bytes",
    "log_max_parallel",
    "log_total_bytes_l1",
)
N_FEATURES = len(STORE_FEATURES)

_FLOAT_OPS = (tir.Add, tir.Sub, tir.Mul, tir.Div, tir.Max, tir.Min)
_INT_OPS = (*_FLOAT_OPS, tir.FloorDiv, tir.FloorMod, tir.Mod)
_KINDS = (tir.ForKind.SERIAL, tir.ForKind.PARALLEL, tir.ForKind.VECTORIZED, tir.ForKind.UNROLLED)


def _log(x: float) -> float:
    return math.log2(1.0 + max(x, 0.0))


def _ext(loop: tir.For) -> int:
    e = const_int(loop.extent)
    return 1 if e is None else max(e, 1)  # a symbolic extent counts once


def _affine(e: Any) -> tuple[dict[int, int], set[int]]:
    """Every variable's constant coefficient in `e` (by id), and the variables `e` does
    not use affinely (their coefficient is None): one walk for all loop variables."""
    if isinstance(e, tir.Var):
        return {id(e): 1}, set()
    if isinstance(e, tir.IntImm):
        return {}, set()
    if isinstance(e, tir.Add | tir.Sub):
        (ca, ba), (cb, bb) = _affine(e.a), _affine(e.b)
        sign = 1 if isinstance(e, tir.Add) else -1
        out = dict(ca)
        for k, v in cb.items():
            out[k] = out.get(k, 0) + sign * v
        return out, ba | bb
    if isinstance(e, tir.Mul):
        for x, y in ((e.a, e.b), (e.b, e.a)):
            c = const_int(y)
            if c is not None:
                coeffs, bad = _affine(x)
                return {k: v * c for k, v in coeffs.items()}, bad
    return {}, _vars_in(e)


def _vars_in(e: Any) -> set[int]:
    found: set[int] = set()
    post_order_visit(e, lambda n: found.add(id(n)) if isinstance(n, tir.Var) else None)
    return found


def _coeff_rows(indices: Any, loops: list[tir.For]) -> list[list[int | None]]:
    """Per index, the coefficient of each loop's variable (None: not affine in it)."""
    rows = []
    for idx in indices:
        coeffs, bad = _affine(idx)
        rows.append(
            [None if id(lp.loop_var) in bad else coeffs.get(id(lp.loop_var), 0) for lp in loops]
        )
    return rows


def _strides(buffer: Any) -> list[int]:
    shape = [const_int(s) or 1 for s in buffer.shape]
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return list(reversed(out))


def _flat_coeff(rows: list[list[int | None]], buffer: Any) -> int | None:
    """The flat-index stride of an access along the innermost loop (rows: `_coeff_rows`)."""
    total = 0
    for row, stride in zip(rows, _strides(buffer)):
        c = row[-1]
        if c is None:
            return None
        total += c * stride
    return total


def _size(buffer: Any) -> float:
    size = 1.0
    for s in buffer.shape:
        size *= const_int(s) or 1
    return size


def _footprint(rows: list[list[int | None]], size: float, exts: list[int], start: int) -> float:
    """Elements an access touches while the loops from `start` in run (a box over its affine
    indices; rows: `_coeff_rows`, size: the buffer's elements)."""
    total = 1.0
    for row in rows:
        span = 1.0
        for c, ext in zip(row[start:], exts[start:]):
            span += (abs(c) if c is not None else 1) * (ext - 1)
        total *= span
    return min(total, size)


def _ops(value: Any) -> tuple[int, int, list]:
    floats = ints = 0
    loads: list = []

    def visit(n: Any) -> None:
        nonlocal floats, ints
        if isinstance(n, tir.BufferLoad):
            loads.append(n)
        elif isinstance(n, _FLOAT_OPS) and n.dtype.is_float:
            floats += 1
        elif isinstance(n, _INT_OPS):
            ints += 1
        elif isinstance(n, tir.Call) and n.dtype.is_float:
            floats += 1

    post_order_visit(value, visit)
    return floats, ints, loads


def _store_row(store: tir.BufferStore, loops: list[tir.For], lanes: int) -> np.ndarray:
    floats, ints, loads = _ops(store.value)
    iters = 1.0
    for lp in loops:
        iters *= _ext(lp)

    def product(kind: tir.ForKind) -> float:
        out = 1.0
        for lp in loops:
            out *= _ext(lp) if lp.kind is kind else 1
        return out

    inner = loops[-1] if loops else None
    kind_hot = [float(inner is not None and inner.kind is k) for k in _KINDS]
    # per access: its coefficient rows over the loops, and its buffer's size
    accesses = [
        (_coeff_rows(i, loops), _size(b))
        for i, b in [(store.indices, store.buffer)] + [(ld.indices, ld.buffer) for ld in loads]
    ]
    buffers = [store.buffer] + [ld.buffer for ld in loads]
    if inner is not None:
        strides = [_flat_coeff(rows, b) for (rows, _), b in zip(accesses, buffers)]
    else:
        strides = [0 for _ in accesses]
    exts = [_ext(lp) for lp in loops]
    load_strides = strides[1:]
    n_loads = max(len(load_strides), 1)
    reduction = any(ld.buffer is store.buffer for ld in loads)
    itemsize = store.buffer.dtype.bits // 8 or 1
    moved = []
    for cache in (*CACHE_BYTES, float("inf")):
        moved.append(_bytes_moved(accesses, exts, cache, itemsize))
    flops = floats * iters
    inner_ext = _ext(inner) if inner is not None else 1
    row = [
        _log(iters),
        floats,
        ints,
        len(loads),
        _log(flops),
        math.log2(product(tir.ForKind.PARALLEL)),
        math.log2(product(tir.ForKind.VECTORIZED)),
        math.log2(product(tir.ForKind.UNROLLED)),
        len(loops),
        float(reduction),
        _log(inner_ext),
        *kind_hot,
        float(strides[0] == 1),
        float(strides[0] == 0),
        sum(s == 1 for s in load_strides) / n_loads,
        sum(s == 0 for s in load_strides) / n_loads,
        sum(s not in (0, 1) for s in load_strides) / n_loads,
        *(_log(m) for m in moved),
        flops / max(moved[0], 1.0),
        flops / max(moved[1], 1.0),
        _log(_footprint(*accesses[0], exts, 0) * itemsize),
        float(inner is not None and inner_ext % lanes == 0),
    ]
    return np.asarray(row, dtype=np.float64)


def _bytes_moved(accesses: list, exts: list[int], cache: float, itemsize: int) -> float:
    """Bytes brought into a cache of `cache` bytes: the footprint under the outermost loop
    whose footprint fits, times the iterations of the loops outside it (accesses: coefficient
    rows and buffer size each; exts: the loops' extents, outermost first)."""
    for depth in range(len(exts) + 1):
        foot = sum(_footprint(rows, size, exts, depth) for rows, size in accesses) * itemsize
        if foot <= cache:
            return foot * math.prod(exts[:depth])
    return float(len(accesses) * itemsize) * math.prod(exts)


def _walk_stores(func: PrimFunc) -> list[tuple[tir.BufferStore, list[tir.For]]]:
    """Every BufferStore with the loops around it, outermost first (iterative walk)."""
    out = []
    stack: list[tuple[Any, tuple]] = [(func.body, ())]
    while stack:
        s, loops = stack.pop()
        if isinstance(s, tir.BufferStore):
            out.append((s, list(loops)))
            continue
        if isinstance(s, tir.For):
            stack.append((s.body, loops + (s,)))
            continue
        for name in ("seq",):
            items = getattr(s, name, None)
            if items is not None:
                stack.extend((c, loops) for c in reversed(items))
        for name in ("body", "then_case", "else_case"):
            child = getattr(s, name, None)
            if child is not None and not isinstance(child, list | tuple):
                stack.append((child, loops))
    return out


def _program_row(func: PrimFunc, rows: list[np.ndarray]) -> np.ndarray:
    loops: list[tir.For] = []
    allocs = [0.0]

    def visit(n: Any) -> None:
        if isinstance(n, tir.For):
            loops.append(n)
        buf = getattr(n, "buffer", None)
        if type(n).__name__ in ("Allocate", "DeclBuffer") and buf is not None:
            size = float(math.prod(const_int(s) or 1 for s in buf.shape))
            allocs[0] += size * (buf.dtype.bits // 8)

    post_order_visit(func.body, visit)
    flops = sum(2 ** r[4] - 1 for r in rows)
    par = [_ext(lp) for lp in loops if lp.kind is tir.ForKind.PARALLEL]
    prog = [
        _log(flops),
        len(rows),
        len(par),
        sum(lp.kind is tir.ForKind.VECTORIZED for lp in loops),
        sum(lp.kind is tir.ForKind.UNROLLED for lp in loops),
        _log(allocs[0]),
        _log(max(par, default=1)),
        _log(sum(2 ** r[20] - 1 for r in rows)),
    ]
    out = np.zeros(N_FEATURES)
    out[: len(prog)] = prog
    return out


def features_of_func(func: PrimFunc, lanes: int = 16) -> np.ndarray:
    """(stores + 1) x N_FEATURES: one row per store, the program row last."""
    loop_form = convert_blocks_to_loops(lower_init_block(func))
    rows = [_store_row(s, loops, lanes) for s, loops in _walk_stores(loop_form)]
    return np.vstack(rows + [_program_row(loop_form, rows)])


class PerStoreFeature(FeatureExtractor):
    """TVM's feature extractor name: `extract_from(context, candidates)` gives one
    (stores + 1, N_FEATURES) array per candidate."""

    feature_names = STORE_FEATURES
    program_feature_names = PROGRAM_FEATURES

    def __init__(self, buf_cache_size: int = 5, max_n_bufs: int = 5, **_: Any) -> None:
        self.buf_cache_size = buf_cache_size
        self.max_n_bufs = max_n_bufs

    def extract_from(self, context: Any, candidates: list) -> list[np.ndarray]:
        from ..schedule_rule._block import target_of, vector_lanes

        lanes = vector_lanes(target_of(context))
        out = []
        for cand in candidates:
            sch = getattr(cand, "sch", cand)
            mod = sch.mod if hasattr(sch, "mod") else sch
            funcs = [f for _, f in mod.functions_items() if isinstance(f, PrimFunc)]
            out.append(np.vstack([features_of_func(f, lanes) for f in funcs]))
        return out
