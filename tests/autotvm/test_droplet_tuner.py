"""autotvm.tuner.DropletTuner: droplet search reaches the optimum of a convex synthetic cost
without measuring a config twice; its t-test matches Student's (scipy where installed)."""

import numpy as np
import pytest

from minitvm import autotvm, te
from minitvm.autotvm.measure import MeasureInput, MeasureResult
from minitvm.autotvm.tuner import DropletTuner
from minitvm.autotvm.tuner.droplet_tuner import student_t_pvalue
from minitvm.error import TuningError

TARGET = (5, 2)


@autotvm.template("test/droplet/knobs")
def knobs(n):
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] + 1.0, name="C")
    cfg = autotvm.get_config()
    cfg.define_knob("a", list(range(8)))
    cfg.define_knob("b", list(range(6)))
    return te.create_schedule(C.op), [A, C]


def _task():
    return autotvm.task.create("test/droplet/knobs", (16,), "llvm")


def _cost(config):
    a, b = config["a"].val, config["b"].val
    return 1e-3 * (1 + (a - TARGET[0]) ** 2 + (b - TARGET[1]) ** 2)


def _drive(tuner, costs_of=lambda c: [_cost(c)]):
    """Run the tuner's loop on synthetic costs; the configs in measurement order."""
    seen = []
    while tuner.has_next():
        batch = tuner.next_batch(4)
        seen += batch
        inputs = [MeasureInput(tuner.task.target, tuner.task, c) for c in batch]
        tuner.update(inputs, [MeasureResult(costs_of(c), 0, 0.0, 0.0) for c in batch])
    return seen


def test_droplet_reaches_the_optimum_and_stops():
    tuner = DropletTuner(_task())
    assert tuner.best_choice[0] == 0 and tuner.execution == 1 and tuner.step == 1
    assert tuner.total_execution == 8
    seen = _drive(tuner)
    indices = [c.index for c in seen]
    assert len(indices) == len(set(indices))  # never a config twice
    best = tuner.best_choice[0]
    assert tuner.space.point2knob(best) == list(TARGET)
    assert len(indices) < len(tuner.space)  # it did not just enumerate the space


def test_a_faster_neighbour_needs_a_significant_difference():
    start = [5, 2]
    spread = np.array([1.0, 1.2, 0.8]) * 1e-3

    def slightly_faster(config):  # 1% faster than the start, well within the noise
        at_start = [config["a"].val, config["b"].val] == start
        return list(spread if at_start else spread - 1e-5)

    tuner = DropletTuner(_task(), start_position=start)
    _drive(tuner, slightly_faster)
    assert tuner.best_choice[1] == start

    def clearly_faster(config):
        at_start = [config["a"].val, config["b"].val] == start
        return list(spread if at_start else spread * 0.5)

    tuner = DropletTuner(_task(), start_position=start)
    _drive(tuner, clearly_faster)
    assert tuner.best_choice[1] != start


def test_filtered_points_are_never_proposed():
    task = _task()
    task.config_space.multi_filter(filter=lambda e: (e["a"].val + e["b"].val) % 2 == 0)
    tuner = DropletTuner(task)
    seen = _drive(tuner)
    assert seen and all((c["a"].val + c["b"].val) % 2 == 0 for c in seen)
    assert all(task.config_space.is_index_valid(i) for i in tuner.visited)
    with pytest.raises(TuningError, match=r"start_position \[1, 0\] is not a valid point"):
        DropletTuner(task, start_position=[1, 0])


def test_student_t_pvalue():
    # hand case: means 2 and 5, pooled variance 1, t = -3 / sqrt(2/3), 4 degrees of freedom
    assert student_t_pvalue([1, 2, 3], [4, 5, 6]) == pytest.approx(0.0213116, rel=1e-5)
    assert student_t_pvalue([1, 1], [1, 1]) == 1.0
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(1)
    for n, m, shift in [(3, 3, 0.1), (2, 5, 1.0), (10, 12, 0.3), (3, 4, 3.0)]:
        a, b = rng.normal(0, 1, n), rng.normal(shift, 1, m)
        assert student_t_pvalue(a, b) == pytest.approx(stats.ttest_ind(a, b).pvalue, rel=1e-9)
