"""Hand-built TensorIR functions (PrimFuncs of blocks) shared by the pass tests."""

from __future__ import annotations

from minitvm import tir
from minitvm.tir import (
    Block,
    BlockRealize,
    BufferRegion,
    For,
    ForKind,
    IterType,
    IterVar,
    PrimFunc,
    Range,
    Var,
    decl_buffer,
)

DP, RED = IterType.DataPar, IterType.CommReduce


def func_of(buffers, body, allocs=(), name="main") -> PrimFunc:
    """A PrimFunc over `buffers` whose root block (allocating `allocs`) runs `body`."""
    params = [Var(b.name + "_handle", "handle") for b in buffers]
    root = Block((), (), (), "root", body, alloc_buffers=tuple(allocs))
    return PrimFunc(
        params,
        BlockRealize((), True, root),
        buffer_map=dict(zip(params, buffers)),
        attrs={"global_symbol": name},
    )


def block(name, iters, body_fn, *, init_fn=None, predicate=True, allocs=(), reads=(), writes=()):
    """A BlockRealize. `iters` are (kind, extent, bound value); `body_fn(*vars)` builds the body."""
    ivs = [
        IterVar(Range.from_min_extent(0, ext), Var("v" + name + str(n)), kind)
        for n, (kind, ext, _) in enumerate(iters)
    ]
    vs = [iv.var for iv in ivs]
    blk = Block(
        tuple(ivs),
        tuple(reads),
        tuple(writes),
        name,
        body_fn(*vs),
        init=init_fn(*vs) if init_fn else None,
        alloc_buffers=tuple(allocs),
    )
    return BlockRealize(tuple(v for _, _, v in iters), predicate, blk)


def loops(names_extents, body_fn, kinds=None):
    """Nested For loops; `body_fn(*loop_vars)` builds the innermost body."""
    vs = [Var(n) for n, _ in names_extents]
    body = body_fn(*vs)
    kinds = kinds or [ForKind.SERIAL] * len(vs)
    for v, (_, ext), kind in reversed(list(zip(vs, names_extents, kinds))):
        body = For(v, 0, ext, kind, body)
    return body


def matmul(n=4, m=5, k=3, dtype="float32") -> PrimFunc:
    """C[i, j] = sum_k A[i, k] * B[k, j] with T.init."""
    A = decl_buffer((n, k), dtype, "A")
    B = decl_buffer((k, m), dtype, "B")
    C = decl_buffer((n, m), dtype, "C")

    def body(i, j, r):
        return block(
            "C",
            [(DP, n, i), (DP, m, j), (RED, k, r)],
            lambda vi, vj, vk: tir.BufferStore(C, C[vi, vj] + A[vi, vk] * B[vk, vj], (vi, vj)),
            init_fn=lambda vi, vj, vk: tir.BufferStore(C, 0.0, (vi, vj)),
            reads=[BufferRegion.full_region(A), BufferRegion.full_region(B)],
            writes=[BufferRegion.full_region(C)],
        )

    return func_of([A, B, C], loops([("i", n), ("j", m), ("k", k)], body))


def elementwise(shape=(4, 8), kinds=None, fn=lambda a: a * 2.0 + 1.0, dtype="float32") -> PrimFunc:
    """B[i, j] = fn(A[i, j]) with the given loop kinds."""
    A = decl_buffer(shape, dtype, "A")
    B = decl_buffer(shape, dtype, "B")

    def body(*lv):
        iters = [(DP, ext, v) for ext, v in zip(shape, lv)]
        return block("B", iters, lambda *vs: tir.BufferStore(B, fn(A[vs]), vs))

    return func_of([A, B], loops([(f"i{d}", e) for d, e in enumerate(shape)], body, kinds))


def split_sum(n=3, k=10, factor=4) -> PrimFunc:
    """S[i] = sum_k A[i, k] with k split by `factor` (non-divisible: a predicate guards the tail)."""
    A = decl_buffer((n, k), "float32", "A")
    S = decl_buffer((n,), "float32", "S")
    outer = (k + factor - 1) // factor

    def body(i, ko, ki):
        return block(
            "S",
            [(DP, n, i), (RED, k, ko * factor + ki)],
            lambda vi, vk: tir.BufferStore(S, S[vi] + A[vi, vk], (vi,)),
            init_fn=lambda vi, vk: tir.BufferStore(S, 0.0, (vi,)),
            predicate=ko * factor + ki < k,
        )

    return func_of([A, S], loops([("i", n), ("ko", outer), ("ki", factor)], body))


def softmax(n=3, m=6, fused=True) -> PrimFunc:
    """B = exp(A) / rowsum(exp(A)) through two root-allocated intermediates E and S.

    fused=True puts the three stages under one loop over rows (their LCA), else three nests.
    """
    A = decl_buffer((n, m), "float32", "A")
    B = decl_buffer((n, m), "float32", "B")
    E = decl_buffer((n, m), "float32", "E")
    S = decl_buffer((n,), "float32", "S")
    exp_b = lambda i, j: block(
        "E",
        [(DP, n, i), (DP, m, j)],
        lambda vi, vj: tir.BufferStore(E, tir.exp(A[vi, vj]), (vi, vj)),
    )
    sum_b = lambda i, j: block(
        "S",
        [(DP, n, i), (RED, m, j)],
        lambda vi, vj: tir.BufferStore(S, S[vi] + E[vi, vj], (vi,)),
        init_fn=lambda vi, vj: tir.BufferStore(S, 0.0, (vi,)),
    )
    div_b = lambda i, j: block(
        "B",
        [(DP, n, i), (DP, m, j)],
        lambda vi, vj: tir.BufferStore(B, E[vi, vj] / S[vi], (vi, vj)),
    )
    stages = (exp_b, sum_b, div_b)
    if fused:
        i = Var("i")
        inner = [loops([("j", m)], lambda j, st=st: st(i, j)) for st in stages]
        body = For(i, 0, n, ForKind.SERIAL, tir.SeqStmt(tuple(inner)))
    else:
        body = tir.SeqStmt(tuple(loops([("i", n), ("j", m)], st) for st in stages))
    return func_of([A, B], body, allocs=[E, S])
