"""The tuning loop shared by every tuner: propose a batch, measure it, keep the best."""

from __future__ import annotations

import logging
from typing import Any

from ...error import TuningError
from ..env import GLOBAL_SCOPE
from ..measure import MeasureInput, create_measure_batch

logger = logging.getLogger("autotvm")

_SI_PREFIXES = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_MIN_SECONDS = 1e-9  # a zero cost is below the timer's resolution: counted as 1 ns


def measured_flops(flop: float, res: Any) -> float:
    """Throughput of a measurement (operations per second); 0 for a failure."""
    if res.error_no != 0:
        return 0.0
    return flop / max(res.mean_cost, _MIN_SECONDS)


class Tuner:
    """Base of tuners: subclasses give `has_next`, `next_batch(n)` and `update`."""

    def __init__(self, task: Any, **kwargs: Any) -> None:
        if task.config_space is None:
            raise TuningError("a tuner needs a task made by autotvm.task.create (it has no space)")
        self.param = kwargs
        self.task = task
        self.space = task.config_space
        self.best_config = None
        self.best_flops = 0.0
        self.best_measure_pair = None
        self.best_iter = 0
        self.error_ct_threshold = 150
        self.ttl = None
        self.n_trial = None
        self.early_stopping = None
        self.visited: set[int] = set()

    def has_next(self) -> bool:
        return len(self.visited) < len(self.space)

    def next_batch(self, batch_size: int) -> list:
        raise NotImplementedError(f"{type(self).__name__}.next_batch")

    def update(self, inputs: list, results: list) -> None:
        """Learn from measured results (the model-based and genetic tuners do)."""

    def tune(
        self,
        n_trial: int,
        measure_option: dict,
        early_stopping: int | None = None,
        callbacks: Any = (),
        si_prefix: str = "G",
    ) -> None:
        """Measure up to `n_trial` configs, in batches of the builder's parallelism; stop
        early after `early_stopping` trials without a better one. Each callback is called as
        callback(tuner, inputs, results) after every batch."""
        if si_prefix not in _SI_PREFIXES:
            raise TuningError(f"si_prefix {si_prefix!r} is not one of {sorted(_SI_PREFIXES)}")
        scale = _SI_PREFIXES[si_prefix]
        measure_batch = create_measure_batch(self.task, measure_option)
        self.n_trial = n_trial
        self.early_stopping = early_stopping = early_stopping or 10**9
        GLOBAL_SCOPE.in_tuning = True
        done = errors = 0
        try:
            while done < n_trial and self.has_next():
                configs = self.next_batch(min(measure_batch.n_parallel, n_trial - done))
                if not configs:
                    break
                inputs = [MeasureInput(self.task.target, self.task, c) for c in configs]
                results = measure_batch(inputs)
                for k, (inp, res) in enumerate(zip(inputs, results)):
                    flops = measured_flops(self.task.flop, res)
                    errors = 0 if res.error_no == 0 else errors + 1
                    if flops > self.best_flops:
                        self.best_flops, self.best_config = flops, inp.config
                        self.best_measure_pair, self.best_iter = (inp, res), done + k
                    shown = res if res.error_no == 0 else res.costs[0]
                    logger.debug(
                        "No: %d\t%sFLOPS: %.2f/%.2f\tresult: %s\t%s",
                        done + k + 1,
                        si_prefix,
                        flops / scale,
                        self.best_flops / scale,
                        shown,
                        inp.config,
                    )
                done += len(results)
                self.ttl = min(early_stopping + self.best_iter, n_trial) - done
                self.update(inputs, results)
                for callback in callbacks:
                    callback(self, inputs, results)
                if done >= self.best_iter + early_stopping:
                    logger.debug("Early stopped. Best iter: %d.", self.best_iter)
                    break
                if errors > self.error_ct_threshold:
                    logger.warning("Too many errors happen in the tuning (%d in a row).", errors)
            if done and self.best_config is None:
                logger.warning(
                    "Could not find any valid schedule for task %s: all %d measured configs failed",
                    self.task,
                    done,
                )
        finally:
            GLOBAL_SCOPE.in_tuning = False
            measure_batch.close()

    def reset(self) -> None:
        self.best_config, self.best_flops, self.best_measure_pair = None, 0.0, None

    def load_history(self, data_set: Any, min_seed_records: int = 500) -> None:
        """Not supported by this tuner (the model-based tuner learns from history)."""
        raise TuningError(f"{type(self).__name__} does not learn from history records")

    def set_error_threshold(self, threshold: int) -> None:
        self.error_ct_threshold = threshold
