"""TuningOptions, LocalBuilder/LocalRunner, RecordToFile and the record file: TVM's
auto_scheduler names over meta_schedule's builder, runner and JSONDatabase.

A log file `f` is meta_schedule's JSON-lines database: its records in `f`, the workloads they
index in `f.workloads.json` beside it. Both are read by JSONDatabase's loader (every record's
trace checked against the instruction allow-list), never evaluated."""

from __future__ import annotations

import logging
import os
from typing import Any

from ..error import TuningError
from ..meta_schedule import builder as _builder
from ..meta_schedule import runner as _runner
from ..meta_schedule.database import Database, JSONDatabase, MemoryDatabase

_log = logging.getLogger(__name__)


def workload_file(log_file: str) -> str:
    """The file beside `log_file` that holds the workloads its records index."""
    return f"{log_file}.workloads.json"


def open_log(log_file: Any, create: bool = False) -> Database:
    """The database of `log_file`; `create=True` starts an empty one when it does not exist."""
    path = os.fspath(log_file)
    if not create:
        if not os.path.exists(path):
            raise TuningError(
                f"record file '{path}' does not exist; tune with "
                f"measure_callbacks=[auto_scheduler.RecordToFile('{path}')] first"
            )
        if not os.path.exists(workload_file(path)):
            raise TuningError(
                f"record file '{path}' has no workload file '{workload_file(path)}' beside it; "
                "keep the two files together (minitvm writes both)"
            )
    return JSONDatabase(path_workload=workload_file(path), path_tuning_record=path)


def history_database(log_file: Any) -> Database:
    """The records of `log_file`, or none when it does not exist yet (as TVM reads a
    missing log: every kernel keeps its default schedule)."""
    if isinstance(log_file, Database):
        return log_file
    if not os.path.exists(os.fspath(log_file)):
        _log.warning("record file '%s' does not exist: default schedules are used", log_file)
        return MemoryDatabase()
    return open_log(log_file)


class RecordToFile:
    """Measure callback: record every measurement in `filename` (TVM's name)."""

    def __init__(self, filename: str) -> None:
        self.filename = os.fspath(filename)

    def __repr__(self) -> str:
        return f"RecordToFile({self.filename!r})"


class LocalBuilder:
    """Builds candidates in local worker processes (meta_schedule's LocalBuilder)."""

    def __init__(
        self, timeout: float = 15, n_parallel: int | None = None, build_func: str = "default"
    ):
        if build_func != "default":
            raise TuningError(
                f"LocalBuilder(build_func={build_func!r}): only 'default' is supported"
            )
        self.timeout = timeout
        self.n_parallel = n_parallel

    def to_meta_schedule(self) -> Any:
        return _builder.LocalBuilder(max_workers=self.n_parallel, timeout_sec=self.timeout)


class LocalRunner:
    """Times candidates in a local worker process (meta_schedule's LocalRunner): `repeat`
    rounds of `number` calls, each round at least `min_repeat_ms`."""

    def __init__(
        self,
        timeout: float = 10,
        number: int = 3,
        repeat: int = 1,
        min_repeat_ms: float = 100,
        cooldown_interval: float = 0.0,
        enable_cpu_cache_flush: bool = False,
        device: int = 0,
    ) -> None:
        if number < 1 or repeat < 1:
            raise TuningError(f"LocalRunner: number ({number}) and repeat ({repeat}) must be >= 1")
        self.timeout = timeout
        self.number = number
        self.repeat = repeat
        self.min_repeat_ms = min_repeat_ms
        self.enable_cpu_cache_flush = enable_cpu_cache_flush

    def to_meta_schedule(self) -> Any:
        config = _runner.EvaluatorConfig(
            number=self.number,
            repeat=self.repeat,
            min_repeat_ms=self.min_repeat_ms,
            enable_cpu_cache_flush=self.enable_cpu_cache_flush,
        )
        return _runner.LocalRunner(timeout_sec=self.timeout, evaluator_config=config)


class TuningOptions:
    """How much to tune and where records go (TVM's names): `num_measure_trials` measurements
    in all, records in the `RecordToFile` of `measure_callbacks`."""

    def __init__(
        self,
        num_measure_trials: int = 0,
        early_stopping: int | None = None,
        num_measures_per_round: int = 64,
        verbose: int = 1,
        builder: Any = "local",
        runner: Any = "local",
        measure_callbacks: Any = None,
    ) -> None:
        if int(num_measure_trials) < 0 or int(num_measures_per_round) < 1:
            raise TuningError(
                f"TuningOptions: num_measure_trials ({num_measure_trials}) must be >= 0 and "
                f"num_measures_per_round ({num_measures_per_round}) >= 1"
            )
        self.num_measure_trials = int(num_measure_trials)
        self.early_stopping = early_stopping
        self.num_measures_per_round = int(num_measures_per_round)
        self.verbose = verbose
        self.builder = _component(builder, LocalBuilder, "builder")
        self.runner = _component(runner, LocalRunner, "runner")
        self.measure_callbacks = list(measure_callbacks or [])
        for cb in self.measure_callbacks:
            if not isinstance(cb, RecordToFile):
                raise TuningError(
                    f"TuningOptions: measure callback {type(cb).__name__} is not supported; "
                    "use auto_scheduler.RecordToFile(log_file)"
                )

    def database(self) -> Database:
        """Where this tuning records: the first RecordToFile's file, else in memory."""
        if not self.measure_callbacks:
            return MemoryDatabase()
        return open_log(self.measure_callbacks[0].filename, create=True)


def _component(value: Any, cls: type, what: str) -> Any:
    if value == "local":
        return cls()
    if not isinstance(value, cls):
        raise TuningError(
            f"TuningOptions({what}=...): expected 'local' or auto_scheduler.{cls.__name__}, got "
            f"{type(value).__name__}"
        )
    return value


def load_records(filename: str) -> list:
    """The (workload, record) pairs of a record file, checked as data."""
    database = open_log(filename)
    return [(r.workload, r) for r in database.get_all_tuning_records()]


def save_records(filename: str, inputs: list, results: list | None = None) -> None:
    """Append records (as load_records returns them, or TuningRecords) to `filename`."""
    database = open_log(filename, create=True)
    for item in inputs:
        record = item[1] if isinstance(item, tuple) else item
        workload = database.commit_workload(record.workload.mod)
        record = type(record)(
            record.trace, workload, record.run_secs, record.target, record.args_info
        )
        database.commit_tuning_record(record)
