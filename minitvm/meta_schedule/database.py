"""Tuning databases: workloads (modules keyed by structural hash) and tuning records
(a trace, its measured times, target and arguments). JSONDatabase keeps them in two
JSON-lines files as TVM does; loading reads data only (traces replay through the checked
trace-JSON reader, modules as TVMScript, whose parser evaluates only its own namespaces), never
code or pickle."""

from __future__ import annotations

import json
import os
from typing import Any, ClassVar

from ..error import MiniTVMError, TuningError
from ..ir import IRModule
from ..ir.structural import structural_equal
from ..tir.schedule import Schedule
from ..tir.schedule.trace import Trace
from .arg_info import ArgInfo
from .utils import mod_from_text, mod_key, mod_to_text, normalize_mod, parse_target


class Workload:
    """A module to tune, identified by its structural hash (confirmed by structural equality)."""

    def __init__(self, mod: IRModule, shash: int | None = None) -> None:
        self.mod = normalize_mod(mod)
        self.shash = mod_key(self.mod) if shash is None else shash

    def as_json(self) -> list:
        return [str(self.shash), mod_to_text(self.mod)]

    @staticmethod
    def from_json(obj: Any) -> Workload:
        if not (isinstance(obj, list) and len(obj) == 2 and all(isinstance(x, str) for x in obj)):
            raise TuningError(f"workload JSON must be [hash, TVMScript], got {str(obj)[:80]}")
        # the hash is recomputed: a tampered one is not trusted
        return Workload(mod_from_text(obj[1], "workload JSON"))


class TuningRecord:
    """One measured schedule: `trace` (applies to `workload.mod`), `run_secs` (None if the
    run failed), `target` and `args_info`."""

    def __init__(
        self,
        trace: Trace,
        workload: Workload,
        run_secs: list[float] | None = None,
        target: Any = None,
        args_info: list[ArgInfo] | None = None,
    ) -> None:
        self.trace = trace
        self.workload = workload
        self.run_secs = None if run_secs is None else [float(s) for s in run_secs]
        self.target = None if target is None else parse_target(target)
        self.args_info = args_info
        self._mod_key: int | None = None

    @property
    def mod_key(self) -> int:
        """Structural key of the scheduled module (replays the trace once if not known)."""
        if self._mod_key is None:
            self._mod_key = mod_key(self.as_measure_candidate().sch.mod)
        return self._mod_key

    @property
    def best_sec(self) -> float:
        """The fastest repeat (inf when the run failed)."""
        return min(self.run_secs) if self.run_secs else float("inf")

    def as_measure_candidate(self) -> Any:
        from .search_strategy import MeasureCandidate

        sch = Schedule(self.workload.mod)
        self.trace.apply_to_schedule(sch, remove_postproc=False)
        return MeasureCandidate(sch, self.args_info or ArgInfo.from_entry_func(sch.mod))

    def as_json(self) -> list:
        return [
            self.trace.as_json(remove_postproc=False),
            self.run_secs,
            None if self.target is None else str(self.target),
            None if self.args_info is None else [a.as_json() for a in self.args_info],
        ]

    @staticmethod
    def from_json(obj: Any, workload: Workload) -> TuningRecord:
        """Rebuild a record; its trace is replayed (checked) on the workload to validate it."""
        if not (isinstance(obj, list) and len(obj) == 4):
            raise TuningError(f"tuning record JSON must be a list of 4, got {str(obj)[:80]}")
        trace_json, run_secs, target, args_info = obj
        ok_secs = run_secs is None or (
            isinstance(run_secs, list) and all(isinstance(s, (int, float)) for s in run_secs)
        )
        if not ok_secs or not (target is None or isinstance(target, str)):
            raise TuningError(f"tuning record JSON: bad run_secs or target in {str(obj)[:80]}")
        sch = Schedule(workload.mod)
        try:
            Trace.apply_json_to_schedule(trace_json, sch)
        except MiniTVMError as err:
            raise TuningError(f"tuning record JSON: its trace does not replay: {err}") from err
        infos = None if args_info is None else [ArgInfo.from_json(a) for a in args_info]
        record = TuningRecord(sch.trace, workload, run_secs, target, infos)
        record._mod_key = mod_key(sch.mod)  # the replay that validated it gives the key
        return record


