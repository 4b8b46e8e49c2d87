"""Databases of measurements keyed by what was measured (TVM's `autotvm.database`).

A key is `record.measure_str_key(inp)` (target, workload and config); its value holds one or
more log lines (`record.encode`), so a database replays measurements: `filter_inputs` splits
a batch into the results already known and the inputs still to measure.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..error import TuningError
from .record import decode, encode, measure_str_key

_SEPARATOR = "\n"  # between the log lines of one key (a JSON line holds no raw newline)


class Database:
    """Base of databases: `load(inp, get_all=False)` and `save(inp, res, extend=False)`."""

    def load(self, inp: Any, get_all: bool = False) -> Any:
        """The latest result saved for `inp` (every one with get_all), or None."""
        raise NotImplementedError(f"{type(self).__name__}.load")

    def save(self, inp: Any, res: Any, extend: bool = False) -> None:
        """Save `res` for `inp`, replacing what was saved unless `extend`."""
        raise NotImplementedError(f"{type(self).__name__}.save")


def filter_inputs(db: Database, measure_inputs: list, retry: bool = False) -> tuple[list, list]:
    """(results, unsaved): the saved result of each input or None, and the inputs without
    one (with `retry`, also those whose saved result is a failure)."""
    partial, unsaved = [], []
    for inp in measure_inputs:
        res = db.load(inp)
        if res is None or (retry and res.error_no != 0):
            unsaved.append(inp)
            res = None
        partial.append(res)
    return partial, unsaved


class _KeyValueDatabase(Database):
    """Records as text values of a string key-value store (`get`, `set`, `keys`, `flush`)."""

    def get(self, key: str) -> str | None:
        raise NotImplementedError

    def set(self, key: str, value: str) -> None:
        raise NotImplementedError

    def keys(self) -> list[str]:
        raise NotImplementedError

    def flush(self) -> None:
        raise NotImplementedError

    def _records(self, key: str) -> list[tuple]:
        value = self.get(key)
        return [] if value is None else [decode(line) for line in value.split(_SEPARATOR)]

    def load(self, inp: Any, get_all: bool = False) -> Any:
        results = [res for _, res in self._records(measure_str_key(inp))]
        if not results:
            return None
        return results if get_all else max(results, key=lambda res: res.timestamp)

    def save(self, inp: Any, res: Any, extend: bool = False) -> None:
        key = measure_str_key(inp)
        old = self.get(key) if extend else None
        line = encode(inp, res)
        self.set(key, line if old is None else old + _SEPARATOR + line)

    def filter(self, func: Callable) -> list[tuple]:
        """(input, latest result) of every key whose input and results satisfy
        `func(inp, results)`, e.g. `db.filter(lambda inp, rs: "cpu" in inp.target.keys)`."""
        matched = []
        for key in self.keys():
            records = self._records(key)
            if not records:
                continue
            inp, results = records[0][0], [res for _, res in records]
            if func(inp, results):
                matched.append((inp, max(results, key=lambda res: res.timestamp)))
        return matched


class DummyDatabase(_KeyValueDatabase):
    """A database in this process's memory (a dict)."""

    def __init__(self) -> None:
        self.db: dict[str, str] = {}

    def get(self, key: str) -> str | None:
        return self.db.get(key)

    def set(self, key: str, value: str) -> None:
        self.db[key] = value

    def keys(self) -> list[str]:
        return list(self.db)

    def flush(self) -> None:
        self.db = {}


class RedisDatabase(_KeyValueDatabase):
    """A database in a Redis server (host: 127.0.0.1 for the test index, else the
    TVM_FLEET_HOST environment variable); needs the `redis` package."""

    REDIS_PROD = 15
    REDIS_LOCA = 14
    REDIS_TEST = 13
    REDIS_NIGHT_TEMP = 12

    def __init__(self, db_index: int = REDIS_PROD) -> None:
        try:
            import redis
        except ImportError as err:
            raise TuningError(
                "autotvm.database.RedisDatabase needs the redis package (pip install redis) "
                "and a Redis server; autotvm.database.DummyDatabase keeps records in memory"
            ) from err
        host = "127.0.0.1" if db_index == self.REDIS_TEST else os.environ.get("TVM_FLEET_HOST")
        self.db = redis.StrictRedis(host=host, port=6379, db=db_index)
        self.db_index = db_index

    def get(self, key: str) -> str | None:
        value = self.db.get(key)
        return value.decode() if isinstance(value, bytes) else value

    def set(self, key: str, value: str) -> None:
        self.db.set(key, value)

    def keys(self) -> list[str]:
        return [k.decode() if isinstance(k, bytes) else k for k in self.db.scan_iter()]

    def flush(self) -> None:
        self.db.flushdb()
