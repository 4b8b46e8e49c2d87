"""GPU-scheduled programs of the course material: the MLC GPU chapter's window sum and
shared-memory matmul (TensorIR schedules), at sizes the tests can run on PoCL."""

from __future__ import annotations

import minitvm as tvm
from minitvm.script import tir as T


def window_sum_module(n: int = 1024):
    @T.prim_func
    def main(A: T.Buffer((n + 3,), "float32"), B: T.Buffer((n,), "float32")):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i in T.grid(n):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi] + A[vi + 1] + A[vi + 2]

    return tvm.IRModule({"main": main})


def window_sum(n: int = 1024, nthread: int = 128) -> tvm.tir.Schedule:
    """The chapter's schedule: bind, cache A in shared at the thread loop, cooperative fetch."""
    sch = tvm.tir.Schedule(window_sum_module(n))
    block_c = sch.get_block("C")
    (i,) = sch.get_loops(block=block_c)
    i0, i1 = sch.split(i, [None, nthread])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    a_shared = sch.cache_read(block_c, read_buffer_index=0, storage_scope="shared")
    sch.compute_at(a_shared, i1)
    ax = sch.get_loops(a_shared)[-1]
    _, ax1 = sch.split(ax, [None, nthread])
    sch.bind(ax1, "threadIdx.x")
    return sch


def matmul_module(n: int = 1024):
    @T.prim_func
    def main(A: T.Buffer((n, n), "float32"), B: T.Buffer((n, n), "float32"),
             C: T.Buffer((n, n), "float32")):  # fmt: skip
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i, j, k in T.grid(n, n, n):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = 0.0
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    return tvm.IRModule({"main": main})


def _cache_read_and_coop_fetch(sch, block, nthread, read_idx, read_loc):
    read_cache = sch.cache_read(block=block, read_buffer_index=read_idx, storage_scope="shared")
    sch.compute_at(block=read_cache, loop=read_loc)
    inner0, inner1 = sch.get_loops(block=read_cache)[-2:]
    inner = sch.fuse(inner0, inner1)
    _, tx, vec = sch.split(loop=inner, factors=[None, nthread, 4])
    sch.vectorize(vec)
    sch.bind(tx, "threadIdx.x")


def shared_matmul(n: int = 1024, local: int = 8, block: int = 8, tile_k: int = 8):
    """The chapter's `blocking_with_shared`: local tiles, shared A/B tiles, cooperative fetch."""
    sch = tvm.tir.Schedule(matmul_module(n))
    block_c = sch.get_block("C")
    c_local = sch.cache_write(block_c, 0, "local")
    i, j, k = sch.get_loops(block=block_c)
    i0, i1, i2 = sch.split(loop=i, factors=[None, block, local])
    j0, j1, j2 = sch.split(loop=j, factors=[None, block, local])
    k0, k1 = sch.split(loop=k, factors=[None, tile_k])
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    sch.reverse_compute_at(c_local, j1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    tx = sch.fuse(i1, j1)
    sch.bind(tx, "threadIdx.x")
    _cache_read_and_coop_fetch(sch, block_c, block * block, 0, k0)
    _cache_read_and_coop_fetch(sch, block_c, block * block, 1, k0)
    sch.decompose_reduction(block_c, k0)
    return sch
