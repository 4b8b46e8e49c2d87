"""Where measurement jobs run: an Executor's `submit(func, *args, **kwargs)` returns a
concurrent.futures.Future of `func(*args, **kwargs)` (TVM's `autotvm.measure.executor`).

LocalRunner submits one job per candidate to its `executor`; the default runs the job in
this process, and the job itself runs the candidate in meta_schedule's worker process.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Any


class Executor:
    """Base of executors: `submit(func, *args, **kwargs) -> Future`."""

    DEFAULT_TIMEOUT = 120

    def submit(self, func: Callable, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        raise NotImplementedError(f"{type(self).__name__}.submit")


class LocalExecutor(Executor):
    """Runs each job at once, in the calling thread; its exception is the future's."""

    def submit(self, func: Callable, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        try:
            future.set_result(func(*args, **kwargs))
        except Exception as err:  # noqa: BLE001 - handed to whoever reads the future
            future.set_exception(err)
        return future
