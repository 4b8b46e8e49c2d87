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
from .workload_check import check_workload


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
        mod = mod_from_text(obj[1], "workload JSON")
        check_workload(mod, "workload JSON")
        return Workload(mod)


# TVM's bound on a mean run time: a record whose every repeat reaches it counts as failed
MAX_MEAN_TIME = 1e10


class RunSec(float):
    """One measured time in seconds: a float that also has TVM's FloatImm `.value`."""

    __slots__ = ()

    @property
    def value(self) -> float:
        return float(self)

    def __repr__(self) -> str:
        return float.__repr__(self)


def _is_sec(value: Any) -> bool:
    """A time a record file may give: a finite non-negative number (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return 0.0 <= float(value) < float("inf")
    except OverflowError:  # an int past a float's range
        return False


def _sec(value: Any) -> RunSec:
    return RunSec(float(getattr(value, "value", value)))


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
        self.run_secs = None if run_secs is None else [_sec(s) for s in run_secs]
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
        return min(self.run_secs) if self.succeeded else float("inf")

    @property
    def mean_sec(self) -> float:
        """The mean of the repeats, what records rank by as in TVM (inf when it failed)."""
        return sum(self.run_secs) / len(self.run_secs) if self.succeeded else float("inf")

    @property
    def succeeded(self) -> bool:
        """Whether it has a time: run_secs not None or empty, and not all at TVM's failure
        bound (MAX_MEAN_TIME)."""
        return bool(self.run_secs) and any(s < MAX_MEAN_TIME for s in self.run_secs)

    def as_measure_candidate(self) -> Any:
        from .search_strategy import MeasureCandidate

        sch = Schedule(self.workload.mod)
        self.trace.apply_to_schedule(sch, remove_postproc=False)
        return MeasureCandidate(sch, self.args_info or ArgInfo.from_entry_func(sch.mod))

    def as_json(self) -> list:
        return [
            self.trace.as_json(remove_postproc=False),
            None if self.run_secs is None else [float(x) for x in self.run_secs],
            None if self.target is None else str(self.target),
            None if self.args_info is None else [a.as_json() for a in self.args_info],
        ]

    @staticmethod
    def from_json(obj: Any, workload: Workload) -> TuningRecord:
        """Rebuild a record; its trace is replayed (checked) on the workload to validate it."""
        if not (isinstance(obj, list) and len(obj) == 4):
            raise TuningError(f"tuning record JSON must be a list of 4, got {str(obj)[:80]}")
        trace_json, run_secs, target, args_info = obj
        if not (run_secs is None or (isinstance(run_secs, list) and all(map(_is_sec, run_secs)))):
            raise TuningError(
                f"tuning record JSON: run_secs must be null or a list of times in seconds "
                f"(finite, >= 0), got {str(run_secs)[:80]}"
            )
        if not (target is None or isinstance(target, str)):
            raise TuningError(
                f"tuning record JSON: target must be a string, got {str(target)[:80]}"
            )
        if not (args_info is None or isinstance(args_info, list)):
            raise TuningError(
                f"tuning record JSON: args_info must be a list, got {str(args_info)[:80]}"
            )
        sch = Schedule(workload.mod)
        try:
            Trace.apply_json_to_schedule(trace_json, sch)
        except MiniTVMError as err:
            raise TuningError(f"tuning record JSON: its trace does not replay: {err}") from err
        infos = None if args_info is None else _args_info_of(args_info, workload)
        record = TuningRecord(sch.trace, workload, run_secs, target, infos)
        record._mod_key = mod_key(sch.mod)  # the replay that validated it gives the key
        return record


def _args_info_of(args_info: list, workload: Workload) -> list[ArgInfo]:
    """A record's argument descriptions, which must be those of its workload: the runner
    allocates them, so a file must not choose other shapes (a 10**12-element buffer)."""
    infos = [ArgInfo.from_json(a) for a in args_info]
    if infos != ArgInfo.from_entry_func(workload.mod):
        raise TuningError(
            f"tuning record JSON: args_info {[a.as_json() for a in infos]!s:.120} is not the "
            "argument list of its workload's function"
        )
    return infos


class Database:
    """Base class with TVM's query API over `_workloads` and `_records` (in memory).

    Records rank by their time, with one exception at the top: the fastest record gives way
    to one with fewer sampling decisions (a fixed schedule such as the untuned default has
    none) whose time is within `tie_tolerance` (relative) of it. A gain that small is within
    what a kernel's time moves between processes and inside a model (2-4% measured on
    ResNet-18's convolutions, where such a pick ended up slower in the model), so the simpler
    schedule is the one kept. `tie_tolerance=0` ranks by time alone, as TVM does."""

    def __init__(self, module_equality: str = "structural", tie_tolerance: float = 0.02) -> None:
        if module_equality not in _MODULE_EQUALITIES:
            raise TuningError(
                f"module_equality={module_equality!r} is not supported; use one of "
                f"{list(_MODULE_EQUALITIES)}"
            )
        if not 0.0 <= float(tie_tolerance) < 1.0:
            raise TuningError(f"tie_tolerance must be in [0, 1), got {tie_tolerance!r}")
        self.module_equality = module_equality
        self.tie_tolerance = float(tie_tolerance)
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
        """Add `record` (as TVM does, a schedule committed twice has two records)."""
        self._adopt(record)
        self._records.append(record)
        self._write_record(record)

    def replace_tuning_record(self, record: TuningRecord) -> None:
        """Add `record` in place of every earlier record of the same schedule (equal module)
        of its workload: the tuner's re-measurement, so that only the latest time of a
        schedule is ranked (a minitvm extension)."""
        self._adopt(record)
        same = [
            i
            for i, r in enumerate(self._records)
            if r.workload is record.workload and r.mod_key == record.mod_key
        ]
        if not same:  # a new schedule: added at the end
            self.commit_tuning_record(record)
            return
        self._records[same[0]] = record  # in the first one's place: the order stays
        for i in reversed(same[1:]):
            del self._records[i]
        self._rewrite_records()

    def _adopt(self, record: TuningRecord) -> None:
        if all(record.workload is not w for w in self._workloads):
            record.workload = self.commit_workload(record.workload.mod)

    def get_top_k(self, workload: Workload, top_k: int) -> list[TuningRecord]:
        """The `top_k` fastest successful records of `workload` by their mean time, as TVM
        ranks them (the first may be a simpler one within `tie_tolerance` of the fastest: see
        the class)."""
        if top_k < 0:
            raise TuningError(f"get_top_k: top_k must be >= 0, got {top_k}")
        mine = sorted(
            (r for r in self._records if r.workload is workload and r.succeeded),
            key=lambda r: r.mean_sec,
        )
        if len(mine) > 1 and self.tie_tolerance > 0:
            limit = mine[0].mean_sec * (1 + self.tie_tolerance)
            near = [r for r in mine if r.mean_sec <= limit]
            first = min(near, key=lambda r: (_num_samples(r.trace), r.mean_sec))
            mine.remove(first)
            mine.insert(0, first)
        return mine[:top_k]

    def get_all_tuning_records(self) -> list[TuningRecord]:
        return list(self._records)

    def __len__(self) -> int:
        return len(self._records)

    # -- queries (TVM's names)
    def query_tuning_record(
        self, mod: IRModule, target: Any = None, workload_name: str = "main"
    ) -> TuningRecord | None:
        """The best record of `mod` (for `target` when given), or None."""
        if not self.has_workload(mod):
            return None
        workload = self.commit_workload(mod)
        want = None if target is None else str(parse_target(target).kind)
        for record in self.get_top_k(workload, max(len(self), 1)):
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

    def _rewrite_records(self) -> None:
        pass


# TVM's module_equality values. "ignore-ndarray" (constants' values not compared) and
# "anchor-block" (only the main block compared) are matched here by full structural equality,
# which is stricter: workloads TVM would merge stay apart, and none are wrongly merged.
_MODULE_EQUALITIES = ("structural", "ignore-ndarray", "anchor-block")


def commit_replacing(database: Any, record: TuningRecord) -> None:
    """A new time of a schedule already recorded: it replaces the earlier ones where the
    database keeps its records itself (minitvm's databases); a Python database that overrides
    commit_tuning_record (TVM's PyDatabase) only gets it added."""
    own = type(database).commit_tuning_record is Database.commit_tuning_record
    if own and isinstance(database, Database):
        database.replace_tuning_record(record)
    else:
        database.commit_tuning_record(record)


def _num_samples(trace: Trace) -> int:
    """How many sampling steps a trace has (0: a fixed schedule)."""
    return sum(1 for inst in trace.insts if inst.kind.name.startswith("Sample"))


class MemoryDatabase(Database):
    """A database that lives in memory only."""


class PyDatabase(Database):
    """The base of a database written in Python (TVM's name): override `has_workload`,
    `commit_workload`, `commit_tuning_record`, `get_all_tuning_records`, `get_top_k` and
    `__len__`; the queries (`query_tuning_record`, `query_schedule`, `query_ir_module`) go
    through them unless overridden too. What is not overridden keeps records in memory."""


class _Union(Database):
    """Answers queries from several databases; takes no commits."""

    def __init__(self, *databases: Database) -> None:
        super().__init__()
        bad = [type(d).__name__ for d in databases if not isinstance(d, Database)]
        if bad:
            raise TuningError(f"{type(self).__name__} takes databases, got {bad}")
        self.databases = list(databases)

    def has_workload(self, mod: IRModule) -> bool:
        return any(d.has_workload(mod) for d in self.databases)

    def commit_workload(self, mod: IRModule) -> Workload:
        raise TuningError(f"{type(self).__name__} only answers queries; commit to a member")

    def commit_tuning_record(self, record: TuningRecord) -> None:
        raise TuningError(f"{type(self).__name__} only answers queries; commit to a member")

    replace_tuning_record = commit_tuning_record

    def get_top_k(self, workload: Workload, top_k: int) -> list[TuningRecord]:
        raise TuningError(
            f"{type(self).__name__} has no get_top_k (its members' workloads differ); use "
            "query_tuning_record"
        )

    def get_all_tuning_records(self) -> list[TuningRecord]:
        return [r for d in self.databases for r in d.get_all_tuning_records()]

    def __len__(self) -> int:
        return sum(len(d) for d in self.databases)

    def _answers(self, mod: IRModule, target: Any, workload_name: str) -> list[TuningRecord]:
        found = (d.query_tuning_record(mod, target, workload_name) for d in self.databases)
        return [r for r in found if r is not None]


class UnionDatabase(_Union):
    """The fastest answer of all its databases (TVM's UnionDatabase)."""

    def query_tuning_record(
        self, mod: IRModule, target: Any = None, workload_name: str = "main"
    ) -> TuningRecord | None:
        return min(
            self._answers(mod, target, workload_name), key=lambda r: r.mean_sec, default=None
        )


class OrderedUnionDatabase(_Union):
    """The answer of the first of its databases that has one (TVM's OrderedUnionDatabase)."""

    def query_tuning_record(
        self, mod: IRModule, target: Any = None, workload_name: str = "main"
    ) -> TuningRecord | None:
        for d in self.databases:
            record = d.query_tuning_record(mod, target, workload_name)
            if record is not None:
                return record
        return None


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
        tie_tolerance: float = 0.02,
    ) -> None:
        super().__init__(module_equality, tie_tolerance)
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
        """Read both files as data (workload_check.py, tir/schedule/trace_check.py); the first
        thing refused is a TuningError naming the file, line and record."""
        for index, (lineno, obj) in enumerate(_read_lines(self.path_workload)):
            try:
                self._workloads.append(Workload.from_json(obj))
            except MiniTVMError as err:
                raise TuningError(
                    f"{self.path_workload}:{lineno} (workload {index}): {err}"
                ) from err
        for index, (lineno, obj) in enumerate(_read_lines(self.path_tuning_record)):
            where = f"{self.path_tuning_record}:{lineno} (record {index})"
            ok = isinstance(obj, list) and len(obj) == 2 and type(obj[0]) is int
            if not ok or not 0 <= obj[0] < len(self._workloads):
                raise TuningError(
                    f"{where}: a record must be [workload index, record] with an index of the "
                    f"{len(self._workloads)} workloads, got {str(obj)[:80]}"
                )
            try:
                self._records.append(TuningRecord.from_json(obj[1], self._workloads[obj[0]]))
            except MiniTVMError as err:
                raise TuningError(f"{where}: {err}") from err

    def _write_workload(self, workload: Workload) -> None:
        if not self._loading:
            _append_line(self.path_workload, workload.as_json())

    def _write_record(self, record: TuningRecord) -> None:
        _append_line(self.path_tuning_record, self._record_line(record))

    def _record_line(self, record: TuningRecord) -> list:
        index = next(i for i, w in enumerate(self._workloads) if w is record.workload)
        return [index, record.as_json()]

    def _rewrite_records(self) -> None:
        """Write the records file afresh (a replaced record's old line goes): to a temporary
        file first, then renamed over the old one, so a crash leaves one or the other."""
        tmp = self.path_tuning_record + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(self._record_line(r)) + "\n" for r in self._records)
        os.replace(tmp, self.path_tuning_record)


