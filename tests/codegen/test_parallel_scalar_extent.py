"""A parallel loop whose extent is a scalar argument: the outlined body gets the extents it
checks indices against (found by SCHED's tir_vars experiment: 'variable n is used but not
defined')."""

import numpy as np

import minitvm as tvm
from minitvm import te


def test_parallel_loop_over_a_scalar_param_extent():
    n = te.var("n", dtype="int64")
    a = te.placeholder((64, 16), name="A")
    b = te.compute((n, 16), lambda i, j: a[i % 64, j] * 2.0, name="B")
    s = te.create_schedule(b.op)
    s[b].parallel(b.op.axis[0])
    f = tvm.build(s, [a, b, n])
    a_np = np.random.rand(64, 16).astype("float32")
    for rows in (1, 5, 70):
        out = tvm.nd.array(np.zeros((rows, 16), "float32"))
        f(tvm.nd.array(a_np), out, rows)
        np.testing.assert_allclose(out.numpy(), a_np[np.arange(rows) % 64] * 2.0)
