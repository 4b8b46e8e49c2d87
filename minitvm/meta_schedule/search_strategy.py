"""Search strategies: which schedules to measure next. ReplayTrace samples the design space
at random; EvolutionarySearch evolves a population of sampled schedules with the mutators,
ranks it with the cost model, and measures the predicted best (plus a few random picks)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..error import MiniTVMError, TuningError
from ..tir.schedule import Schedule
from ..tir.schedule.trace import Trace
from .arg_info import ArgInfo
from .utils import mod_key


class MeasureCandidate:
    """A schedule to measure and the description of its arguments."""

    def __init__(self, sch: Schedule, args_info: list[ArgInfo] | None = None) -> None:
        self.sch = sch
        # None (TVM allows it): the arguments of the schedule's function
        self.args_info = list(args_info if args_info is not None else _args_of(sch))


def _args_of(sch: Schedule) -> list[ArgInfo]:
    """The entry function's argument descriptions; none when a dim is symbolic (such a
    candidate cannot be measured, which the runner reports)."""
    try:
        return ArgInfo.from_entry_func(sch.mod)
    except TuningError:
        return []


class SearchStrategy:
    """Base class with TVM's protocol: pre_tuning, then generate_measure_candidates /
    notify_runner_results until the former returns None, then post_tuning."""

    def _initialize_with_tune_context(self, context: Any) -> None:
        self.context = context

    def pre_tuning(
        self,
        max_trials: int,
        num_trials_per_iter: int,
        design_spaces: list[Schedule],
        database: Any = None,
        cost_model: Any = None,
    ) -> None:
        if not design_spaces:
            raise TuningError(
                f"task '{self.context.task_name}': the space generator gave no design space"
            )
        self.max_trials = max_trials
        self.num_trials_per_iter = num_trials_per_iter
        self.spaces = [_strip(s.trace) for s in design_spaces]
        self.database = database
        self.cost_model = cost_model
        self.trials = 0
        self.measured: set[int] = set()
        if database is not None:
            self._seed_measured(database)
        self._replayed: dict[str, Schedule | None] = {}
        space = self.context.space_generator
        self.postprocs = list(getattr(space, "postprocs", None) or [])
        self.mutator_probs = dict(getattr(space, "mutator_probs", None) or {})
        # spaces with nothing to sample are single points (e.g. ApplyDefaultSchedule's):
        # measured in the first batch, so the search starts from them and never ends below
        fixed = [self._replay(t) for t in self.spaces if not _samples(t)]
        self.fixed_points = [s for s in fixed if s is not None]
        self.fixed_keys = {mod_key(s.mod) for s in self.fixed_points}

    def _seed_measured(self, database: Any) -> None:
        """Schedules already in the database are not measured again."""
        workload = database._find(self.context.mod)
        if workload is None:
            return
        for record in database.get_all_tuning_records():
            if record.workload is workload:
                try:
                    self.measured.add(record.mod_key)
                except MiniTVMError:
                    continue

    def generate_measure_candidates(self) -> list[MeasureCandidate] | None:
        raise NotImplementedError

    def notify_runner_results(self, measure_candidates: list, results: list) -> None:
        self.trials += len(measure_candidates)
        self.measured.update(mod_key(c.sch.mod) for c in measure_candidates)

    def post_tuning(self) -> None:
        pass

    # -- shared machinery
    def _budget(self) -> int:
        return max(0, min(self.num_trials_per_iter, self.max_trials - self.trials))

    def _replay(self, trace: Trace) -> Schedule | None:
        """Apply `trace` (missing decisions are sampled) to a fresh schedule of the task,
        then the postprocessors; None when a step or a postprocessor refuses."""
        sch = Schedule(self.context.mod, seed=self.context.fork_seed())
        try:
            trace.apply_to_schedule(sch, remove_postproc=True)
        except MiniTVMError:
            return None
        return self._postprocess(sch)

    def _postprocess(self, sch: Schedule) -> Schedule | None:
        """`sch` after the postprocessors; None when one refuses."""
        try:
            sch.enter_postproc()
            for postproc in self.postprocs:
                if not postproc.apply(sch):
                    return None
        except MiniTVMError:
            return None
        return sch

    def _sample(self) -> Schedule | None:
        """A fresh random point of a random design space."""
        rng = self.context.rng
        return self._replay(self.spaces[int(rng.integers(len(self.spaces)))])

    def _candidates(self, schedules: list[Schedule]) -> list[MeasureCandidate]:
        args = ArgInfo.from_entry_func(self.context.mod)
        return [MeasureCandidate(s, args) for s in schedules]

    def _take_fixed(self, limit: int) -> dict[int, Schedule]:
        """The unmeasured fixed points (spaces with no sampling step), up to `limit`."""
        picked: dict[int, Schedule] = {}
        self._take_new(self.fixed_points, limit, picked)
        return picked

    def _take_new(self, schedules: list, limit: int, picked: dict[int, Schedule]) -> None:
        """Add unmeasured schedules not yet picked (by structural hash) up to `limit`."""
        for sch in schedules:
            if len(picked) >= limit:
                return
            if sch is None:
                continue
            key = mod_key(sch.mod)
            if key not in self.measured and key not in picked:
                picked[key] = sch


def schedule_part(trace: Trace) -> Trace:
    """The trace up to its postprocessing (EnterPostproc), decisions kept."""
    insts = []
    for inst in trace.insts:
        if inst.kind.name == "EnterPostproc":
            break
        insts.append(inst)
    return Trace(
        insts, {i: trace.get_decision(i) for i in insts if trace.get_decision(i) is not None}
    )


def _samples(trace: Trace) -> bool:
    """Whether the trace has a sampling step (a space with none is one point)."""
    return any(i.kind.name.startswith("Sample") for i in trace.insts)


def _strip(trace: Trace) -> Trace:
    """The trace's schedule part with no decisions: replaying it samples afresh."""
    return Trace(schedule_part(trace).insts, {})


