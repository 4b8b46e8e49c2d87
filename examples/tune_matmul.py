"""Tutorial: tune a matrix multiply with meta_schedule, then use the best schedule found.

First with a design space we write ourselves (a function that samples tile sizes), then with
the default space the schedule rules generate. Tuning measures every candidate in worker
processes; the records land in a JSON database in the work dir, beside the tuning curve.

    python examples/tune_matmul.py
"""

import os
import tempfile
import time

import numpy as np

import minitvm as tvm
from minitvm import meta_schedule as ms
from minitvm import te
from minitvm.env import example_small

n = 64 if example_small() else 256
trials = 8 if example_small() else 64
work_dir = os.path.join(tempfile.mkdtemp(), "tune_matmul")

# The computation: C = A @ B as a TensorIR function ("main").
A = te.placeholder((n, n), name="A")
B = te.placeholder((n, n), name="B")
k = te.reduce_axis((0, n), name="k")
C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
mod = tvm.IRModule({"main": te.create_prim_func([A, B, C])})


# 1. A stochastic schedule: tile sizes are *sampled*; each sample is one point of the space.
def tiled(sch: tvm.tir.Schedule) -> None:
    block = sch.get_block("C")
    i, j, kk = sch.get_loops(block)
    i0, i1 = sch.split(i, factors=sch.sample_perfect_tile(i, n=2))
    j0, j1 = sch.split(j, factors=sch.sample_perfect_tile(j, n=2, max_innermost_factor=16))
    sch.reorder(i0, j0, i1, kk, j1)
    sch.parallel(i0)
    sch.vectorize(j1)


rng = np.random.default_rng(0)
a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
dev = tvm.cpu(0)


def check_and_time(sch: tvm.tir.Schedule, label: str) -> float:
    lib = tvm.build(sch.mod, target="llvm")
    c = tvm.nd.empty((n, n), "float32")
    lib["main"](tvm.nd.array(a), tvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-3, atol=1e-3)
    secs = min(
        lib.time_evaluator("main", dev, number=10, repeat=3)(
            tvm.nd.array(a), tvm.nd.array(b), c
        ).results
    )
    print(f"{label:<28} {secs * 1e3:8.3f} ms  {2 * n**3 / secs / 1e9:7.1f} GFLOPS")
    return secs


start = time.time()
database = ms.tune_tir(
    mod,
    target="llvm",
    work_dir=work_dir,
    max_trials_global=trials,
    num_trials_per_iter=trials // 2,
    space=ms.space_generator.ScheduleFn(tiled),
    seed=0,
)
print(f"tuned {len(database)} candidates in {time.time() - start:.1f} s")
sch = ms.tir_integration.compile_tir(database, mod, "llvm")
sch.trace.show()  # the best schedule, as Python that replays it
naive = check_and_time(tvm.tir.Schedule(mod), "untuned (naive loops)")
tuned = check_and_time(sch, "tuned, our space")

# 2. The default space: multi-level tiling, parallel/vectorize/unroll, ... from the rules.
if not example_small():
    database = ms.tune_tir(
        mod, "llvm", os.path.join(work_dir, "auto"), max_trials_global=trials, seed=0
    )
    check_and_time(ms.tir_integration.compile_tir(database, mod, "llvm"), "tuned, default space")

# The work dir keeps the records (run this again with the same work_dir to continue) and the
# tuning curve: best GFLOPS against trials and seconds.
print("files:", sorted(os.listdir(work_dir)))
assert os.path.exists(os.path.join(work_dir, "tuning_curve.csv"))
assert tuned < naive