def _read_lines(path: str) -> list[tuple[int, Any]]:
    """(line number, JSON value) of each non-blank line; a damaged file is a TuningError."""
    try:
        with open(path, "rb") as f:
            raw_lines = f.read().split(b"\n")
    except OSError as err:
        raise TuningError(f"JSONDatabase: cannot read '{path}': {err}") from err
    out = []
    for lineno, raw in enumerate(raw_lines, 1):
        if not raw.strip():
            continue
        try:
            out.append((lineno, json.loads(raw.decode("utf-8"))))
        except UnicodeDecodeError as err:
            raise TuningError(
                f"{path}:{lineno}: not UTF-8 text ({err}); the file is damaged"
            ) from err
        except ValueError as err:
            raise TuningError(
                f"{path}:{lineno}: not valid JSON ({err}); the file is damaged"
            ) from err
        except RecursionError as err:
            raise TuningError(
                f"{path}:{lineno}: the JSON nests too deeply to read; the file is damaged"
            ) from err
    return out


def _append_line(path: str, obj: Any) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(obj) + "\n")


def create(kind: Any = "json", *args: Any, **kwargs: Any) -> Database:
    """A database from a name ("json", "memory") or an instance."""
    if isinstance(kind, Database):
        return kind
    table = {
        "json": JSONDatabase,
        "memory": MemoryDatabase,
        "union": UnionDatabase,
        "ordered_union": OrderedUnionDatabase,
    }
    if kind not in table:
        raise TuningError(f"unknown database kind {kind!r}; use one of {sorted(table)}")
    return table[kind](*args, **kwargs)
