"""Flat offsets switch to int64 when a buffer may span 2**31 elements or more (issue 10, item 4)."""

import subprocess
import sys
import textwrap

import numpy as np

import minitvm as tvm
from minitvm import te, tir
from minitvm.ir.dtype import DataType
from minitvm.tir import BufferStore
from minitvm.tir.transform.pipeline import lower_primfunc


def _store_index_dtypes(func):
    found = []
    tir.post_order_visit(
        lower_primfunc(func).body,
        lambda n: found.append(str(n.indices[0].dtype)) if isinstance(n, BufferStore) else None,
    )
    return found


def _add_one(n, m, dtype="int8"):
    A = te.placeholder((n, m), dtype=dtype, name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] + tir.const(1, dtype), name="B")
    return te.create_prim_func([A, B])


def test_small_static_buffer_keeps_int32_offsets():
    assert set(_store_index_dtypes(_add_one(64, 128))) == {"int32"}


def test_static_buffer_of_2_pow_31_elements_uses_int64_offsets():
    assert set(_store_index_dtypes(_add_one(32768, 65536))) == {"int64"}
    assert set(_store_index_dtypes(_add_one(32767, 65536))) == {"int32"}


def test_symbolic_buffer_uses_int64_offsets_and_keeps_int32_loops():
    func = _add_one(te.var("n"), te.var("m"))
    assert set(_store_index_dtypes(func)) == {"int64"}
    loops = []
    tir.post_order_visit(
        lower_primfunc(func).body, lambda n: loops.append(n) if isinstance(n, tir.For) else None
    )
    assert loops and all(lp.loop_var.dtype == DataType("int32") for lp in loops)


def test_symbolic_vectorized_loop_stays_a_contiguous_ramp():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2.0, name="B")
    s = te.create_schedule(B.op)
    _, ji = s[B].split(B.op.axis[1], factor=8)
    s[B].vectorize(ji)
    lowered = lower_primfunc(tvm.lower(s, [A, B])["main"])
    ramps = []
    tir.post_order_visit(
        lowered.body, lambda x: ramps.append(x) if isinstance(x, tir.Ramp) else None
    )
    assert ramps and all(str(r.dtype) == "int64x8" for r in ramps if r.dtype.is_integer)
    f = tvm.build(s, [A, B], "llvm")
    a = np.random.default_rng(0).standard_normal((5, 19)).astype("float32")
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_allclose(b, a * 2)


# Only the last row is touched: np.zeros maps the rest lazily, so this costs 64 KiB, not 2 GiB.
_LAST_ROW = """
import numpy as np
import minitvm as tvm
from minitvm.script import from_source

SRC = '''
@T.prim_func
def last_row(a: T.handle):
    n = T.int32()
    m = T.int32()
    A = T.match_buffer(a, (n, m), "int8")
    for j in range(m):
        with T.block("B"):
            vj = T.axis.spatial(m, j)
            A[n - 1, vj] = T.int8(7)
'''
f = tvm.build(from_source(SRC), target="llvm")
a = np.zeros((32769, 65536), "int8")
f(a)
assert (a[-1] == 7).all() and a[-2].max() == 0 and a[0].max() == 0
print("ok")
"""


def test_symbolic_kernel_over_2_pow_31_elements_writes_the_right_row():
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_LAST_ROW)], capture_output=True, text=True,
        timeout=300,
    )
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]


def test_static_kernel_over_2_pow_31_elements_writes_the_right_row():
    code = _LAST_ROW.replace("n = T.int32()\n    m = T.int32()\n    ", "").replace(
        "(n, m)", "(32769, 65536)"
    ).replace("n - 1", "32768").replace("range(m)", "range(65536)").replace(
        "spatial(m, j)", "spatial(65536, j)"
    )
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]
