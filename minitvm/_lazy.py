"""Attributes of a package that load their module on first use (PEP 562 module `__getattr__`).

`import minitvm` stays fast because the root package names its subpackages and re-exports in one
table instead of importing them; `tvm.relay`, `tvm.build`, ... import what they need when first
touched and are then cached in the package's namespace, so later lookups cost nothing.

A table maps an attribute name to "module" (the attribute is that module) or "module:attr"
(the attribute is a name inside it); module paths are absolute. An attribute whose module does
not exist is an AttributeError, so `hasattr(pkg, name)` is False instead of raising.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from collections.abc import Callable, Mapping
from typing import Any


def resolve(package: str, table: Mapping[str, str], name: str) -> Any:
    """The value of `package.name` per `table`, imported now; AttributeError when absent."""
    spec = table.get(name)
    if spec is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name is None or not module_name.startswith(err.name):
            raise  # the module exists but needs something missing: say what
        raise AttributeError(
            f"module {package!r} has no attribute {name!r} (module {module_name} is not part "
            "of this minitvm)"
        ) from err
    return getattr(module, attr) if attr else module


def module_getattr(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level `__getattr__` for `package` that resolves names from `table` and caches
    each value in the package's namespace."""

    def __getattr__(name: str) -> Any:  # noqa: N807 (PEP 562 hook)
        value = resolve(package, table, name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


# Exports whose `kind` (in meta.json) is loaded by a package above the runtime: `load_module`
# imports the named module, which registers its loader, the first time it meets such a file.
LOADER_MODULES: dict[str, str] = {
    "relax.Executable": "minitvm.relax.vm.executable",
    "relay.GraphExecutorFactory": "minitvm.contrib.graph_executor",
}


# Modules known under a second name (TVM 0.24 calls our `tir` `tirx`): an alias module calls
# `alias_module(alias, real)`, and from then on importing `alias.x.y` gives the module `real.x.y`
# itself (one object under both names, never a second copy with its own classes).
_MODULE_ALIASES: dict[str, str] = {}


class _ModuleAliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `alias[.rest]` as the already-importable module `real[.rest]`."""

    def __init__(self) -> None:
        self._specs: dict[str, Any] = {}  # real module name -> its own __spec__

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        for alias, real in _MODULE_ALIASES.items():
            if fullname == alias or fullname.startswith(alias + "."):
                module = importlib.import_module(real + fullname[len(alias) :])
                return importlib.util.spec_from_loader(fullname, self, origin=module.__name__)
        return None

    def create_module(self, spec: Any) -> Any:
        module = sys.modules[spec.origin]
        self._specs[spec.origin] = module.__spec__
        return module

    def exec_module(self, module: Any) -> None:
        # the import machinery set the alias's spec on the real module: give it its own back
        module.__spec__ = self._specs.pop(module.__name__, module.__spec__)


_ALIAS_FINDER = _ModuleAliasFinder()


def alias_module(alias: str, real: str) -> None:
    """Make `import alias.x` give the module `real.x` (both absolute module names)."""
    _MODULE_ALIASES[alias] = real
    if _ALIAS_FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _ALIAS_FINDER)  # before the path finder, which would load a copy
