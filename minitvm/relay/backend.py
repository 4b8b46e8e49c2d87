"""`relay.backend.Executor` / `Runtime`: the build options of TVM 0.9+ (`relay.build(...,
executor=Executor("graph"), runtime=Runtime("cpp"))`). Every build makes the graph executor's
factory over the relax VM; the options are checked, then recorded."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..error import BuildError

_EXECUTORS = ("graph",)
_RUNTIMES = ("cpp", "crt")


class Executor:
    """`Executor("graph", {"link-params": True})`; "aot" is refused (graph only)."""

    def __init__(self, name: str = "graph", options: Mapping[str, Any] | None = None):
        if name not in _EXECUTORS:
            raise BuildError(
                f"relay.backend.Executor({name!r}): only {list(_EXECUTORS)} is built here; "
                "relay.build makes a graph executor"
            )
        self.name, self.attrs = name, dict(options or {})

    def __repr__(self) -> str:
        return f"Executor({self.name!r}, {self.attrs})"


class Runtime:
    """`Runtime("cpp")`; the runtime is always minitvm's own, so the name is only checked."""

    def __init__(self, name: str = "cpp", options: Mapping[str, Any] | None = None):
        if name not in _RUNTIMES:
            raise BuildError(f"relay.backend.Runtime({name!r}): use one of {list(_RUNTIMES)}")
        self.name, self.attrs = name, dict(options or {})

    def __repr__(self) -> str:
        return f"Runtime({self.name!r}, {self.attrs})"