class ReplayTrace(SearchStrategy):
    """Measure random points of the design space (each once)."""

    def __init__(self, max_fail_count: int = 100) -> None:
        self.max_fail_count = max_fail_count

    def generate_measure_candidates(self) -> list[MeasureCandidate] | None:
        want = self._budget()
        picked = self._take_fixed(want)
        for _ in range(want + self.max_fail_count):
            if len(picked) >= want:
                break
            self._take_new([self._sample()], want, picked)
        return self._candidates(list(picked.values())) or None


class ReplayFunc(SearchStrategy):
    """Measure schedules made by running the space generator afresh for each candidate (TVM's
    ReplayFunc: the generator's own sampling, not a replayed trace, picks each point)."""

    def __init__(self, max_fail_count: int = 100) -> None:
        self.max_fail_count = max_fail_count

    def generate_measure_candidates(self) -> list[MeasureCandidate] | None:
        want = self._budget()
        picked: dict[int, Schedule] = {}
        for _ in range(want + self.max_fail_count):
            if len(picked) >= want:
                break
            self._take_new([self._generate()], want, picked)
        return self._candidates(list(picked.values())) or None

    def _generate(self) -> Schedule | None:
        """One design space from a fresh run of the generator, postprocessed."""
        try:
            spaces = self.context.space_generator.generate_design_space(self.context.mod)
        except MiniTVMError:
            return None
        if not spaces:
            return None
        return self._postprocess(spaces[int(self.context.rng.integers(len(spaces)))])


