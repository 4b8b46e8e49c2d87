"""Runners and worker processes: a crashing or hanging candidate is a failed result and
tuning goes on; a wrong candidate is caught by the reference check."""

import sys

import pytest
from _mscore_workloads import matmul_mod, space, tile_j

import minitvm as tvm
from minitvm import meta_schedule as ms
from minitvm.meta_schedule._worker import WorkerPool

CRASH_SRC = """
@T.prim_func
def main(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"),
         C: T.Buffer((32, 32), "float32")):
    T.func_attr({"global_symbol": "main"})
    T.evaluate(T.call_extern("int32", "abort"))
"""

HANG_SRC = """
@T.prim_func
def main(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"),
         C: T.Buffer((32, 32), "float32")):
    T.func_attr({"global_symbol": "main"})
    while A[0, 0] == A[0, 0]:
        C[0, 0] = C[0, 0] + T.float32(1)
"""


def test_worker_pool_reports_crash_hang_and_error_and_goes_on():
    pool = WorkerPool(2)
    try:
        replies = pool.map(
            "test_crash",
            [
                {"value": 1},
                {"action": "crash"},
                {"action": "hang"},
                {"action": "raise"},
                {"value": 2},
            ],
            timeout=3,
        )
        assert replies[0] == (True, 1) and replies[4] == (True, 2)
        assert not replies[1][0] and "crashed" in replies[1][1]
        assert not replies[2][0] and "timeout" in replies[2][1]
        assert replies[3] == (False, "ValueError: asked to raise")
        assert pool.map("test_crash", [{"value": 3}], timeout=3) == [(True, 3)]
    finally:
        pool.close()


class _FaultyBuilder(ms.builder.Builder):
    """Builds the candidate whose inner j loop has 2 iterations as a crashing kernel, and
    the one with 4 as a hanging one."""

    def __init__(self):
        self.inner = ms.LocalBuilder(max_workers=1)

    def build(self, inputs):
        swapped = []
        for x in inputs:
            fault = _fault(x.mod)
            src = {1: CRASH_SRC, 2: HANG_SRC}.get(fault)
            mod = x.mod if src is None else tvm.IRModule({"main": tvm.script.from_source(src)})
            swapped.append(ms.BuilderInput(mod, x.target))
        return self.inner.build(swapped)


def _fault(mod):
    """1 (crash) or 2 (hang) by the innermost loop's extent, else 0."""
    extents = []
    tvm.tir.stmt_functor.post_order_visit(
        mod["main"].body,
        lambda n: extents.append(int(n.extent)) if isinstance(n, tvm.tir.For) else None,
    )
    return {2: 1, 4: 2}.get(extents[0], 0)


def test_crashing_and_hanging_candidates_do_not_stop_tuning(tmp_path):
    db = ms.tune_tir(
        matmul_mod(),
        "llvm",
        work_dir=str(tmp_path),
        max_trials_global=8,
        num_trials_per_iter=8,
        space=space(tile_j),
        strategy="replay-trace",
        builder=_FaultyBuilder(),
        runner=ms.LocalRunner(timeout_sec=2),
        cost_model=None,
        seed=0,
        verbose=False,
    )
    records = db.get_all_tuning_records()
    by_fault = {_fault(r.as_measure_candidate().sch.mod): r for r in records}
    assert len(records) == 5  # inner j in {1, 2, 4, 8, 16}: every one measured once
    assert sorted(by_fault) == [0, 1, 2]
    assert by_fault[0].run_secs and min(by_fault[0].run_secs) > 0
    assert by_fault[1].run_secs is None and by_fault[2].run_secs is None
    assert sum(r.run_secs is None for r in records) == 2
    sch = ms.compile_tir(db, matmul_mod(), "llvm")
    assert _fault(sch.mod) == 0


def test_runner_catches_a_wrong_candidate(tmp_path):
    """A candidate whose output differs from the unscheduled function's is a failure."""
    mod = matmul_mod()
    builder = ms.LocalBuilder(max_workers=1)
    runner = ms.LocalRunner(timeout_sec=10)
    wrong = tvm.IRModule(
        {
            "main": tvm.script.from_source(
                HANG_SRC.replace("while A[0, 0] == A[0, 0]:", "for i in range(1):")
            )
        }
    )
    ref, bad, good = builder.build([ms.BuilderInput(m, "llvm") for m in (mod, wrong, mod)])
    args = ms.ArgInfo.from_entry_func(mod)
    assert runner.set_reference(ref.artifact_path, args, str(tmp_path / "ref.npz")) is None
    res_bad, res_good = (
        f.result()
        for f in runner.run([ms.RunnerInput(b.artifact_path, "cpu", args) for b in (bad, good)])
    )
    assert res_bad.run_secs is None and "wrong result" in res_bad.error_msg
    assert res_good.error_msg is None and len(res_good.run_secs) == 3
    builder.close()
    runner.close()


def test_builder_reports_a_failing_build():
    builder = ms.LocalBuilder(max_workers=1)
    bad = tvm.IRModule(
        {"main": tvm.script.from_source(CRASH_SRC.replace("abort", "no_such_fn_xyz"))}
    )
    (res,) = builder.build([ms.BuilderInput(bad, "llvm")])
    builder.close()
    assert res.artifact_path is None and res.error_msg


def test_ray_parts_without_ray_say_what_to_install(monkeypatch):
    from minitvm.error import TuningError
    from minitvm.meta_schedule.ray import RayBuilder

    monkeypatch.setitem(sys.modules, "ray", None)  # as if ray were not installed
    with pytest.raises(TuningError, match="pip install ray"):
        RayBuilder().build([ms.BuilderInput(matmul_mod(), "llvm")])
