"""Tuning logs: one JSON object per line (never pickle), TVM's `autotvm.record` names.

A line is {"input": [target, task name, args, kwargs], "config": {index, code_hash, entity},
"result": [costs, error_no, all_cost, timestamp], "version", "tvm_version"}. A failed
measurement keeps its error message in "costs". Reading a log skips a malformed line with
a RecordWarning naming the file and line (a log cut short by a killed process still loads).
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Iterator
from typing import Any

from ..error import MiniTVMError, TuningError
from .measure import MeasureErrorNo, MeasureInput, MeasureResult
from .task.dispatcher import ApplyHistoryBest, RecordWarning  # noqa: F401 (TVM's names here)
from .task.space import ConfigEntity
from .task.task import Task

AUTOTVM_LOG_VERSION = 0.2


def encode(inp: MeasureInput, result: MeasureResult, protocol: str = "json") -> str:
    """One log line for a measurement."""
    _check_protocol(protocol)
    row = {
        "input": [str(inp.target), inp.task.name, _jsonable(inp.task.args), {}],
        "config": inp.config.to_json_dict(),
        "result": [list(result.costs), result.error_no, result.all_cost, result.timestamp],
        "version": AUTOTVM_LOG_VERSION,
        "tvm_version": _version(),
    }
    return json.dumps(row)


def decode(row: str, protocol: str = "json") -> tuple[MeasureInput, MeasureResult]:
    """A (MeasureInput, MeasureResult) from a log line; a malformed line is a TuningError."""
    _check_protocol(protocol)
    try:
        data = json.loads(row)
    except ValueError as err:
        raise TuningError(f"not JSON ({err})") from err
    except RecursionError as err:
        raise TuningError("the JSON nests too deeply to read") from err
    if not isinstance(data, dict) or not {"input", "config", "result"} <= set(data):
        raise TuningError("a record needs the keys 'input', 'config' and 'result'")
    inp, res = data["input"], data["result"]
    if not (
        isinstance(inp, list) and len(inp) >= 3 and all(isinstance(x, str) for x in inp[:2])
    ) or not isinstance(inp[2], list):
        raise TuningError(f"'input' must be [target, task name, args, kwargs], got {inp!r:.80}")
    try:
        from ..meta_schedule.utils import parse_target

        target = parse_target(inp[0])
    except MiniTVMError as err:
        raise TuningError(f"bad target {inp[0]!r}: {err}") from err
    task = Task(inp[1], _tupled(inp[2]))
    task.target = target
    config = ConfigEntity.from_json_dict(data["config"])
    return MeasureInput(target, task, config), _decode_result(res)


def _decode_result(res: Any) -> MeasureResult:
    numbers = (int, float)
    if not (
        isinstance(res, list)
        and len(res) == 4
        and isinstance(res[0], list)
        and type(res[1]) is int
        and isinstance(res[2], numbers)
        and isinstance(res[3], numbers)
    ):
        raise TuningError(
            f"'result' must be [costs, error_no, all_cost, timestamp], got {res!r:.80}"
        )
    costs, error_no = res[0], res[1]
    if error_no not in MeasureErrorNo.__members__.values():
        raise TuningError(f"unknown error_no {error_no}")
    if error_no == 0 and not (costs and all(_is_time(c) for c in costs)):
        # a zero is a time below the timer's resolution, still a measurement; a negative,
        # NaN or infinite time is not
        raise TuningError(f"a successful record needs non-negative finite costs, got {costs!r:.80}")
    try:
        return MeasureResult(costs, error_no, res[2], res[3])
    except (OverflowError, ValueError) as err:  # all_cost / timestamp 10**400: no float
        raise TuningError(f"'result' holds a number out of range ({err})") from None


def load_from_file(filename: str | os.PathLike) -> Iterator[tuple[MeasureInput, MeasureResult]]:
    """The records of a log file; malformed lines (not UTF-8, not JSON, values of the wrong
    kind) are skipped with a RecordWarning naming the file and line."""
    try:
        with open(filename, "rb") as f:
            lines = f.read().split(b"\n")
    except OSError as err:
        raise TuningError(f"cannot read tuning log '{os.fspath(filename)}': {err}") from err
    yield from _decode_lines(enumerate(lines, 1), f"{os.fspath(filename)}:")


def load_from_buffer(file: Any) -> Iterator[tuple[MeasureInput, MeasureResult]]:
    """The records of an open text file (malformed lines skipped with a RecordWarning)."""
    try:
        lines = list(file)
    except UnicodeDecodeError as err:
        raise TuningError(
            f"tuning log {getattr(file, 'name', '(buffer)')!s}: not UTF-8 text ({err}); open "
            "it with encoding='utf-8' or pass its path"
        ) from err
    yield from _decode_lines(enumerate(lines, 1), "line ")


def _decode_lines(lines: Any, where: str) -> Iterator[tuple[MeasureInput, MeasureResult]]:
    for lineno, line in lines:
        try:
            if isinstance(line, bytes):
                line = line.decode("utf-8")
            if line.strip():
                yield decode(line)
        except (TuningError, UnicodeDecodeError) as err:
            warnings.warn(
                f"{where}{lineno}: skipped a malformed autotvm record: {err}",
                RecordWarning,
                stacklevel=3,
            )


def measure_str_key(inp: MeasureInput, include_config: bool = True) -> str:
    """A string naming the measured target, workload (and config)."""
    key = f"{inp.target} {inp.task.name} {inp.task.args} {inp.task.kwargs}"
    return f"{key} {inp.config}" if include_config else key


def pick_best(in_file: str, out_file: str) -> None:
    """Write the fastest successful record of each (target, workload) of `in_file`."""
    best: dict[tuple, tuple] = {}
    for inp, res in load_from_file(in_file):
        key = (str(inp.target), inp.task.workload)
        if res.error_no == 0 and (key not in best or res.mean_cost < best[key][1].mean_cost):
            best[key] = (inp, res)
    with open(out_file, "w") as f:
        for inp, res in best.values():
            f.write(encode(inp, res) + "\n")


def _check_protocol(protocol: str) -> None:
    if protocol != "json":
        raise TuningError(
            f"record protocol {protocol!r} is not supported; logs are JSON lines (protocol='json')"
        )


def _jsonable(x: Any) -> Any:
    return [_jsonable(a) for a in x] if isinstance(x, tuple | list) else x


def _is_time(cost: Any) -> bool:
    """A measured time: a finite non-negative number (a zero is below the timer's resolution,
    still a measurement; an int past a float's range is not one)."""
    if isinstance(cost, bool) or not isinstance(cost, int | float):
        return False
    try:
        return math.isfinite(cost) and cost >= 0
    except OverflowError:
        return False


_MAX_ARG_DEPTH = 8  # template arguments are shapes and dtypes: a few levels of lists


def _tupled(x: Any, depth: int = 0) -> Any:
    """JSON lists back to the tuples workloads are made of."""
    if isinstance(x, list):
        if depth >= _MAX_ARG_DEPTH:
            raise TuningError(
                f"template arguments in a record nest deeper than {_MAX_ARG_DEPTH} levels"
            )
        return tuple(_tupled(a, depth + 1) for a in x)
    if x is None or isinstance(x, str | int | float):
        return x
    raise TuningError(f"template argument {x!r:.60} in a record is not a number, string or list")


def _version() -> str:
    from .._version import __version__

    return f"minitvm-{__version__}"
