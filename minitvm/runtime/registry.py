"""The global function registry: `tvm.register_func` / `tvm.get_global_func`."""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..error import MiniTVMError

_lock = threading.Lock()
_functions: dict[str, Callable] = {}


def register_func(func_name: str | Callable, f: Callable | None = None, override: bool = False):
    """Register `f` under `func_name`; used directly or as a decorator.

    >>> @register_func("my.add")
    ... def add(a, b): return a + b
    """
    if callable(func_name) and f is None:
        return _register(func_name.__name__, func_name, override)
    if not isinstance(func_name, str):
        raise MiniTVMError(f"register_func: the name must be a str, got {type(func_name).__name__}")
    if f is None:
        return lambda func: _register(func_name, func, override)
    return _register(func_name, f, override)


def _register(name: str, f: Callable, override: bool) -> Callable:
    if not callable(f):
        raise MiniTVMError(f"register_func('{name}'): expected a callable, got {type(f).__name__}")
    with _lock:
        if name in _functions and not override:
            raise MiniTVMError(
                f"global function '{name}' is already registered; pass override=True to replace it"
            )
        _functions[name] = f
    return f


def get_global_func(name: str, allow_missing: bool = False) -> Callable | None:
    """The function registered as `name`; None if missing and allow_missing, else an error."""
    f = _functions.get(name)
    if f is None and not allow_missing:
        raise MiniTVMError(
            f"no global function named '{name}'; register it with tvm.register_func('{name}')"
        )
    return f


def list_global_func_names() -> list[str]:
    """Names of all registered global functions, sorted."""
    return sorted(_functions)


def remove_global_func(name: str) -> None:
    """Unregister `name` (an error if it is not registered)."""
    with _lock:
        if name not in _functions:
            raise MiniTVMError(f"no global function named '{name}' to remove")
        del _functions[name]
