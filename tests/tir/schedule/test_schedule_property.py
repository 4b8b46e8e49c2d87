"""Property: any sequence of schedule primitives that the scheduler accepts keeps the numbers.

Hypothesis draws primitives with random targets and arguments (splits with non-divisible
factors, permutations, fusions, loop kinds, compute locations, inlining, caches, reductions).
A rejected primitive must raise ScheduleError and leave the schedule unchanged; the accepted
ones must compute what numpy computes, and their trace must replay to the same function.
"""

import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from sched_workloads import WORKLOADS, build_and_run

from minitvm import tir
from minitvm.error import ScheduleError
from minitvm.ir import structural_equal


def _blocks(sch):
    from minitvm.tir.schedule.tree import block_names

    return [sch.get_block(n) for n in block_names(sch.mod["main"])]


def _pick(data, items, label):
    return data.draw(st.sampled_from(items), label=label)


def _loop(data, sch):
    block = _pick(data, _blocks(sch), "block")
    loops = sch.get_loops(block)
    if not loops:
        return block, None, loops
    return block, _pick(data, loops, "loop"), loops


def _split(data, sch):
    _, loop, _ = _loop(data, sch)
    if loop is None:
        return
    n = data.draw(st.integers(2, 3), label="nfactors")
    factors = [data.draw(st.integers(1, 5), label="factor") for _ in range(n)]
    factors[data.draw(st.integers(0, n - 1), label="none_at")] = None
    sch.split(loop, factors)


def _reorder(data, sch):
    _, _, loops = _loop(data, sch)
    if len(loops) >= 2:
        picked = data.draw(st.permutations(loops), label="perm")
        size = data.draw(st.integers(2, len(loops)), label="size")
        sch.reorder(*picked[:size])


def _fuse(data, sch):
    _, _, loops = _loop(data, sch)
    if len(loops) >= 2:
        k = data.draw(st.integers(0, len(loops) - 2), label="at")
        sch.fuse(loops[k], loops[k + 1])


def _kind(data, sch):
    _, loop, _ = _loop(data, sch)
    if loop is not None:
        getattr(sch, _pick(data, ["parallel", "vectorize", "unroll"], "kind"))(loop)


def _compute_at(data, sch):
    block = _pick(data, _blocks(sch), "block")
    reverse = data.draw(st.booleans(), label="reverse")
    others = sch.get_producers(block) if reverse else sch.get_consumers(block)
    if not others:
        return
    loops = sch.get_loops(_pick(data, others, "other"))
    if loops:
        where = sch.reverse_compute_at if reverse else sch.compute_at
        where(block, _pick(data, loops, "loop"))


def _inline(data, sch):
    block = _pick(data, _blocks(sch), "block")
    getattr(sch, _pick(data, ["compute_inline", "reverse_compute_inline"], "how"))(block)


def _cache(data, sch):
    block = _pick(data, _blocks(sch), "block")
    scope = _pick(data, ["local", "global"], "scope")
    if data.draw(st.booleans(), label="read"):
        sch.cache_read(block, data.draw(st.integers(0, 2), label="index"), scope)
    else:
        sch.cache_write(block, 0, scope)


def _reduction(data, sch):
    block, loop, _ = _loop(data, sch)
    if loop is None:
        return
    if data.draw(st.booleans(), label="decompose"):
        sch.decompose_reduction(block, loop)
    else:
        sch.rfactor(loop, data.draw(st.integers(0, 1), label="axis"))


PRIMITIVES = [_split, _reorder, _fuse, _kind, _compute_at, _inline, _cache, _reduction]


@pytest.mark.parametrize("name", sorted(WORKLOADS))
@settings(
    max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(data=st.data())
def test_random_legal_schedules_keep_numbers(name, data):
    wl = WORKLOADS[name]()
    sch = tir.Schedule(wl.func())
    applied = 0
    for _ in range(data.draw(st.integers(1, 8), label="steps")):
        prim = _pick(data, PRIMITIVES, "primitive")
        before = sch.mod["main"]
        trial = sch.copy()
        try:
            prim(data, trial)
        except ScheduleError:
            assert structural_equal(trial.mod["main"], before)  # a rejection changes nothing
            continue
        sch = trial
        applied += 1
        event(prim.__name__)
    note(str(sch.trace))
    fresh = tir.Schedule(wl.func())
    sch.trace.apply_to_schedule(fresh)
    assert structural_equal(fresh.mod["main"], sch.mod["main"])
    build_and_run(sch, wl)
