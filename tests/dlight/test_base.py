"""dl.ScheduleRule and dl.ApplyDefaultSchedule: the first rule that applies schedules each
unscheduled PrimFunc, the result is marked `tir.is_scheduled`, marked functions are skipped."""

import numpy as np
import pytest

import minitvm as tvm
import minitvm.dlight as dl
from minitvm import te
from minitvm.target import Target
from minitvm.testing.tir_interp import run_prim_func


def _add():
    a = te.placeholder((64, 32), name="A")
    b = te.placeholder((64, 32), name="B")
    return te.create_prim_func([a, b, te.compute((64, 32), lambda i, j: a[i, j] + b[i, j], "C")])


def test_from_callable_makes_a_named_rule():
    @dl.ScheduleRule.from_callable("keep")
    def keep(func, target, tunable):
        return tvm.tir.Schedule(func)

    assert isinstance(keep, dl.ScheduleRule) and type(keep).__name__ == "keep"
    out = dl.ApplyDefaultSchedule(keep)(tvm.IRModule({"main": _add()}))
    assert out["main"].attrs.get(dl.IS_SCHEDULED)


def test_first_rule_that_applies_wins_and_none_declines():
    seen = []

    @dl.ScheduleRule.from_callable("decline")
    def decline(func, target, tunable):
        seen.append("decline")

    @dl.ScheduleRule.from_callable("accept")
    def accept(func, target, tunable):
        seen.append("accept")
        return func

    @dl.ScheduleRule.from_callable("never")
    def never(func, target, tunable):  # pragma: no cover - must not run
        seen.append("never")

    dl.ApplyDefaultSchedule(decline, accept, never)(tvm.IRModule({"main": _add()}))
    assert seen == ["decline", "accept"]


def test_no_rule_applies_leaves_the_function_unmarked():
    f = _add()
    out = dl.ApplyDefaultSchedule(dl.gpu.Matmul())(tvm.IRModule({"main": f}))  # llvm: skipped
    assert out["main"] is f


@pytest.mark.parametrize("key", ["tir.is_scheduled", "tirx.is_scheduled"])  # 0.24's spelling
def test_marked_functions_are_skipped(key):
    f = _add().with_attr(key, True)
    out = dl.ApplyDefaultSchedule(*dl.cpu.DEFAULT_RULES)(tvm.IRModule({"main": f}))
    assert out["main"] is f
    assert dl.is_scheduled(f)
    assert tvm.relax.transform.DefaultSchedule()(tvm.IRModule({"main": f}))["main"].same_as(f)


def test_rules_for_other_targets_are_not_tried():
    assert dl.gpu.Fallback().is_target_available(Target("opencl"))
    assert not dl.gpu.Fallback().is_target_available(Target("llvm"))
    assert dl.cpu.Matmul().is_target_available(Target("llvm"))
    assert not dl.cpu.Matmul().is_target_available(Target("opencl"))


def test_target_comes_from_the_current_target():
    mod = tvm.IRModule({"main": _add()})
    with Target("opencl"):
        out = dl.ApplyDefaultSchedule(dl.gpu.Fallback())(mod)
    assert "T.thread_binding" in out["main"].script()
    a, b = np.ones((64, 32), "float32"), np.full((64, 32), 2, "float32")
    c = run_prim_func(out["main"], a, b, np.zeros((64, 32), "float32"))[2]
    np.testing.assert_allclose(c, a + b)


def test_a_rule_class_instead_of_an_object_is_refused():
    with pytest.raises(TypeError, match=r"note the call"):
        dl.ApplyDefaultSchedule(dl.gpu.Fallback)(tvm.IRModule({"main": _add()}))


def test_base_rule_says_what_to_implement():
    with pytest.raises(NotImplementedError, match=r"apply\(func, target, tunable\)"):
        dl.ScheduleRule().apply(_add(), None, False)
