"""tvm.tir.analysis.verify_gpu_code(func, constraints) on lowered TE schedules, with the limits
of TVM's test_tir_analysis_verify_gpu_code (which installs it as a lowering pass): each
constraint fails one below the measured use and holds at it. The build's own check
(VerifyGPUCode against the Target) is the same measurement (test_gpu_lowering.py)."""

import pytest

import minitvm as tvm
from minitvm import te
from minitvm.error import ArgumentError
from minitvm.script import tir as T

verify = tvm.tir.analysis.verify_gpu_code


def _lowered(s, args):
    return tvm.lower(s, args)["main"]


def _copy_cached(scope, n=1024, m=128, dtype="float32"):
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.compute((n,), lambda i: A[i], name="B")
    s = te.create_schedule([B.op])
    AA = s.cache_read(A, scope, [B])
    o, i = s[B].split(s[B].op.axis[0], m)
    s[AA].compute_at(s[B], o)
    s[B].bind(o, te.thread_axis("blockIdx.x"))
    if scope == "shared":
        s[B].bind(i, te.thread_axis("threadIdx.x"))
    return _lowered(s, [A, B])


@pytest.mark.parametrize("dtype", ["float32", "int8", "float64"])
def test_shared_memory_per_block(dtype):
    f = _copy_cached("shared", dtype=dtype)
    size = 128 * tvm.DataType(dtype).bits // 8
    assert not verify(f, {"max_shared_memory_per_block": size - 1, "max_threads_per_block": 128})
    assert verify(f, {"max_shared_memory_per_block": size, "max_threads_per_block": 128})
    assert not verify(f, {"max_threads_per_block": 127})


def test_local_memory_per_block():
    f = _copy_cached("local")
    assert not verify(f, {"max_local_memory_per_block": 4 * 128 - 1})
    assert verify(f, {"max_local_memory_per_block": 4 * 128, "max_threads_per_block": 1})


def test_threads_per_block_and_per_axis():
    A = te.placeholder((1024,), name="A")
    B = te.compute((1024,), lambda i: A[i], name="B")
    s = te.create_schedule([B.op])
    o, i = s[B].split(s[B].op.axis[0], 128)
    s[B].bind(o, te.thread_axis("threadIdx.x"))
    s[B].bind(i, te.thread_axis("threadIdx.y"))
    f = _lowered(s, [A, B])
    assert not verify(f, {"max_shared_memory_per_block": 0, "max_threads_per_block": 1023})
    assert verify(f, {"max_shared_memory_per_block": 0, "max_threads_per_block": 1024})
    assert not verify(f, {"max_threads_per_block": 1024, "max_thread_y": 127})
    assert verify(f, {"max_threads_per_block": 1024, "max_thread_y": 128, "max_thread_x": 8})
    assert not verify(f, {"max_thread_x": 7})


def test_every_kernel_is_checked_and_counted():
    n = 256
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j], name="B")
    C = te.compute((n, n), lambda i, j: B[i, j], name="C")
    s = te.create_schedule([C.op])
    for t in (B, C):
        s[t].bind(s[t].op.axis[0], te.thread_axis("blockIdx.x"))
        s[t].bind(s[t].op.axis[1], te.thread_axis("threadIdx.x"))
    f = _lowered(s, [A, C])
    assert not verify(f, {"max_threads_per_block": n - 1})
    assert verify(f, {"max_threads_per_block": n, "max_kernels": 2})
    assert not verify(f, {"max_kernels": 1})


@pytest.mark.parametrize("dtype, factor, ok", [("float32", 64, False), ("float16", 8, True)])
def test_vector_bytes(dtype, factor, ok):
    A = te.placeholder((64, 64), name="A", dtype=dtype)
    B = te.compute((64, 64), lambda i, j: A[i, j], name="B")
    s = te.create_schedule([B.op])
    i, j = s[B].op.axis
    s[B].bind(i, te.thread_axis("blockIdx.x"))
    jo, ji = s[B].split(j, factor=factor)
    s[B].bind(jo, te.thread_axis("threadIdx.x"))
    s[B].vectorize(ji)
    assert verify(_lowered(s, [A, B]), {"max_vector_bytes": 16}) is ok


def test_vthreads_and_unknown_constraints():
    @T.prim_func
    def main(A: T.Buffer((16, 64), "float32")):
        for v in T.thread_binding(16, thread="vthread"):
            for t in T.thread_binding(64, thread="threadIdx.x"):
                A[v, t] = T.float32(0)

    assert verify(main, {"max_vthread": 16})
    assert not verify(main, {"max_vthread": 15})
    with pytest.raises(ArgumentError, match="unknown constraint 'max_warps'"):
        verify(main, {"max_warps": 1})