class Database:
    """Base class with TVM's query API over `_workloads` and `_records` (in memory)."""

    def __init__(self, module_equality: str = "structural") -> None:
        if module_equality != "structural":
            raise TuningError(
                f"module_equality={module_equality!r} is not supported; use 'structural'"
            )
        self.module_equality = module_equality
        self._workloads: list[Workload] = []
        self._records: list[TuningRecord] = []

    # -- `with database:` makes it the current one (MetaScheduleApplyDatabase reads it)
    _stack: ClassVar[list[Database]] = []

    def __enter__(self) -> Database:  # noqa: PYI034 - py3.10 has no typing.Self
        Database._stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        Database._stack.pop()

    @staticmethod
    def current() -> Database | None:
        return Database._stack[-1] if Database._stack else None

    # -- workloads
    def _find(self, mod: IRModule) -> Workload | None:
        mod = normalize_mod(mod)
        key = mod_key(mod)
        for w in self._workloads:
            if w.shash == key and structural_equal(w.mod, mod):
                return w
        return None

    def has_workload(self, mod: IRModule) -> bool:
        return self._find(mod) is not None

    def commit_workload(self, mod: IRModule) -> Workload:
        found = self._find(mod)
        if found is not None:
            return found
        workload = Workload(mod)
        self._workloads.append(workload)
        self._write_workload(workload)
        return workload

    # -- records
    def commit_tuning_record(self, record: TuningRecord) -> None:
        """Add `record`; a schedule measured again (equal module) replaces its earlier record,
        so the latest measurement of a schedule is the one queries rank."""
        if all(record.workload is not w for w in self._workloads):
            record.workload = self.commit_workload(record.workload.mod)
        self._add(record)
        self._write_record(record)

    def _add(self, record: TuningRecord) -> None:
        for i, old in enumerate(self._records):
            if old.workload is record.workload and old.mod_key == record.mod_key:
                self._records[i] = record
                return
        self._records.append(record)

    def get_top_k(self, workload: Workload, top_k: int) -> list[TuningRecord]:
        """The `top_k` fastest successful records of `workload`."""
        mine = [r for r in self._records if r.workload is workload and r.run_secs]
        return sorted(mine, key=lambda r: r.best_sec)[:top_k]

    def get_all_tuning_records(self) -> list[TuningRecord]:
        return list(self._records)

    def __len__(self) -> int:
        return len(self._records)

    # -- queries (TVM's names)
    def query_tuning_record(
        self, mod: IRModule, target: Any = None, workload_name: str = "main"
    ) -> TuningRecord | None:
        """The best record of `mod` (for `target` when given), or None."""
        workload = self._find(mod)
        if workload is None:
            return None
        want = None if target is None else str(parse_target(target).kind)
        for record in self.get_top_k(workload, len(self._records)):
            if want is None or record.target is None or str(record.target.kind) == want:
                return record
        return None

    def query_schedule(
        self, mod: IRModule, target: Any = None, workload_name: str = "main"
    ) -> Schedule | None:
        """The best schedule of `mod` replayed on it, or None when nothing was tuned."""
        record = self.query_tuning_record(mod, target, workload_name)
        if record is None:
            return None
        sch = Schedule(normalize_mod(mod))
        record.trace.apply_to_schedule(sch, remove_postproc=False)
        return sch

    def query_ir_module(
        self, mod: IRModule, target: Any = None, workload_name: str = "main"
    ) -> IRModule | None:
        sch = self.query_schedule(mod, target, workload_name)
        return None if sch is None else sch.mod

    def query(
        self, mod: IRModule, target: Any, *, workload_name: str = "main", kind: str = "schedule"
    ) -> Any:
        table = {
            "schedule": self.query_schedule,
            "record": self.query_tuning_record,
            "ir_module": self.query_ir_module,
        }
        return table[kind](mod, target, workload_name)

    # -- storage hooks (the in-memory database keeps nothing else)
    def _write_workload(self, workload: Workload) -> None:
        pass

    def _write_record(self, record: TuningRecord) -> None:
        pass