class EvolutionarySearch(SearchStrategy):
    """Evolutionary search guided by the cost model. TVM's parameters, with smaller
    defaults (TVM: population 512, 4 rounds): one replay of a sampled trace with its
    postprocessors costs tens of milliseconds in Python, and tuning should take minutes."""

    def __init__(
        self,
        population_size: int = 64,
        init_measured_ratio: float = 0.2,
        init_min_unmeasured: int = 16,
        max_fail_count: int = 16,
        genetic_num_iters: int = 2,
        genetic_mutate_prob: float = 0.85,
        genetic_max_fail_count: int = 4,
        eps_greedy: float = 0.05,
        num_empty_iters_before_early_stop: int = 5,
    ) -> None:
        self.population_size = population_size
        self.num_empty_iters_before_early_stop = num_empty_iters_before_early_stop
        self.num_empty_iters = 0
        self.init_measured_ratio = init_measured_ratio
        self.init_min_unmeasured = init_min_unmeasured
        self.max_fail_count = max_fail_count
        self.genetic_num_iters = genetic_num_iters
        self.genetic_mutate_prob = genetic_mutate_prob
        self.genetic_max_fail_count = genetic_max_fail_count
        self.eps_greedy = eps_greedy

    def pre_tuning(self, *args: Any, **kwargs: Any) -> None:
        super().pre_tuning(*args, **kwargs)
        self.num_empty_iters = 0

    def generate_measure_candidates(self) -> list[MeasureCandidate] | None:
        want = self._budget()
        if want == 0:
            return None
        picked = self._take_fixed(want)
        # a task's first batch is random: the cost model has seen none of its schedules,
        # and evolving a population for it costs a replay per member (~0.1-0.4 s each)
        if self.trials > 0 or self.measured:
            population = self._initial_population(self._population_size(want))
            if not population:
                return None
            best = self._evolve(population)
            self._take_new(best, want - round(want * self.eps_greedy), picked)
        # like TVM's initial population, try at least init_min_unmeasured samples before
        # giving up on finding an unmeasured one
        fails, sampled = 0, False
        while len(picked) < want and fails < max(self.max_fail_count, self.init_min_unmeasured):
            before = len(picked)
            sch = self._sample()
            sampled = sampled or sch is not None
            self._take_new([sch], want, picked)
            fails += len(picked) == before
        if not picked and not sampled:
            return None  # no schedule of the space survives its postprocessors (as TVM)
        if not picked:
            # TVM's protocol: an empty batch, and None (stop) after a few of them
            self.num_empty_iters += 1
            if self.num_empty_iters >= self.num_empty_iters_before_early_stop:
                return None
        return self._candidates(list(picked.values()))

    def _population_size(self, want: int) -> int:
        """`population_size`, smaller for a small batch (2 per candidate, at least 16): each
        member costs a replay (~0.1-0.3 s for a conv), and the measurements are worth more
        than a larger population ranked by a model trained on a few dozen of them."""
        return min(self.population_size, max(16, 2 * want))

    def _initial_population(self, size: int) -> list[Schedule]:
        """The best measured schedules, then random samples up to `size`."""
        out: list[Schedule] = []
        if self.database is not None:
            workload = self.database._find(self.context.mod)
            top = int(size * self.init_measured_ratio)
            for record in [] if workload is None else self.database.get_top_k(workload, top):
                try:
                    out.append(record.as_measure_candidate().sch)
                except MiniTVMError:
                    continue
        fails = 0
        while len(out) < size and fails < self.max_fail_count:
            sch = self._sample()
            fails += sch is None
            if sch is not None:
                out.append(sch)
        return out

    def _evolve(self, population: list[Schedule]) -> list[Schedule]:
        """Rounds of score-proportional selection and mutation; returns the distinct
        schedules seen, best predicted first."""
        seen: dict[int, tuple[float, Schedule]] = {}
        for _ in range(self.genetic_num_iters):
            scores = self._predict(population)
            for sch, score in zip(population, scores):
                seen.setdefault(mod_key(sch.mod), (float(score), sch))
            population = [self._offspring(population, scores) for _ in population]
            population = [s for s in population if s is not None]
            if not population:
                break
        for sch, score in zip(population, self._predict(population)):
            seen.setdefault(mod_key(sch.mod), (float(score), sch))
        ranked = sorted(seen.items(), key=lambda kv: -kv[1][0])
        return [sch for key, (_, sch) in ranked if key not in self.measured]

    def _predict(self, schedules: list[Schedule]) -> np.ndarray:
        if not schedules:
            return np.zeros(0)
        if self.cost_model is None:
            return self.context.rng.random(len(schedules))
        scores = self.cost_model.predict(self.context, self._candidates(schedules))
        return np.nan_to_num(np.asarray(scores, dtype=np.float64), nan=0.0)

    def _offspring(self, population: list[Schedule], scores: np.ndarray) -> Schedule | None:
        """A parent drawn by score, mutated with probability `genetic_mutate_prob`."""
        rng = self.context.rng
        weights = scores - scores.min() + 1e-9
        for _ in range(self.genetic_max_fail_count):
            parent = population[int(rng.choice(len(population), p=weights / weights.sum()))]
            if rng.random() >= self.genetic_mutate_prob:
                return parent
            trace = self._mutate(parent.trace)
            child = None if trace is None else self._replay_decided(trace)
            if child is not None:
                return child
        return None

    def _replay_decided(self, trace: Trace) -> Schedule | None:
        """`_replay`, memoised by the trace's JSON when every sampling step is decided
        (replays cost milliseconds each in Python; mutants often repeat)."""
        if any(
            i.kind.name.startswith("Sample") and trace.get_decision(i) is None for i in trace.insts
        ):
            return self._replay(trace)
        key = json.dumps(trace.as_json())
        if key not in self._replayed:
            self._replayed[key] = self._replay(trace)
        return self._replayed[key]

    def _mutate(self, trace: Trace) -> Trace | None:
        """One mutator picked by its probability; without mutators, resample one decision."""
        rng = self.context.rng
        trace = schedule_part(trace)
        if self.mutator_probs:
            mutators = list(self.mutator_probs)
            probs = np.array([self.mutator_probs[m] for m in mutators], dtype=np.float64)
            mutator = mutators[int(rng.choice(len(mutators), p=probs / probs.sum()))]
            return mutator.apply(trace, rng)
        sampled = [i for i in trace.insts if trace.get_decision(i) is not None]
        if not sampled:
            return None
        inst = sampled[int(rng.integers(len(sampled)))]
        return trace.with_decision(inst, None, remove_postproc=True)


def create(kind: Any = "evolutionary", **kwargs: Any) -> SearchStrategy:
    """A strategy from a name ("evolutionary", "replay-trace") or an instance."""
    if isinstance(kind, SearchStrategy):
        return kind
    table = {
        "evolutionary": EvolutionarySearch,
        "replay-func": ReplayFunc,
        "replay_func": ReplayFunc,
        "replay-trace": ReplayTrace,
        "replay_trace": ReplayTrace,
    }
    if kind not in table:
        raise TuningError(f"unknown search strategy {kind!r}; use one of {sorted(table)}")
    return table[kind](**kwargs)
