"""The Ray builder/runner on a local Ray cluster (skipped without the optional `ray`)."""

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="the Ray builder/runner need the optional package ray")

from _mscore_workloads import matmul_mod, space, tile_j
from test_runner import CRASH_SRC, HANG_SRC

import minitvm as tvm
from minitvm import meta_schedule as ms
from minitvm.meta_schedule.ray import RayBuilder, RayRunner


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_tune_on_a_local_ray_cluster(cluster, tmp_path):
    cfg = ms.EvaluatorConfig(number=1, repeat=2, min_repeat_ms=0)
    db = ms.tune_tir(
        matmul_mod(), "llvm", str(tmp_path), max_trials_global=8, num_trials_per_iter=8,
        space=space(tile_j), strategy="replay-trace", builder=RayBuilder(timeout_sec=60),
        runner=RayRunner(timeout_sec=60, evaluator_config=cfg), seed=0, verbose=False,
    )  # fmt: skip
    assert len(db) == 5 and all(r.run_secs for r in db.get_all_tuning_records())
    sch = ms.compile_tir(db, matmul_mod(), "llvm")
    a, b = (np.random.rand(32, 32).astype("float32") for _ in range(2))
    c = tvm.nd.empty((32, 32), "float32")
    tvm.build(sch.mod, target="llvm")["main"](tvm.nd.array(a), tvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-4)


def test_ray_runner_crash_and_hang_are_failed_results(cluster):
    mods = [matmul_mod()] + [
        tvm.IRModule({"main": tvm.script.from_source(s)}) for s in (CRASH_SRC, HANG_SRC)
    ]
    builder = RayBuilder(timeout_sec=60)  # artifacts live as long as their builder
    built = builder.build([ms.BuilderInput(m, "llvm") for m in mods])
    assert all(b.error_msg is None for b in built)
    args = ms.ArgInfo.from_entry_func(mods[0])
    runner = RayRunner(timeout_sec=8, evaluator_config=ms.EvaluatorConfig(1, 1, 0))
    ok, crash, hang = (
        f.result()
        for f in runner.run([ms.RunnerInput(b.artifact_path, "cpu", args) for b in built])
    )
    assert ok.run_secs and ok.error_msg is None
    assert crash.run_secs is None and crash.error_msg
    assert hang.run_secs is None and "timeout" in hang.error_msg
