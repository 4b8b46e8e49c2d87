"""Tutorial: schedule a matrix multiply with the classic TE API, step by step.

Each step changes only the loop structure; the result must stay equal to numpy's `a @ b`.

    python examples/te_matmul_schedule.py
"""

import time

import numpy as np

import minitvm as tvm
from minitvm import te
from minitvm.env import example_small

n = 64 if example_small() else 512
dev = tvm.cpu(0)

# 1. Describe *what* to compute: C[i, j] = sum_k A[i, k] * B[k, j].
A = te.placeholder((n, n), name="A")
B = te.placeholder((n, n), name="B")
k = te.reduce_axis((0, n), name="k")
C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")

rng = np.random.default_rng(0)
a = tvm.nd.array(rng.standard_normal((n, n), dtype=np.float32), dev)
b = tvm.nd.array(rng.standard_normal((n, n), dtype=np.float32), dev)
expected = a.numpy() @ b.numpy()


def build_and_check(s, label):
    """Compile the schedule, check it against numpy and report its time."""
    func = tvm.build(s, [A, B, C], "llvm", name="matmul")
    c = tvm.nd.empty((n, n), "float32", dev)
    func(a, b, c)
    np.testing.assert_allclose(c.numpy(), expected, rtol=1e-4, atol=1e-3)
    start = time.perf_counter()
    func(a, b, c)
    print(f"{label:<40} {1e3 * (time.perf_counter() - start):8.2f} ms")
    return c


# 2. The default schedule: three nested loops i, j, k.
s = te.create_schedule(C.op)
build_and_check(s, "naive i, j, k")

# 3. Tile i and j into 32x32 blocks so a block of B stays in cache.
s = te.create_schedule(C.op)
io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 32, 32)
build_and_check(s, "tiled 32x32")

# 4. Split k, put the reduction outside the inner block, vectorize j and run blocks in parallel.
ko, ki = s[C].split(C.op.reduce_axis[0], factor=4)
s[C].reorder(io, jo, ko, ii, ki, ji)
s[C].vectorize(ji)
s[C].parallel(io)
c = build_and_check(s, "tiled, reordered, vectorized, parallel")

print(tvm.lower(s, [A, B, C], name="matmul"))
assert np.allclose(c.numpy(), expected, rtol=1e-4, atol=1e-3)
