"""A vector if_then_else reads memory only in the lanes its guard gives: `x[i - 8]` where
`i >= 8` must not touch the bytes before x (it once loaded all 16 lanes and crashed when x
started right after an unmapped page). Run in a subprocess: the failure is a segfault."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import ctypes, mmap, sys
    import numpy as np
    import minitvm as tvm
    from minitvm import tir
    from minitvm.tir import Broadcast, BufferLoad, BufferStore, For, ForKind, Ramp

    n, contiguous = 64, sys.argv[1] == "ramp"
    A = tir.decl_buffer((n,), "float32", name="A")
    B = tir.decl_buffer((n,), "float32", name="B")
    i = tir.Var("i", "int32")
    lane = Ramp(i * 16, tir.IntImm("int32", 1), 16)
    if contiguous:
        index = Ramp(i * 16 - 8, tir.IntImm("int32", 1), 16)
    else:  # a strided read: one lane at a time (a gather)
        index = Ramp(i * 32 - 16, tir.IntImm("int32", 2), 16)
    cond = lane >= Broadcast(tir.IntImm("int32", 8), 16)
    zero = Broadcast(tir.const(0.0, "float32"), 16)
    body = For(i, 0, n // 16, ForKind.SERIAL,
               BufferStore(B, tir.if_then_else(cond, BufferLoad(A, [index]), zero), [lane]))
    ap, bp = tir.Var("a", "handle"), tir.Var("b", "handle")
    func = tir.PrimFunc([ap, bp], body, buffer_map={ap: A, bp: B})
    f = tvm.build(func.with_attr("global_symbol", "main"), target="llvm")
    page = mmap.PAGESIZE
    size = 2 * n * 4
    buf = mmap.mmap(-1, page + size)
    base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    a_full = np.frombuffer(buf, dtype="float32", count=2 * n, offset=page)
    a_full[:] = np.arange(2 * n, dtype="float32")
    a = a_full[:n]
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.mprotect(ctypes.c_void_p(base), ctypes.c_size_t(page), 0) == 0  # no access
    b = np.zeros(n, "float32")
    f(a, b)
    src = np.arange(2 * n, dtype="float32")
    pos = np.arange(n)
    want = np.where(pos >= 8, src[np.clip(pos - 8 if contiguous else 2 * pos - 16, 0, None)], 0)
    np.testing.assert_array_equal(b, want.astype("float32"))
    print("ok")
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses mmap/mprotect via libc")
@pytest.mark.parametrize("form", ["ramp", "strided"])
def test_a_guarded_vector_load_reads_no_lane_the_guard_excludes(form):
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, form],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0 and run.stdout.strip().endswith("ok"), run.stderr[-2000:]
