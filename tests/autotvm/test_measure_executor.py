"""autotvm.LocalRunner submits one job per candidate to its executor (TVM's
autotvm.measure.executor interface); build failures pass through, a job that raises is an
UNKNOWN_ERROR record; fixed inputs (ref_input) are refused with a reason."""

import os

import numpy as np
import pytest

from minitvm import autotvm, te
from minitvm.autotvm.measure import MeasureErrorNo, MeasureInput, executor
from minitvm.autotvm.measure.measure_methods import measure_candidate
from minitvm.error import TuningError


@autotvm.template("test/executor/scale")
def scale(n):
    A = te.placeholder((n,), name="A")
    cfg = autotvm.get_config()
    cfg.define_knob("mode", [0, 1])  # 1 binds a loop to a GPU thread: the CPU build fails
    C = te.compute((n,), lambda i: A[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    if cfg["mode"].val == 1:
        xo, _ = s[C].split(C.op.axis[0], 4)
        s[C].bind(xo, te.thread_axis("blockIdx.x"))
    return s, [A, C]


class _Recording(executor.LocalExecutor):
    def __init__(self, fail_on=None):
        self.jobs = []
        self.fail_on = fail_on

    def submit(self, func, *args, **kwargs):
        self.jobs.append((func, args, kwargs))
        if len(self.jobs) - 1 == self.fail_on:
            return super().submit(_boom)
        return super().submit(func, *args, **kwargs)


def _boom():
    raise OSError("the job could not start")


def _measure(runner):
    task = autotvm.task.create("test/executor/scale", (64,), "llvm")
    builder = autotvm.LocalBuilder(timeout=60)
    runner.set_task(task)
    builder.set_task(task)
    inputs = [MeasureInput(task.target, task, task.config_space.get(i)) for i in (0, 1, 0)]
    return runner.run(inputs, builder.build(inputs))


def test_one_job_per_candidate_through_the_executor():
    runner = autotvm.LocalRunner(number=1, repeat=2, timeout=60)
    runner.executor = _Recording()
    results = _measure(runner)
    assert [f for f, _, _ in runner.executor.jobs] == [measure_candidate] * 3
    assert all(kw == {"ref_input": None} for _, _, kw in runner.executor.jobs)
    assert results[0].error_no == 0 and len(results[0].costs) == 2
    assert results[1].error_no == MeasureErrorNo.COMPILE_HOST  # the build failure, passed on
    assert results[2].error_no == 0 and min(results[2].costs) > 0
    runner.close_task()


def test_a_job_that_raises_is_a_record_and_the_others_still_run():
    runner = autotvm.LocalRunner(number=1, repeat=1, timeout=60)
    runner.executor = _Recording(fail_on=0)
    results = _measure(runner)
    artifact = runner.executor.jobs[0][1][2].filename
    assert not os.path.exists(artifact)  # the failed job's build is cleaned up
    assert results[0].error_no == MeasureErrorNo.UNKNOWN_ERROR
    assert "could not start" in results[0].costs[0]
    assert results[2].error_no == 0
    runner.close_task()


def test_fixed_inputs_are_refused_with_a_reason():
    runner = autotvm.LocalRunner()
    runner.ref_input = None  # the default, accepted
    with pytest.raises(TuningError, match="ref_input is not supported: candidates run on"):
        runner.ref_input = [np.zeros(4)]
    with pytest.raises(TuningError, match="ref_input is not supported"):
        measure_candidate(runner, None, None, ref_input=[np.zeros(4)])