class MemoryDatabase(Database):
    """A database that lives in memory only."""


class JSONDatabase(Database):
    """Workloads in `path_workload` and records in `path_tuning_record` (JSON lines; default
    `work_dir/database_workload.json` and `work_dir/database_tuning_record.json`)."""

    def __init__(
        self,
        path_workload: str | None = None,
        path_tuning_record: str | None = None,
        work_dir: str | None = None,
        allow_missing: bool = True,
        module_equality: str = "structural",
    ) -> None:
        super().__init__(module_equality)
        if work_dir is not None:
            os.makedirs(work_dir, exist_ok=True)
            path_workload = path_workload or os.path.join(work_dir, "database_workload.json")
            path_tuning_record = path_tuning_record or os.path.join(
                work_dir, "database_tuning_record.json"
            )
        if path_workload is None or path_tuning_record is None:
            raise TuningError(
                "JSONDatabase needs work_dir=... or both path_workload and path_tuning_record"
            )
        self.path_workload = path_workload
        self.path_tuning_record = path_tuning_record
        for path in (path_workload, path_tuning_record):
            if not os.path.exists(path):
                if not allow_missing:
                    raise TuningError(
                        f"JSONDatabase: '{path}' does not exist (allow_missing=False)"
                    )
                open(path, "a").close()
        self._loading = True
        try:
            self._load()
        finally:
            self._loading = False

    def _load(self) -> None:
        for lineno, obj in _read_lines(self.path_workload):
            try:
                self._workloads.append(Workload.from_json(obj))
            except TuningError as err:
                raise TuningError(f"{self.path_workload}:{lineno}: {err}") from err
        for lineno, obj in _read_lines(self.path_tuning_record):
            where = f"{self.path_tuning_record}:{lineno}"
            ok = isinstance(obj, list) and len(obj) == 2 and type(obj[0]) is int
            if not ok or not 0 <= obj[0] < len(self._workloads):
                raise TuningError(
                    f"{where}: a record must be [workload index, record], got {str(obj)[:80]}"
                )
            try:
                self._add(TuningRecord.from_json(obj[1], self._workloads[obj[0]]))
            except TuningError as err:
                raise TuningError(f"{where}: {err}") from err

    def _write_workload(self, workload: Workload) -> None:
        if not self._loading:
            _append_line(self.path_workload, workload.as_json())

    def _write_record(self, record: TuningRecord) -> None:
        index = next(i for i, w in enumerate(self._workloads) if w is record.workload)
        _append_line(self.path_tuning_record, [index, record.as_json()])


def _read_lines(path: str) -> list[tuple[int, Any]]:
    out = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append((lineno, json.loads(line)))
            except ValueError as err:
                raise TuningError(
                    f"{path}:{lineno}: not valid JSON ({err}); the file is damaged"
                ) from err
    return out


def _append_line(path: str, obj: Any) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(obj) + "\n")


def create(kind: Any = "json", *args: Any, **kwargs: Any) -> Database:
    """A database from a name ("json", "memory") or an instance."""
    if isinstance(kind, Database):
        return kind
    table = {"json": JSONDatabase, "memory": MemoryDatabase}
    if kind not in table:
        raise TuningError(f"unknown database kind {kind!r}; use one of {sorted(table)}")
    return table[kind](*args, **kwargs)
