"""`--tuning-records PATH`: a meta_schedule database (the --work-dir `minitvm tune` writes, or
one of its database_*.json files) or an AutoTVM log, read as data and checked line by line.

A records file is data from wherever the user got it: it is read with the JSON parser and the
checked readers of meta_schedule and autotvm (workloads are TVMScript, which the parser does
not execute; traces replay through the trace reader), never imported or unpickled. Anything
malformed is one error naming the file (and line), with what to do.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from ..error import MiniTVMError
from ._common import UsageError

WORKLOADS, RECORDS = "database_workload.json", "database_tuning_record.json"
_MAX_BYTES = 1 << 30  # a records file larger than this is not one `minitvm tune` wrote
# what a malformed record can raise from the readers besides MiniTVMError (wrong JSON types
# reaching code that expects others, JSON nested deeper than the parser's recursion limit)
_DATA_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError)
_WHAT = "give the --work-dir of `minitvm tune` or an AutoTVM log (JSON lines)"


@dataclass
class TuningRecords:
    """What --tuning-records held: a meta_schedule database or AutoTVM (input, result) pairs."""

    path: str
    database: Any = None
    autotvm: list | None = None

    @property
    def count(self) -> int:
        return len(self.database) if self.database is not None else len(self.autotvm or ())


def load(path: str, option: str = "--tuning-records") -> TuningRecords:
    """The records at `path` (a folder or a file), checked; errors name `option`."""
    if not os.path.exists(path):
        raise UsageError(f"{option} '{path}' does not exist; {_WHAT}")
    if os.path.isdir(path):
        workloads, records = os.path.join(path, WORKLOADS), os.path.join(path, RECORDS)
        missing = [n for n in (WORKLOADS, RECORDS) if not os.path.isfile(os.path.join(path, n))]
        if missing:
            raise UsageError(
                f"{option} '{path}' is a folder without {' and '.join(missing)}; {_WHAT}"
            )
        return TuningRecords(path, database=_meta_schedule(path, workloads, records, option))
    if not os.path.isfile(path):  # a FIFO or device would block or never end
        raise UsageError(f"{option} '{path}' is not a regular file; {_WHAT}")
    if os.path.getsize(path) > _MAX_BYTES:
        raise _bad(option, path, f"it is {os.path.getsize(path) / 1e9:.1f} GB")
    first = _first_line(path, option)
    if isinstance(first, dict):
        return TuningRecords(path, autotvm=_autotvm(path, option))
    folder = os.path.dirname(os.path.abspath(path))
    name = os.path.basename(path)
    if name not in (WORKLOADS, RECORDS) or not isinstance(first, list):
        raise _bad(
            option,
            path,
            f"its first line is neither an AutoTVM record (a JSON object) nor a line of "
            f"{WORKLOADS} / {RECORDS}",
        )
    workloads, records = os.path.join(folder, WORKLOADS), os.path.join(folder, RECORDS)
    for need in (workloads, records):
        if not os.path.isfile(need):
            raise UsageError(
                f"{option} '{path}': a meta_schedule database is two files and "
                f"'{need}' is not beside it; pass the folder that holds both"
            )
    return TuningRecords(path, database=_meta_schedule(path, workloads, records, option))


def _first_line(path: str, option: str) -> Any:
    """The first non-blank line of `path`, parsed as JSON."""
    lineno = 0
    try:
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if line.strip():
                    return json.loads(line)
    except (OSError, UnicodeDecodeError, *_DATA_ERRORS) as err:
        raise _bad(option, path, f"line {lineno}: {_short(err)}") from err
    raise _bad(option, path, "it is empty")


def _meta_schedule(path: str, workloads: str, records: str, option: str) -> Any:
    """A JSONDatabase over the two files (read only: it writes nothing when it exists)."""
    from ..meta_schedule import JSONDatabase

    try:
        return JSONDatabase(workloads, records, allow_missing=False)
    except (MiniTVMError, OSError, UnicodeDecodeError, *_DATA_ERRORS) as err:
        raise _bad(option, path, _short(err)) from err


def _autotvm(path: str, option: str) -> list:
    """Every line of an AutoTVM log decoded (a malformed line is an error, not skipped: the
    user asked for this file to shape the build)."""
    from ..autotvm.record import decode

    pairs, lineno = [], 0
    try:
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if line.strip():
                    pairs.append(decode(line))
    except (MiniTVMError, OSError, UnicodeDecodeError, *_DATA_ERRORS) as err:
        raise _bad(option, path, f"line {lineno}: {_short(err)}") from err
    return pairs


def _short(err: BaseException) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return text if len(text) <= 300 else text[:300] + "..."


def _bad(option: str, path: str, what: str) -> MiniTVMError:
    return MiniTVMError(
        f"{option} '{path}' is not a readable tuning-records file ({what}); {_WHAT}"
    )


def apply_to_build(records: TuningRecords, mod: Any, target: Any) -> tuple[Any, str]:
    """The Executable of `mod` built with the records, and a line saying what they changed."""
    from .. import meta_schedule as ms
    from ..autotvm import apply_history_best
    from ..relax import build

    tasks = ms.relax_integration.extract_tasks(mod, target)
    if records.database is None:
        # minitvm builds relax models with meta_schedule or default schedules: no operator is
        # an AutoTVM template, so an AutoTVM log has no workload to answer
        with apply_history_best(records.autotvm):
            exe = build(mod, target=target)
        return exe, (
            f"'{records.path}': {records.count} AutoTVM record(s) read; none applies, as "
            f"minitvm compiles ONNX models without AutoTVM templates: tune with `minitvm tune` "
            f"and pass its --work-dir"
        )
    db = records.database
    hits = sum(1 for t in tasks if db.query_tuning_record(t.mod, target) is not None)
    exe = ms.relax_integration.compile_relax(db, mod, target)
    return exe, (
        f"'{records.path}': tuned schedules for {hits} of the model's {len(tasks)} kernels "
        f"({records.count} record(s) read)"
    )
