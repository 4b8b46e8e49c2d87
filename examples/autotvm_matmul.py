"""Tutorial: tune a matrix multiply with AutoTVM's classic templates.

A template is a TE schedule whose choices are knobs (`cfg.define_split`, `cfg.define_knob`);
`autotvm.task.create` collects its space, a tuner measures points of it in worker processes
(each candidate's output is checked against the unscheduled computation), a log keeps every
measurement, and `autotvm.apply_history_best(log)` gives the template its fastest config.

    python examples/autotvm_matmul.py
"""

import os
import tempfile

import numpy as np

import minitvm as tvm
from minitvm import autotvm, te
from minitvm.env import example_small

n = 64 if example_small() else 512
trials = 8 if example_small() else 48


@autotvm.template("example/matmul")
def matmul(N, L, M, dtype):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    (k,) = s[C].op.reduce_axis

    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    cfg.define_knob("vectorize", [0, 1])
    cfg.define_knob("parallel", [0, 1])

    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    s[C].reorder(yo, xo, k, yi, xi)
    if cfg["vectorize"].val:
        s[C].vectorize(xi)
    if cfg["parallel"].val:
        s[C].parallel(yo)
    return s, [A, B, C]


task = autotvm.task.create("example/matmul", args=(n, n, n, "float32"), target="llvm")
print(task.config_space)
print(f"{task.flop / 1e6:.1f} MFLOP per call")

# Tune: the model-based tuner measures random configs first, then the ones its model
# (gradient-boosted trees on the knobs) rates best. Every measurement goes to the log.
log = os.path.join(tempfile.mkdtemp(), "matmul.log")
measure = autotvm.measure_option(
    builder=autotvm.LocalBuilder(), runner=autotvm.LocalRunner(number=3, repeat=2)
)
tuner = autotvm.tuner.XGBTuner(task, plan_size=max(4, trials // 4), seed=0)
tuner.tune(
    n_trial=trials,
    measure_option=measure,
    callbacks=[autotvm.callback.log_to_file(log), autotvm.callback.progress_bar(trials)],
)

# Apply the best config of the log, build, check against numpy, and compare with the
# fallback config (what the template gets with no log: each knob's first value).
a = np.random.rand(n, n).astype("float32")
b = np.random.rand(n, n).astype("float32")


def build_and_time(context):
    with context, tvm.target.Target("llvm"):
        s, args = matmul(n, n, n, "float32")
        func = tvm.build(s, args, target="llvm")
    c = tvm.nd.empty((n, n))
    func(tvm.nd.array(a), tvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4)
    timer = func.time_evaluator(func.entry_name, tvm.cpu(0), number=5)
    return timer(tvm.nd.array(a), tvm.nd.array(b), c).mean


best = autotvm.apply_history_best(log)
tuned = build_and_time(best)
fallback = build_and_time(autotvm.task.FallbackContext())
with tvm.target.Target("llvm"):
    config = best.query(tvm.target.Target.current(), task.workload)
print(f"best config: {config}")
print(f"tuned {tuned * 1e3:.3f} ms, fallback {fallback * 1e3:.3f} ms")
assert not config.is_fallback and len(list(autotvm.record.load_from_file(log))) == trials
