"""Which configuration a template call gets: a stack of dispatch contexts (TVM's names).

The root is a FallbackContext (each knob's first value, `cfg.is_fallback`); `ApplyConfig`
fixes one config (the tuner instantiating a point); `ApplyHistoryBest` answers from a
tuning log, each workload's fastest record that is still a point of the template's space.
"""

from __future__ import annotations

import io
import logging
import os
import warnings
from typing import Any, ClassVar

from ...error import TuningError
from .space import ConfigSpace, FallbackConfigEntity

logger = logging.getLogger("autotvm")


class DispatchContext:
    """Base of dispatch contexts: `query(target, workload)` asks this context, then the
    enclosing one."""

    current: DispatchContext | None = None
    _warned: ClassVar[set] = set()  # fallback warnings already shown

    def __init__(self) -> None:
        self._old_ctx = DispatchContext.current

    def query(self, target: Any, workload: Any) -> Any:
        config = self._query_inside(target, workload)
        if config is None:
            config = self._old_ctx.query(target, workload)
        return config

    def update(self, target: Any, workload: Any, cfg: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__}.update")

    def _query_inside(self, target: Any, workload: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__}._query_inside")

    def __enter__(self) -> Any:  # the entered context itself
        self._old_ctx = DispatchContext.current
        DispatchContext.current = self
        return self

    def __exit__(self, *exc: object) -> None:
        DispatchContext.current = self._old_ctx


class ApplyConfig(DispatchContext):
    """Every query gets `config` (a ConfigSpace while collecting knobs, or a point)."""

    def __init__(self, config: Any) -> None:
        super().__init__()
        self._config = config
        self.workload = None

    def _query_inside(self, target: Any, workload: Any) -> Any:
        self.workload = workload
        return self._config

    def update(self, target: Any, workload: Any, cfg: Any) -> None:
        self.workload, self._config = workload, cfg


class FallbackContext(DispatchContext):
    """The root context: a FallbackConfigEntity per (target, workload), kept for reuse."""

    def __init__(self) -> None:
        super().__init__()
        self.memory: dict = {}

    def _query_inside(self, target: Any, workload: Any) -> Any:
        key = (str(target), workload)
        if key not in self.memory:
            from ..env import GLOBAL_SCOPE

            msg = (
                f"Cannot find config for target={target}, workload={workload}. A fallback "
                "configuration is used, which may bring great performance regression."
            )
            if workload is not None and not GLOBAL_SCOPE.silent and msg not in self._warned:
                self._warned.add(msg)
                logger.warning(msg)
            self.memory[key] = FallbackConfigEntity()
        return self.memory[key]

    def clear_cache(self, target: Any, workload: Any) -> None:
        self.memory.pop((str(target), workload), None)

    def update(self, target: Any, workload: Any, cfg: Any) -> None:
        self.memory[(str(target), workload)] = cfg


DispatchContext.current = FallbackContext()


def clear_fallback_cache(target: Any, workload: Any) -> None:
    ctx = DispatchContext.current
    while not isinstance(ctx, FallbackContext):
        ctx = ctx._old_ctx
    ctx.clear_cache(target, workload)


class ApplyHistoryBest(DispatchContext):
    """Answer each (target, workload) with the fastest successful record of `records` (log
    file paths, or (MeasureInput, MeasureResult) pairs). A record whose config is not a point
    of the template's space (an edited or outdated log) is skipped with a warning."""

    def __init__(self, records: Any = None) -> None:
        super().__init__()
        self._ranked: dict[tuple, list] = {}  # (target key, workload) -> pairs, fastest first
        self._chosen: dict[tuple, Any] = {}
        self._user: dict[tuple, Any] = {}
        self._keys_seen: set[str] = set()  # target keys ("cpu") of the loaded records
        if records:
            self.load(records)

    def load(self, records: Any) -> None:
        """Add records: a log path, an open log, (MeasureInput, MeasureResult) pairs, or any
        iterable nesting of those."""
        pairs = _unpack_records(records)
        for inp, res in pairs:
            if res.error_no != 0:
                continue
            self._keys_seen.update(getattr(inp.target, "keys", ()))
            for key in _target_keys(inp.target):
                self._ranked.setdefault((key, inp.task.workload), []).append((inp, res))
        for ranked in self._ranked.values():
            ranked.sort(key=lambda pair: pair[1].mean_cost)
        self._chosen.clear()
        logger.debug("Finish loading %d records", len(pairs))

    @property
    def best_by_targetkey(self) -> dict:
        """{(target key, workload): (MeasureInput, MeasureResult)}: each fastest successful
        record, by the target's keys ("cpu"), as loaded (not checked against the space)."""
        return {k: ranked[0] for k, ranked in self._ranked.items() if k[0] in self._keys_seen}

    def _query_inside(self, target: Any, workload: Any) -> Any:
        if target is None:
            raise TuningError(
                "apply_history_best needs a target to pick records: call the template inside "
                "`with tvm.target.Target('llvm'):`"
            )
        for key in _target_keys(target):
            if (key, workload) in self._user:
                return self._user[(key, workload)]
            config = self._best((key, workload))
            if config is not None:
                return config
        return None

    def _best(self, key: tuple) -> Any:
        """The fastest record's config that is a point of the template's current space."""
        if key not in self._chosen:
            self._chosen[key] = None
            for inp, _ in self._ranked.get(key, ()):
                problem = _config_problem(inp)
                if problem is None:
                    self._chosen[key] = inp.config
                    break
                warnings.warn(
                    f"apply_history_best: skipped a record of {key[1][0]}: {problem}",
                    RecordWarning,
                    stacklevel=4,
                )
        return self._chosen[key]

    def update(self, target: Any, workload: Any, cfg: Any) -> None:
        cfg.cost = 0
        for key in _target_keys(target):
            self._user[(key, workload)] = cfg


def _unpack_records(records: Any) -> list:
    """(MeasureInput, MeasureResult) pairs from paths, open files and nested iterables."""
    from ..measure import MeasureInput
    from ..record import load_from_buffer, load_from_file

    if isinstance(records, str | bytes | os.PathLike):
        return list(load_from_file(records))
    if isinstance(records, io.TextIOBase):
        return list(load_from_buffer(records))
    pairs = []
    for item in records:
        if isinstance(item, tuple) and item and isinstance(item[0], MeasureInput):
            pairs.append(item)
        else:
            pairs.extend(_unpack_records(item))
    return pairs


class RecordWarning(UserWarning):
    """A tuning-log line or record was skipped (malformed, or not a point of the space)."""


def _target_keys(target: Any) -> list[str]:
    """The exact target string first, then its keys ("cpu")."""
    return [str(target), *getattr(target, "keys", ())]


def _config_problem(inp: Any) -> str | None:
    """Why a record's config cannot be applied to its template now, or None."""
    from .task import TASK_TABLE, deserialize_args

    func = TASK_TABLE.get(inp.task.name)
    if func is None:
        return None  # no template to compare with: the caller's template decides
    space = ConfigSpace()
    with ApplyConfig(space), inp.target:
        func(*deserialize_args(inp.task.args))
    index = space.index_of(inp.config._entity_map)
    if index is None:
        return (
            f"config {inp.config} is not a point of the template's space (the log was "
            "edited, or the template changed since tuning)"
        )
    inp.config.index = index
    return None
